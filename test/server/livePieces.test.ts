/**
 * A big batch on a Node server goes to the client's socket a piece at a time: every write at most
 * `Live.bytesPerWrite`, whole events only (so a keep-alive comment between two writes splits none),
 * in order, once each — the bytes on the wire are the batch's — and the next piece only once the
 * socket has drained the one before. Each case waits for the condition itself (the body's fiber
 * waiting on `drain`), never for a time.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Stream from "effect/Stream"
import { Buffer } from "node:buffer"
import { EventEmitter } from "node:events"
import type { AgentEvent } from "../../src/index.js"
import { Live } from "../../src/server.js"
import { liveEvent } from "./liveEvents.js"

/** A Node response as `Live` sees it: its writes recorded, full (needing a drain) after each write while `full`. */
const nodeResponse = (full: boolean) => {
  const emitter = new EventEmitter()
  const writes: Array<Buffer> = []
  const state = { needDrain: false, destroyed: false }
  const direct: Live.DirectResponse = {
    writableEnded: false,
    get destroyed() {
      return state.destroyed
    },
    get writableNeedDrain() {
      return state.needDrain
    },
    write: (bytes) => {
      writes.push(Buffer.from(bytes))
      state.needDrain = full
      return !full
    },
    once: (event, listener) => emitter.once(event, listener),
    off: (event, listener) => emitter.off(event, listener)
  }
  const drain = () => {
    state.needDrain = false
    emitter.emit("drain")
  }
  return { direct, writes, drain, waitingForDrain: () => emitter.listenerCount("drain") }
}

/** What the platform does with a stream body: each chunk written, then (the socket full) wait for `drain`. */
const run = (body: Stream.Stream<Uint8Array>, direct: Live.DirectResponse) =>
  Stream.runForEach(body, (bytes) =>
    direct.write(bytes)
      ? Effect.void
      : Effect.async<void>((resume) => {
        const go = () => resume(Effect.void)
        direct.once("drain", go)
        return Effect.sync(() => direct.off("drain", go))
      }))

const bodyOf = (events: ReadonlyArray<AgentEvent.AgentEvent>, direct: Live.DirectResponse) => {
  const response = Live.response(Stream.fromIterable(events), Duration.hours(1), direct)
  if (response.body._tag !== "Stream") throw new Error("not a stream")
  return response.body.stream as Stream.Stream<Uint8Array>
}

/** A batch of `count` events whose encoding is several times `Live.bytesPerWrite`. */
const bigBatch = (count: number) => Array.from({ length: count }, (_, i) => liveEvent(i + 1))

const until = (done: () => boolean) =>
  Effect.gen(function*() {
    while (!done()) yield* Effect.yieldNow()
  })

describe("/live: a big batch on a Node server", () => {
  it.scopedLive("is written in pieces of at most bytesPerWrite, each whole events, in order: the batch's bytes", () =>
    Effect.gen(function*() {
      const events = bigBatch(3_000)
      const expected = Buffer.concat(events.map(Live.message))
      expect(expected.length).toBeGreaterThan(Live.bytesPerWrite * 4)
      const node = nodeResponse(false)
      yield* run(bodyOf(events, node.direct), node.direct)
      const [connected, ...batch] = node.writes
      expect(connected!.toString()).toBe(": connected\n\n")
      expect(Buffer.concat(batch).equals(expected)).toBe(true)
      expect(batch.length).toBeGreaterThan(1)
      for (const piece of batch) {
        expect(piece.length).toBeLessThanOrEqual(Live.bytesPerWrite)
        // Whole events: each piece starts with an event's id and ends with its blank line.
        expect(piece.subarray(0, 4).toString()).toBe("id: ")
        expect(piece.subarray(-2).toString()).toBe("\n\n")
      }
    }))

  it.scopedLive("writes the next piece only once the socket has drained the one before", () =>
    Effect.gen(function*() {
      const events = bigBatch(3_000)
      const expected = Buffer.concat(events.map(Live.message))
      const node = nodeResponse(true)
      const fiber = yield* Effect.fork(run(bodyOf(events, node.direct), node.direct))
      // `: connected` fills the socket: nothing more until it drains.
      yield* until(() => node.waitingForDrain() > 0)
      expect(node.writes.length).toBe(1)
      let written = 1
      while (Buffer.concat(node.writes.slice(1)).length < expected.length) {
        node.drain()
        // One more piece, then the body waits for the socket again.
        yield* until(() => node.writes.length > written && node.waitingForDrain() > 0)
        expect(node.writes.length).toBe(written + 1)
        written++
      }
      node.drain()
      yield* Fiber.join(fiber)
      expect(Buffer.concat(node.writes.slice(1)).equals(expected)).toBe(true)
      expect(written).toBeGreaterThan(2)
    }))

  it("cuts between events, an event larger than a piece alone; a small batch is one piece", () => {
    const small = bigBatch(3)
    const smallBytes = Buffer.concat(small.map(Live.message))
    expect(Live.piecesOf(Chunk.unsafeFromArray(small), smallBytes)).toEqual([smallBytes])
    const huge = { ...liveEvent(4), payload: { promptPreview: "x".repeat(Live.bytesPerWrite * 2) } } as AgentEvent.AgentEvent
    const mixed = [...bigBatch(3), huge, liveEvent(5)]
    const bytes = Buffer.concat(mixed.map(Live.message))
    const pieces = Live.piecesOf(Chunk.unsafeFromArray(mixed), bytes)
    expect(pieces.map((piece) => Buffer.from(piece).toString())).toEqual([
      Buffer.concat(mixed.slice(0, 3).map(Live.message)).toString(),
      Live.encode(huge),
      Live.encode(liveEvent(5))
    ])
  })
})
