/**
 * `run --follow-up`: the message is queued as a follow-up (`followup.queued`) instead of starting
 * a turn. This process then drives the session: the queue runs oldest first — at once when the
 * session is idle — and the command prints the turns from the next one to the turn of this message,
 * then exits with that turn's outcome.
 *
 * @since 0.3.0
 */
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import type { AgentEvent, SessionEngine } from "../index.js"

/** The events of the turns that run from now until this follow-up's turn has completed. */
export const stream = (engine: SessionEngine.SessionEngine.Service, sessionId: string, message: string) =>
  Stream.unwrap(Effect.gen(function*() {
    const from = (yield* engine.sessionState({ sessionId })).lastSequence + 1
    const { queueId } = yield* engine.followUp({ sessionId, message })
    let ours: string | undefined
    return engine.watchSession({ sessionId, fromSequence: from }).pipe(
      // Session-level events (the queue itself) are not part of a turn's output.
      Stream.filter((event): event is AgentEvent.TurnEvent => "turnId" in event),
      Stream.tap((event) => Effect.sync(() => {
        if (event.type === "turn.started" && event.payload.queueId === queueId) ours = event.turnId
      })),
      Stream.takeUntil((event) => event.type === "turn.completed" && event.turnId === ours),
      // Ctrl+C stops following: the turn running then is cancelled, as in a plain run.
      Stream.ensuringWith((exit) => exit._tag === "Failure" ? engine.cancelTurn({ sessionId }) : Effect.void)
    )
  }))

/**
 * Why `run --follow-up` cannot queue into a session another process drives, and where to queue it:
 * one process at a time writes a session's log (its lock or lease), and the follow-up queue is in
 * that log.
 */
export const busyMessage = (busy: string): string =>
  `${busy.replace(/; try again when that process ends$/, "")}. A follow-up is stored in the session's log, which only that process writes: queue it where the session is driven (">> message" in its chat, POST /sessions/<id>/followups on its serve), or run this again when that process ends`
