/**
 * A watcher that falls behind: the session's feed is bounded, so a stalled consumer holds at most
 * 2 × `capacity` events; the oldest make way, and the gap they leave is read from the store — the
 * watcher still sees 1..n exactly once. Watchers share the feed: what a watcher takes after a stall
 * is one chunk.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
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
      const seen = yield* Watchers.watch(live, stored, 1, { read: fromStore, ticks: Stream.never, polling: () => false }).pipe(
        Stream.take(1_003),
        Stream.runCollect
      )
      expect(Chunk.toReadonlyArray(seen).map((e) => e.sequence)).toEqual(Array.from({ length: 1_003 }, (_, i) => i + 1))
      // The gap the feed let go (4..) came from one store read.
      expect(reads).toEqual([4])
    }))
})
