/**
 * The log of a fork (CONTRACT.md §8): `session.created {cwd, client, forkedFrom}`, a copy of the
 * source's events 2..atSequence re-stamped with the new session id and fresh event ids (turn ids,
 * sequences, timestamps and payloads as they were), then `session.forked`. The copy is the fork's
 * whole history, so the new log stands alone: its transcript, remembered permissions and queued
 * follow-ups are the source's at the fork point.
 *
 * @since 0.3.0
 * @internal
 */
import * as Either from "effect/Either"
import type { AgentEvent } from "../domain/AgentEvent.js"
import { InvalidInput } from "../domain/Errors.js"
import * as SessionState from "../domain/SessionState.js"

/**
 * Where a fork may start: a sequence after which no turn and no compaction is open (the end of a
 * closed turn, or a session-level event between turns). Without `atSequence`, the end of the last
 * closed turn — or of a manual compaction after it, so that the fork keeps the compacted context —
 * (1 when the session has none). A point inside an open turn or compaction, before 1 or past the
 * end is `InvalidInput`.
 */
export const forkPoint = (source: ReadonlyArray<AgentEvent>, atSequence: number | undefined): Either.Either<number, InvalidInput> => {
  const closedAt = new Set<number>([1])
  let lastClosedTurn = 1
  let state: SessionState.SessionState | undefined
  for (const event of source) {
    const next = state === undefined ? SessionState.start(event) : SessionState.reduce(state, event)
    if (Either.isLeft(next)) return Either.left(new InvalidInput({ field: "sessionId", detail: `the session's log cannot be read: ${next.left.message}` }))
    state = next.right
    if (state.openTurn === undefined && state.compaction === undefined) closedAt.add(event.sequence)
    if (event.type === "turn.completed" || ((event.type === "session.compacted" || event.type === "compaction.failed") && state.openTurn === undefined)) {
      lastClosedTurn = event.sequence
    }
  }
  if (atSequence === undefined) return Either.right(lastClosedTurn)
  const last = state?.lastSequence ?? 0
  if (!Number.isSafeInteger(atSequence) || atSequence < 1 || atSequence > last) {
    return Either.left(new InvalidInput({ field: "atSequence", detail: `must be a sequence of the session, 1..${last}` }))
  }
  if (!closedAt.has(atSequence)) {
    return Either.left(new InvalidInput({ field: "atSequence", detail: `sequence ${atSequence} is inside an open turn or compaction: fork at the end of a closed turn` }))
  }
  return Either.right(atSequence)
}

/** The fork's log, given the source up to the fork point, the new id, fresh event ids (one per event) and the time now. */
export const forkLog = (
  source: ReadonlyArray<AgentEvent>,
  atSequence: number,
  sessionId: string,
  eventIds: ReadonlyArray<string>,
  timestamp: string
): ReadonlyArray<AgentEvent> => {
  const created = source[0]!
  if (created.type !== "session.created") throw new Error("a log begins with session.created")
  const copied = source.slice(1, atSequence).map((event, i): AgentEvent => ({ ...event, id: eventIds[i + 1]!, sessionId }))
  return [
    {
      id: eventIds[0]!,
      sessionId,
      sequence: 1,
      timestamp,
      type: "session.created",
      payload: { cwd: created.payload.cwd, client: created.payload.client, forkedFrom: { sessionId: created.sessionId, sequence: atSequence } }
    },
    ...copied,
    {
      id: eventIds[atSequence]!,
      sessionId,
      sequence: atSequence + 1,
      timestamp,
      type: "session.forked",
      payload: { fromSessionId: created.sessionId, atSequence }
    }
  ]
}
