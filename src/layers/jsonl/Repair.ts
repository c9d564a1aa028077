/**
 * Repairing a JSONL log that two writers appended to at once (before writer locks existed), or
 * that holds lines no reader accepts: which events to keep, which to drop, and how to close a turn
 * the kept events leave open. Pure: the store does the reading and the atomic rewrite.
 *
 * "The first writer's events": the log is read in file order and an event is kept only if it
 * follows the kept ones as the projections demand (sequence = last + 1, a legal transition of the
 * open turn). A second `turn.started` at a sequence already taken means a second writer began its
 * own turn there: every event of that turn is dropped, wherever it appears. What is left is a valid,
 * gap-free log of what the first writer wrote; a turn it leaves open (the first writer failed on a
 * conflict, or was still running) is closed `interrupted`, as crash repair does.
 *
 * @since 0.1.0
 * @internal
 */
import * as Either from "effect/Either"
import type * as AgentEvent from "../../domain/AgentEvent.js"
import * as SessionState from "../../domain/SessionState.js"
import * as LogLines from "./LogLines.js"

/** A line the repair leaves out, and why. */
export interface Dropped {
  readonly line: number
  readonly sequence?: number
  readonly reason: string
}

/** What the repair keeps, drops and adds. */
export interface Plan {
  readonly kept: ReadonlyArray<AgentEvent.AgentEvent>
  readonly dropped: ReadonlyArray<Dropped>
  /** Events closing the turn the kept events leave open (only when something was dropped). */
  readonly closing: ReadonlyArray<AgentEvent.AgentEvent>
  /** The turn closed as interrupted, if any. */
  readonly closedTurnId?: string
}

/** How closing events get their ids and timestamp. */
export interface Fresh {
  readonly id: () => string
  readonly timestamp: string
}

/**
 * Plans the repair of a log's event lines (the header excluded), read as log format `version`.
 * A log that needs nothing gets a plan with no dropped lines and no closing events.
 */
export const plan = (sessionId: string, lines: ReadonlyArray<LogLines.Line>, version: number, fresh: Fresh): Plan => {
  const kept: Array<AgentEvent.AgentEvent> = []
  const dropped: Array<Dropped> = []
  const secondTurns = new Set<string>()
  let state: SessionState.SessionState | undefined
  for (const line of lines) {
    if (!line.terminated) {
      dropped.push({ line: line.number, reason: "torn last line" })
      continue
    }
    const decoded = LogLines.decodeEvent(line.text, version)
    if (Either.isLeft(decoded)) {
      dropped.push({ line: line.number, reason: decoded.left })
      continue
    }
    const event = decoded.right
    const drop = (reason: string) => {
      // A turn begun at a sequence another event already holds is the second writer's turn.
      if (event.type === "turn.started") secondTurns.add(event.turnId)
      dropped.push({ line: line.number, sequence: event.sequence, reason })
    }
    if (event.sessionId !== sessionId) {
      dropped.push({ line: line.number, sequence: event.sequence, reason: `event of another session (${event.sessionId})` })
      continue
    }
    if ("turnId" in event && event.turnId !== undefined && secondTurns.has(event.turnId)) {
      dropped.push({ line: line.number, sequence: event.sequence, reason: `event of turn ${event.turnId}, begun by a second writer` })
      continue
    }
    const last = state?.lastSequence ?? 0
    if (event.sequence !== last + 1) {
      drop(event.sequence <= last ? `duplicate sequence ${event.sequence}` : `sequence ${event.sequence} does not follow ${last}`)
      continue
    }
    const next = state === undefined ? SessionState.start(event) : SessionState.reduce(state, event)
    if (Either.isLeft(next)) {
      drop(next.left.message)
      continue
    }
    state = next.right
    kept.push(event)
  }
  const open = state?.openTurn
  if (dropped.length === 0 || state === undefined || open === undefined) return { kept, dropped, closing: [] }
  // Closed as the engine's crash repair closes a dangling turn: its compaction, its open calls, then the turn.
  const closing: Array<AgentEvent.AgentEvent> = []
  let sequence = state.lastSequence
  const base = () => ({ id: fresh.id(), sessionId, turnId: open.turnId, sequence: ++sequence, timestamp: fresh.timestamp })
  if (state.compaction !== undefined) {
    closing.push({ ...base(), type: "compaction.failed", payload: { compactionId: state.compaction.compactionId, errorCode: "interrupted" } })
  }
  for (const call of open.toolCalls) {
    closing.push({
      ...base(),
      type: "tool.failed",
      payload: { toolCallId: call.toolCallId, errorCode: "interrupted", message: "The tool call did not finish: interrupted." }
    })
  }
  closing.push({ ...base(), type: "turn.completed", payload: { stopReason: "error", errorCode: "interrupted" } })
  return { kept, dropped, closing, closedTurnId: open.turnId }
}
