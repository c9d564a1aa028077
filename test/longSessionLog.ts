/**
 * A small hand-written log of the long-session events, for the adapters' tests (the ACP mapper, the
 * web viewer): a steered turn, a follow-up queued during it and then run as its own turn, one
 * queued and dropped, a fork marker — decoded with the schema — and the compaction events of
 * CONTRACT.md §8, built as plain objects so the tests do not depend on the schema's version.
 */
import * as Either from "effect/Either"
import { AgentEvent } from "../src/index.js"

export const cwd = "/tmp/effect-agent-long"

const meta = (sequence: number) => ({ id: `evt_${sequence}`, sessionId: "sess_1", timestamp: "1970-01-01T00:00:00.000Z", sequence })

/** Steer, follow-ups and fork, valid for `SessionState.replay`. */
export const steerAndFollowUps: ReadonlyArray<AgentEvent.AgentEvent> = [
  { sequence: 1, type: "session.created", payload: { cwd, client: "test" } },
  { sequence: 2, turnId: "turn_1", type: "turn.started", payload: { promptPreview: "start" } },
  { sequence: 3, turnId: "turn_1", type: "user.message", payload: { content: "start" } },
  { sequence: 4, type: "followup.queued", payload: { queueId: "fup_1", content: "then tidy up" } },
  { sequence: 5, turnId: "turn_1", type: "turn.steered", payload: { content: "also mention the weather" } },
  { sequence: 6, turnId: "turn_1", type: "model.delta", payload: { text: "sunny" } },
  { sequence: 7, turnId: "turn_1", type: "turn.completed", payload: { stopReason: "final" } },
  { sequence: 8, turnId: "turn_2", type: "turn.started", payload: { promptPreview: "then tidy up", queueId: "fup_1" } },
  { sequence: 9, turnId: "turn_2", type: "user.message", payload: { content: "then tidy up" } },
  { sequence: 10, turnId: "turn_2", type: "turn.completed", payload: { stopReason: "final" } },
  { sequence: 11, type: "followup.queued", payload: { queueId: "fup_2", content: "never mind" } },
  { sequence: 12, type: "followup.dropped", payload: { queueIds: ["fup_2"] } },
  { sequence: 13, type: "session.forked", payload: { fromSessionId: "sess_0", atSequence: 3 } }
].map((line) => Either.getOrThrow(AgentEvent.decodeJson(JSON.stringify({ ...meta(line.sequence), ...line }))))

const raw = (sequence: number, type: string, payload: object) =>
  ({ ...meta(sequence), turnId: "turn_3", type, payload }) as unknown as AgentEvent.AgentEvent

/** A compaction that succeeds, one that fails, one cancelled (following {@link steerAndFollowUps}). */
export const compactions: ReadonlyArray<AgentEvent.AgentEvent> = [
  raw(14, "compaction.started", { compactionId: "cmp_1", reason: "threshold", tokensBefore: 9000 }),
  raw(15, "session.compacted", { compactionId: "cmp_1", reason: "threshold", summary: "We renamed foo.", firstKeptSequence: 9, tokensBefore: 9000, tokensAfter: 1200 }),
  raw(16, "compaction.started", { compactionId: "cmp_2", reason: "manual", tokensBefore: 1300 }),
  raw(17, "compaction.failed", { compactionId: "cmp_2", errorCode: "rate_limited" }),
  raw(18, "compaction.started", { compactionId: "cmp_3", reason: "overflow", tokensBefore: 1300 }),
  raw(19, "compaction.failed", { compactionId: "cmp_3", errorCode: "cancelled" })
]
