/**
 * TurnSink: a turn's events on their way to its caller's stream — what the engine took from effect's
 * `Mailbox` before: everything handed over before the end (or the failure) is read before it, in
 * order, in chunks of what arrived since the last read; nothing handed over after the end.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Stream from "effect/Stream"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import { EventStoreFailure } from "../../src/domain/Errors.js"
import { TurnSink } from "../../src/engine/TurnSink.js"
import { stuckCuts } from "../interleavings.js"

/** A stand-in event: the sink hands events on and never reads them. */
const event = (sequence: number) => ({ sequence }) as unknown as AgentEvent
/** Whether a reader waits on the sink. */
const waiting = (sink: TurnSink) => (sink as unknown as { reader: unknown }).reader !== undefined
const sequences = (chunks: ReadonlyArray<Chunk.Chunk<AgentEvent>>) => chunks.map((chunk) => Chunk.toReadonlyArray(chunk).map((e) => e.sequence))

describe("TurnSink", () => {
  it.effect("what was handed over before the end is read before it, a chunk per read of what arrived since the last", () =>
    Effect.gen(function*() {
      const sink = new TurnSink()
      sink.offerAll([event(1), event(2)])
      sink.offerAll([event(3)])
      yield* sink.end
      sink.offerAll([event(4)])
      const chunks = yield* Stream.runCollect(Stream.fromChannel(sink.channel).pipe(Stream.chunks))
      expect(sequences(Chunk.toReadonlyArray(chunks))).toEqual([[1, 2, 3]])
    }))

  it.effect("a waiting reader is resumed by the next hand-over, and by the end", () =>
    Effect.gen(function*() {
      const sink = new TurnSink()
      const read = yield* Effect.fork(Stream.runCollect(Stream.fromChannel(sink.channel).pipe(Stream.chunks)))
      yield* Effect.yieldNow()
      sink.offerAll([event(1)])
      yield* Effect.yieldNow()
      sink.offerAll([event(2), event(3)])
      yield* Effect.yieldNow()
      yield* sink.end
      expect(sequences(Chunk.toReadonlyArray(yield* Fiber.join(read)))).toEqual([[1], [2, 3]])
    }))

  it.effect("a failure comes after what was handed over before it", () =>
    Effect.gen(function*() {
      const sink = new TurnSink()
      const failure = new EventStoreFailure({ reason: "unavailable", operation: "append", detail: "down" })
      sink.offerAll([event(1)])
      yield* sink.failCause(Cause.fail(failure))
      yield* sink.end
      const read: Array<number> = []
      const exit = yield* Effect.exit(Stream.runForEach(Stream.fromChannel(sink.channel), (e) => Effect.sync(() => read.push(e.sequence))))
      expect(read).toEqual([1])
      expect(exit).toEqual(Exit.fail(failure))
    }))

  it.effect("a reader that went away while it waited is not resumed; the next reader reads what came", () =>
    Effect.gen(function*() {
      const sink = new TurnSink()
      const first = yield* Effect.fork(Stream.runCollect(Stream.fromChannel(sink.channel)))
      yield* Effect.yieldNow()
      yield* Fiber.interrupt(first)
      sink.offerAll([event(1)])
      yield* sink.end
      const second = yield* Stream.runCollect(Stream.fromChannel(sink.channel))
      expect(Chunk.toReadonlyArray(second).map((e) => e.sequence)).toEqual([1])
    }))
})

describe("TurnSink.channelAfter: the ask as the channel's first step", () => {
  it.effect("what the ask handed over is the first read; what came with the end is read with it, the stream's last", () =>
    Effect.gen(function*() {
      const sink = new TurnSink()
      const asked = Effect.sync(() => {
        sink.offerAll([event(1), event(2)])
        return sink
      })
      const read = yield* Effect.fork(Stream.runCollect(Stream.fromChannel(TurnSink.channelAfter(asked)).pipe(Stream.chunks)))
      // The reader has taken what the ask handed over and waits.
      yield* Effect.repeat(Effect.yieldNow(), { until: () => waiting(sink) })
      expect(sink.ended).toBe(false)
      sink.offerAll([event(3)])
      yield* sink.end
      expect(sink.ended).toBe(true)
      expect(sequences(Chunk.toReadonlyArray(yield* Fiber.join(read)))).toEqual([[1, 2], [3]])
    }))

  it.effect("the ask's failure is the stream's, and a failure after hand-overs comes after them", () =>
    Effect.gen(function*() {
      const failure = new EventStoreFailure({ reason: "unavailable", operation: "append", detail: "down" })
      const refused = yield* Effect.exit(Stream.runCollect(Stream.fromChannel(TurnSink.channelAfter(Effect.fail(failure)))))
      expect(refused).toEqual(Exit.fail(failure))
      const sink = new TurnSink()
      sink.offerAll([event(1)])
      yield* sink.failCause(Cause.fail(failure))
      const read: Array<number> = []
      const exit = yield* Effect.exit(Stream.runForEach(Stream.fromChannel(TurnSink.channelAfter(Effect.succeed(sink))), (e) => Effect.sync(() => read.push(e.sequence))))
      expect(read).toEqual([1])
      expect(exit).toEqual(Exit.fail(failure))
    }))
})

describe("TurnSink, its reader cut anywhere", () => {
  // The hang of test/server/subagentSettings.integration.test.ts: the reader (a parent's `task` call
  // following its subagent) found nothing to read, was cut by the server's scheduler before it
  // waited, and the subagent's turn handed its last events over and ended in that gap: nobody was
  // waiting to be woken, and the reader then waited for ever (the parent's turn never ended).
  it("a hand-over and the end that come between the reader's check and its wait still reach it", () => {
    const read = (sink: TurnSink) => Stream.runDrain(Stream.fromChannel(sink.channel))
    expect(stuckCuts(() => {
      const sink = new TurnSink()
      return { waiter: read(sink), act: () => {
        sink.offerAll([event(1)])
        Effect.runSync(sink.end)
      } }
    })).toEqual([])
    expect(stuckCuts(() => {
      const sink = new TurnSink()
      sink.offerAll([event(1)])
      // The reader takes the first event, then waits for the end.
      return { waiter: read(sink), act: () => Effect.runSync(sink.end) }
    })).toEqual([])
  })
})
