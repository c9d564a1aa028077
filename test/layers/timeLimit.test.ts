/**
 * Issue 20 (the tool step): `TimeLimit.promiseWithin`, how `read_file` bounds its file system work
 * with one fiber instead of `Effect.timeoutFail`'s two. The limit is a sleep on `Clock`, so the
 * `TestClock` of `it.effect` decides when it passes: past it the promise's signal is aborted and the
 * call fails with the timeout; a promise that settles first wins and leaves no timer behind; a cancel
 * aborts the work.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as TestClock from "effect/TestClock"
import * as TimeLimit from "../../src/layers/workspace/TimeLimit.js"

let timeouts = 0
const timedOut = () => {
  timeouts++
  return "timed out" as const
}
const failed = (error: unknown) => ({ failed: String(error) })

/** A promise that settles only when told, recording the signal it was given. */
const controlled = () => {
  let signal: AbortSignal | undefined
  let settle: { resolve: (value: string) => void; reject: (error: unknown) => void } | undefined
  const run = (given: AbortSignal) =>
    new Promise<string>((resolve, reject) => {
      signal = given
      settle = { resolve, reject }
    })
  return { run, signal: () => signal, settle: () => settle! }
}

describe("TimeLimit.promiseWithin", () => {
  it.effect("past the limit (TestClock) the call fails with the timeout and the work's signal is aborted", () =>
    Effect.gen(function*() {
      const work = controlled()
      const call = yield* Effect.fork(TimeLimit.promiseWithin("30 seconds", timedOut, failed, work.run))
      yield* TestClock.adjust("29 seconds")
      expect(Option.isNone(yield* Fiber.poll(call))).toBe(true)
      expect(work.signal()?.aborted).toBe(false)
      yield* TestClock.adjust("1 second")
      expect(yield* Fiber.await(call)).toEqual(Exit.fail("timed out"))
      expect(work.signal()?.aborted).toBe(true)
      // The promise settling late changes nothing.
      work.settle().resolve("late")
    }))

  it.effect("a promise that settles within the limit gives its value (or its mapped error) and leaves no timer", () =>
    Effect.gen(function*() {
      timeouts = 0
      let signal: AbortSignal | undefined
      expect(yield* TimeLimit.promiseWithin("30 seconds", timedOut, failed, (given) => {
        signal = given
        return Promise.resolve("bytes")
      })).toBe("bytes")
      // Nothing is left to stop: the signal is not aborted (an abort costs a DOMException and an event per call).
      expect(signal?.aborted).toBe(false)
      expect(yield* Effect.flip(TimeLimit.promiseWithin("30 seconds", timedOut, failed, () => Promise.reject(new Error("EIO"))))).toEqual({ failed: "Error: EIO" })
      // Both timers were stopped: the limit passing later times nothing out.
      yield* TestClock.adjust("1 minute")
      expect(timeouts).toBe(0)
    }))

  it.effect("a cancel aborts the work and stops the timer", () =>
    Effect.gen(function*() {
      const work = controlled()
      const call = yield* Effect.fork(TimeLimit.promiseWithin("30 seconds", timedOut, failed, work.run))
      yield* TestClock.adjust("1 second")
      expect(work.signal()?.aborted).toBe(false)
      timeouts = 0
      expect(Exit.isInterrupted(yield* Fiber.interrupt(call))).toBe(true)
      expect(work.signal()?.aborted).toBe(true)
      yield* TestClock.adjust("1 minute")
      expect(timeouts).toBe(0)
    }))

  it.effect("a limit of zero fails at once, before the work is even waited for", () =>
    Effect.gen(function*() {
      const work = controlled()
      const call = yield* Effect.fork(TimeLimit.promiseWithin(0, timedOut, failed, work.run))
      yield* TestClock.adjust(0)
      expect(yield* Fiber.await(call)).toEqual(Exit.fail("timed out"))
    }))
})
