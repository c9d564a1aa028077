/**
 * Folding a session's log into the engine's live state as the store hands it over: a whole log when a
 * session is loaded, or only what was appended after a state already held when the engine takes the
 * session's writer lock (another process wrote until it let go). Each chunk is folded whole before
 * anything changes, then taken at once: a reader never sees a state and a transcript of different
 * points of the log, and a chunk that does not follow changes nothing.
 *
 * @since 0.10.0
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import { EventStoreFailure, SessionNotFound } from "../domain/Errors.js"
import * as SessionState from "../domain/SessionState.js"
import type { EventStore } from "../services/EventStore.js"
import * as LiveSession from "./LiveSession.js"
import { LiveTranscript } from "./LiveTranscript.js"
import * as Pulled from "./Pulled.js"

const continueReading = Effect.succeed(true)

/**
 * Reads the session's events after `held` (from its first when undefined) and folds them, a chunk at
 * a time, into the state handed to `take` and into `transcript`. Fails `corrupt` naming the first
 * event that does not follow (a gap, a sequence out of order, an event the fold refuses), with the
 * chunks before it taken. Returns the last state taken (`held` when nothing was appended).
 */
const foldInto = (
  store: EventStore.Service,
  sessionId: string,
  held: SessionState.SessionState | undefined,
  transcript: LiveTranscript,
  take: (state: SessionState.SessionState) => void
): Effect.Effect<SessionState.SessionState | undefined, EventStoreFailure> =>
  Effect.suspend(() => {
    let folded = held
    const read = held === undefined ? store.read(sessionId) : store.read(sessionId, { fromSequence: held.lastSequence + 1 })
    // Pulled in this fiber: a stream's run would fork one per load (see `Pulled`).
    return Pulled.forEachChunk(read, (chunk) => {
      let next = folded
      for (const event of chunk) {
        const state = next === undefined ? SessionState.start(event) : SessionState.reduce(next, event)
        if (Either.isLeft(state)) {
          return Effect.fail(
            new EventStoreFailure({ reason: "corrupt", operation: "read", sessionId, sequence: state.left.sequence, detail: state.left.message })
          )
        }
        next = state.right
      }
      for (const event of chunk) transcript.add(event)
      folded = next
      if (next !== undefined) take(next)
      return continueReading
    }).pipe(Effect.map(() => folded))
  })

/** Loads a session by folding its log as it is read: the whole log is never held at once. */
export const load = (store: EventStore.Service, sessionId: string): Effect.Effect<LiveSession.LiveSession, EventStoreFailure | SessionNotFound> =>
  Effect.suspend(() => {
    const transcript = new LiveTranscript()
    return Effect.flatMap(
      foldInto(store, sessionId, undefined, transcript, () => {}),
      (folded) => folded === undefined ? Effect.fail(new SessionNotFound({ sessionId })) : Effect.succeed(LiveSession.make(folded, transcript))
    )
  })

/**
 * Brings a held session up to the end of its log: reads only the events after its last sequence
 * (the store's ranged read; none when the store tells, without reading, that nothing follows it) and folds them into it in place. The log is append-only (a rewind, a
 * compaction, a fork each append events or start another log), so what was held is a prefix of it;
 * a failure (a read that fails, an event that does not follow the held state) leaves the session
 * part-way and is the caller's cue to load the session again from the whole log.
 */
export const catchUp = (store: EventStore.Service, session: LiveSession.LiveSession): Effect.Effect<void, EventStoreFailure> =>
  Effect.flatMap(store.lastSequence?.(session.sessionId) ?? Effect.succeedNone, (last) =>
    // Nothing appended, as the store tells without reading the log: nothing to read.
    Option.contains(last, session.state.lastSequence)
      ? Effect.void
      : Effect.asVoid(foldInto(store, session.sessionId, session.state, session.transcript, (state) => {
        session.state = state
      })))
