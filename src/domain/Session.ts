/**
 * A session: one conversation bound for life to one working directory.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { Client } from "./AgentEvent.js"
import type { AgentEvent } from "./AgentEvent.js"
import type { SessionState } from "./SessionState.js"

/** A session, as read from its `session.created` event. */
export const Session = Schema.Struct({
  sessionId: Schema.String,
  cwd: Schema.String,
  client: Client,
  createdAt: Schema.String
})
/** A session, as read from its `session.created` event. */
export type Session = typeof Session.Type

/** What a session list shows of each session. */
export const SessionSummary = Schema.Struct({
  sessionId: Schema.String,
  cwd: Schema.String,
  client: Client,
  createdAt: Schema.String,
  lastActivityAt: Schema.String,
  turnCount: Schema.Int,
  lastSequence: Schema.Int
})
/** What a session list shows of each session. */
export type SessionSummary = typeof SessionSummary.Type

/** The session of a state. */
export const fromState = (state: SessionState): Session => ({
  sessionId: state.sessionId,
  cwd: state.cwd,
  client: state.client,
  createdAt: state.createdAt
})

/** The summary of a state. */
export const summaryOf = (state: SessionState): SessionSummary => ({
  ...fromState(state),
  lastActivityAt: state.lastActivityAt,
  turnCount: state.turnCount,
  lastSequence: state.lastSequence
})

/**
 * Folds one event into a summary, without validating the log: listing stays cheap, and a log that
 * does not begin with `session.created` has no summary.
 */
export const summarize = (summary: SessionSummary | undefined, event: AgentEvent): SessionSummary | undefined => {
  if (summary === undefined) {
    return event.type === "session.created"
      ? {
        sessionId: event.sessionId,
        cwd: event.payload.cwd,
        client: event.payload.client,
        createdAt: event.timestamp,
        lastActivityAt: event.timestamp,
        turnCount: 0,
        lastSequence: event.sequence
      }
      : undefined
  }
  return {
    ...summary,
    lastActivityAt: event.timestamp,
    lastSequence: event.sequence,
    turnCount: event.type === "turn.started" ? summary.turnCount + 1 : summary.turnCount
  }
}

/**
 * Session ids name files and keys: letters, digits, `_` and `-`, at most 128 characters. Anything
 * else (a path separator, `..`) is never a session.
 */
export const isValidId = (sessionId: string): boolean => /^[A-Za-z0-9_-]{1,128}$/.test(sessionId)
