/**
 * A `/live` response's end: the client going away closes the watch, once (its forked fiber
 * interrupted, the watch's finalizers run: the feed's membership, the span); a watch that ends or
 * fails ends the response after its last bytes. Each case waits for the watch's finalizer or the
 * body's end itself: a watch left open fails by the test's timeout.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Exit from "effect/Exit"
import * as Stream from "effect/Stream"
import type { AgentEvent } from "../../src/index.js"
import { Live } from "../../src/server.js"

const event = (sequence: number): AgentEvent.AgentEvent =>
  ({
    id: `e${sequence}`,
    sessionId: "s",
    turnId: "t",
    sequence,
    timestamp: "2026-12-03T00:00:00.000Z",
    type: "turn.started",
    payload: { promptPreview: "go" }
  }) as AgentEvent.AgentEvent

/** The body of a `/live` response over `events`. */
const body = (events: Stream.Stream<AgentEvent.AgentEvent, string>) => {
  const response = Live.response(events, Duration.hours(1))
  if (response.body._tag !== "Stream") throw new Error("not a stream")
  return response.body.stream as Stream.Stream<Uint8Array>
}

const text = (chunks: Chunk.Chunk<Uint8Array>) => Chunk.toReadonlyArray(chunks).map((bytes) => Buffer.from(bytes).toString()).join("")

describe("/live response's end", () => {
  it.scopedLive("a client gone mid-watch closes the watch, once, and the response's fiber ends", () =>
    Effect.gen(function*() {
      const closed = yield* Deferred.make<Exit.Exit<unknown, unknown>>()
      let closes = 0
      const watch = Stream.concat(Stream.make(event(1), event(2)), Stream.never).pipe(
        (stream) => Stream.ensuringWith(stream, (exit) => Effect.zipRight(Effect.sync(() => closes++), Deferred.succeed(closed, exit)))
      )
      // The client reads `: connected` and the first batch, then goes away (the body's run ends).
      const read = yield* body(watch).pipe(Stream.take(2), Stream.runCollect)
      expect(text(read)).toBe(": connected\n\n" + Live.encode(event(1)) + Live.encode(event(2)))
      yield* Deferred.await(closed)
      expect(closes).toBe(1)
    }))

  it.scopedLive("a watch that ends ends the response after its last bytes; one that fails too", () =>
    Effect.gen(function*() {
      const ended = yield* body(Stream.make(event(1))).pipe(Stream.runCollect)
      expect(text(ended)).toBe(": connected\n\n" + Live.encode(event(1)))
      const failed = yield* body(Stream.concat(Stream.make(event(1)), Stream.fail("the store failed"))).pipe(Stream.runCollect)
      expect(text(failed)).toBe(": connected\n\n" + Live.encode(event(1)))
    }))
})
