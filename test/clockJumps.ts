/**
 * A Clock whose wall time can jump while its monotonic time does not: the TestClock's, with an
 * offset added to `currentTimeMillis` only. `jump("-1 hour")` is NTP stepping the clock back, a VM
 * restored from a snapshot, or a user setting the date; `TestClock.adjust` is time that really passes
 * (both move, and sleepers wake).
 */
import type * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as TestClock from "effect/TestClock"

export interface JumpingClock {
  readonly clock: Clock.Clock
  /** Moves the wall clock alone, by a signed number of milliseconds or a duration (forward). */
  readonly jump: (by: number | Duration.DurationInput) => Effect.Effect<void>
}

/** A jumping clock over the test's TestClock. */
export const make: Effect.Effect<JumpingClock> = Effect.map(TestClock.testClock(), (test) => {
  let offset = 0
  const wall = () => test.unsafeCurrentTimeMillis() + offset
  // The TestClock itself underneath (its state is in refs): `TestClock.adjust`, which takes the
  // fiber's Clock for a TestClock, still moves time and wakes sleepers.
  const clock: TestClock.TestClock = Object.create(test, {
    unsafeCurrentTimeMillis: { value: wall },
    currentTimeMillis: { value: Effect.sync(wall) },
    // TestClock's own reads its (here shifted) millis: the monotonic time is the TestClock's instant.
    unsafeCurrentTimeNanos: { value: () => test.unsafeCurrentTimeNanos() },
    currentTimeNanos: { value: test.currentTimeNanos }
  })
  return {
    clock,
    jump: (by) => Effect.sync(() => {
      offset += typeof by === "number" ? by : Duration.toMillis(by)
    })
  }
})

/** Runs `effect` with a jumping clock as its `Clock`. */
export const withJumpingClock = <A, E, R>(effect: (clock: JumpingClock) => Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.flatMap(make, (jumping) => Effect.withClock(effect(jumping), jumping.clock))

/**
 * A Clock whose wall time steps by `wallMillis` at every read of it, while its monotonic time
 * moves `monotonicMillis` at every read of that (over the test's TestClock, whose sleepers wake
 * only when the test adjusts it): a wall clock stepping mid-work — a walk, a command's output —
 * where a test cannot step it between two reads.
 */
export const steppingAtEveryRead = (steps: { readonly wallMillis: number; readonly monotonicMillis: number }): Effect.Effect<Clock.Clock> =>
  Effect.map(TestClock.testClock(), (test) => {
    let wallReads = 0
    let monotonicReads = 0
    const wall = () => test.unsafeCurrentTimeMillis() + steps.wallMillis * wallReads++
    const monotonic = () => test.unsafeCurrentTimeNanos() + BigInt(steps.monotonicMillis * monotonicReads++) * BigInt(1_000_000)
    return Object.create(test, {
      unsafeCurrentTimeMillis: { value: wall },
      currentTimeMillis: { value: Effect.sync(wall) },
      unsafeCurrentTimeNanos: { value: monotonic },
      currentTimeNanos: { value: Effect.sync(monotonic) }
    }) as Clock.Clock
  })
