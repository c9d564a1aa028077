/** Events for the `/live` response tests: a `turn.started` of session `s` at a sequence. */
import type { AgentEvent } from "../../src/index.js"

export const liveEvent = (sequence: number): AgentEvent.AgentEvent =>
  ({
    id: `e${sequence}`,
    sessionId: "s",
    turnId: "t",
    sequence,
    timestamp: "2026-12-03T00:00:00.000Z",
    type: "turn.started",
    payload: { promptPreview: "go" }
  }) as AgentEvent.AgentEvent
