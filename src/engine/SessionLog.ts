/**
 * One session's live log inside the engine: its replayed state and transcript, and the single
 * `commit` through which every event of the session is built, stored, folded into the state and
 * emitted — in that order, one at a time.
 *
 * @since 0.1.0
 * @internal
 */
import * as Clock from "effect/Clock"
import type * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type * as Fiber from "effect/Fiber"
import * as HashMap from "effect/HashMap"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as SynchronizedRef from "effect/SynchronizedRef"
import type { AgentEvent, EventOfType, TurnEventDraft } from "../domain/AgentEvent.js"
import type { EventStoreFailure } from "../domain/Errors.js"
import * as SessionState from "../domain/SessionState.js"
import * as Transcript from "../domain/Transcript.js"
import type { EventStore } from "../services/EventStore.js"
import type { IdGenerator } from "../services/IdGenerator.js"
import type { Watchers } from "./Watchers.js"

/** What the engine knows of a session: the fold of its log. */
export interface Live {
  readonly state: SessionState.SessionState
  readonly transcript: Transcript.Transcript
}

/** The turn a driver fiber is running now. */
export interface ActiveTurn {
  readonly turnId: string
  /** Set before the driver is interrupted: from then on no model output is stored. */
  readonly cancelRequested: Ref.Ref<boolean>
  readonly fiber: Fiber.RuntimeFiber<void, EventStoreFailure>
}

/** The user's answer to a paused call. */
export interface UserDecision {
  readonly decision: "allow" | "deny"
  readonly remember: boolean
}

/** One session's live log. */
export interface SessionLog {
  readonly sessionId: string
  readonly live: SynchronizedRef.SynchronizedRef<Live>
  /** The running turn, if a driver owns one. A turn open in the log with no driver is dangling. */
  readonly active: Ref.Ref<Option.Option<ActiveTurn>>
  /** Why an open turn without a driver was left open; used as its errorCode when it is closed. */
  readonly danglingReason: Ref.Ref<string>
  /** Calls the running driver is waiting on, by tool call id: completing one hands it the user's answer. */
  readonly approvals: Ref.Ref<HashMap.HashMap<string, Deferred.Deferred<UserDecision>>>
  /** Held to start a driver, and by the few writes made without one, so the two never overlap. */
  readonly control: Effect.Semaphore
}

/** The services a commit needs. */
export interface Ports {
  readonly store: EventStore.Service
  readonly ids: IdGenerator["Type"]
  /** Who watches the session's live events (`watchSession`). */
  readonly watchers: Watchers
}

/** A session log starting from a replayed state. */
export const make = (live: Live): Effect.Effect<SessionLog> =>
  Effect.all({
    live: SynchronizedRef.make(live),
    active: Ref.make(Option.none<ActiveTurn>()),
    danglingReason: Ref.make("interrupted"),
    approvals: Ref.make(HashMap.empty<string, Deferred.Deferred<UserDecision>>()),
    control: Effect.makeSemaphore(1)
  }).pipe(Effect.map((refs) => ({ sessionId: live.state.sessionId, ...refs })))

/** The live view of a replayed log. */
export const liveOf = (state: SessionState.SessionState, events: Iterable<AgentEvent>): Live => ({
  state,
  transcript: Transcript.replay(events)
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

/** Whether a commit should go ahead, decided under the session's lock. */
export type Guard = (live: Live) => Effect.Effect<boolean>

/**
 * Builds the next event of a turn (id, sequence = last + 1, timestamp from `Clock`), appends it,
 * folds it into the live state, then emits it. A failed append changes nothing, so the next event
 * reuses the sequence and the log has no gap. Returns `None` when the guard refused the event.
 * Uninterruptible: an event is either wholly committed or not at all.
 */
export const commit = (
  ports: Ports,
  log: SessionLog,
  turnId: string,
  draft: TurnEventDraft,
  emit: (event: AgentEvent) => Effect.Effect<unknown>,
  guard?: Guard
): Effect.Effect<Option.Option<AgentEvent>, EventStoreFailure> =>
  SynchronizedRef.modifyEffect(log.live, (live) =>
    Effect.gen(function*() {
      if (guard !== undefined && !(yield* guard(live))) return [Option.none(), live] as const
      const event = {
        id: yield* ports.ids.next("event"),
        sessionId: log.sessionId,
        turnId,
        sequence: live.state.lastSequence + 1,
        timestamp: yield* timestamp,
        type: draft.type,
        payload: draft.payload
      } as AgentEvent
      const state = SessionState.reduce(live.state, event)
      // The engine only builds legal events; an illegal one is a bug, not a condition to handle.
      if (Either.isLeft(state)) return yield* Effect.die(state.left)
      yield* ports.store.append(event)
      ports.watchers.publish(log.sessionId, [event])
      yield* emit(event)
      return [Option.some(event), { state: state.right, transcript: Transcript.reduce(live.transcript, event) }] as const
    })).pipe(Effect.uninterruptible)
