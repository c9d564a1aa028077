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

/** What a {@link Planner} adds when it is done: the events closing a turn the kept ones leave open. */
export interface Closing {
  readonly closing: ReadonlyArray<AgentEvent.AgentEvent>
  readonly closedTurnId?: string
}

/**
 * The repair of a log's event lines (the header excluded) planned a line at a time, in file order:
 * a long log is never held whole (`repair` read every line into memory, then joined the new log into
 * one string: 3.1 GB for a 503 MB log, "Invalid string length" past 512 MB). `add` says whether a
 * line is kept; `finish` closes the turn the kept events leave open.
 */
export class Planner {
  kept = 0
  readonly dropped: Array<Dropped> = []
  private readonly secondTurns = new Set<string>()
  private state: SessionState.SessionState | undefined

  constructor(private readonly sessionId: string, readonly version: number) {}

  /** Plans the next line: the event it keeps, or undefined when it is dropped (recorded in `dropped`). */
  add(line: LogLines.Line): AgentEvent.AgentEvent | undefined {
    const { dropped, secondTurns, sessionId } = this
    if (!line.terminated) {
      dropped.push({ line: line.number, reason: "torn last line" })
      return undefined
    }
    const decoded = LogLines.decodeEvent(line.text, this.version)
    if (Either.isLeft(decoded)) {
      dropped.push({ line: line.number, reason: decoded.left })
      return undefined
    }
    const event = decoded.right
    const drop = (reason: string) => {
      // A turn begun at a sequence another event already holds is the second writer's turn.
      if (event.type === "turn.started") secondTurns.add(event.turnId)
      dropped.push({ line: line.number, sequence: event.sequence, reason })
      return undefined
    }
    if (event.sessionId !== sessionId) {
      dropped.push({ line: line.number, sequence: event.sequence, reason: `event of another session (${event.sessionId})` })
      return undefined
    }
    if ("turnId" in event && event.turnId !== undefined && secondTurns.has(event.turnId)) {
      dropped.push({ line: line.number, sequence: event.sequence, reason: `event of turn ${event.turnId}, begun by a second writer` })
      return undefined
    }
    const last = this.state?.lastSequence ?? 0
    if (event.sequence !== last + 1) return drop(event.sequence <= last ? `duplicate sequence ${event.sequence}` : `sequence ${event.sequence} does not follow ${last}`)
    const next = this.state === undefined ? SessionState.start(event) : SessionState.reduce(this.state, event)
    if (Either.isLeft(next)) return drop(next.left.message)
    this.state = next.right
    this.kept++
    return event
  }

  /** The events closing the turn the kept events leave open (only when something was dropped). */
  finish(fresh: Fresh): Closing {
    const { sessionId, state } = this
    const open = state?.openTurn
    if (this.dropped.length === 0 || state === undefined || open === undefined) return { closing: [] }
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
    return { closing, closedTurnId: open.turnId }
  }
}

/**
 * Plans the repair of a log's event lines (the header excluded), read as log format `version`.
 * A log that needs nothing gets a plan with no dropped lines and no closing events.
 */
export const plan = (sessionId: string, lines: ReadonlyArray<LogLines.Line>, version: number, fresh: Fresh): Plan => {
  const planner = new Planner(sessionId, version)
  const kept: Array<AgentEvent.AgentEvent> = []
  for (const line of lines) {
    const event = planner.add(line)
    if (event !== undefined) kept.push(event)
  }
  return { kept, dropped: planner.dropped, ...planner.finish(fresh) }
}
