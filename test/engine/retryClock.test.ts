/**
 * A retry policy bounded by time (`Schedule.upTo`, `Schedule.during`) across a step of the wall
 * clock: the engine steps the schedule on monotonic time, so "retry for a minute" is a minute of time
 * passed, not an hour more after the clock stepped back, nor none after it stepped forward.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as TestClock from "effect/TestClock"
import { ProviderFailure } from "../../src/domain/Errors.js"
import * as Retry from "../../src/engine/Retry.js"
import { withJumpingClock } from "../clockJumps.js"

const forAMinute: Retry.Policy = Schedule.spaced("1 second").pipe(Schedule.upTo("1 minute"))
const overloaded = ProviderFailure.of("overloaded", "test")

describe("a retry policy bounded by time, across a step of the wall clock", () => {
  it.effect("stepped back an hour: retries stop once a minute has passed", () =>
    withJumpingClock(({ jump }) =>
      Effect.gen(function*() {
        const attempts = yield* Retry.start(forAMinute)
        expect(yield* attempts.next(overloaded)).toEqual(Option.some(1000))
        yield* jump(-60 * 60 * 1000)
        yield* TestClock.adjust("2 minutes")
        expect(yield* attempts.next(overloaded)).toEqual(Option.none())
      })
    ))

  it.effect("stepped forward a day: a retry a second later still runs", () =>
    withJumpingClock(({ jump }) =>
      Effect.gen(function*() {
        const attempts = yield* Retry.start(forAMinute)
        expect(yield* attempts.next(overloaded)).toEqual(Option.some(1000))
        yield* jump("1 day")
        yield* TestClock.adjust("1 second")
        expect(yield* attempts.next(overloaded)).toEqual(Option.some(1000))
      })
    ))
})
