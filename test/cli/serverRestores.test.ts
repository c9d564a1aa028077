/**
 * `serve` restores a session's MCP servers once per session at a time: a follow-up arriving while
 * a turn's restore is under way waits for it, so its turn has the servers' tools too (a caller that
 * returned at once ran a turn without them). The "server" here starts when the test lets it: no timing.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import { oncePerSession } from "../../src/cli/ServerRestores.js"

const session = { sessionId: "sess_a", cwd: "/work" }

/** A restore whose servers start once the test opens `gate`. */
const gated = Effect.gen(function*() {
  const gate = yield* Deferred.make<void>()
  const entered = yield* Deferred.make<void>()
  const running = new Set<string>()
  let restores = 0
  const restore = oncePerSession({
    has: (sessionId) => running.has(sessionId),
    restore: ({ sessionId }) =>
      Effect.gen(function*() {
        restores++
        yield* Deferred.succeed(entered, undefined)
        yield* Deferred.await(gate)
        running.add(sessionId)
      })
  })
  return { gate, entered, running, restore, restores: () => restores }
})

/** Lets `fiber` run until it ends or waits on something. */
const settled = <A>(fiber: Fiber.RuntimeFiber<A>) =>
  Effect.gen(function*() {
    while ((yield* Fiber.status(fiber))._tag === "Running") yield* Effect.yieldNow()
  })

describe("serve: restoring a session's MCP servers", () => {
  it.effect("a second caller while a restore is under way waits for it, and starts nothing itself", () =>
    Effect.gen(function*() {
      const { entered, gate, restore, restores, running } = yield* gated
      const first = yield* Effect.fork(restore(session))
      yield* Deferred.await(entered)
      // What the second caller sees when it returns: the servers running, or not.
      const second = yield* Effect.fork(Effect.map(restore(session), () => running.has(session.sessionId)))
      yield* settled(second)
      yield* Deferred.succeed(gate, undefined)
      expect(yield* Fiber.join(second)).toBe(true)
      yield* Fiber.join(first)
      expect(restores()).toBe(1)
      // Once running, nothing is restored again.
      yield* restore(session)
      expect(restores()).toBe(1)
    }))

  it.effect("a restore whose caller went away lets the waiting caller go on, and the next one tries again", () =>
    Effect.gen(function*() {
      const { entered, gate, restore, restores } = yield* gated
      const first = yield* Effect.fork(restore(session))
      yield* Deferred.await(entered)
      const second = yield* Effect.fork(restore(session))
      yield* settled(second)
      yield* Fiber.interrupt(first)
      yield* Fiber.join(second)
      yield* Deferred.succeed(gate, undefined)
      yield* restore(session)
      expect(restores()).toBe(2)
    }))
})
