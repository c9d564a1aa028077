/**
 * The states a runner's reads fold from the store, kept between reads. A session's state is a fold
 * of its log, and its owner may be another runner: each read (`sessionState`, `pendingApprovals`,
 * and so the HTTP server's existence checks of `/live`, `/events`, a cancel, `GET /sessions/:id`)
 * folded the whole log again — 1.5–3.1 s for a 20 MB session on PostgreSQL, for every viewer. A
 * state read before is now read on from its last sequence (the store's ranged read, as an engine
 * catches up a session it does not write): every read still reads the store, so it never answers
 * a state older than what the store held when it was asked, but only what was appended since.
 *
 * Bounded: at most `maxSessions` states are kept (a few KB each: a state holds no transcript), the
 * least recently read let go first; one let go is folded from the whole log at its next read. A
 * state whose log does not follow it (a read that fails, an event the fold refuses) is let go and
 * folded again from the whole log.
 *
 * @since 0.14.0
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { EventStoreFailure, type EventStore, Session, SessionNotFound, SessionState } from "../index.js"

/** How many states are kept by default: as many sessions as an engine holds by default. */
export const defaultMaxSessions = 1024

interface Entry {
  state: SessionState.SessionState
  /** One catch-up at a time: the reads that wait take the state it brought, and read only what follows. */
  readonly lock: Effect.Semaphore
}

/** The states kept, and how a read gets one. */
export interface FoldedStates {
  /** The session's state as the store holds it now; `SessionNotFound` for a session it holds nothing of. */
  readonly get: (sessionId: string) => Effect.Effect<SessionState.SessionState, EventStoreFailure | SessionNotFound>
  /** How many states are kept. */
  readonly size: () => number
}

/** An `ImpossibleEvent` as the store's failure: the log cannot be folded. */
const corrupt = (sessionId: string, impossible: SessionState.ImpossibleEvent) =>
  new EventStoreFailure({ reason: "corrupt", operation: "read", sessionId, sequence: impossible.sequence, detail: impossible.message })

/** Folds what the store holds of a session after `held` (its whole log when undefined). */
const foldFrom = (store: EventStore.EventStore.Service, sessionId: string, held: SessionState.SessionState | undefined) =>
  SessionState.replayStream(held === undefined ? store.read(sessionId) : store.read(sessionId, { fromSequence: held.lastSequence + 1 }), held).pipe(
    Effect.catchTag("ImpossibleEvent", (impossible) => Effect.fail(corrupt(sessionId, impossible)))
  )

/** The kept states of `store`'s sessions, at most `maxSessions`. */
export const make = (store: EventStore.EventStore.Service, maxSessions = defaultMaxSessions): FoldedStates => {
  const max = Math.max(1, maxSessions)
  // Insertion order is recency order: a state read is moved to the end.
  const entries = new Map<string, Entry>()

  const keep = (sessionId: string, entry: Entry) => {
    entries.delete(sessionId)
    entries.set(sessionId, entry)
    for (const oldest of entries.keys()) {
      if (entries.size <= max) break
      entries.delete(oldest)
    }
  }

  /** The whole log folded, kept (a session with no log is not: it may be created). */
  const load = (sessionId: string) =>
    Effect.flatMap(foldFrom(store, sessionId, undefined), (state) => {
      if (state === undefined) return Effect.fail(new SessionNotFound({ sessionId }))
      keep(sessionId, { state, lock: Effect.unsafeMakeSemaphore(1) })
      return Effect.succeed(state)
    })

  /**
   * The kept state read on from its last sequence (nothing read when the store tells, without
   * reading, that nothing follows it). Taken under the entry's lock, so a read that waited reads
   * on from what the one before brought. One that cannot be read on is let go and loaded again.
   */
  const caughtUp = (sessionId: string, entry: Entry) =>
    entry.lock.withPermits(1)(
      Effect.suspend(() => {
        const held = entry.state
        return Effect.flatMap(store.lastSequence?.(sessionId) ?? Effect.succeedNone, (last) =>
          Option.contains(last, held.lastSequence)
            ? Effect.succeed(held)
            : Effect.map(foldFrom(store, sessionId, held), (state) => {
              entry.state = state ?? held
              return entry.state
            }))
      })
    ).pipe(
      Effect.tap(() => Effect.sync(() => entries.get(sessionId) === entry && keep(sessionId, entry))),
      Effect.catchAll(() =>
        Effect.suspend(() => {
          if (entries.get(sessionId) === entry) entries.delete(sessionId)
          return load(sessionId)
        })
      )
    )

  return {
    get: (sessionId) =>
      Effect.suspend(() => {
        if (!Session.isValidId(sessionId)) return Effect.fail(new SessionNotFound({ sessionId }))
        const entry = entries.get(sessionId)
        return entry === undefined ? load(sessionId) : caughtUp(sessionId, entry)
      }),
    size: () => entries.size
  }
}
