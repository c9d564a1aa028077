/**
 * `/live` on a Node server (`Live.fanOut`), over a session feed the test drives (the engine's
 * `Watchers` and an in-memory log) and responses that stand for Node's: a session's clients share
 * one watch, each commit's events are encoded once and written to every client (no watch, fiber
 * run or encoding of its own per client per commit); a client whose socket stops taking bytes is
 * written to no more past a bound, and once it drains it reads what it missed from the store and
 * follows again — every event once, in order — while the others go on.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Stream from "effect/Stream"
import * as Watchers from "../../src/engine/Watchers.js"
import type { AgentEvent } from "../../src/index.js"
import { Live } from "../../src/server.js"
import { liveEvent } from "./liveEvents.js"

/** A session's log and feed: `publish` stores a commit and hands it to the feed; `watch` is the engine's watch over them, counted. */
const session = (capacity = 4096) => {
  const log: Array<AgentEvent.AgentEvent> = []
  const feed = Watchers.make(capacity)
  const watches: Array<number> = []
  const read = (from: number) => Stream.suspend(() => Stream.fromIterable(log.filter((event) => event.sequence >= from)))
  const watch = (sessionId: string, from: number) =>
    Stream.unwrapScoped(Effect.map(Effect.zipLeft(feed.subscribe(sessionId), Effect.sync(() => watches.push(from))), (live) =>
      Watchers.watch(live, read(from), from, read)))
  const publish = (...events: ReadonlyArray<AgentEvent.AgentEvent>) => {
    log.push(...events)
    feed.publish("s", events)
  }
  return { watch, publish, watches }
}

/**
 * A Node response as the fan-out sees it. A stalled one holds what is written to it (its
 * `writableLength`) until `drain`. Each write's frames are checked as they come (`last`, and
 * `broken` once an id is not the next); `keep: false` keeps no bytes (for big events).
 */
const response = (keep = true) => {
  const written: Array<Uint8Array> = []
  const drains: Array<() => void> = []
  const state = { held: 0, stalled: false, maxHeld: 0, last: 1, broken: false }
  const direct: Live.FollowedResponse = {
    writableEnded: false,
    destroyed: false,
    get writableNeedDrain() {
      return state.held > 0
    },
    get writableLength() {
      return state.held
    },
    write: (bytes) => {
      if (keep) written.push(bytes)
      else {
        for (const match of Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("latin1").matchAll(/^id: (\d+)$/gm)) {
          if (Number(match[1]) !== state.last + 1) state.broken = true
          state.last = Number(match[1])
        }
      }
      if (state.stalled) state.held += bytes.length
      state.maxHeld = Math.max(state.maxHeld, state.held)
      return state.held === 0
    },
    once: (event, listener) => {
      if (event === "drain") drains.push(listener)
    },
    cork: () => undefined,
    uncork: () => undefined
  }
  const text = () => Buffer.concat(written).toString()
  return {
    direct,
    state,
    text,
    ids: () => Array.from(text().matchAll(/^id: (\d+)$/gm), (m) => Number(m[1])),
    drain: () => {
      state.stalled = false
      state.held = 0
      for (const listener of drains.splice(0)) listener()
    }
  }
}

const filler = "x".repeat(64 * 1024)

/** What `@effect/platform-node` does with a stream body: each chunk's buffers written, waiting for `drain` when a write says the socket is full. */
const platform = (body: ReturnType<Live.FanOut["response"]>, direct: Live.FollowedResponse) => {
  if (body.body._tag !== "Stream") throw new Error("not a stream")
  return Stream.runForEachChunk(body.body.stream as Stream.Stream<Uint8Array>, (chunk) => {
    let full = false
    for (const bytes of Chunk.toReadonlyArray(chunk)) full = !direct.write(bytes) || full
    return full ? Effect.async<void>((resume) => void direct.once("drain", () => resume(Effect.void))) : Effect.void
  })
}

/** Lets the fibers run until `done` holds (no clock: yields only). */
const until = (done: () => boolean) =>
  Effect.gen(function*() {
    for (let i = 0; !done(); i++) {
      if (i > 200_000) throw new Error("never came")
      yield* Effect.yieldNow()
    }
  })

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i)

describe("/live fan-out", () => {
  it.scopedLive("clients of a session share one watch, and each commit is encoded once whatever their number", () =>
    Effect.gen(function*() {
      const commits = 30
      for (const clients of [1, 40]) {
        const { publish, watch, watches } = session()
        publish(liveEvent(1))
        const fan = Live.fanOut(watch)
        const responses = Array.from({ length: clients }, () => response())
        const fibers = yield* Effect.forEach(responses, (r) => Effect.fork(platform(fan.response("s", 2, Duration.hours(1), r.direct), r.direct)))
        yield* until(() => fan.following("s") === clients)
        const before = Live.encoded()
        // One event a commit, each delivered before the next (a paced model's stream).
        for (let sequence = 2; sequence < 2 + commits; sequence++) {
          publish(liveEvent(sequence))
          yield* until(() => responses.every((r) => r.ids().length === sequence - 1))
        }
        expect(Live.encoded() - before).toBe(commits)
        // One watch of the session for all of them, from where they asked.
        expect(watches).toEqual([2])
        for (const r of responses) {
          expect(r.text()).toBe(": connected\n\n" + range(2, 1 + commits).map((s) => Live.encode(liveEvent(s))).join(""))
        }
        yield* Effect.forEach(fibers, Fiber.interrupt)
        // The last client gone, the shared watch ends.
        expect(fan.following("s")).toBe(0)
      }
    }))

  it.scopedLive("a stalled client is written to no more past the bound; drained, it reads the gap from the store and follows again", () =>
    Effect.gen(function*() {
      const frame = Live.message(liveEvent(10)).length
      const maxHeldBytes = 5 * frame
      // The feed keeps only a few events: the stalled client's gap is read from the log.
      const { publish, watch, watches } = session(4)
      publish(liveEvent(1))
      const fan = Live.fanOut(watch, { maxHeldBytes })
      const [stalled, ...readers] = Array.from({ length: 3 }, () => response())
      const fibers = yield* Effect.forEach([stalled!, ...readers], (r) => Effect.fork(platform(fan.response("s", 2, Duration.hours(1), r.direct), r.direct)))
      yield* until(() => fan.following("s") === 3)
      stalled!.state.stalled = true
      let sequence = 2
      for (; sequence < 60; sequence++) {
        publish(liveEvent(sequence))
        yield* until(() => readers.every((r) => r.ids().length === sequence - 1))
      }
      // Let go once it held more than the bound: what it holds stays under the bound and one batch, and the others were not held.
      expect(fan.following("s")).toBe(2)
      expect(stalled!.state.maxHeld).toBeLessThanOrEqual(maxHeldBytes + frame)
      const before = stalled!.ids()
      expect(before.length).toBeLessThan(20)
      expect(watches).toEqual([2])
      // It reads again: its own watch from its last event on (the gap from the store), then it follows again.
      stalled!.drain()
      yield* until(() => stalled!.ids().length === sequence - 2)
      expect(watches).toEqual([2, before.at(-1)! + 1])
      yield* until(() => fan.following("s") === 3)
      for (const end = sequence + 10; sequence < end; sequence++) {
        publish(liveEvent(sequence))
        yield* until(() => [stalled!, ...readers].every((r) => r.ids().length === sequence - 1))
      }
      for (const r of [stalled!, ...readers]) {
        expect(r.ids()).toEqual(range(2, sequence - 1))
        expect(r.text()).toBe(": connected\n\n" + range(2, sequence - 1).map((s) => Live.encode(liveEvent(s))).join(""))
      }
      yield* Effect.forEach(fibers, Fiber.interrupt)
      expect(fan.following("s")).toBe(0)
    }))

  // perf61serve: a client that joined a step behind the shared watch (hundreds connecting from the
  // session's start together, row 18) read the session from the store through a watch of its own,
  // each event encoded again for it, and closed that watch to follow.
  it.scopedLive("a client a batch behind the shared watch catches up from its recent batches, without a watch of its own", () =>
    Effect.gen(function*() {
      const { publish, watch, watches } = session()
      publish(liveEvent(1))
      const fan = Live.fanOut(watch)
      const first = response()
      const fibers = [yield* Effect.fork(platform(fan.response("s", 1, Duration.hours(1), first.direct, 1), first.direct))]
      yield* until(() => first.ids().length === 1)
      publish(liveEvent(2), liveEvent(3))
      yield* until(() => first.ids().length === 3)
      const encodedBefore = Live.encoded()
      const late = Array.from({ length: 10 }, () => response())
      for (const r of late) fibers.push(yield* Effect.fork(platform(fan.response("s", 1, Duration.hours(1), r.direct, 3), r.direct)))
      yield* until(() => late.every((r) => r.ids().length === 3))
      publish(liveEvent(4))
      yield* until(() => [first, ...late].every((r) => r.ids().length === 4))
      // One watch, and nothing encoded again for the late clients: only event 4, once.
      expect(watches).toEqual([1])
      expect(Live.encoded() - encodedBefore).toBe(1)
      expect(fan.following("s")).toBe(11)
      for (const r of [first, ...late]) expect(r.text()).toBe(": connected\n\n" + range(1, 4).map((s) => Live.encode(liveEvent(s))).join(""))
      yield* Effect.forEach(fibers, Fiber.interrupt)
    }))

  // perf61serve: a client resuming from past the session's end (a far-future `after=` or
  // `Last-Event-ID`) started the shared watch there, and every client that had the session's events
  // then read through a watch of its own for as long as that client stayed.
  it.scopedLive("a client resuming past the session's end does not keep the others off the shared watch", () =>
    Effect.gen(function*() {
      const { publish, watch, watches } = session()
      publish(liveEvent(1))
      const fan = Live.fanOut(watch)
      const far = response()
      // After event 999, where the session ends at 1.
      const fibers = [yield* Effect.fork(platform(fan.response("s", 1000, Duration.hours(1), far.direct, 1), far.direct))]
      yield* until(() => watches.length === 1)
      const readers = Array.from({ length: 20 }, () => response())
      for (const r of readers) fibers.push(yield* Effect.fork(platform(fan.response("s", 2, Duration.hours(1), r.direct, 1), r.direct)))
      for (let sequence = 2; sequence < 12; sequence++) {
        publish(liveEvent(sequence))
        yield* until(() => readers.every((r) => r.ids().length === sequence - 1))
      }
      // One watch of the session for all 21, from the session's end; the far client is written nothing yet.
      expect(watches).toEqual([2])
      expect(fan.following("s")).toBe(21)
      expect(far.ids()).toEqual([])
      for (const r of readers) expect(r.ids()).toEqual(range(2, 11))
      yield* Effect.forEach(fibers, Fiber.interrupt)
      expect(fan.following("s")).toBe(0)
    }))

  // perf61serve: each follower let go held up to `maxHeldBytes` (4 MiB) unsent until its client read
  // again; clients stalling at different points held different bytes, each its own 4 MiB (five
  // stalled 5 MiB apart: 16.3 MiB, where a client of a watch of its own holds one batch).
  it.scopedLive("clients that stall at different points hold at most the session's budget between them, beyond a batch each", () =>
    Effect.gen(function*() {
      const big = (sequence: number): AgentEvent.AgentEvent => {
        const event = liveEvent(sequence)
        return { ...event, payload: { promptPreview: filler } } as AgentEvent.AgentEvent
      }
      const frame = Live.message(big(1)).length
      const apart = Math.ceil((5 * 1024 * 1024) / frame)
      const { publish, watch } = session(4)
      publish(big(1))
      const fan = Live.fanOut(watch)
      const [reader, ...stallers] = Array.from({ length: 6 }, () => response(false))
      const all = [reader!, ...stallers]
      const fibers = yield* Effect.forEach(all, (r) => Effect.fork(platform(fan.response("s", 2, Duration.hours(1), r.direct, 1), r.direct)))
      yield* until(() => fan.following("s") === 6)
      let sequence = 2
      for (let stalls = 0; stalls <= stallers.length; stalls++) {
        // Each client stops reading 5 MiB of events after the one before it.
        if (stalls > 0) stallers[stalls - 1]!.state.stalled = true
        for (const end = sequence + apart; sequence < end; sequence++) {
          publish(big(sequence))
          yield* until(() => reader!.state.last === sequence)
        }
      }
      const held = stallers.reduce((sum, r) => sum + r.state.held, 0)
      // The session's budget (4 MiB) and what each was last written, not 4 MiB each.
      expect(held).toBeLessThanOrEqual(4 * 1024 * 1024 + stallers.length * frame)
      // Read again, each reads what it missed, every event once, in order.
      for (const r of stallers) r.drain()
      yield* until(() => all.every((r) => r.state.last === sequence - 1))
      for (const r of all) expect(r.state.broken).toBe(false)
      yield* Effect.forEach(fibers, Fiber.interrupt)
    }), 120_000)

  // review59e: the pause after a batch's writes waited on Effect's Clock; under a TestClock (an
  // embedder's test of `Live.fanOut`) writes that took a millisecond or more froze the shared watch.
  it.scoped("a follower whose writes take 2 ms still gets the next batch while the test clock stands still", () =>
    Effect.gen(function*() {
      const { publish, watch } = session()
      publish(liveEvent(1))
      const fan = Live.fanOut(watch)
      const r = response()
      const write = r.direct.write
      ;(r.direct as { write: (bytes: Uint8Array) => boolean }).write = (bytes) => {
        const start = performance.now()
        while (performance.now() - start < 2) {
          // a slow socket write
        }
        return write(bytes)
      }
      yield* Effect.fork(platform(fan.response("s", 2, Duration.hours(1), r.direct), r.direct))
      yield* until(() => fan.following("s") === 1)
      publish(liveEvent(2))
      yield* until(() => r.ids().length === 1)
      publish(liveEvent(3))
      yield* until(() => r.ids().length === 2)
      expect(r.ids()).toEqual([2, 3])
    }))
})
