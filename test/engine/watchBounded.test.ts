/**
 * A watcher that falls behind: the session's feed is bounded, so a stalled consumer holds at most
 * 2 × `capacity` events; the oldest make way, and the gap they leave is read from the store — the
 * watcher still sees 1..n exactly once. Watchers share the feed: what a watcher takes after a stall
 * is one chunk.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import * as Watchers from "../../src/engine/Watchers.js"

const eventAt = (sequence: number) =>
  ({ id: `evt_${sequence}`, sessionId: "sess_1", turnId: "turn_1", sequence, timestamp: "t", type: "model.delta", payload: { text: "x" } }) as AgentEvent

describe("Watchers: a slow watcher", () => {
  it.scoped("holds at most twice the capacity of live events, and reads the gap from the store: every event once", () =>
    Effect.gen(function*() {
      const hub = Watchers.make(8)
      const log: Array<AgentEvent> = []
      const live = yield* hub.subscribe("sess_1")
      const other = yield* hub.subscribe("sess_1")
      // 1..3 are stored before the watcher reads; then 1,000 more arrive while nobody consumes.
      for (let sequence = 1; sequence <= 3; sequence++) log.push(eventAt(sequence))
      const reads: Array<number> = []
      const fromStore = (from: number) =>
        Stream.suspend(() => {
          reads.push(from)
          return Stream.fromIterable(log.filter((e) => e.sequence >= from))
        })
      const stored = Stream.fromIterable(log.slice())
      for (let sequence = 4; sequence <= 1_003; sequence++) {
        const event = eventAt(sequence)
        log.push(event)
        hub.publish("sess_1", [event])
      }
      // A second watcher, stalled as long: what it takes at once is what the feed kept, the newest events.
      const kept = Chunk.toReadonlyArray(yield* other.take)
      expect(kept.length).toBeGreaterThanOrEqual(8)
      expect(kept.length).toBeLessThanOrEqual(16)
      expect(kept.at(-1)!.sequence).toBe(1_003)
      const seen = yield* Watchers.watch(live, stored, 1, fromStore).pipe(
        Stream.take(1_003),
        Stream.runCollect
      )
      expect(Chunk.toReadonlyArray(seen).map((e) => e.sequence)).toEqual(Array.from({ length: 1_003 }, (_, i) => i + 1))
      // The gap the feed let go (4..) came from one store read.
      expect(reads).toEqual([4])
    }))

  it.scoped("keeps nothing once every watcher has taken every event, and lets a leaving laggard's events go", () =>
    Effect.gen(function*() {
      const hub = Watchers.make(8)
      const fast = yield* hub.subscribe("sess_1")
      const slowScope = yield* Scope.make()
      const slow = yield* hub.subscribe("sess_1").pipe(Scope.extend(slowScope))
      hub.publish("sess_1", [eventAt(1), eventAt(2), eventAt(3)])
      expect(hub.kept("sess_1")).toBe(3)
      expect(Chunk.toReadonlyArray(yield* fast.take).map((e) => e.sequence)).toEqual([1, 2, 3])
      // The slow watcher has not taken them: kept.
      expect(hub.kept("sess_1")).toBe(3)
      expect(Chunk.toReadonlyArray(yield* slow.take).map((e) => e.sequence)).toEqual([1, 2, 3])
      expect(hub.kept("sess_1")).toBe(0)
      hub.publish("sess_1", [eventAt(4)])
      yield* fast.take
      expect(hub.kept("sess_1")).toBe(1)
      // The slow one leaves without taking: nobody needs the event any more.
      yield* Scope.close(slowScope, Exit.void)
      expect(hub.kept("sess_1")).toBe(0)
      // A watcher interrupted while it waits is not woken, and the next one still is.
      const waiting = yield* Effect.fork(fast.take)
      yield* Effect.yieldNow()
      yield* Fiber.interrupt(waiting)
      const next = yield* Effect.fork(fast.take)
      yield* Effect.yieldNow()
      hub.publish("sess_1", [eventAt(5)])
      expect(Chunk.toReadonlyArray(yield* Fiber.join(next)).map((e) => e.sequence)).toEqual([5])
      expect(hub.kept("sess_1")).toBe(0)
    }))

  it.live("a session's poll reads on from what its watchers have seen, for all of them at once; a failed poll ends each watch once it has taken what was kept", () =>
    Effect.gen(function*() {
      const hub = Watchers.make<string>(8)
      const log = [eventAt(1), eventAt(2)]
      const reads: Array<number> = []
      let failing = false
      const poll: Watchers.Poll<string> = {
        interval: "5 millis",
        read: (from) =>
          Stream.suspend(() => {
            reads.push(from)
            return failing ? Stream.fail("the store is gone") : Stream.fromIterable(log.filter((e) => e.sequence >= from))
          }),
        polling: () => true
      }
      const first = yield* hub.subscribe("sess_1", poll)
      const second = yield* hub.subscribe("sess_1", poll)
      // Nothing is read before a watcher has read the store itself and said how far it got.
      yield* Effect.sleep("30 millis")
      expect(reads).toEqual([])
      first.seen(2)
      // Another process writes 3 and 4: one poll brings them to both watchers.
      log.push(eventAt(3), eventAt(4))
      expect(Chunk.toReadonlyArray(yield* first.take).map((e) => e.sequence)).toEqual([3, 4])
      expect(Chunk.toReadonlyArray(yield* second.take).map((e) => e.sequence)).toEqual([3, 4])
      expect(reads[0]).toBe(3)
      expect(reads.every((from) => from === 3 || from === 5)).toBe(true)
      failing = true
      expect(yield* Effect.flip(first.take)).toBe("the store is gone")
      expect(yield* Effect.flip(second.take)).toBe("the store is gone")
    }).pipe(Effect.scoped))

  it.live("a failed poll leaves the hub: a watcher that joins while the failed one is still open starts a fresh poll", () =>
    Effect.gen(function*() {
      const hub = Watchers.make<string>(8)
      const log = [eventAt(1), eventAt(2), eventAt(3)]
      const failing: Watchers.Poll<string> = { interval: "5 millis", read: () => Stream.fail("the store is gone"), polling: () => true }
      const working: Watchers.Poll<string> = {
        interval: "5 millis",
        read: (from) => Stream.suspend(() => Stream.fromIterable(log.filter((e) => e.sequence >= from))),
        polling: () => true
      }
      const first = yield* hub.subscribe("sess_1", failing)
      first.seen(1)
      expect(yield* Effect.flip(first.take)).toBe("the store is gone")
      // `first` has not left (its scope is open): the next watcher must not inherit its failure.
      const second = yield* hub.subscribe("sess_1", working)
      second.seen(1)
      expect(Chunk.toReadonlyArray(yield* second.take).map((e) => e.sequence)).toEqual([2, 3])
    }).pipe(Effect.scoped))

  it.live("the poll stops when the session's last watcher leaves", () =>
    Effect.gen(function*() {
      const hub = Watchers.make(8)
      let reads = 0
      const poll: Watchers.Poll<never> = {
        interval: "5 millis",
        read: () => Stream.suspend(() => {
          reads++
          return Stream.empty
        }),
        polling: () => true
      }
      const scope = yield* Scope.make()
      const first = yield* hub.subscribe("sess_1", poll).pipe(Scope.extend(scope))
      yield* hub.subscribe("sess_1", poll).pipe(Scope.extend(scope))
      first.seen(1)
      while (reads < 3) yield* Effect.sleep("5 millis")
      yield* Scope.close(scope, Exit.void)
      yield* Effect.sleep("20 millis")
      const after = reads
      yield* Effect.sleep("50 millis")
      expect(reads).toBe(after)
    }))
  it.scoped("a watcher that falls behind again after catching up reads each gap from the store, and takes the chunks between as they are", () =>
    Effect.gen(function*() {
      const hub = Watchers.make(8)
      const log: Array<AgentEvent> = []
      const reads: Array<number> = []
      const fromStore = (from: number) =>
        Stream.suspend(() => {
          reads.push(from)
          return Stream.fromIterable(log.filter((e) => e.sequence >= from))
        })
      const live = yield* hub.subscribe("sess_1")
      let sequence = 0
      const publish = (count: number) => {
        const batch = Array.from({ length: count }, () => eventAt(++sequence))
        log.push(...batch)
        hub.publish("sess_1", batch)
        return batch
      }
      const pull = yield* Stream.toPull(Watchers.watch(live, Stream.empty, 1, fromStore))
      const taken: Array<number> = []
      const chunks: Array<Chunk.Chunk<AgentEvent>> = []
      const takeUpTo = (upTo: number) =>
        Effect.gen(function*() {
          while (taken.at(-1) !== upTo) {
            const chunk = yield* pull
            chunks.push(chunk)
            taken.push(...Chunk.toReadonlyArray(chunk).map((e) => e.sequence))
          }
        })
      // Behind by 100 (the feed keeps 8–16): the gap from the store.
      publish(100)
      yield* takeUpTo(100)
      // Keeping up: each batch is the chunk published, as it is.
      const kept = publish(3)
      yield* takeUpTo(103)
      expect(Chunk.toReadonlyArray(chunks.at(-1)!)).toEqual(kept)
      publish(2)
      yield* takeUpTo(105)
      // Behind again, in two batches: a second gap, read from the store from where the watcher is.
      publish(50)
      publish(50)
      yield* takeUpTo(205)
      publish(1)
      yield* takeUpTo(206)
      expect(taken).toEqual(Array.from({ length: 206 }, (_, i) => i + 1))
      expect(reads.length).toBe(2)
      expect(reads[0]).toBe(1)
      expect(reads[1]).toBe(106)
    }))

  it.live("a watch fails with its session's poll once it has delivered what the feed kept", () =>
    Effect.gen(function*() {
      const hub = Watchers.make<string>(8)
      const log = [eventAt(1)]
      let failing = false
      const poll: Watchers.Poll<string> = {
        interval: "5 millis",
        read: (from) => Stream.suspend(() => (failing ? Stream.fail("the store is gone") : Stream.fromIterable(log.filter((e) => e.sequence >= from)))),
        polling: () => true
      }
      const live = yield* hub.subscribe("sess_1", poll)
      const seen: Array<number> = []
      const watching = yield* Effect.fork(
        Stream.runForEach(Watchers.watch(live, Stream.fromIterable(log.slice()), 1, poll.read), (e) => Effect.sync(() => seen.push(e.sequence)))
      )
      log.push(eventAt(2), eventAt(3))
      while (seen.length < 3) yield* Effect.sleep("5 millis")
      failing = true
      expect(yield* Effect.flip(Fiber.join(watching))).toBe("the store is gone")
      expect(seen).toEqual([1, 2, 3])
    }).pipe(Effect.scoped))
})
