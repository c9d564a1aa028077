/**
 * The runner port's log of repeated TLS failures (`RunnerTls.throttled`): the first line of a key at
 * once, then one per `logEvery` of time passed, on the `Clock` (so `TestClock` drives it) and
 * monotonic: a wall clock stepped back an hour does not silence the log for an hour.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Logger from "effect/Logger"
import * as TestClock from "effect/TestClock"
import { RunnerTls } from "../../src/cluster.js"
import { withJumpingClock } from "../clockJumps.js"

const logged = (lines: Array<string>) => Logger.replace(Logger.defaultLogger, Logger.make(({ message }) => void lines.push(String(message))))

describe("RunnerTls.throttled", () => {
  it.scoped("one line per logEvery with the count of those left out, across a wall clock stepped back an hour", () => {
    const lines: Array<string> = []
    return withJumpingClock(({ jump }) =>
      Effect.gen(function*() {
        const log = RunnerTls.throttled()
        yield* log("peer", "handshake failed")
        yield* log("peer", "handshake failed")
        yield* log("other", "handshake failed elsewhere")
        yield* jump(-60 * 60 * 1000)
        yield* TestClock.adjust(RunnerTls.logEvery)
        yield* log("peer", "handshake failed")
        expect(lines).toEqual(["handshake failed", "handshake failed elsewhere", "handshake failed (and 1 more since)"])
      })
    ).pipe(Effect.provide(logged(lines)))
  })
})
