/**
 * A watcher that falls behind: its live queue is bounded (sliding), so a stalled consumer holds at
 * most `capacity` events; the oldest make way, and the gap they leave is read from the store — the
 * watcher still sees 1..n exactly once.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import * as Stream from "effect/Stream"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import * as Watchers from "../../src/engine/Watchers.js"

const eventAt = (sequence: number) =>
  ({ id: `evt_${sequence}`, sessionId: "sess_1", turnId: "turn_1", sequence, timestamp: "t", type: "model.delta", payload: { text: "x" } }) as AgentEvent

describe("Watchers: a slow watcher", () => {
  it.scoped("holds at most its capacity of live events, and reads the gap from the store: every event once", () =>
    Effect.gen(function*() {
      const hub = Watchers.make(8)
      const log: Array<AgentEvent> = []
      const live = yield* hub.subscribe("sess_1")
      // 1..3 are stored before the watcher reads; then 1,000 more arrive while nobody consumes.
      for (let sequence = 1; sequence <= 3; sequence++) log.push(eventAt(sequence))
      const fromStore = (from: number) => Stream.suspend(() => Stream.fromIterable(log.filter((e) => e.sequence >= from)))
      const stored = Stream.fromIterable(log.slice())
      for (let sequence = 4; sequence <= 1_003; sequence++) {
        const event = eventAt(sequence)
        log.push(event)
        hub.publish("sess_1", [event])
      }
      expect(yield* Queue.size(live)).toBe(8)
      const seen = yield* Watchers.watch(live, stored, 1, { read: fromStore, ticks: Stream.never, polling: () => false }).pipe(
        Stream.take(1_003),
        Stream.runCollect
      )
      expect(Chunk.toReadonlyArray(seen).map((e) => e.sequence)).toEqual(Array.from({ length: 1_003 }, (_, i) => i + 1))
    }))
})
