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
})
