/**
 * One session as the engine holds it while it is in use: the fold of its log (state and
 * transcript), who drives it (see `SessionDriver`), and the single `commit` through which every event
 * of the session is built, stored, folded and handed to the watchers — in that order, a batch at a
 * time.
 *
 * @since 0.1.0
 * @internal
 */
import * as Effect from "effect/Effect"
import type { AgentEvent, EventOfType, SessionEventDraft, TurnEventDraft } from "../domain/AgentEvent.js"
import type { EventStoreFailure } from "../domain/Errors.js"
import * as SessionState from "../domain/SessionState.js"
import type * as Transcript from "../domain/Transcript.js"
import { DriverLock } from "./DriverLock.js"
import { LiveTranscript } from "./LiveTranscript.js"
import * as OwnedSpan from "./OwnedSpan.js"
import type { Services } from "./Services.js"
import type { Slot } from "./SessionDriver.js"
import type { TurnSink } from "./TurnSink.js"

/** What the engine knows of a session: the fold of its log. */
export interface Live {
  readonly state: SessionState.SessionState
  /** The transcript now (made when first read after a change). */
  readonly transcript: Transcript.Transcript
}

/**
 * One live session. Its fields are plain: fibers of one process share a thread, and every change
 * is made by one synchronous step (`state` and `transcript` only by `commit`, under `writes`).
 */
export interface LiveSession {
  readonly sessionId: string
  /** The fold of the stored log: its state and transcript, as of the last commit. */
  readonly live: Live
  /** The state of the fold; replaced as a whole by each commit. */
  state: SessionState.SessionState
  /** The transcript of the fold, changed in place by each commit once its events are stored. */
  readonly transcript: LiveTranscript
  /** Who drives the session: changed by `SessionDriver` alone. */
  readonly driver: Slot
  /** Held by each commit: batches of one session are stored one after the other. */
  readonly writes: WriteLock
}

/**
 * The lock each commit holds: batches of one session are stored one after the other, in the order
 * their commits asked for it. Taken and let go without an effect of its own when nobody waits (the
 * usual case: one turn commits at a time), which a semaphore's acquire/release machinery would cost
 * on every batch. Only used by `commit`, whose whole work is uninterruptible, so a holder always
 * lets go and a waiter is never interrupted while it waits.
 */
export class WriteLock {
  private held = false
  private readonly waiting: Array<() => void> = []

  /**
   * Runs `effect` holding the lock (waiting for it), and lets go however it ends. Uninterruptible
   * as the commit is, so letting go needs no finalizer of its own (`Effect.ensuring`'s region):
   * the match around `effect` always runs.
   */
  holding<A, E>(effect: Effect.Effect<A, E>): Effect.Effect<A, E> {
    return Effect.suspend(() => {
      if (!this.held) {
        this.held = true
        return this.lettingGo(effect)
      }
      return Effect.zipRight(this.wait, this.lettingGo(effect))
    })
  }

  private lettingGo<A, E>(effect: Effect.Effect<A, E>): Effect.Effect<A, E> {
    return Effect.matchCauseEffect(effect, {
      onFailure: (cause) => {
        this.release()
        return Effect.failCause(cause)
      },
      onSuccess: (value) => {
        this.release()
        return Effect.succeed(value)
      }
    })
  }

  /** Waits until a holder hands the lock over (it stays held: no one else takes it in between). */
  private readonly wait: Effect.Effect<void> = Effect.async<void>((resume) => {
    // Looked at again where nothing can come between the look and the wait: the waiter's fiber may be
    // cut after `holding` found the lock held (the server's scheduler yields a fiber whenever its time
    // slice is used), and the holder let go meanwhile with nobody waiting.
    if (!this.held) {
      this.held = true
      return resume(Effect.void)
    }
    this.waiting.push(() => resume(Effect.void))
  })

  private release(): void {
    const next = this.waiting.shift()
    if (next === undefined) this.held = false
    else next()
  }
}

/**
 * A live session as the engine holds it. A class, not an object literal with a getter: a literal's
 * getter is a new function each time the literal is made, so V8 gives every such object a dictionary
 * of its properties instead of a hidden class (`%HasFastProperties` false), and every read of
 * `state`, `transcript` or `writes` — a dozen a commit — was a hash lookup. The getter is the
 * prototype's here, shared by every session, and its fields are fast properties.
 */
class HeldSession implements LiveSession {
  readonly sessionId: string
  readonly driver: Slot = { run: undefined, danglingReason: "interrupted", lock: new DriverLock(), holders: 0, queuing: undefined }
  readonly writes = new WriteLock()
  /** The view `live` gave out last, kept while the state is the one it was made of. */
  private view: View | undefined = undefined

  constructor(public state: SessionState.SessionState, readonly transcript: LiveTranscript) {
    this.sessionId = state.sessionId
  }

  /** One view a state: read about six times a step, each read made a view of its own. */
  get live(): Live {
    const view = this.view
    return view !== undefined && view.state === this.state ? view : (this.view = new View(this.state, this.transcript))
  }
}

/**
 * A state with the live transcript, whose snapshot is taken only when read. A class for the reason
 * `HeldSession` is one: made as a literal with a getter, each view had a dictionary of its properties
 * (≈ 0.6 µs to make, against a few nanoseconds).
 */
class View implements Live {
  constructor(readonly state: SessionState.SessionState, private readonly held: LiveTranscript) {}

  get transcript(): Transcript.Transcript {
    return this.held.snapshot()
  }
}

/** What a commit's guard sees: the state as the batch's drafts before it fold it (a class, as `View`). */
class FoldView implements Live {
  constructor(private readonly fold: SessionState.Folder, private readonly held: LiveTranscript) {}

  get state(): SessionState.SessionState {
    return this.fold.state
  }

  get transcript(): Transcript.Transcript {
    return this.held.snapshot()
  }
}

/** A live session starting from a replayed state and transcript. */
export const make = (state: SessionState.SessionState, transcript: LiveTranscript): LiveSession => new HeldSession(state, transcript)

/** A live session of a replayed log. */
export const replayed = (state: SessionState.SessionState, events: Iterable<AgentEvent>): LiveSession =>
  make(state, LiveTranscript.of(events))

/** Builds the `session.created` event: sequence 1, the first event of every log. */
export const sessionCreated = (
  services: Services,
  sessionId: string,
  payload: EventOfType<"session.created">["payload"]
): Effect.Effect<EventOfType<"session.created">> =>
  // Not `Effect.all` of the two: its `forEach` costs 12 Effect operations, once per session.
  Effect.flatMap(services.ids.next("event"), (id) =>
    Effect.clockWith((clock) =>
      Effect.succeed({ id, sessionId, sequence: 1, timestamp: new Date(clock.unsafeCurrentTimeMillis()).toISOString(), type: "session.created" as const, payload })
    ))

/**
 * Whether a draft should be committed, decided under the session's lock on the state as folded so
 * far (the drafts of the batch before it included); the transcript is the one before the batch.
 */
export type Guard = (live: Live, draft: TurnEventDraft | SessionEventDraft) => boolean

/** An id per event of a batch, in one call when the generator can. */
export const idsFor = (ids: Services["ids"], count: number): Effect.Effect<ReadonlyArray<string>> =>
  ids.nextMany !== undefined ? ids.nextMany("event", count) : Effect.all(Array.from({ length: count }, () => ids.next("event")))

/**
 * Commits a batch of drafts: under the session's lock, each draft the guard lets through becomes an
 * event (an id, sequence = last + 1, one timestamp from `Clock` for the batch), the batch is
 * appended to the store as one step, folded into the live state and transcript, handed to the
 * watchers and then to `sink` (the turn's consumer, when it has one). A failed append changes
 * nothing, so the next batch reuses the sequences and the log has no gap. Returns the events
 * committed (none when the guard refused them all). Uninterruptible: a batch is either wholly
 * committed and handed on, or not at all.
 *
 * Once per batch, so written without `Effect.gen`: the batch is built by a plain loop, and only
 * the ids, the append and its span are effects.
 */
export const commit = (
  services: Services,
  session: LiveSession,
  /** The turn of the drafts; undefined for session-level drafts, which carry no turnId. */
  turnId: string | undefined,
  drafts: ReadonlyArray<TurnEventDraft | SessionEventDraft>,
  guard?: Guard,
  sink?: TurnSink
): Effect.Effect<ReadonlyArray<AgentEvent>, EventStoreFailure> => commitBuilt(services, session, turnId, drafts, guard, sink, false)

/**
 * {@link commit} of a batch whose drafts are its events already, made by {@link madeEvent} for this
 * session and turn: each one the guard lets through is stored as it is, its sequence and timestamp
 * set in place (then its id), rather than copied into an event of its own. A response's reading makes
 * its deltas so — one object a delta where a draft and its event were two (perf65stream). A made
 * event the guard refuses, or of a batch whose append fails, is dropped with its batch.
 */
export const commitMade = (
  services: Services,
  session: LiveSession,
  turnId: string,
  made: ReadonlyArray<Made>,
  guard: Guard,
  sink: TurnSink | undefined
): Effect.Effect<ReadonlyArray<AgentEvent>, EventStoreFailure> => commitBuilt(services, session, turnId, made, guard, sink, true)

const commitBuilt = (
  services: Services,
  session: LiveSession,
  turnId: string | undefined,
  drafts: ReadonlyArray<TurnEventDraft | SessionEventDraft>,
  guard: Guard | undefined,
  sink: TurnSink | undefined,
  made: boolean
): Effect.Effect<ReadonlyArray<AgentEvent>, EventStoreFailure> =>
  Effect.uninterruptible(session.writes.holding(Effect.clockWith((clock) => {
    const batch = build(session, turnId, drafts, guard, new Date(clock.unsafeCurrentTimeMillis()).toISOString(), made)
    if (batch === undefined) return Effect.succeed<ReadonlyArray<AgentEvent>>([])
    const { events, state } = batch
    // Ids are taken once the batch is known, so a refused draft uses no id (the fold does not read ids).
    return Effect.flatMap(idsFor(services.ids, events.length), (ids) => {
      for (let i = 0; i < events.length; i++) events[i]!.id = ids[i]!
      // One event or many, a batch: a provider's chunk is usually one delta, and it takes the store's fast path too.
      return services.store.appendAll(events).pipe(
        // No stack trace: this span is on the hot path, once per batch. No region of its own: the commit's is around it.
        OwnedSpan.withinUninterruptible("LiveSession.append", {
          captureStackTrace: false,
          attributes: { sessionId: session.sessionId, turnId: turnId ?? "", events: events.length, firstSequence: events[0]!.sequence }
        }),
        Effect.map(() => {
          session.state = state
          // Indexed loops on the per-event path: a `for…of` makes an iterator result an event wherever it is not optimized.
          for (let i = 0; i < events.length; i++) session.transcript.add(events[i]!)
          services.watchers.publish(session.sessionId, events)
          // Unbounded: the consumer's sink takes the whole batch at once.
          sink?.offerAll(events)
          return events as ReadonlyArray<AgentEvent>
        })
      )
    })
  })))

/**
 * The events of a batch, folded onto the session's state (not stored yet, nor made the session's):
 * undefined when the guard refused every draft. Judged one draft at a time on the state the drafts
 * before it make: a tool call id repeated within a batch is a repeat.
 */
const build = (
  session: LiveSession,
  turnId: string | undefined,
  drafts: ReadonlyArray<TurnEventDraft | SessionEventDraft>,
  guard: Guard | undefined,
  at: string,
  made: boolean
): { readonly events: Array<{ id: string } & AgentEvent>; readonly state: SessionState.SessionState } | undefined => {
  const { sessionId } = session
  const fold = new SessionState.Folder(session.state)
  // What a guard sees: the state folded so far, made only if the guard reads it.
  const view: Live | undefined = guard === undefined ? undefined : new FoldView(fold, session.transcript)
  const events: Array<{ id: string } & AgentEvent> = []
  for (let i = 0; i < drafts.length; i++) {
    const draft = drafts[i]!
    if (guard !== undefined && !guard(view!, draft)) continue
    let event: { id: string } & AgentEvent
    if (made) {
      const own = draft as Made
      own.sequence = fold.lastSequence + 1
      own.timestamp = at
      event = own as { id: string } & AgentEvent
    } else event = eventOf(sessionId, turnId, fold.lastSequence + 1, at, draft.type, draft.payload)
    fold.add(event)
    events.push(event)
  }
  return events.length === 0 ? undefined : { events, state: fold.state }
}

/**
 * One event of a batch, its id set once the batch is known; the keys keep the order every event is
 * written in. Made here alone (a commit's copy of a draft, and {@link madeEvent}), so that every
 * event of a turn, and the one `KeptShapes` keeps, has the same shape (hidden class).
 */
export const eventOf = (
  sessionId: string,
  turnId: string | undefined,
  sequence: number,
  at: string,
  type: AgentEvent["type"],
  payload: unknown
): { id: string } & AgentEvent =>
  (turnId === undefined
    ? { id: "", sessionId, sequence, timestamp: at, type, payload }
    : { id: "", sessionId, turnId, sequence, timestamp: at, type, payload }) as { id: string } & AgentEvent

/** An event made before its commit ({@link madeEvent}): its id, sequence and timestamp are the commit's to set. */
export type Made = { id: string; sequence: number; timestamp: string } & TurnEventDraft

/**
 * A turn's event made as its draft is ({@link commitMade}): the stored shape at once, its sequence,
 * timestamp and id set by the commit that stores it.
 */
export const madeEvent = <T extends TurnEventDraft["type"]>(
  sessionId: string,
  turnId: string,
  type: T,
  payload: Extract<TurnEventDraft, { readonly type: T }>["payload"]
): Made => eventOf(sessionId, turnId, 0, "", type, payload) as unknown as Made
