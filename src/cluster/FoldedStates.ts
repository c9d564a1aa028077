/**
 * The states a runner's reads fold from the store, kept between reads. A session's state is a fold
 * of its log, and its owner may be another runner: each read (`sessionState`, `pendingApprovals`,
 * and so the HTTP server's existence checks of `/live`, `/events`, a cancel, `GET /sessions/:id`)
 * folded the whole log again — 1.5–3.1 s for a 20 MB session on PostgreSQL, for every viewer. A
 * state read before is now read on from its last sequence (the store's ranged read, as an engine
 * catches up a session it does not write): every read still reads the store, so it never answers
 * a state older than what the store held when it was asked, but only what was appended since.
 *
 * The ranged read starts at the kept state's own last event, read again: it must be the event the
 * state was folded to (its sequence and id). When it is not — the log was deleted, or replaced by
 * another process, so that it is shorter or another log — the kept state is let go and the whole log
 * folded again: a deleted log answers `SessionNotFound`, never the state it had.
 *
 * Bounded twice: at most `maxSessions` states, and at most `maxBytes` of them as estimated (see
 * {@link estimatedBytes}: a state holds no transcript, but an open turn holds its calls' arguments
 * and the follow-ups queued, so one state can weigh MBs), the least recently read let go first; one
 * let go is folded from the whole log at its next read. A state whose log does not follow it (a read
 * that fails, an event the fold refuses) is let go and folded again from the whole log.
 *
 * One fold at a time per session: reads of a session not kept yet that come together wait for the
 * first one's fold and take its state (then read on from it), rather than each folding the whole log.
 *
 * @since 0.14.0
 * @internal
 */
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { type AgentEvent, EventStoreFailure, type EventStore, Session, SessionNotFound, SessionState } from "../index.js"

/** How many states are kept by default: as many sessions as an engine holds by default. */
export const defaultMaxSessions = 1024

/** How many bytes of states (as estimated) are kept by default. */
export const defaultMaxBytes = 64 * 1024 * 1024

interface Entry {
  /** Undefined until its first fold ends (or after one that failed). */
  state: SessionState.SessionState | undefined
  /** The id of the state's last event: the event a read from its last sequence must find first. */
  lastId: string
  /** What the events folded since its open turn started hold, as estimated ({@link contentBytes}); 0 with no open turn. */
  turnBytes: number
  /** The state's estimated size, as counted in the total. */
  bytes: number
  /** One fold at a time: the reads that wait take the state it brought, and read only what follows. */
  readonly lock: Effect.Semaphore
}

/** The states kept, and how a read gets one. */
export interface FoldedStates {
  /** The session's state as the store holds it now; `SessionNotFound` for a session it holds nothing of. */
  readonly get: (sessionId: string) => Effect.Effect<SessionState.SessionState, EventStoreFailure | SessionNotFound>
  /** How many states are kept. */
  readonly size: () => number
  /** The estimated bytes of the states kept. */
  readonly bytes: () => number
}

/** An `ImpossibleEvent` as the store's failure: the log cannot be folded. */
const corrupt = (sessionId: string, impossible: SessionState.ImpossibleEvent) =>
  new EventStoreFailure({ reason: "corrupt", operation: "read", sessionId, sequence: impossible.sequence, detail: impossible.message })

/** The log no longer holds the event a kept state was folded to: it was deleted or replaced. */
class Replaced extends Data.TaggedError("Replaced")<{}> {}

/** Events whose content the state does not keep (streamed text, progress, a call's result): they weigh nothing in it. */
const notKept: ReadonlySet<string> = new Set([
  "model.delta",
  "model.thinking_delta",
  "model.thinking_block",
  "model.retry",
  "context.built",
  "tool.progress",
  "tool.completed",
  "tool.failed",
  "subagent.progress",
  "model.usage",
  "cache.break"
])

/** Roughly what a JSON value takes in memory: its strings' characters twice, and a few words per value. */
const jsonBytes = (value: unknown): number => {
  if (typeof value === "string") return 16 + value.length * 2
  if (value === null || typeof value !== "object") return 8
  let bytes = 32
  if (Array.isArray(value)) for (const item of value) bytes += 8 + jsonBytes(item)
  else for (const key in value) bytes += 8 + key.length * 2 + jsonBytes((value as Record<string, unknown>)[key])
  return bytes
}

/** What an event folded into an open turn may add to the state: its payload (a call's arguments, a follow-up's text), as estimated. */
const contentBytes = (event: AgentEvent.AgentEvent): number => notKept.has(event.type) ? 0 : jsonBytes(event.payload)

/**
 * A state's estimated size: a fixed part, its idempotency keys and follow-ups, and `turnBytes` — what
 * the events folded since its open turn started hold (an overestimate: a call's later versions and
 * ended calls counted too, never less than the turn holds).
 */
export const estimatedBytes = (state: SessionState.SessionState, turnBytes: number): number => {
  let bytes = 2048 + state.applied.length * 160 + state.remembered.length * 160 + turnBytes
  for (const followUp of state.followUps) bytes += 64 + followUp.content.length * 2
  return bytes
}

interface Folded {
  readonly state: SessionState.SessionState | undefined
  /** The id of the last event folded. */
  readonly lastId: string
  readonly turnBytes: number
}

/**
 * Folds what the store holds of a session: its whole log when `held` is undefined, else what follows
 * `held`, read from `held`'s own last event, which must be there as it was (else `Replaced`).
 */
const foldFrom = (store: EventStore.EventStore.Service, sessionId: string, held: Folded | undefined) =>
  Effect.suspend(() => {
    let state = held?.state
    let turnBytes = held?.turnBytes ?? 0
    let lastId = held?.lastId ?? ""
    // The held state's last event, still to be seen first.
    let expected = held?.state
    const events = expected === undefined ? store.read(sessionId) : store.read(sessionId, { fromSequence: expected.lastSequence })
    return Stream.runForEachChunk(events, (chunk): Effect.Effect<void, EventStoreFailure | Replaced> => {
      for (const event of chunk) {
        if (expected !== undefined) {
          if (event.sequence !== expected.lastSequence || event.id !== lastId) return Effect.fail(new Replaced())
          expected = undefined
          continue
        }
        const next = state === undefined ? SessionState.start(event) : SessionState.reduce(state, event)
        if (Either.isLeft(next)) return Effect.fail(corrupt(sessionId, next.left))
        state = next.right
        lastId = event.id
        turnBytes = state.openTurn === undefined ? 0 : turnBytes + contentBytes(event)
      }
      return Effect.void
    }).pipe(Effect.flatMap((): Effect.Effect<Folded, Replaced> => expected !== undefined ? Effect.fail(new Replaced()) : Effect.succeed({ state, lastId, turnBytes })))
  })

export interface Options {
  /** At most this many states kept (default {@link defaultMaxSessions}). */
  readonly maxSessions?: number | undefined
  /** At most this many bytes of states kept, as estimated (default {@link defaultMaxBytes}). */
  readonly maxBytes?: number | undefined
}

/** The kept states of `store`'s sessions, at most `maxSessions` of them and `maxBytes` in all. */
export const make = (store: EventStore.EventStore.Service, options: Options | number = {}): FoldedStates => {
  const { maxBytes = defaultMaxBytes, maxSessions = defaultMaxSessions } = typeof options === "number" ? { maxSessions: options } : options
  const max = Math.max(1, maxSessions)
  // Insertion order is recency order: a state read is moved to the end.
  const entries = new Map<string, Entry>()
  let total = 0

  const remove = (sessionId: string, entry: Entry) => {
    if (entries.get(sessionId) !== entry) return
    entries.delete(sessionId)
    total -= entry.bytes
  }

  /** The entry made the most recent, its size counted again; the least recent let go past either bound. */
  const keep = (sessionId: string, entry: Entry, bytes: number) => {
    remove(sessionId, entry)
    entry.bytes = bytes
    entries.set(sessionId, entry)
    total += bytes
    for (const [oldest, kept] of entries) {
      if (entries.size <= max && total <= maxBytes) break
      remove(oldest, kept)
    }
  }

  const settle = (entry: Entry, folded: Folded) => {
    entry.state = folded.state
    entry.turnBytes = folded.turnBytes
    entry.lastId = folded.lastId
    return folded.state
  }

  /** The whole log folded into the entry (a session with no log is not found). */
  const whole = (sessionId: string, entry: Entry) =>
    // A whole log has no held event to find: never `Replaced`.
    Effect.flatMap(Effect.catchTag(foldFrom(store, sessionId, undefined), "Replaced", Effect.die), (folded) => {
      const state = settle(entry, folded)
      return state === undefined ? Effect.fail(new SessionNotFound({ sessionId })) : Effect.succeed(state)
    })

  /**
   * The entry's state read on from its last sequence (nothing read when the store tells, without
   * reading, that nothing follows it), or the whole log folded when it holds none yet. Taken under
   * the entry's lock, so a read that waited reads on from what the one before brought. A state that
   * cannot be read on is let go and the whole log folded again.
   */
  const caughtUp = (sessionId: string, entry: Entry) =>
    entry.lock.withPermits(1)(
      Effect.suspend(() => {
        const held = entry.state
        if (held === undefined) return whole(sessionId, entry)
        return Effect.flatMap(store.lastSequence?.(sessionId) ?? Effect.succeedNone, (last) =>
          Option.contains(last, held.lastSequence)
            ? Effect.succeed(held)
            : foldFrom(store, sessionId, { state: held, lastId: entry.lastId, turnBytes: entry.turnBytes }).pipe(
              Effect.map((folded) => settle(entry, folded) ?? held),
              Effect.catchAll(() => Effect.suspend(() => (entry.state = undefined, whole(sessionId, entry))))
            ))
      })
    ).pipe(
      Effect.tap((state) => Effect.sync(() => entries.get(sessionId) === entry && keep(sessionId, entry, estimatedBytes(state, entry.turnBytes)))),
      Effect.tapError(() => Effect.sync(() => remove(sessionId, entry)))
    )

  return {
    get: (sessionId) =>
      Effect.suspend(() => {
        if (!Session.isValidId(sessionId)) return Effect.fail(new SessionNotFound({ sessionId }))
        let entry = entries.get(sessionId)
        if (entry === undefined) {
          // Kept at once, holding nothing yet: reads that come before its fold ends wait for it.
          entry = { state: undefined, lastId: "", turnBytes: 0, bytes: 0, lock: Effect.unsafeMakeSemaphore(1) }
          keep(sessionId, entry, 0)
        }
        return caughtUp(sessionId, entry)
      }),
    size: () => entries.size,
    bytes: () => total
  }
}
