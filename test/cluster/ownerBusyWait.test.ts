/**
 * How a runner's write waits for a session's writer lease that another runner (one that died) still
 * holds (`Owner.whileBusy`): tried again while `SessionBusy`, for `leaseWait` of time that passed,
 * whichever way the runner's wall clock is stepped meanwhile.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import { Owner } from "../../src/cluster.js"
import { withJumpingClock } from "../clockJumps.js"

const hour = 60 * 60 * 1000
const busy = Effect.fail({ _tag: "SessionBusy" as const })

describe("a write waiting for a busy lease, across a step of the wall clock", () => {
  it.scoped("stepped back an hour: it answers SessionBusy once leaseWait has passed", () =>
    withJumpingClock(({ jump }) =>
      Effect.gen(function*() {
        const waiting = yield* Effect.fork(Effect.flatMap(Owner.whileBusy("40 seconds"), (schedule) => Effect.retry(busy, schedule)))
        yield* TestClock.adjust("1 second")
        yield* jump(-hour)
        yield* TestClock.adjust("40 seconds")
        // Polled, not awaited: a wait stretched by the step would keep this test waiting an hour.
        yield* Effect.yieldNow()
        const done = yield* Fiber.poll(waiting)
        expect(Option.isSome(done) && Exit.isFailure(done.value)).toBe(true)
      })
    ))

  it.scoped("stepped forward a day: it keeps trying until leaseWait has passed, and takes the lease freed meanwhile", () =>
    withJumpingClock(({ jump }) =>
      Effect.gen(function*() {
        let tries = 0
        const freedAfter = 20
        const write = Effect.suspend(() => ++tries > freedAfter ? Effect.succeed("written") : busy)
        const waiting = yield* Effect.fork(Effect.flatMap(Owner.whileBusy("40 seconds"), (schedule) => Effect.retry(write, schedule)))
        yield* TestClock.adjust("1 second")
        yield* jump("1 day")
        yield* TestClock.adjust("10 seconds")
        expect(yield* Fiber.join(waiting)).toBe("written")
      })
    ))
})

describe("a turn's stream waiting for a busy lease (Owner.streamWhileBusy)", () => {
  it.scoped("refused before its first event: tried again, and runs once the lease is freed", () =>
    Effect.gen(function*() {
      let runs = 0
      const turn = Stream.suspend(() => ++runs > 3 ? Stream.make("turn.started", "turn.completed") : Stream.fail({ _tag: "SessionBusy" as const }))
      const running = yield* Effect.fork(Stream.runCollect(Owner.streamWhileBusy("40 seconds")(turn)))
      yield* TestClock.adjust("1 second")
      expect(Chunk.toReadonlyArray(yield* Fiber.join(running))).toEqual(["turn.started", "turn.completed"])
    }))

  it.scoped("refused after an event, however soon: not run again (it would be a second turn), SessionBusy at once", () =>
    Effect.gen(function*() {
      let runs = 0
      const turn = Stream.suspend(() => {
        runs++
        return Stream.concat(Stream.make("turn.started"), Stream.fail({ _tag: "SessionBusy" as const }))
      })
      const running = yield* Effect.fork(Stream.runCollect(Owner.streamWhileBusy("40 seconds")(turn)))
      yield* TestClock.adjust("10 seconds")
      const done = yield* Fiber.poll(running)
      expect(Option.isSome(done) && Exit.isFailure(done.value)).toBe(true)
      expect(runs).toBe(1)
    }))
})
