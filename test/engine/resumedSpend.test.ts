/**
 * What a resumed turn counts as already spent comes from its log. kernel44 made a compaction that
 * failed after its summary request returned record that request's usage (`compaction.failed.usage`)
 * and count it against the turn's budget, as `session.compacted`'s is; mend55kernel's resume read only
 * `session.compacted`, so a restart forgot those tokens. Both branches were right alone; merged, this
 * failed until `ResumedSpend` read both.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import * as ResumedSpend from "../../src/engine/ResumedSpend.js"
import type { EventStore } from "../../src/services/EventStore.js"

const at = (sequence: number, type: string, payload: Record<string, unknown>, turnId: string | undefined = "turn_1") =>
  ({ eventId: `evt_${sequence}`, sessionId: "sess_1", sequence, timestamp: "2026-12-07T00:00:00.000Z", type, payload, ...(turnId === undefined ? {} : { turnId }) }) as unknown as AgentEvent

const storeOf = (events: ReadonlyArray<AgentEvent>) => ({ read: () => Stream.fromIterable(events) }) as unknown as EventStore.Service

describe("ResumedSpend", () => {
  it.effect("counts a turn's finished and failed compactions' summaries, and only that turn's", () =>
    Effect.gen(function*() {
      const usage = (inputTokens: number) => ({ inputTokens, outputTokens: 10 })
      const spent = yield* ResumedSpend.read(storeOf([
        at(1, "turn.started", { promptPreview: "go" }),
        at(2, "model.usage", { usage: usage(100) }),
        at(3, "session.compacted", { compactionId: "c1", summary: "s", usage: usage(50) }),
        at(4, "compaction.failed", { compactionId: "c2", errorCode: "empty_summary", usage: usage(30) }),
        at(5, "compaction.failed", { compactionId: "c3", errorCode: "provider_failure" }),
        at(6, "compaction.failed", { compactionId: "c4", errorCode: "empty_summary", usage: usage(1000) }, "turn_0")
      ]), "sess_1", "turn_1")
      expect(spent.usage).toMatchObject({ inputTokens: 100, outputTokens: 10 })
      expect(spent.compacted).toMatchObject({ inputTokens: 80, outputTokens: 20 })
    }))

  // review60b: a hostile log's `childSessionId`s over-counted the tree's subagents against `maxSubagents`.
  describe("the subagents a tree started, from hostile logs", () => {
    const ev = (sessionId: string, sequence: number, type: string, payload: Record<string, unknown>) =>
      ({ eventId: `evt_${sessionId}_${sequence}`, sessionId, sequence, timestamp: "2026-12-07T00:00:00.000Z", type, payload, turnId: `turn_${sessionId}` }) as unknown as AgentEvent
    const logOf = (s: string, children: ReadonlyArray<string>) => [
      ev(s, 1, "turn.started", { promptPreview: "go" }),
      ...children.map((c, i) => ev(s, i + 2, "subagent.started", { toolCallId: `c${i}`, childSessionId: c, description: "d", cwd: "/", mode: "x" }))
    ]
    const treeOf = (logs: Record<string, ReadonlyArray<AgentEvent>>) => {
      const reads: Array<string> = []
      const store = {
        read: (id: string, o?: { fromSequence?: number }) => {
          reads.push(id)
          return Stream.fromIterable((logs[id] ?? []).filter((e) => e.sequence >= (o?.fromSequence ?? 1)))
        }
      } as unknown as EventStore.Service
      return { reads, store }
    }

    it.effect("a child naming its ancestor and itself counts each distinct subagent once", () =>
      Effect.gen(function*() {
        const { store } = treeOf({ root: logOf("root", ["a"]), a: logOf("a", ["root", "a", "b"]), b: logOf("b", []) })
        expect((yield* ResumedSpend.read(store, "root", "turn_root")).started).toBe(2)
      }))

    it.effect("two children naming one grandchild count it once", () =>
      Effect.gen(function*() {
        const { store } = treeOf({ root: logOf("root", ["a", "b"]), a: logOf("a", ["g"]), b: logOf("b", ["g"]), g: logOf("g", []) })
        expect((yield* ResumedSpend.read(store, "root", "turn_root")).started).toBe(3)
      }))

    it.effect("past the limit no more logs are read", () =>
      Effect.gen(function*() {
        const logs: Record<string, ReadonlyArray<AgentEvent>> = { root: logOf("root", ["w"]), w: logOf("w", Array.from({ length: 1000 }, (_, i) => `x${i}`)) }
        const { reads, store } = treeOf(logs)
        const spent = yield* ResumedSpend.read(store, "root", "turn_root", 1, 5)
        expect(spent.started).toBeGreaterThan(5)
        // root's log, w's first turn and its turn: none of the 1,000 grandchildren's.
        expect(reads.filter((id) => id.startsWith("x"))).toEqual([])
      }))
  })
})
