/**
 * The session engine (CONTRACT.md §3): creates sessions, runs turns as streams of stored events,
 * cancels them by interruption, and replays logs. Built only on the ports in `services/` and the
 * state machine in `fsm/`.
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Chunk from "effect/Chunk"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Mailbox from "effect/Mailbox"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as AgentEvent from "../domain/AgentEvent.js"
import {
  ApprovalNotPending,
  CompactionFailed,
  EventStoreFailure,
  InvalidInput,
  NothingToResume,
  NothingToCompact,
  NoTurnInProgress,
  type SessionBusy,
  SessionNotFound,
  TurnInProgress
} from "../domain/Errors.js"
import * as Session from "../domain/Session.js"
import * as SessionState from "../domain/SessionState.js"
import { AgentHooks } from "../services/AgentHooks.js"
import * as ContextBuilder from "../services/ContextBuilder.js"
import { EventStore, type Listing } from "../services/EventStore.js"
import { IdGenerator } from "../services/IdGenerator.js"
import { ModelProvider } from "../services/ModelProvider.js"
import * as PermissionEngine from "../services/PermissionEngine.js"
import { type ToolCallInput, ToolRouter } from "../services/ToolRouter.js"
import * as Compaction from "./Compaction.js"
import * as EventDraft from "./EventDraft.js"
import * as Fork from "./Fork.js"
import * as LiveSession from "./LiveSession.js"
import { LiveTranscript } from "./LiveTranscript.js"
import * as LiveSessions from "./LiveSessions.js"
import * as TurnDriver from "./TurnDriver.js"
import * as TurnEnv from "./TurnEnv.js"
import * as Watchers from "./Watchers.js"

/** Whether a path is absolute on POSIX (`/…`) or Windows (a drive letter, or a `\\server` share), without the file system. */
const isAbsolutePath = (path: string): boolean => path.startsWith("/") || /^[A-Za-z]:[\\/]/.test(path) || path.startsWith("\\\\")

/** Input of {@link SessionEngine.Service.createSession}. */
export interface CreateSessionInput {
  readonly cwd: string
  readonly client: AgentEvent.Client
}

/** Input of {@link SessionEngine.Service.runTurn}. */
export interface RunTurnInput {
  readonly sessionId: string
  readonly userMessage: string
}

/** Input of {@link SessionEngine.Service.steer} and {@link SessionEngine.Service.followUp}. */
export interface SessionMessageInput {
  readonly sessionId: string
  readonly message: string
}

/** What {@link SessionEngine.Service.followUp} returns: the id naming the follow-up in the log. */
export interface FollowUpQueued {
  readonly queueId: string
}

/** What {@link SessionEngine.Service.dropFollowUps} returns: the follow-ups dropped, oldest first. */
export interface FollowUpsDropped {
  readonly queueIds: ReadonlyArray<string>
}

/** Input of {@link SessionEngine.Service.forkSession}. */
export interface ForkSessionInput {
  readonly sessionId: string
  /** The fork point: the end of a closed turn (default: the end of the last one). */
  readonly atSequence?: number
}

/** Input of {@link SessionEngine.Service.compactSession}. */
export interface CompactSessionInput {
  readonly sessionId: string
  /** Tokens of recent context kept verbatim this time (default: the engine's `compaction.keepRecentTokens`). */
  readonly keepRecentTokens?: number
}

/** What {@link SessionEngine.Service.compactSession} returns: the payload of the `session.compacted` it stored. */
export type CompactionResult = Compaction.CompactionResult

/** Input of {@link SessionEngine.Service.cancelTurn}: without `turnId`, whatever turn is running. */
export interface CancelTurnInput {
  readonly sessionId: string
  readonly turnId?: string
}

/** Input of operations on one session. */
export interface SessionInput {
  readonly sessionId: string
}

/** Input of {@link SessionEngine.Service.watchSession}. */
export interface WatchSessionInput {
  readonly sessionId: string
  /** The first sequence to send (default 1: the whole log). */
  readonly fromSequence?: number
}

/** Input of {@link SessionEngine.Service.resolvePermission}. */
export interface ResolvePermissionInput {
  readonly sessionId: string
  readonly toolCallId: string
  readonly decision: "allow" | "deny"
  /** Apply the decision to later calls of the same scope (a tool, or for `shell` a program) in this session. */
  readonly remember?: boolean
}

/**
 * Limits and timings of turns, compaction (`compaction: { threshold: 0.8, keepRecentTokens: 20_000 }`),
 * and how many sessions the engine holds in memory; every field has a default.
 */
export type Options = Partial<TurnEnv.TurnOptions & LiveSessions.CacheOptions & WatchOptions>

/** How watchers follow sessions other processes write. */
export interface WatchOptions {
  /**
   * How often a watcher reads the store for a session this engine does not hold the writer lock
   * of — another process may be driving it (default 250 milliseconds).
   */
  readonly watchPollInterval: Duration.DurationInput
}

/** The session engine. */
export class SessionEngine extends Context.Tag("effect-agent/SessionEngine")<SessionEngine, SessionEngine.Service>() {}

/** The session engine. */
export declare namespace SessionEngine {
  /** What the engine does. */
  export interface Service {
    /**
     * Appends `session.created` and returns the session read from that event. The engine holds the
     * new session's writer lock from then on (see `runTurn`).
     */
    readonly createSession: (input: CreateSessionInput) => Effect.Effect<Session.Session, EventStoreFailure | InvalidInput | SessionBusy>
    /**
     * Runs one turn. Every event is stored, then emitted; the stream ends right after
     * `turn.completed`. Interrupting the stream cancels the turn, and the log still receives
     * `turn.completed {stopReason: "cancelled"}`. Provider failures end the turn with
     * `stopReason: "error"`; store failures fail the stream.
     *
     * One process drives a session at a time: before its first write to a session the engine takes
     * the session's writer lock from the store and holds it until the engine shuts down. When another
     * live process holds it the stream fails `SessionBusy` and nothing is stored. A lock left by a dead
     * process is taken over, and a turn it left open is closed `interrupted` before the new one starts.
     */
    readonly runTurn: (
      input: RunTurnInput
    ) => Stream.Stream<AgentEvent.AgentEvent, EventStoreFailure | SessionNotFound | TurnInProgress | InvalidInput | SessionBusy>
    /**
     * Answers a call paused on `ask`: the turn stores `permission.resolved {actor: "user"}` and goes
     * on. Fails `ApprovalNotPending` when no call with that id is waiting.
     */
    readonly resolvePermission: (
      input: ResolvePermissionInput
    ) => Effect.Effect<void, ApprovalNotPending | SessionNotFound | EventStoreFailure | InvalidInput | SessionBusy>
    /** The calls of the session's open turn waiting for the user's decision. */
    readonly pendingApprovals: (input: SessionInput) => Effect.Effect<ReadonlyArray<SessionState.OpenToolCall>, EventStoreFailure | SessionNotFound>
    /**
     * Continues the turn the log holds paused — its process stopped while a call waited for the
     * user — as a stream of its remaining events, from the log alone. Answer the waiting calls with
     * `resolvePermission` before or after. Fails `NothingToResume` when no turn is paused.
     */
    readonly resumeTurn: (
      input: SessionInput
    ) => Stream.Stream<AgentEvent.AgentEvent, EventStoreFailure | SessionNotFound | TurnInProgress | NothingToResume | SessionBusy>
    /**
     * Cancels the running turn and waits until it has ended; a turn paused in the log is closed as
     * cancelled (when another process drives the session, it is left alone and a warning logged).
     * Never fails; does nothing when no turn runs.
     */
    readonly cancelTurn: (input: CancelTurnInput) => Effect.Effect<void>
    /**
     * Sends a message into the turn this engine is running: it is stored as `turn.steered` at the
     * turn's next step boundary (after the step's tool results, before the next model request; a
     * steer that arrives while the model gives its final answer makes one more step), several in
     * arrival order, and the model sees each as a user message. Fails `NoTurnInProgress` when this
     * engine runs no turn of the session, or once its turn has decided how it ends (its final answer
     * given, a limit or error reached, a cancel). Steers accepted before a turn ends on an error or a
     * cancel are not stored (a warning is logged).
     */
    readonly steer: (input: SessionMessageInput) => Effect.Effect<void, NoTurnInProgress | SessionNotFound | InvalidInput | EventStoreFailure>
    /**
     * Queues a message to run as its own turn once the session is idle: stored at once as
     * `followup.queued` (no turnId), and run oldest first, each turn's `turn.started` naming its
     * `queueId`. When the session is idle in this engine the follow-up starts right away; otherwise
     * when the running turn ends — however it ends: final, error or cancelled. The turns of
     * follow-ups have no stream of their own: watch them with `watchSession`. A queue left by a
     * process that stopped runs when the session is next driven: the next `runTurn` runs the queued
     * follow-ups first (its stream carries only its own turn; `cancelTurn` meanwhile cancels the
     * follow-up's turn then running, and the new turn still runs), and the next `followUp` or the end
     * of a resumed turn starts them.
     */
    readonly followUp: (input: SessionMessageInput) => Effect.Effect<FollowUpQueued, EventStoreFailure | SessionNotFound | InvalidInput | SessionBusy>
    /**
     * Compacts the session's context now (a manual compaction, with no turn open): stores
     * `compaction.started`, asks the session's model for a summary of everything before the cut
     * (the most recent context, `keepRecentTokens`, is kept verbatim), then `session.compacted` —
     * its payload is returned. Session-level: the events carry no turnId. Fails `TurnInProgress`
     * while a turn runs or waits for the user, `NothingToCompact` when there is nothing before the
     * cut (nothing stored), `CompactionFailed` when the model gave no summary (`compaction.failed`
     * is stored; the context is unchanged). Interrupting it stores `compaction.failed {cancelled}`.
     * A turn asked for meanwhile starts once it has ended.
     */
    readonly compactSession: (
      input: CompactSessionInput
    ) => Effect.Effect<CompactionResult, EventStoreFailure | SessionNotFound | TurnInProgress | NothingToCompact | CompactionFailed | InvalidInput | SessionBusy>
    /** Drops every queued follow-up that has not started (`followup.dropped`); the running turn goes on. */
    readonly dropFollowUps: (input: SessionInput) => Effect.Effect<FollowUpsDropped, EventStoreFailure | SessionNotFound | SessionBusy>
    /**
     * Forks a session at the end of a closed turn (default: the last one): a new session whose log
     * is `session.created {cwd, client, forkedFrom: {sessionId, sequence}}`, a copy of the source's
     * events 2..atSequence with the new session id and fresh event ids, then `session.forked`. The
     * source is untouched; the fork's transcript, remembered permissions (and follow-ups still
     * queued) are the source's at that point. A point inside an open turn, or past the end, fails
     * `InvalidInput` and stores nothing. The engine holds the fork's writer lock from then on.
     */
    readonly forkSession: (input: ForkSessionInput) => Effect.Effect<Session.Session, EventStoreFailure | SessionNotFound | InvalidInput | SessionBusy>
    /** Streams the stored events of a session in sequence order, unprojected. */
    readonly replaySession: (input: SessionInput) => Stream.Stream<AgentEvent.AgentEvent, EventStoreFailure | SessionNotFound>
    /**
     * Watches a session: its stored events from `fromSequence` (default 1), then its live events
     * as this engine stores them, across turns, each exactly once and in sequence order — no gap,
     * no duplicate, even for events stored while the watcher switches from the store to live. Never
     * ends by itself: interrupt it. Any number of watchers per session; a watcher never slows a
     * turn (each has its own unbounded buffer). A session this engine does not hold the writer lock
     * of — another process may drive it — is followed by reading the store every
     * `watchPollInterval` (default 250 ms).
     */
    readonly watchSession: (input: WatchSessionInput) => Stream.Stream<AgentEvent.AgentEvent, EventStoreFailure | SessionNotFound>
    /** The session's state as the engine sees it now: turn state and phase, open tool calls, last sequence. */
    readonly sessionState: (input: SessionInput) => Effect.Effect<SessionState.SessionState, EventStoreFailure | SessionNotFound>
    /** Summaries of the readable stored sessions, most recently active first. */
    readonly listSessions: Effect.Effect<ReadonlyArray<Session.SessionSummary>, EventStoreFailure>
    /** The readable sessions (as `listSessions`) and the damaged ones, each with the reason it cannot be read. */
    readonly sessionListing: Effect.Effect<Listing, EventStoreFailure>
  }
}

/**
 * Builds the engine. Turns run in fibers of the surrounding scope: closing it cancels them cleanly.
 *
 * Required: `EventStore`, `ModelProvider`, `IdGenerator`. Optional, found in the context when
 * provided: `ToolRouter` (default: no tools), `PermissionEngine` (default: ask the user about every
 * call), `ContextBuilder` (default: the transcript and tools, no system prompt), `AgentHooks`.
 */
export const make = (
  options: Options = {}
): Effect.Effect<SessionEngine.Service, never, EventStore | ModelProvider | IdGenerator | Scope.Scope> =>
  Effect.gen(function*() {
    const store = yield* EventStore
    const ids = yield* IdGenerator
    const scope = yield* Effect.scope
    const watchers = Watchers.make()
    const ports: LiveSession.Ports = { store, ids, watchers }
    const services: TurnEnv.TurnServices = {
      ports,
      provider: yield* ModelProvider,
      tools: Option.getOrUndefined(yield* Effect.serviceOption(ToolRouter)),
      permissions: Option.getOrElse(yield* Effect.serviceOption(PermissionEngine.PermissionEngine), () => PermissionEngine.askAlways),
      context: Option.getOrElse(yield* Effect.serviceOption(ContextBuilder.ContextBuilder), () => ContextBuilder.transcriptOnly),
      hooks: Option.getOrElse(yield* Effect.serviceOption(AgentHooks), () => ({})),
      options: { ...TurnEnv.defaultOptions, ...options }
    }

    /** Commits session-level drafts (no turnId): stored, folded, handed to watchers; no turn consumer to emit to. */
    const commitSessionLevel = (session: LiveSession.LiveSession, drafts: Parameters<typeof LiveSession.commit>[3]) =>
      LiveSession.commit(ports, session, undefined, drafts, () => Effect.void)

    /** Loads a session by folding its log as it is read: the whole log is never held at once. */
    const hydrate = (sessionId: string): Effect.Effect<LiveSession.LiveSession, EventStoreFailure | SessionNotFound> =>
      Effect.suspend(() => {
        let folded: SessionState.SessionState | undefined
        const transcript = new LiveTranscript()
        return store.read(sessionId).pipe(
          Stream.runForEachChunk((chunk) => {
            for (const event of chunk) {
              const state = folded === undefined ? SessionState.start(event) : SessionState.reduce(folded, event)
              if (Either.isLeft(state)) {
                return Effect.fail(
                  new EventStoreFailure({ reason: "corrupt", operation: "read", sessionId, sequence: state.left.sequence, detail: state.left.message })
                )
              }
              folded = state.right
              transcript.add(event)
            }
            return Effect.void
          }),
          Effect.flatMap(() => folded === undefined ? Effect.fail(new SessionNotFound({ sessionId })) : Effect.succeed(LiveSession.make(folded, transcript)))
        )
      })

    const sessions = yield* LiveSessions.make(store, scope, { ...LiveSessions.defaultCacheOptions, ...options }, hydrate)
    const liveSession = sessions.get
    const holdWriter = sessions.holdWriter

    /**
     * The session, loaded under its writer lock: what every write goes through. An unknown session
     * fails `SessionNotFound` before any lock is taken.
     */
    const writableSession = (sessionId: string): Effect.Effect<LiveSession.LiveSession, EventStoreFailure | SessionNotFound | SessionBusy> =>
      Effect.zipRight(liveSession(sessionId), Effect.zipRight(holdWriter(sessionId), liveSession(sessionId)))

    const createSession = Effect.fn("SessionEngine.createSession")(function*(input: CreateSessionInput) {
      if (input.cwd.trim() === "") return yield* new InvalidInput({ field: "cwd", detail: "must not be empty" })
      // A relative cwd would mean whatever directory a later driver runs in. (Whether it exists is the adapters' check: WorkingDirectory.)
      if (!isAbsolutePath(input.cwd)) return yield* new InvalidInput({ field: "cwd", detail: "must be an absolute path" })
      if (!AgentEvent.Client.literals.includes(input.client)) {
        return yield* new InvalidInput({ field: "client", detail: `must be one of ${AgentEvent.Client.literals.join(", ")}` })
      }
      const sessionId = yield* ids.next("session")
      yield* holdWriter(sessionId)
      const event = yield* LiveSession.sessionCreated(ports, sessionId, { cwd: input.cwd, client: input.client })
      yield* store.append(event)
      const state = SessionState.fromCreated(event)
      yield* sessions.add(LiveSession.replayed(state, [event]))
      return Session.fromState(state)
    })

    /**
     * Closes a turn the log holds open with no driver: its compaction, its open calls, then the
     * turn, with the reason it was left open. A manual compaction left open (its process stopped
     * before the summary was stored) is closed `compaction.failed {interrupted}`: the context is as
     * it was before it.
     */
    const closeDangling = (session: LiveSession.LiveSession) =>
      Effect.gen(function*() {
        const { compaction, openTurn: open } = session.live.state
        if (open === undefined && compaction !== undefined) {
          yield* Effect.logWarning("closing a compaction left open").pipe(
            Effect.annotateLogs({ sessionId: session.sessionId, compactionId: compaction.compactionId })
          )
          yield* commitSessionLevel(session, [EventDraft.compactionFailed(compaction.compactionId, "interrupted")])
        }
        if (open === undefined) return
        const errorCode = session.danglingReason
        yield* Effect.logWarning("closing a turn left open").pipe(
          Effect.annotateLogs({ sessionId: session.sessionId, turnId: open.turnId, errorCode })
        )
        yield* TurnDriver.close(TurnEnv.detached(services, session, open.turnId), { stopReason: "error", errorCode })
        session.danglingReason = "interrupted"
      })

    /**
     * Another writer moved the session on (a second process, on a shared store): what this engine
     * holds of it is stale. It is forgotten, so the next operation loads it again from the store.
     */
    const forgetIfStale = (sessionId: string) => (failure: EventStoreFailure) =>
      failure.reason === "sequence_conflict"
        ? Effect.sync(() => sessions.forget(sessionId)).pipe(
          Effect.zipRight(Effect.logWarning("the session was changed by another writer; it will be reloaded").pipe(
            Effect.annotateLogs({ sessionId })
          ))
        )
        : Effect.void

    const cancelActive = (session: LiveSession.LiveSession, turnId?: string) =>
      Effect.suspend(() => {
        const active = session.active
        if (active === undefined || (turnId !== undefined && active.turnId !== turnId)) return Effect.void
        active.control.cancelRequested = true
        return Effect.asVoid(Fiber.interrupt(active.fiber))
      })

    /**
     * Runs `write` holding the session's control lock while no driver runs: the writes made without
     * a driver (an answer given to a paused turn, cancelling one) can never interleave with a turn.
     */
    const withoutDriver = <A, E>(session: LiveSession.LiveSession, write: Effect.Effect<A, E>): Effect.Effect<A, E | TurnInProgress> =>
      session.control.withPermits(1)(Effect.suspend((): Effect.Effect<A, E | TurnInProgress> => {
        const active = session.active
        if (active !== undefined) return Effect.fail(new TurnInProgress({ sessionId: session.sessionId, turnId: active.turnId }))
        return write
      }))

    /** What a driver runs: the turn it owns, and its work once the turn's environment exists. */
    interface Plan {
      readonly turnId: string
      readonly run: (env: TurnEnv.TurnEnv) => Effect.Effect<void, EventStoreFailure>
    }

    /**
     * Runs the queued follow-ups one turn after the other in the driver of `env` (their events go
     * only to the log and the watchers), then hands the slot back to `env`'s turn.
     */
    const runQueued = (env: TurnEnv.TurnEnv): Effect.Effect<void, EventStoreFailure> =>
      Effect.gen(function*() {
        const session = env.session
        for (;;) {
          const next = session.live.state.followUps[0]
          if (next === undefined || session.live.state.openTurn !== undefined) break
          const turnId = yield* ids.next("turn")
          const active = session.active
          if (active === undefined) break
          // Each queued turn runs in a fiber of its own, which a cancel interrupts: cancelling it
          // cancels that turn only, and the driver goes on with the next one.
          const control = env.control
          const driver = active.fiber
          const turn = yield* Effect.fork(Effect.interruptible(Effect.annotateLogs(
            TurnDriver.drive(TurnEnv.make(services, session, turnId, control, () => Effect.void), next.content, next.queueId),
            { turnId }
          )))
          active.turnId = turnId
          active.fiber = turn
          const exit = yield* Fiber.await(turn)
          active.turnId = env.turnId
          active.fiber = driver
          if (Exit.isFailure(exit) && !Cause.isInterruptedOnly(exit.cause)) return yield* Exit.failCause(exit.cause)
          // Interrupted with no cancel asked for: the engine is shutting down.
          if (Exit.isFailure(exit) && !control.cancelRequested) return yield* Effect.interrupt
          // Nobody reads this driver's stream any more: its own turn must not start unseen. The cancel
          // stays requested, so the driver's exit still lets the queue run on in the background.
          if (control.abandoned) return yield* Effect.interrupt
          // That turn was cancelled; the ones after it, and the new turn, still run.
          control.cancelRequested = false
        }
      })

    /**
     * A new turn; a turn paused in the log must be finished first, one left open by a crash is
     * closed first, and follow-ups a stopped process queued run first.
     */
    const planNew = (session: LiveSession.LiveSession, userMessage: string): Effect.Effect<Plan, TurnInProgress> =>
      Effect.gen(function*() {
        const { state } = session.live
        if (state.openTurn !== undefined && SessionState.isPaused(state)) {
          return yield* new TurnInProgress({ sessionId: session.sessionId, turnId: state.openTurn.turnId })
        }
        return {
          turnId: yield* ids.next("turn"),
          run: (env) => closeDangling(session).pipe(Effect.zipRight(runQueued(env)), Effect.zipRight(TurnDriver.drive(env, userMessage)))
        }
      })

    /** The oldest queued follow-up, when the session is idle; fails (and nothing starts) otherwise. */
    const planQueued = (session: LiveSession.LiveSession): Effect.Effect<Plan, NothingToResume> =>
      Effect.gen(function*() {
        const { state } = session.live
        const next = state.followUps[0]
        if (next === undefined || state.openTurn !== undefined) return yield* new NothingToResume({ sessionId: session.sessionId })
        return { turnId: yield* ids.next("turn"), run: (env) => Effect.zipRight(closeDangling(session), TurnDriver.drive(env, next.content, next.queueId)) }
      })

    /**
     * Starts the oldest queued follow-up when the session is idle in this engine (the caller holds
     * the writer lock); its driver starts the next one when it ends. Nobody consumes its events
     * but the log and the watchers.
     */
    const runFollowUps = (session: LiveSession.LiveSession): Effect.Effect<void> =>
      Effect.suspend(() =>
        session.active !== undefined || session.live.state.followUps.length === 0 || session.live.state.openTurn !== undefined
          ? Effect.void
          : Effect.ignore(startTurn(session, planQueued(session), false))
      )

    /** The paused turn in the log. A turn left open by a crash is repaired instead: there is then nothing to resume. */
    const planResume = (session: LiveSession.LiveSession): Effect.Effect<Plan, NothingToResume | EventStoreFailure> =>
      Effect.gen(function*() {
        const { state } = session.live
        const open = state.openTurn
        if (open !== undefined && !SessionState.isPaused(state)) yield* closeDangling(session)
        if (open === undefined || !SessionState.isPaused(state)) return yield* new NothingToResume({ sessionId: session.sessionId })
        // Waits are registered before the driver starts, so an answer given right away is never lost.
        for (const call of SessionState.pendingApprovals(state)) {
          session.approvals.set(call.toolCallId, yield* Deferred.make<LiveSession.UserDecision>())
        }
        return { turnId: open.turnId, run: TurnDriver.resume }
      })

    /** Claims the session for a driver and starts it, under the control lock; one driver per session. */
    const startTurn = <E>(session: LiveSession.LiveSession, plan: Effect.Effect<Plan, E>, emitting = true): Effect.Effect<
      {
        readonly turnId: string
        readonly control: LiveSession.TurnControl
        readonly mailbox: Mailbox.ReadonlyMailbox<AgentEvent.AgentEvent, EventStoreFailure>
      },
      E | TurnInProgress
    > =>
      Effect.gen(function*() {
        const active = session.active
        if (active !== undefined) return yield* new TurnInProgress({ sessionId: session.sessionId, turnId: active.turnId })
        const { run, turnId } = yield* plan
        const mailbox = yield* Mailbox.make<AgentEvent.AgentEvent, EventStoreFailure>()
        const control: LiveSession.TurnControl = { cancelRequested: false }
        const started = yield* Deferred.make<void>()
        const env = TurnEnv.make(services, session, turnId, control, emitting ? (events) => mailbox.offerAll(events) : () => Effect.void)
        const driver = Deferred.await(started).pipe(
          // Everything the driver logs names its session and turn.
          Effect.zipRight(Effect.annotateLogs(run(env), { sessionId: session.sessionId, turnId })),
          Effect.onExit((exit) =>
            Effect.suspend(() => {
              const dropped = session.steers.splice(0).length
              return dropped === 0 ? Effect.void : Effect.logWarning("steers that came as the turn closed were dropped").pipe(
                Effect.annotateLogs({ sessionId: session.sessionId, turnId, dropped })
              )
            }).pipe(Effect.zipRight(Effect.suspend(() => {
              // Release the slot before ending the stream, so a consumer can start the next turn at once.
              session.active = undefined
              sessions.touch(session.sessionId)
              // Waits the driver registered and never reached would otherwise swallow a later answer.
              session.approvals.clear()
              // A turn that ended (a user's cancel included; not a shutdown) lets the queued follow-ups run.
              const next = Exit.isSuccess(exit) || (control.cancelRequested && Cause.isInterruptedOnly(exit.cause))
                ? Effect.asVoid(Effect.forkIn(runFollowUps(session), scope))
                : Effect.void
              // A cancelled driver has already stored its closing events: its stream simply ends.
              if (Exit.isSuccess(exit) || Cause.isInterruptedOnly(exit.cause)) return Effect.zipRight(mailbox.end, next)
              session.danglingReason = "event_store_failure"
              const failure = Cause.failureOption(exit.cause)
              return Effect.zipRight(
                Option.isSome(failure) ? forgetIfStale(session.sessionId)(failure.value) : Effect.void,
                mailbox.failCause(exit.cause)
              )
            })))
          )
        )
        // Forked from an uninterruptible region, the driver would inherit it: cancelling needs it interruptible.
        const fiber = yield* Effect.forkIn(Effect.interruptible(driver), scope)
        session.active = { turnId, control, fiber }
        yield* Deferred.succeed(started, undefined)
        return { turnId, control, mailbox }
      }).pipe(Effect.uninterruptible, session.control.withPermits(1))

    /** A driver's events as a stream; the consumer going away cancels the turn. */
    const streamOf = <E>(
      sessionId: string,
      start: (session: LiveSession.LiveSession) => Effect.Effect<{
        readonly control: LiveSession.TurnControl
        readonly mailbox: Mailbox.ReadonlyMailbox<AgentEvent.AgentEvent, EventStoreFailure>
      }, E>
    ) =>
      Stream.unwrapScoped(Effect.gen(function*() {
        const session = yield* writableSession(sessionId)
        const { control, mailbox } = yield* start(session)
        // The consumer going away (interruption, an early exit) cancels the turn — its own driver,
        // not a follow-up started after it; the driver then stores turn.completed {cancelled}
        // before this finalizer returns.
        yield* Effect.addFinalizer(() =>
          Effect.suspend(() => {
            if (session.active?.control !== control) return Effect.void
            control.abandoned = true
            return cancelActive(session)
          })
        )
        return Mailbox.toStream(mailbox)
      }))

    const runTurn = (input: RunTurnInput): ReturnType<SessionEngine.Service["runTurn"]> =>
      streamOf<InvalidInput | TurnInProgress>(input.sessionId, (session) =>
        input.userMessage.trim() === ""
          ? Effect.fail(new InvalidInput({ field: "userMessage", detail: "must not be empty" }))
          : startTurn(session, planNew(session, input.userMessage))).pipe(
          Stream.withSpan("SessionEngine.runTurn", { attributes: { sessionId: input.sessionId } })
        )

    const resumeTurn = (input: SessionInput) =>
      streamOf(input.sessionId, (session) => startTurn(session, planResume(session))).pipe(
        Stream.withSpan("SessionEngine.resumeTurn", { attributes: { sessionId: input.sessionId } })
      )

    const cancelTurn = Effect.fn("SessionEngine.cancelTurn")(function*(input: CancelTurnInput) {
      const found = yield* Effect.option(liveSession(input.sessionId))
      if (Option.isNone(found)) return
      if (found.value.active !== undefined) return yield* cancelActive(found.value, input.turnId)
      const { state } = found.value.live
      if (state.openTurn === undefined || !SessionState.isPaused(state)) return
      // Closing a paused turn is a write: it needs the session's writer lock.
      const writable = yield* Effect.either(writableSession(input.sessionId))
      if (Either.isLeft(writable)) {
        return yield* Effect.logWarning("could not cancel the paused turn", writable.left.message).pipe(
          Effect.annotateLogs({ sessionId: input.sessionId })
        )
      }
      const session = writable.right
      if (session.active !== undefined) return yield* cancelActive(session, input.turnId)
      // No driver: a turn paused in the log (its process stopped while waiting) is closed as cancelled.
      yield* withoutDriver(session, Effect.suspend(() => {
        const open = session.live.state.openTurn
        if (open === undefined || !SessionState.isPaused(session.live.state) || (input.turnId !== undefined && input.turnId !== open.turnId)) {
          return Effect.void
        }
        return TurnDriver.close(TurnEnv.detached(services, session, open.turnId), { stopReason: "cancelled" })
      })).pipe(
        Effect.catchTag("TurnInProgress", () => cancelActive(session, input.turnId)),
        Effect.catchTag("EventStoreFailure", (e) =>
          forgetIfStale(session.sessionId)(e).pipe(
            Effect.zipRight(Effect.logWarning("could not store the cancellation of a paused turn", e.message).pipe(
              Effect.annotateLogs({ sessionId: session.sessionId })
            ))
          ))
      )
    })

    const steer = Effect.fn("SessionEngine.steer")(function*(input: SessionMessageInput) {
      if (input.message.trim() === "") return yield* new InvalidInput({ field: "message", detail: "must not be empty" })
      const session = yield* liveSession(input.sessionId)
      if (session.active === undefined || session.active.control.closing === true) {
        return yield* new NoTurnInProgress({ sessionId: input.sessionId })
      }
      session.steers.push(input.message)
    })

    const followUp = Effect.fn("SessionEngine.followUp")(function*(input: SessionMessageInput) {
      if (input.message.trim() === "") return yield* new InvalidInput({ field: "message", detail: "must not be empty" })
      const session = yield* writableSession(input.sessionId)
      const queueId = yield* ids.next("queue")
      yield* commitSessionLevel(session, [EventDraft.followUpQueued(queueId, input.message)]).pipe(
        Effect.tapError(forgetIfStale(input.sessionId))
      )
      yield* runFollowUps(session)
      return { queueId }
    })

    const dropFollowUps = Effect.fn("SessionEngine.dropFollowUps")(function*(input: SessionInput) {
      const session = yield* writableSession(input.sessionId)
      const queueIds = session.live.state.followUps.map((f) => f.queueId)
      if (queueIds.length === 0) return { queueIds }
      // A follow-up whose turn starts meanwhile is no longer queued: the fold keeps only those still queued.
      yield* commitSessionLevel(session, [EventDraft.followUpDropped(queueIds)]).pipe(
        Effect.tapError(forgetIfStale(input.sessionId))
      )
      return { queueIds }
    })

    const forkSession = Effect.fn("SessionEngine.forkSession")(function*(input: ForkSessionInput) {
      if (!Session.isValidId(input.sessionId)) return yield* new SessionNotFound({ sessionId: input.sessionId })
      const source = Chunk.toReadonlyArray(yield* Stream.runCollect(store.read(input.sessionId)))
      if (source.length === 0) return yield* new SessionNotFound({ sessionId: input.sessionId })
      const atSequence = yield* Fork.forkPoint(source, input.atSequence)
      const sessionId = yield* ids.next("session")
      yield* holdWriter(sessionId)
      const eventIds = ids.nextMany !== undefined
        ? yield* ids.nextMany("event", atSequence + 1)
        : yield* Effect.all(Array.from({ length: atSequence + 1 }, () => ids.next("event")))
      const now = new Date(yield* Clock.currentTimeMillis).toISOString()
      const events = Fork.forkLog(source, atSequence, sessionId, eventIds, now)
      // session.created first, alone: a store creates the session with it; the rest as one batch.
      yield* store.append(events[0]!)
      yield* LiveSession.appendAll(store, events.slice(1))
      const state = SessionState.replay(events)
      if (Either.isLeft(state) || state.right === undefined) return yield* Effect.die(new Error("a fork's log must replay"))
      yield* sessions.add(LiveSession.replayed(state.right, events))
      return Session.fromState(state.right)
    })

    const compactSession = Effect.fn("SessionEngine.compactSession")(function*(input: CompactSessionInput) {
      const keep = input.keepRecentTokens
      if (keep !== undefined && !(Number.isSafeInteger(keep) && keep >= 0)) {
        return yield* new InvalidInput({ field: "keepRecentTokens", detail: "must be a whole number of tokens, 0 or more" })
      }
      const { sessionId } = input
      const session = yield* writableSession(sessionId)
      const writer: Compaction.Writer = {
        services: keep === undefined ? services : { ...services, options: { ...services.options, compaction: { ...services.options.compaction, keepRecentTokens: keep } } },
        session,
        commit: (drafts) => commitSessionLevel(session, drafts)
      }
      // Under the control lock, with no driver: no turn starts while the summary is written.
      const outcome = yield* withoutDriver(session, Effect.gen(function*() {
        const { state } = session.live
        if (state.openTurn !== undefined && SessionState.isPaused(state)) {
          return yield* new TurnInProgress({ sessionId, turnId: state.openTurn.turnId })
        }
        yield* closeDangling(session)
        return yield* Compaction.run(writer, "manual")
      })).pipe(Effect.tapErrorTag("EventStoreFailure", forgetIfStale(sessionId)))
      // Follow-ups queued while it ran start now.
      yield* runFollowUps(session)
      switch (outcome._tag) {
        case "Compacted":
          return outcome.result
        case "Failed":
          return yield* new CompactionFailed({ sessionId, compactionId: outcome.compactionId, errorCode: outcome.errorCode })
        case "NothingToCompact":
          return yield* new NothingToCompact({ sessionId })
      }
    })

    const replaySession = (input: SessionInput) =>
      (Session.isValidId(input.sessionId) ? store.read(input.sessionId) : Stream.empty).pipe(
        Stream.orElseIfEmptyStream(() => Stream.fail(new SessionNotFound({ sessionId: input.sessionId })))
      )

    const watchSession = (input: WatchSessionInput): ReturnType<SessionEngine.Service["watchSession"]> =>
      Stream.unwrapScoped(Effect.gen(function*() {
        const { sessionId } = input
        if (!Session.isValidId(sessionId)) return yield* new SessionNotFound({ sessionId })
        const from = Number.isSafeInteger(input.fromSequence) ? Math.max(1, input.fromSequence!) : 1
        // Subscribed before the store is read: whatever is stored from now on reaches the queue.
        const live = yield* watchers.subscribe(sessionId)
        if (!sessions.has(sessionId) && Option.isNone(yield* Stream.runHead(store.read(sessionId)))) {
          return yield* new SessionNotFound({ sessionId })
        }
        return Watchers.watch(live, store.read(sessionId, { fromSequence: from }), from, {
          read: (fromSequence) => store.read(sessionId, { fromSequence }),
          ticks: Stream.fromSchedule(Schedule.spaced(options.watchPollInterval ?? Duration.millis(250))),
          // While this engine holds the writer lock, every write reaches the live queue.
          polling: () => !sessions.holdsWriter(sessionId)
        })
      })).pipe(Stream.withSpan("SessionEngine.watchSession", { attributes: { sessionId: input.sessionId } }))

    const sessionState = Effect.fn("SessionEngine.sessionState")(function*(input: SessionInput) {
      return (yield* liveSession(input.sessionId)).live.state
    })

    const pendingApprovals = (input: SessionInput) => Effect.map(sessionState(input), SessionState.pendingApprovals)

    /** What an "always" answer covers: the router's scope for the call, else the tool. */
    const scopeOf = (call: ToolCallInput, cwd: string): Effect.Effect<string> =>
      services.tools === undefined
        ? Effect.succeed(call.tool)
        : services.tools.prepare(call, cwd).pipe(Effect.map((prepared) => prepared.scope), Effect.orElseSucceed(() => call.tool))

    const resolvePermission = Effect.fn("SessionEngine.resolvePermission")(function*(input: ResolvePermissionInput) {
      if (input.decision !== "allow" && input.decision !== "deny") {
        return yield* new InvalidInput({ field: "decision", detail: "must be allow or deny" })
      }
      const { sessionId, toolCallId } = input
      const answer = { decision: input.decision, remember: input.remember === true }
      /** Hands the answer to a driver waiting for it; false when none waits. */
      const deliver = (session: LiveSession.LiveSession) =>
        Effect.suspend(() => {
          const waiting = session.approvals.get(toolCallId)
          return waiting !== undefined ? Deferred.succeed(waiting, answer) : Effect.succeed(false)
        })
      if (yield* deliver(yield* liveSession(sessionId))) return
      // Storing the answer is a write: it needs the session's writer lock (a waiting driver has it already).
      const session = yield* writableSession(sessionId)
      // Taking the lock reloads the session: a driver resumed meanwhile may wait on the reloaded one.
      if (yield* deliver(session)) return
      // No driver waits: the turn may be paused in the log. The answer is stored now; resumeTurn goes on from it.
      yield* withoutDriver(session, Effect.gen(function*() {
        const { state } = session.live
        const call = SessionState.pendingApprovals(state).find((c) => c.toolCallId === toolCallId)
        if (call === undefined || state.openTurn === undefined) return yield* new ApprovalNotPending({ sessionId, toolCallId })
        const scope = answer.remember ? yield* scopeOf({ toolCallId, tool: call.tool, args: call.args }, state.cwd) : undefined
        yield* TurnEnv.detached(services, session, state.openTurn.turnId).commit([
          EventDraft.permissionResolved({ toolCallId, decision: answer.decision, actor: "user", ...(scope === undefined ? {} : { remember: true, scope }) })
        ])
      })).pipe(
        // A driver started while this waited for the control lock: its waits are registered by now.
        Effect.catchTag("TurnInProgress", () =>
          Effect.flatMap(deliver(session), (delivered) => delivered ? Effect.void : Effect.fail(new ApprovalNotPending({ sessionId, toolCallId })))),
        Effect.tapErrorTag("EventStoreFailure", forgetIfStale(sessionId))
      )
    })

    return SessionEngine.of({
      createSession,
      runTurn,
      resumeTurn,
      cancelTurn,
      steer,
      followUp,
      dropFollowUps,
      compactSession,
      forkSession,
      replaySession,
      watchSession,
      resolvePermission,
      pendingApprovals,
      sessionState,
      listSessions: store.list,
      sessionListing: store.listing
    })
  })

/**
 * The engine as a layer: `SessionEngine.layer()` with the default limits, or
 * `SessionEngine.layer({ maxSteps: 10 })`. See {@link make} for the ports it uses.
 */
export const layer = (options: Options = {}): Layer.Layer<SessionEngine, never, EventStore | ModelProvider | IdGenerator> =>
  Layer.scoped(SessionEngine, make(options))
