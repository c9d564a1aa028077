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
import { liveEvent } from "./liveEvents.js"

const event = liveEvent

/**
 * A Node response as `Live` sees it, which counts how often the keep-alive timer looked at it
 * (each tick reads `writableNeedDrain` once the response is open).
 */
const nodeResponse = () => {
  const written: Array<string> = []
  let onClose: (() => void) | undefined
  const state = { ended: false, destroyed: false, needDrain: false, looked: 0, armed: false }
  const direct: Live.DirectResponse = {
    get writableEnded() {
      return state.ended
    },
    get destroyed() {
      return state.destroyed
    },
    get writableNeedDrain() {
      state.looked++
      return state.needDrain
    },
    write: (bytes) => {
      written.push(Buffer.from(bytes).toString())
      return true
    },
    once: (_event, listener) => {
      state.armed = true
      onClose = listener
    }
  }
  return { direct, written, state, close: () => onClose?.() }
}

/** The body of a `/live` response over `events` (on a Node server when `direct` is given). */
const body = (events: Stream.Stream<AgentEvent.AgentEvent, string>, direct?: Live.DirectResponse) => {
  const response = Live.response(events, Duration.hours(1), direct)
  if (response.body._tag !== "Stream") throw new Error("not a stream")
  return response.body.stream as Stream.Stream<Uint8Array>
}

const text = (chunks: Chunk.Chunk<Uint8Array>) => Chunk.toReadonlyArray(chunks).map((bytes) => Buffer.from(bytes).toString()).join("")

describe.each([
  ["the in-process web handler's", () => undefined],
  ["a Node server's", () => nodeResponse().direct]
])("/live response's end on %s", (_, direct) => {
  it.scopedLive("a client gone mid-watch closes the watch, once, and the response's fiber ends", () =>
    Effect.gen(function*() {
      const closed = yield* Deferred.make<Exit.Exit<unknown, unknown>>()
      let closes = 0
      const watch = Stream.concat(Stream.make(event(1), event(2)), Stream.never).pipe(
        (stream) => Stream.ensuringWith(stream, (exit) => Effect.zipRight(Effect.sync(() => closes++), Deferred.succeed(closed, exit)))
      )
      // The client reads `: connected` and the first batch, then goes away (the body's run ends).
      const read = yield* body(watch, direct()).pipe(Stream.take(2), Stream.runCollect)
      expect(text(read)).toBe(": connected\n\n" + Live.encode(event(1)) + Live.encode(event(2)))
      yield* Deferred.await(closed)
      expect(closes).toBe(1)
    }))

  it.scopedLive("a watch that ends ends the response after its last bytes; one that fails too", () =>
    Effect.gen(function*() {
      const ended = yield* body(Stream.make(event(1)), direct()).pipe(Stream.runCollect)
      expect(text(ended)).toBe(": connected\n\n" + Live.encode(event(1)))
      const failed = yield* body(Stream.concat(Stream.make(event(1)), Stream.fail("the store failed")), direct()).pipe(Stream.runCollect)
      expect(text(failed)).toBe(": connected\n\n" + Live.encode(event(1)))
    }))
})

describe("/live keep-alive on a Node server", () => {
  /** Waits (polling) until `done` holds. */
  const until = (done: () => boolean) =>
    Effect.gen(function*() {
      while (!done()) yield* Effect.sleep(Duration.millis(1))
    })

  it.scopedLive("written to the response between batches once idle, after `: connected`; not while the socket is full", () =>
    Effect.gen(function*() {
      const node = nodeResponse()
      const response = Live.response(Stream.concat(Stream.make(event(1)), Stream.never), Duration.millis(1), node.direct)
      if (response.body._tag !== "Stream") throw new Error("not a stream")
      // The platform's part: each chunk of the body written to the response.
      yield* response.body.stream.pipe(
        Stream.runForEach((bytes) => Effect.sync(() => node.direct.write(bytes as Uint8Array))),
        Effect.forkScoped
      )
      yield* until(() => node.written.includes(Live.keepAliveComment))
      expect(node.written.slice(0, 2)).toEqual([": connected\n\n", Live.encode(event(1))])
      expect(node.written.slice(2).every((text) => text === Live.keepAliveComment)).toBe(true)
      // The socket full: the timer goes on ticking (it looks at the response) and writes nothing.
      node.state.needDrain = true
      const before = node.written.length
      const looked = node.state.looked
      yield* until(() => node.state.looked >= looked + 3)
      expect(node.written.length).toBe(before)
      node.state.needDrain = false
      yield* until(() => node.written.length > before)
      // The client gone: the timer is done.
      node.state.destroyed = true
      node.close()
    }))

  it.scopedLive("armed when the body's run starts: a body never run (a HEAD request) has no timer", () =>
    Effect.gen(function*() {
      const node = nodeResponse()
      const response = Live.response(Stream.never, Duration.hours(1), node.direct)
      expect(node.state.armed).toBe(false)
      if (response.body._tag !== "Stream") throw new Error("not a stream")
      yield* response.body.stream.pipe(Stream.take(1), Stream.runDrain)
      expect(node.state.armed).toBe(true)
    }))
})
