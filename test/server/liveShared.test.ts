/**
 * `/live`'s big batches: the clients that take the same batch share one encoding of it — the first
 * encodes it a piece at a time, the others wait for its bytes — and a client gone while it encodes
 * leaves the waiting ones to encode it themselves: each still gets the whole batch, byte for byte.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Stream from "effect/Stream"
import type { AgentEvent } from "../../src/index.js"
import { Live } from "../../src/server.js"
import { startIn } from "./harness.js"

const completed = (event: AgentEvent.AgentEvent) => event.type === "turn.completed"

/** The body of a `/live` response over `events`. */
const body = (events: Stream.Stream<AgentEvent.AgentEvent>) => {
  const response = Live.response(events, Duration.hours(1))
  if (response.body._tag !== "Stream") throw new Error("not a stream")
  return response.body.stream as Stream.Stream<Uint8Array>
}

/** What a body writes after its first comment, until `size` bytes. */
const collect = (stream: Stream.Stream<Uint8Array>, size: number) =>
  stream.pipe(
    Stream.drop(1), // ": connected"
    Stream.runFoldWhile(Buffer.alloc(0), (all) => all.length < size, (all, bytes) => Buffer.concat([all, bytes]))
  )

/** A stored turn of 1,000 deltas, the bytes its events make, and fresh copies of its events (encodings are cached by event object). */
const storedTurn = Effect.gen(function*() {
  const chunks = Array.from({ length: 1_000 }, (_, i) => `s${i} `)
  const { server } = yield* startIn({ responses: [{ chunks }] })
  const { sessionId } = yield* server.client.sessions.create({ payload: {} })
  yield* server.client.sessions.startTurn({ path: { id: sessionId }, payload: { message: "go" } })
  const stored = Chunk.toReadonlyArray(yield* server.engine.watchSession({ sessionId }).pipe(Stream.takeUntil(completed), Stream.runCollect))
  expect(stored.length).toBeGreaterThan(Live.eventsPerStep * 4)
  return {
    stored,
    bytesOf: (events: ReadonlyArray<AgentEvent.AgentEvent>) => Buffer.concat(events.map(Live.message)),
    batch: () => Chunk.unsafeFromArray(stored.map((event) => ({ ...event }) as AgentEvent.AgentEvent))
  }
})

const live = (events: Chunk.Chunk<AgentEvent.AgentEvent>) => Stream.concat(Stream.fromChunk(events), Stream.never)

describe("/live shared encoding", () => {
  it.scopedLive("clients taking the same big batch get the same bytes, also when the one encoding it goes away", () =>
    Effect.gen(function*() {
      const { batch, bytesOf, stored } = yield* storedTurn
      const expected = bytesOf(stored)

      // Three clients of one batch: one encoding, the same bytes for all.
      const shared = batch()
      const all = yield* Effect.forEach([1, 2, 3], () => collect(body(live(shared)), expected.length), { concurrency: "unbounded" })
      for (const bytes of all) expect(bytes.equals(expected)).toBe(true)

      // The first client goes away at every point of its work in turn (the fibers take turns one
      // yield at a time), so also while it encodes and the others wait: they still get every byte.
      for (let yields = 0; yields < 40; yields++) {
        const events = batch()
        const first = yield* Effect.fork(collect(body(live(events)), expected.length))
        const others = yield* Effect.fork(Effect.forEach([1, 2], () => collect(body(live(events)), expected.length), { concurrency: "unbounded" }))
        for (let i = 0; i < yields; i++) yield* Effect.yieldNow()
        yield* Fiber.interrupt(first)
        const bytes = yield* Fiber.join(others)
        for (const b of bytes) expect(b.equals(expected)).toBe(true)
      }
      // CPU-bound (a 1,000-delta turn encoded for 3 clients, 41 times): it took over vitest's
      // default 30 s at load 25 on 2 cores. The bound only catches a hang.
    }), 120_000)

  it.scopedLive("a client behind, whose batch starts with the same event as one being encoded, leaves the clients waiting for that one served", () =>
    Effect.gen(function*() {
      const { batch } = yield* storedTurn
      // Two clients take the session's batch; one that fell behind takes it with the next batch (the same first event, more events).
      const all = batch()
      const events = Chunk.toReadonlyArray(all)
      const first = Chunk.unsafeFromArray(events.slice(0, Math.floor(events.length / 2)))
      const expected = Buffer.concat(Chunk.toReadonlyArray(first).map(Live.message))
      const expectedAll = Buffer.concat(events.map(Live.message))
      const [a, b, behind] = yield* Effect.all([
        collect(body(live(first)), expected.length),
        collect(body(live(first)), expected.length),
        collect(body(live(all)), expectedAll.length)
      ], { concurrency: "unbounded" })
      expect(a.equals(expected)).toBe(true)
      expect(b.equals(expected)).toBe(true)
      expect(behind.equals(expectedAll)).toBe(true)
    }))
})
