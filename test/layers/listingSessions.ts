/**
 * Sessions for the SQL listing's order tests (test/layers/sqlListingOrder.test.ts, the PostgreSQL
 * listing in postgresListingStart.integration.test.ts): finished turns, each on a model without a
 * price, the last event at a given second.
 */
import type { AgentEvent } from "../../src/domain/AgentEvent.js"

const at = (second: number) => `2026-01-01T00:00:${String(second).padStart(2, "0")}.000Z`

/** A session of finished turns, one per model (none priced), its last event at second `last`. */
export const finishedOn = (id: string, last: number, models: ReadonlyArray<string>): ReadonlyArray<AgentEvent> => {
  const events: Array<Record<string, unknown>> = [{ id: `${id}-1`, sessionId: id, sequence: 1, timestamp: at(1), type: "session.created", payload: { cwd: `/work/${id}`, client: "test" } }]
  models.forEach((model, t) => {
    const turnId = `turn_${t + 1}`
    events.push({ id: `${id}-${events.length + 1}`, sessionId: id, turnId, sequence: events.length + 1, timestamp: at(2), type: "turn.started", payload: { promptPreview: "p" } })
    events.push({
      id: `${id}-${events.length + 1}`,
      sessionId: id,
      turnId,
      sequence: events.length + 1,
      timestamp: t === models.length - 1 ? at(last) : at(2),
      type: "turn.completed",
      payload: { stopReason: "final", usage: { inputTokens: 10, outputTokens: 1 }, cost: null, costUnknown: model }
    })
  })
  return events as unknown as ReadonlyArray<AgentEvent>
}
