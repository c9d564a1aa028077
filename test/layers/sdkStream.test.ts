/**
 * `Support.fromSdk`: an SDK's async iterator as a stream — every event in order, however many arrive
 * before the engine takes any (more than its buffer holds, with no turn of the event loop between
 * them), and the iterator's failure after the events that came before it.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Chunk from "effect/Chunk"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import { ProviderFailure } from "../../src/domain/Errors.js"
import * as Support from "../../src/layers/providers/Support.js"
import { withJumpingClock } from "../clockJumps.js"

/** An SDK stream: `count` events, each a microtask after the last (never a macrotask), then `end`. */
const sdk = (count: number, end?: Error) => async (): Promise<AsyncIterable<number>> => ({
  async *[Symbol.asyncIterator]() {
    for (let i = 0; i < count; i++) yield i
    if (end !== undefined) throw end
  }
})

const stream = (open: () => Promise<AsyncIterable<number>>) =>
  Support.fromSdk({ open, toFailure: (error) => ProviderFailure.of("network", String(error)), idleTimeout: "1 minute" })

describe("Support.fromSdk", () => {
  it.live("hands over every event in order, more than its buffer holds arriving at once", () =>
    Effect.gen(function*() {
      const events = yield* Stream.runCollect(stream(sdk(10_000)))
      expect(Chunk.toReadonlyArray(events)).toEqual(Array.from({ length: 10_000 }, (_, i) => i))
    }))

  it.live("hands over the same to a consumer slower than the SDK", () =>
    Effect.gen(function*() {
      const seen: Array<number> = []
      yield* Stream.runForEachChunk(stream(sdk(9_000)), (chunk) =>
        Effect.zipRight(Effect.sleep("1 millis"), Effect.sync(() => seen.push(...chunk))))
      expect(seen).toEqual(Array.from({ length: 9_000 }, (_, i) => i))
    }))

  it.live("fails after the events that came before the failure", () =>
    Effect.gen(function*() {
      const seen: Array<number> = []
      const result = yield* Stream.runForEach(stream(sdk(5_000, new Error("reset"))), (n) => Effect.sync(() => seen.push(n))).pipe(Effect.either)
      expect(Either.isLeft(result) && result.left.reason).toBe("network")
      expect(seen).toEqual(Array.from({ length: 5_000 }, (_, i) => i))
    }))

  it.live("lets go of the SDK's iterator when the consumer leaves with the buffer full", () =>
    Effect.gen(function*() {
      // An endless response read while nobody takes: the buffer fills, and the read waits for room.
      let finished: () => void = () => {}
      const ended = new Promise<void>((resolve) => (finished = resolve))
      const open = async (signal: AbortSignal): Promise<AsyncIterable<number>> => ({
        async *[Symbol.asyncIterator]() {
          try {
            for (let i = 0;; i++) {
              if (signal.aborted) throw new Error("aborted")
              yield i
            }
          } finally {
            finished()
          }
        }
      })
      const first = yield* Stream.runHead(Support.fromSdk({ open, toFailure: (error) => ProviderFailure.of("network", String(error)), idleTimeout: "1 minute" }))
      expect(first._tag).toBe("Some")
      // The consumer is gone: the read must end (its iterator finished), not wait for room for ever.
      // (A bound only so that a regression fails rather than hangs.)
      const outcome = yield* Effect.promise(() => Promise.race([ended.then(() => "ended"), new Promise((resolve) => setTimeout(() => resolve("still waiting"), 10_000))]))
      expect(outcome).toBe("ended")
    }))

  it.live("ends with the vendor's failure when the request fails to open, and a defect when translating it throws", () =>
    Effect.gen(function*() {
      const refused = () => Promise.reject(new Error("connection refused"))
      const failed = yield* Stream.runCollect(stream(refused)).pipe(Effect.either)
      expect(Either.isLeft(failed) && failed.left.detail).toBe("Error: connection refused")
      const untranslatable = Support.fromSdk({
        open: refused,
        toFailure: () => {
          throw new Error("translator broke")
        },
        idleTimeout: "1 minute"
      })
      const exit = yield* Effect.exit(Stream.runCollect(untranslatable))
      expect(Exit.isFailure(exit) && Cause.isDie(exit.cause)).toBe(true)
    }))
})

describe("Support.fromSdk's idle timeout", () => {
  /** Two events, then a read that never ends (a connection gone silent); `aborted` once the request is. */
  const stallsAfterTwo = (aborted: { value: boolean }) => async (signal: AbortSignal): Promise<AsyncIterable<number>> => ({
    async *[Symbol.asyncIterator]() {
      yield 0
      yield 1
      await new Promise<void>((done) => signal.addEventListener("abort", () => done()))
      aborted.value = true
    }
  })
  const watched = (open: (signal: AbortSignal) => Promise<AsyncIterable<number>>, idleTimeout: Duration.DurationInput) =>
    Support.fromSdk({ open, toFailure: (error) => ProviderFailure.of("unknown", String(error)), idleTimeout })

  it.live("on the real clock (a timer re-armed in place): a stream that stalls mid-response fails stalled after its events, and the request is aborted", () =>
    Effect.gen(function*() {
      const aborted = { value: false }
      const seen: Array<number> = []
      const result = yield* Stream.runForEach(watched(stallsAfterTwo(aborted), "200 millis"), (n) => Effect.sync(() => seen.push(n))).pipe(Effect.either)
      expect(seen).toEqual([0, 1])
      expect(Either.isLeft(result) && [result.left.reason, result.left.detail]).toEqual(["network", "the response stream stalled: no event for 200ms"])
      yield* Effect.promise(async () => {
        while (!aborted.value) await new Promise((done) => setImmediate(done))
      })
    }))

  it.live("on the real clock: events that keep coming, each within the timeout, never trip it however long the response", () =>
    Effect.gen(function*() {
      const slow = async (): Promise<AsyncIterable<number>> => ({
        async *[Symbol.asyncIterator]() {
          for (let i = 0; i < 6; i++) {
            await new Promise((done) => setTimeout(done, 60))
            yield i
          }
        }
      })
      const events = yield* Stream.runCollect(watched(slow, "250 millis"))
      expect(Chunk.toReadonlyArray(events)).toEqual([0, 1, 2, 3, 4, 5])
    }))

  it.effect("on a test's Clock: the timeout is the clock's — moving it past the timeout fails the stalled stream", () =>
    Effect.gen(function*() {
      const seen: Array<number> = []
      const fiber = yield* Stream.runForEach(watched(stallsAfterTwo({ value: false }), "1 minute"), (n) => Effect.sync(() => seen.push(n))).pipe(Effect.either, Effect.fork)
      yield* Effect.promise(async () => {
        while (seen.length < 2) await new Promise((done) => setImmediate(done))
      })
      yield* TestClock.adjust("1 minute")
      const result = yield* Fiber.join(fiber)
      expect(Either.isLeft(result) && result.left.detail).toBe("the response stream stalled: no event for 1m")
    }))
})

/** A promise and what settles it (Node 20 has no `Promise.withResolvers`). */
const gate = () => {
  let resolve!: () => void
  const promise = new Promise<void>((settle) => (resolve = settle))
  return { promise, resolve }
}

describe("Support.fromSdk's stall watch across a step of the wall clock", () => {
  // The watch measures "no event for idleTimeout" on monotonic time: on the wall clock, a clock
  // stepped forward an hour in an ordinary gap between events failed the response as stalled.
  it.scoped("a gap shorter than the timeout, the wall clock stepped forward an hour in it: every event, no stall", () =>
    withJumpingClock(({ jump }) =>
      Effect.gen(function*() {
        const gates = [gate(), gate()]
        const afterSecond = gate()
        const open = async (): Promise<AsyncIterable<number>> => ({
          async *[Symbol.asyncIterator]() {
            yield 1
            await gates[0]!.promise
            yield 2
            // The stream has read the second event (and asked for the next) when this runs.
            afterSecond.resolve()
            await gates[1]!.promise
            yield 3
          }
        })
        const reading = yield* Effect.fork(Stream.runCollect(stream(open)))
        yield* TestClock.adjust("50 seconds")
        gates[0]!.resolve()
        yield* Effect.promise(() => afterSecond.promise)
        yield* jump("1 hour")
        // The watch wakes at one minute from the start: 10 seconds after the second event.
        yield* TestClock.adjust("15 seconds")
        gates[1]!.resolve()
        const events = yield* Fiber.join(reading)
        expect(Chunk.toReadonlyArray(events)).toEqual([1, 2, 3])
      })
    ))
})
