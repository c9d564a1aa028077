/**
 * review57a: the viewer's session page summed `turn.completed` alone, while the listing beside it (and
 * `SessionState`, the stores, the CLI) count compactions' summary requests too (`Session.usageChange`:
 * `session.compacted`, and since kernel44 a `compaction.failed` whose request returned) — a refused
 * summary's 5,000 tokens showed in the list and not on the page. Failed before: 100/10 against 5,100/11.
 */
import { describe, expect, it } from "vitest"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import * as Session from "../../src/domain/Session.js"
import * as SessionView from "../../src/domain/SessionView.js"

const at = (n: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, n)).toISOString()
const event = (sequence: number, type: string, payload: Record<string, unknown>, turnId?: string) =>
  ({ eventId: `evt_${sequence}`, sessionId: "sess_1", sequence, timestamp: at(sequence), type, payload, ...(turnId === undefined ? {} : { turnId }) }) as unknown as AgentEvent
const usage = (inputTokens: number, outputTokens: number) => ({ inputTokens, outputTokens })

describe("the viewer's session totals", () => {
  it("count what the listing counts: turns, compactions done and compactions refused after their request", () => {
    const events = [
      event(1, "session.created", { cwd: "/w", client: "test" }),
      event(2, "turn.started", { promptPreview: "p" }, "turn_1"),
      event(3, "user.message", { content: "p" }, "turn_1"),
      event(4, "turn.completed", { stopReason: "final", usage: usage(100, 10), cost: 0.5 }, "turn_1"),
      event(5, "compaction.started", { compactionId: "c1", reason: "manual", tokensBefore: 40 }),
      event(6, "session.compacted", { compactionId: "c1", reason: "manual", summary: "s", tokensBefore: 40, tokensAfter: 10, firstKeptSequence: 4, usage: usage(300, 3), cost: 0.25 }),
      event(7, "compaction.started", { compactionId: "c2", reason: "manual", tokensBefore: 40 }),
      event(8, "compaction.failed", { compactionId: "c2", errorCode: "empty_summary", usage: usage(5000, 1), cost: null, costUnknown: "their-model" })
    ]
    const view = SessionView.empty()
    for (const e of events) SessionView.step(view, e)
    const listed = { inputTokens: 0, outputTokens: 0 }
    for (const e of events) {
      const change = Session.usageChange(e)
      if (change !== undefined) {
        listed.inputTokens += change.usage.inputTokens
        listed.outputTokens += change.usage.outputTokens
      }
    }
    expect(listed).toEqual({ inputTokens: 5400, outputTokens: 14 })
    expect(view.totals).toMatchObject({ ...listed, cost: 0.75, costUnknown: ["their-model"] })
  })
})
