/**
 * One session as the engine holds it while it is in use: the fold of its log (state and
 * transcript), the turn a driver runs on it, the calls waiting for the user, and the single
 * `commit` through which every event of the session is built, stored, folded and emitted — in that
 * order, a batch at a time.
 *
 * @since 0.1.0
 * @internal
 */
import * as Clock from "effect/Clock"
import type * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type * as Fiber from "effect/Fiber"
import type { AgentEvent, EventOfType, SessionEventDraft, TurnEventDraft } from "../domain/AgentEvent.js"
import type { EventStoreFailure } from "../domain/Errors.js"
import * as SessionState from "../domain/SessionState.js"
import type * as Transcript from "../domain/Transcript.js"
import { markBuilt } from "../services/BuiltBatches.js"
import type { EventStore } from "../services/EventStore.js"
import type { IdGenerator } from "../services/IdGenerator.js"
import { LiveTranscript } from "./LiveTranscript.js"
import type { Watchers } from "./Watchers.js"

/** What the engine knows of a session: the fold of its log. */
export interface Live {
  readonly state: SessionState.SessionState
  /** The transcript now (made when first read after a change). */
  readonly transcript: Transcript.Transcript
}

/** What a turn's driver shares with the engine: the one flag a cancel sets before it interrupts the driver. */
export interface TurnControl {
  /** Set before the driver is interrupted: from then on no model output is stored. */
  cancelRequested: boolean
  /**
   * Set when the driver has decided how its turn ends: a steer is refused from then on
   * (`NoTurnInProgress`) rather than accepted and never stored.
   */
  closing?: boolean
  /**
   * Set when the consumer of the driver's stream went away: what runs now is cancelled, and the
   * driver starts no further turn (after queued follow-ups, the consumer's own turn never starts).
   */
  abandoned?: boolean
}

/** The turn a driver fiber is running now. */
export interface ActiveTurn {
  /** Changes when one driver runs several turns (queued follow-ups before a new turn). */
  turnId: string
  readonly control: TurnControl
  /** What a cancel interrupts: the driver, or the queued follow-up's turn it runs now (see `runQueued`). */
  fiber: Fiber.RuntimeFiber<void, EventStoreFailure>
}

/** The user's answer to a paused call. */
export interface UserDecision {
  readonly decision: "allow" | "deny"
  readonly remember: boolean
  /** Stored with the answer: the same answer delivered again is then answered from the log. */
  readonly idempotencyKey?: string
}

/** A message sent into the running turn, waiting for the next step boundary. */
export interface Steer {
  readonly content: string
  readonly idempotencyKey?: string
}

/**
 * One live session. Its fields are plain: fibers of one process share a thread, and every change
 * is made by one synchronous step (`live` only by `commit`, under `writes`).
 */
export interface LiveSession {
  readonly sessionId: string
  /** The fold of the stored log: its state and transcript, as of the last commit. */
  readonly live: Live
  /** The state of the fold; replaced as a whole by each commit. */
  state: SessionState.SessionState
  /** The transcript of the fold, changed in place by each commit once its events are stored. */
  readonly transcript: LiveTranscript
  /** The running turn, if a driver owns one. A turn open in the log with no driver is dangling. */
  active: ActiveTurn | undefined
  /** Why an open turn without a driver was left open; used as its errorCode when it is closed. */
  danglingReason: string
  /**
   * Messages sent into the running turn (`steer`) and not yet stored: the driver stores them as
   * `turn.steered`, in arrival order, at its next step boundary.
   */
  readonly steers: Array<Steer>
  /** Calls the running driver is waiting on, by tool call id: completing one hands it the user's answer. */
  readonly approvals: Map<string, Deferred.Deferred<UserDecision>>
  /**
   * Messages with an idempotency key accepted and not stored yet (a steer before its step boundary,
   * an answer handed to a waiting call), by key: the same message delivered again meanwhile is
   * answered from here, as once stored it is answered from the log (`SessionState.applied`).
   */
  readonly accepted: Map<string, SessionState.AppliedMessage>
  /** Held to start a driver, and by the few writes made without one, so the two never overlap. */
  readonly control: Effect.Semaphore
  /** Held by each commit: batches of one session are stored one after the other. */
  readonly writes: Effect.Semaphore
}

/** The services a commit needs. */
export interface Ports {
  readonly store: EventStore.Service
  readonly ids: IdGenerator["Type"]
  /** Who watches the session's live events (`watchSession`). */
  readonly watchers: Watchers
}

/** A live session starting from a replayed state and transcript. */
export const make = (state: SessionState.SessionState, transcript: LiveTranscript): LiveSession => ({
  sessionId: state.sessionId,
  get live(): Live {
    return viewOf(this.state, this.transcript)
  },
  state,
  transcript,
  active: undefined,
  danglingReason: "interrupted",
  steers: [],
  approvals: new Map(),
  accepted: new Map(),
  control: Effect.unsafeMakeSemaphore(1),
  writes: Effect.unsafeMakeSemaphore(1)
})

/** What the message with this idempotency key did: stored in the log, or accepted and not stored yet. */
export const appliedMessage = (session: LiveSession, key: string | undefined): SessionState.AppliedMessage | undefined =>
  key === undefined ? undefined : SessionState.findApplied(session.live.state, key) ?? session.accepted.get(key)

/** A live session of a replayed log. */
export const replayed = (state: SessionState.SessionState, events: Iterable<AgentEvent>): LiveSession =>
  make(state, LiveTranscript.of(events))

/** A state with the live transcript: its snapshot is taken only when read. */
const viewOf = (state: SessionState.SessionState, transcript: LiveTranscript): Live => ({
  state,
  get transcript() {
    return transcript.snapshot()
  }
})

const timestamp = Effect.map(Clock.currentTimeMillis, (millis) => new Date(millis).toISOString())

/** Builds the `session.created` event, the only event outside a turn. */
export const sessionCreated = (
  ports: Ports,
  sessionId: string,
  payload: EventOfType<"session.created">["payload"]
): Effect.Effect<EventOfType<"session.created">> =>
  Effect.all({ id: ports.ids.next("event"), timestamp }).pipe(
    Effect.map(({ id, timestamp }) => ({ id, sessionId, sequence: 1, timestamp, type: "session.created" as const, payload }))
  )

/**
 * Whether a draft should be committed, decided under the session's lock on the state as folded so
 * far (the drafts of the batch before it included); the transcript is the one before the batch.
 */
export type Guard = (live: Live, draft: TurnEventDraft | SessionEventDraft) => boolean

/** Hands committed events to whoever consumes the turn. */
export type Emit = (events: ReadonlyArray<AgentEvent>) => Effect.Effect<unknown>

/** A batch stored as one step by a store that can (`appendAll`), else one event after the other. */
export const appendAll = (store: EventStore.Service, events: ReadonlyArray<AgentEvent>): Effect.Effect<void, EventStoreFailure> => {
  const batch = (store as { readonly appendAll?: (events: ReadonlyArray<AgentEvent>) => Effect.Effect<void, EventStoreFailure> }).appendAll
  return batch !== undefined ? batch(events) : Effect.forEach(events, store.append, { discard: true })
}

/** An id per event of a batch, in one call when the generator can. */
const idsFor = (ids: Ports["ids"], count: number): Effect.Effect<ReadonlyArray<string>> =>
  ids.nextMany !== undefined ? ids.nextMany("event", count) : Effect.all(Array.from({ length: count }, () => ids.next("event")))

/**
 * The fold of a batch's events into the state, one event at a time as `SessionState.reduce` does,
 * but paying once for a run of deltas while the model streams: a delta then moves nothing but the
 * sequence and the activity time (the reducer gives back the open turn unchanged), so once one
 * delta of a run has left the open turn as it was, the rest of the run is folded by reducing only
 * its last delta, from the state the others would have made.
 */
class StateFold {
  /** The last delta of the run not folded yet, and the open turn a delta left unchanged. */
  private pending: AgentEvent | undefined = undefined
  private streaming: SessionState.OpenTurn | undefined = undefined
  /** The last sequence taken, pending deltas included. */
  lastSequence: number

  constructor(private folded: SessionState.SessionState) {
    this.lastSequence = folded.lastSequence
  }

  get state(): SessionState.SessionState {
    const pending = this.pending
    if (pending !== undefined) {
      this.pending = undefined
      this.reduce({ ...this.folded, lastSequence: pending.sequence - 1 }, pending)
    }
    return this.folded
  }

  add(event: AgentEvent) {
    this.lastSequence = event.sequence
    if (event.type === "model.delta" && this.streaming !== undefined && this.folded.openTurn === this.streaming) {
      this.pending = event
      return
    }
    const before = this.state
    this.reduce(before, event)
    this.streaming = event.type === "model.delta" && this.folded.openTurn === before.openTurn ? before.openTurn : undefined
  }

  private reduce(state: SessionState.SessionState, event: AgentEvent) {
    const next = SessionState.reduce(state, event)
    // The engine only builds legal events; an illegal one is a bug, not a condition to handle.
    if (Either.isLeft(next)) throw next.left
    this.folded = next.right
  }
}

/**
 * Commits a batch of a turn's drafts: under the session's lock, each draft the guard lets through
 * becomes an event (an id, sequence = last + 1, one timestamp from `Clock` for the batch), the
 * batch is appended to the store as one step, folded into the live state and transcript, handed
 * to the watchers, then emitted. A failed append changes nothing, so the next batch reuses the
 * sequences and the log has no gap. Returns the events committed (none when the guard refused
 * them all). Uninterruptible: a batch is either wholly committed or not at all.
 */
export const commit = (
  ports: Ports,
  session: LiveSession,
  /** The turn of the drafts; undefined for session-level drafts, which carry no turnId. */
  turnId: string | undefined,
  drafts: ReadonlyArray<TurnEventDraft | SessionEventDraft>,
  emit: Emit,
  guard?: Guard
): Effect.Effect<ReadonlyArray<AgentEvent>, EventStoreFailure> =>
  session.writes.withPermits(1)(Effect.gen(function*() {
    const at = yield* timestamp
    const { sessionId } = session
    const fold = new StateFold(session.state)
    // What a guard sees: the state folded so far, made only if the guard reads it.
    const view: Live | undefined = guard === undefined ? undefined : {
      get state() {
        return fold.state
      },
      get transcript() {
        return session.transcript.snapshot()
      }
    }
    const events: Array<{ id: string } & AgentEvent> = []
    let state: SessionState.SessionState
    try {
      for (const draft of drafts) {
        // Judged on the state the drafts before it make: a tool call id repeated within a batch is a repeat.
        if (guard !== undefined && !guard(view!, draft)) continue
        const sequence = fold.lastSequence + 1
        // The id is set once the batch is known; the keys keep the order every event is written in.
        const event = (turnId === undefined
          ? { id: "", sessionId, sequence, timestamp: at, type: draft.type, payload: draft.payload }
          : { id: "", sessionId, turnId, sequence, timestamp: at, type: draft.type, payload: draft.payload }) as { id: string } & AgentEvent
        fold.add(event)
        events.push(event)
      }
      state = fold.state
    } catch (impossible) {
      return yield* Effect.die(impossible)
    }
    if (events.length === 0) return events
    // Ids are taken once the batch is known, so a refused draft uses no id (the fold does not read ids).
    const ids = yield* idsFor(ports.ids, events.length)
    for (let i = 0; i < events.length; i++) events[i]!.id = ids[i]!
    // One event or many, a batch: a provider's chunk is usually one delta, and it takes the store's fast path too.
    yield* appendAll(ports.store, markBuilt(events)).pipe(
      // No stack trace: this span is on the hot path, once per batch.
      Effect.withSpan("effect-agent.store.append", {
        captureStackTrace: false,
        attributes: { sessionId, turnId: turnId ?? "", events: events.length, firstSequence: events[0]!.sequence }
      })
    )
    session.state = state
    for (const event of events) session.transcript.add(event)
    ports.watchers.publish(sessionId, events)
    yield* emit(events)
    return events as ReadonlyArray<AgentEvent>
  })).pipe(Effect.uninterruptible)
