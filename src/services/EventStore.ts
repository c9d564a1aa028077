/**
 * The event store port: appends and reads a session's events. Implementations: memory, JSONL files
 * (the embedded default) and SQLite.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import type * as Stream from "effect/Stream"
import type { AgentEvent } from "../domain/AgentEvent.js"
import { EventStoreFailure, type SessionBusy } from "../domain/Errors.js"
import type { SessionSummary } from "../domain/Session.js"

/** Options of {@link EventStore.Service.read}. */
export interface ReadOptions {
  /** Only events with this sequence or later. */
  readonly fromSequence?: number
}

/** A stored session that cannot be read: listed apart, so one damaged log never hides the others. */
export interface DamagedSession {
  readonly sessionId: string
  /** Why it cannot be read; names the file and line when it can. */
  readonly failure: EventStoreFailure
}

/** Every stored session: the readable ones, most recently active first, and the damaged ones. */
export interface Listing {
  readonly sessions: ReadonlyArray<SessionSummary>
  readonly damaged: ReadonlyArray<DamagedSession>
}

/** The event store port. */
export class EventStore extends Context.Tag("effect-agent/EventStore")<EventStore, EventStore.Service>() {}

/** The event store port. */
export declare namespace EventStore {
  /** What every event store does. */
  export interface Service {
    /**
     * Appends one event. Appends to one session are serialized, and an event whose sequence is not
     * the session's last sequence + 1 (or 1 for a new session) is refused with reason
     * `sequence_conflict`. On failure nothing is stored.
     */
    readonly append: (event: AgentEvent) => Effect.Effect<void, EventStoreFailure>
    /**
     * Appends a batch of one session's events, in order, as one step: the events must be of one
     * session with consecutive sequences, the first being the session's last sequence + 1. Anything
     * else is refused as a whole (`sequence_conflict`), nothing stored; on any failure nothing of
     * the batch is stored. An empty batch does nothing. Stores write a batch at once (one write,
     * one transaction), so committing a chunk of events costs about what one event does.
     */
    readonly appendAll: (events: ReadonlyArray<AgentEvent>) => Effect.Effect<void, EventStoreFailure>
    /** Streams a session's events in sequence order; an unknown session is an empty stream. */
    readonly read: (sessionId: string, options?: ReadOptions) => Stream.Stream<AgentEvent, EventStoreFailure>
    /** Summaries of every readable stored session, most recently active first (damaged ones left out: see `listing`). */
    readonly list: Effect.Effect<ReadonlyArray<SessionSummary>, EventStoreFailure>
    /** Summaries of the readable sessions and the damaged ones; fails only when the store itself cannot be listed. */
    readonly listing: Effect.Effect<Listing, EventStoreFailure>
    /**
     * `listing` narrowed to the sessions waiting for approval (`awaitingApproval` set), in the
     * listing's order, with the damaged sessions: what `effect-agent pending` reads. Optional: a
     * store offers it when it answers this for less than its whole listing (the SQL stores read
     * only the waiting sessions' rows instead of every session's); without it, filter `listing`.
     */
    readonly awaitingListing?: Effect.Effect<Listing, EventStoreFailure>
    /**
     * The session's last stored sequence when the store can tell without reading its log (`None`
     * when it cannot tell so): an engine holding a session it does not write asks it before reading
     * on from its own last sequence. Optional: a store whose read from a sequence reads only what
     * follows (the SQL stores, memory) has no need of it; JSONL reads its log's last line.
     */
    readonly lastSequence?: (sessionId: string) => Effect.Effect<Option.Option<number>>
    /**
     * Holds the session's writer lock for the scope: one process (one engine) drives a session at a
     * time. Fails `SessionBusy` naming the holder when a live one holds it, having changed nothing;
     * a lock left by a dead process is taken over. Appends do not check the lock (the sequence check
     * stays the fence): whoever writes takes it first.
     */
    readonly acquireWriter: (sessionId: string) => Effect.Effect<void, SessionBusy | EventStoreFailure, Scope.Scope>
  }
}

/** The failure every store returns for an event whose sequence is not `last + 1`. */
export const sequenceConflict = (event: AgentEvent, last: number, where: { readonly path?: string } = {}): EventStoreFailure =>
  new EventStoreFailure({
    reason: "sequence_conflict",
    operation: "append",
    sessionId: event.sessionId,
    sequence: event.sequence,
    detail: `expected sequence ${last + 1}, got ${event.sequence}`,
    ...where
  })

/**
 * Checks that a batch is one session's events with consecutive sequences, as `appendAll` requires:
 * the failure for the first event that breaks the run, or `undefined`.
 */
export const batchConflict = (events: ReadonlyArray<AgentEvent>): EventStoreFailure | undefined => {
  for (let i = 1; i < events.length; i++) {
    const event = events[i]!
    const previous = events[i - 1]!
    if (event.sessionId !== previous.sessionId) {
      return new EventStoreFailure({
        reason: "sequence_conflict",
        operation: "append",
        sessionId: event.sessionId,
        sequence: event.sequence,
        detail: `a batch holds events of one session: ${previous.sessionId} then ${event.sessionId}`
      })
    }
    if (event.sequence !== previous.sequence + 1) return sequenceConflict(event, previous.sequence)
  }
  return undefined
}

/** Most recently active first, then by id (code-unit order, the same in every locale), so listings are stable. */
export const byRecentActivity = (a: SessionSummary, b: SessionSummary): number =>
  a.lastActivityAt < b.lastActivityAt
    ? 1
    : a.lastActivityAt > b.lastActivityAt
    ? -1
    : a.sessionId < b.sessionId
    ? -1
    : a.sessionId > b.sessionId
    ? 1
    : 0
