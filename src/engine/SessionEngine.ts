/**
 * The session engine (CONTRACT.md §3), its public API: creates, forks, replays and watches sessions,
 * and hands what drives them — turns, cancels, steers, follow-ups, answers, manual compactions — to
 * each session's driver (`SessionDriver`). Built only on the ports in `services/` and the state
 * machine in `fsm/`.
 *
 * @since 0.1.0
 */
import * as Channel from "effect/Channel"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as Tracer from "effect/Tracer"
import * as AgentEvent from "../domain/AgentEvent.js"
import {
  type ApprovalNotPending,
  CompactionFailed,
  EventStoreFailure,
  InvalidInput,
  NothingToCompact,
  type NothingToResume,
  type NoTurnInProgress,
  type RewindRefused,
  type SessionBusy,
  SessionNotFound,
  TurnInProgress
} from "../domain/Errors.js"
import * as Pricing from "../domain/Pricing.js"
import * as Session from "../domain/Session.js"
import * as SessionState from "../domain/SessionState.js"
import * as SessionTitle from "../domain/SessionTitle.js"
import * as Task from "../domain/Task.js"
import type * as Image from "../domain/Image.js"
import { AgentHooks } from "../services/AgentHooks.js"
import type { BlobNotFound } from "../domain/Blob.js"
import { BlobStore } from "../services/BlobStore.js"
import * as ContextBuilder from "../services/ContextBuilder.js"
import { EventStore, type Listing } from "../services/EventStore.js"
import { IdGenerator } from "../services/IdGenerator.js"
import { ModelProvider } from "../services/ModelProvider.js"
import * as PermissionEngine from "../services/PermissionEngine.js"
import { type ToolCallInput, ToolRouter } from "../services/ToolRouter.js"
import { WorkspaceCheckpoints } from "../services/WorkspaceCheckpoints.js"
import * as Compaction from "./Compaction.js"
import * as EventDraft from "./EventDraft.js"
import * as Fork from "./Fork.js"
import * as Images from "./Images.js"
import * as KeptShapes from "./KeptShapes.js"
import * as Rewind from "./Rewind.js"
import * as LiveSession from "./LiveSession.js"
import * as LiveSessions from "./LiveSessions.js"
import * as LogFold from "./LogFold.js"
import * as Services from "./Services.js"
import * as Subagents from "./Subagents.js"
import * as OwnedSpan from "./OwnedSpan.js"
import * as PromptCache from "./PromptCache.js"
import * as SessionDriver from "./SessionDriver.js"
import * as StartedNow from "./StartedNow.js"
import type * as Turn from "./Turn.js"
import { TurnSink } from "./TurnSink.js"
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
  /** The message's text; may be empty when it carries images. */
  readonly userMessage: string
  /**
   * Images sent with the message (PNG, JPEG, GIF or WebP, told by their bytes; at most
   * `Image.maxImagesPerMessage`, each at most `Image.maxImageBytes`). Put in the store's blob area
   * and referenced by `user.message`; one refused fails `InvalidInput` (field `images`) and nothing
   * of the message is stored.
   */
  readonly images?: ReadonlyArray<Image.ImageInput>
  /**
   * A budget for this turn and every subagent it starts (over the engine's `budget`): crossing it
   * ends the tree's turns at their next step boundary, `turn.completed {stopReason: "error",
   * errorCode: "budget_exceeded"}`. Each limit is a positive number; `InvalidInput` (field `budget`) otherwise.
   */
  readonly budget?: Task.Budget
}

/** Input of {@link SessionEngine.Service.steer} and {@link SessionEngine.Service.followUp}. */
export interface SessionMessageInput {
  readonly sessionId: string
  readonly message: string
  /**
   * Makes the message apply once: stored with it (`turn.steered`, `followup.queued`), and the same
   * message sent again with the same key is answered from the log instead of being applied again
   * (a caller retrying after a lost answer, a cluster delivering a message again).
   */
  readonly idempotencyKey?: string
}

/** What {@link SessionEngine.Service.followUp} returns: the id naming the follow-up in the log. */
export interface FollowUpQueued {
  readonly queueId: string
}

/**
 * Input of {@link SessionEngine.Service.dropFollowUps}. `queueIds`: only these follow-ups (those of
 * them still queued); without it, every queued one. A client drops what it showed its user: a
 * follow-up another client queued after that is not its to drop.
 */
export interface DropFollowUpsInput extends SessionInput {
  readonly queueIds?: ReadonlyArray<string> | undefined
}

/** What {@link SessionEngine.Service.dropFollowUps} returns: the follow-ups dropped, oldest first. */
export interface FollowUpsDropped {
  readonly queueIds: ReadonlyArray<string>
}

/** Input of {@link SessionEngine.Service.forkSession}. */
export interface ForkSessionInput {
  readonly sessionId: string
  /** The fork point: the end of a closed turn or a session-level event between turns (default: the last such point, the session as it is now). */
  readonly atSequence?: number
}

/** Input of {@link SessionEngine.Service.rewindSession}. */
export type RewindSessionInput = Rewind.RewindInput

/** What {@link SessionEngine.Service.rewindSession} did. */
export type SessionRewound = Rewind.Rewound

/** Input of {@link SessionEngine.Service.renameSession}. */
export interface RenameSessionInput {
  readonly sessionId: string
  /** The new title: made plain (control characters and escapes dropped, whitespace collapsed); 1 to 200 characters then. */
  readonly title: string
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

/** Input of {@link SessionEngine.Service.steer}. */
export interface SteerInput extends SessionMessageInput {
  /** The turn the message is for; when another runs (or none), the steer is refused. */
  readonly turnId?: string | undefined
}

/** Input of {@link SessionEngine.Service.resolvePermission}. */
export interface ResolvePermissionInput {
  readonly sessionId: string
  readonly toolCallId: string
  readonly decision: "allow" | "deny"
  /** Apply the decision to later calls of the same scope (a tool, or for `shell` a program) in this session. */
  readonly remember?: boolean
  /** Makes the answer apply once: stored with it (`permission.resolved`); the same answer again is answered from the log. */
  readonly idempotencyKey?: string
}

/**
 * Limits and timings of turns, compaction (`compaction: { threshold: 0.8, keepRecentTokens: 20_000 }`),
 * and how many sessions the engine holds in memory; every field has a default.
 */
export type Options = Partial<Services.TurnOptions & LiveSessions.CacheOptions & WatchOptions>

/** How watchers follow sessions other processes write. */
export interface WatchOptions {
  /**
   * How often the store is read for a watched session this engine does not hold the writer lock
   * of — another process may be driving it (default 250 milliseconds): one read per session,
   * whatever the number of its watchers.
   */
  readonly watchPollInterval: Duration.DurationInput
  /**
   * How many live events a watched session's feed keeps at least (default 4,096; it holds up to
   * twice that): a watcher further behind reads the events it missed from the store.
   */
  readonly watchCapacity: number
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
     * on. Fails `ApprovalNotPending` when no call with that id is waiting — unless the answer carries
     * an `idempotencyKey` the session has seen with this call's answer: then it succeeds, changing nothing.
     * A call of a subagent below the session (listed by `pendingApprovals` with `askedBy`) is answered
     * on the subagent's session when the session has no waiting call of that id; when several subagents
     * wait on calls of that id, it fails `InvalidInput` naming them: answer on the subagent's session.
     */
    readonly resolvePermission: (
      input: ResolvePermissionInput
    ) => Effect.Effect<void, ApprovalNotPending | SessionNotFound | EventStoreFailure | InvalidInput | SessionBusy>
    /**
     * The calls of the session's open turn waiting for the user's decision, then those of the
     * subagents its `task` calls wait on (and theirs), each with `askedBy`: the subagent's session and task.
     */
    readonly pendingApprovals: (input: SessionInput) => Effect.Effect<ReadonlyArray<SessionState.OpenToolCall>, EventStoreFailure | SessionNotFound>
    /**
     * Continues the turn the log holds paused — its process stopped while a call waited for the
     * user, or on a subagent — as a stream of its remaining events, from the log alone. Answer the
     * waiting calls with `resolvePermission` before or after. Fails `NothingToResume` when no turn is
     * paused. A subagent whose parent's `task` call waits on it is resumed through that parent (the
     * top one that waits): the stream is then that parent's turn, which resumes the subagent.
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
     * cancel are not stored (a warning is logged). With an `idempotencyKey` already seen — stored
     * with a `turn.steered`, or accepted and waiting for the step boundary — it succeeds and changes
     * nothing, whether or not a turn runs now. With `turnId`, only that turn takes it: a steer
     * written for a turn that has ended meanwhile fails `NoTurnInProgress`, rather than going to
     * the turn that runs now (a queued follow-up's).
     */
    readonly steer: (input: SteerInput) => Effect.Effect<void, NoTurnInProgress | SessionNotFound | InvalidInput | EventStoreFailure>
    /**
     * Queues a message to run as its own turn once the session is idle: stored at once as
     * `followup.queued` (no turnId), and run oldest first, each turn's `turn.started` naming its
     * `queueId`. When the session is idle in this engine the follow-up starts right away; otherwise
     * when the running turn ends — however it ends: final, error or cancelled. The turns of
     * follow-ups have no stream of their own: watch them with `watchSession`. A queue left by a
     * process that stopped runs when the session is next driven: the next `runTurn` runs the queued
     * follow-ups first (its stream carries only its own turn; `cancelTurn` meanwhile cancels the
     * follow-up's turn then running, and the new turn still runs), and the next `followUp` or the end
     * of a resumed turn starts them. With an `idempotencyKey` already stored with a `followup.queued`,
     * it answers that follow-up's `queueId` and queues nothing (and starts the queue if the session is
     * idle: the process that stored it may have stopped before starting it). A key used by another
     * kind of message fails `InvalidInput`.
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
    /**
     * Names the session: stores `session.titled {title}` (session-level; a turn may be running) and
     * returns the title as stored — made plain, see `SessionTitle.normalize`. A title that is empty
     * once made plain, or longer than 200 characters, fails `InvalidInput` (field `title`) and stores
     * nothing; the session's current title given again stores nothing either.
     */
    readonly renameSession: (input: RenameSessionInput) => Effect.Effect<{ readonly title: string }, EventStoreFailure | SessionNotFound | InvalidInput | SessionBusy>
    /**
     * Drops the queued follow-ups that have not started (`followup.dropped`) — those named by
     * `queueIds` when given, else all; the running turn goes on.
     */
    readonly dropFollowUps: (input: DropFollowUpsInput) => Effect.Effect<FollowUpsDropped, EventStoreFailure | SessionNotFound | SessionBusy>
    /**
     * Forks a session at the end of a closed turn (default: the last point between turns): a new session whose log
     * is `session.created {cwd, client, forkedFrom: {sessionId, sequence}}`, a copy of the source's
     * events 2..atSequence with the new session id and fresh event ids, then `session.forked`. The
     * source is untouched; the fork's transcript, remembered permissions (and follow-ups still
     * queued) are the source's at that point. A point inside an open turn, or past the end, fails
     * `InvalidInput` and stores nothing. The engine holds the fork's writer lock from then on.
     * The source is read as a stream (the fork's memory does not grow with its length); a store
     * failure midway fails the call and leaves the fork's log cut at a batch's end, without its
     * closing `session.forked` (docs/sessions.md, Fork).
     */
    readonly forkSession: (input: ForkSessionInput) => Effect.Effect<Session.Session, EventStoreFailure | SessionNotFound | InvalidInput | SessionBusy>
    /**
     * Brings the session back to `toSequence`, a point between turns: the conversation continues
     * from there, and the files of its cwd the agent changed since (`workspace.changed`, earlier
     * rewinds) are restored — created ones removed, deleted ones back, changed ones with their old
     * content and mode. Stored as `session.rewound` (session-level); the events after the point stay
     * in the log as an abandoned branch, and a rewind can be rewound (to the sequence before it).
     * Fails, storing nothing and touching no file: `TurnInProgress` while a turn runs or waits for the
     * user; `InvalidInput` for a point inside a turn or compaction or out of range; `RewindRefused`
     * — `nothing_to_rewind`, `past_compaction`, `changed_outside` (files changed outside the agent
     * since, named; `force` overwrites them), `unsafe_path`, `no_checkpoints`.
     */
    readonly rewindSession: (
      input: RewindSessionInput
    ) => Effect.Effect<SessionRewound, EventStoreFailure | SessionNotFound | InvalidInput | RewindRefused | TurnInProgress | SessionBusy>
    /** Streams the stored events of a session in sequence order, unprojected. */
    readonly replaySession: (input: SessionInput) => Stream.Stream<AgentEvent.AgentEvent, EventStoreFailure | SessionNotFound>
    /**
     * Watches a session: its stored events from `fromSequence` (default 1), then its live events
     * as this engine stores them, across turns, each exactly once and in sequence order — no gap,
     * no duplicate, even for events stored while the watcher switches from the store to live. Never
     * ends by itself: interrupt it. Any number of watchers per session; a watcher never slows a
     * turn (watchers share one bounded feed per session; one that falls behind reads the gap from the store). A
     * session this engine does not hold the writer lock
     * of — another process may drive it — is followed by reading the store every
     * `watchPollInterval` (default 250 ms), once for all of its watchers.
     */
    readonly watchSession: (input: WatchSessionInput) => Stream.Stream<AgentEvent.AgentEvent, EventStoreFailure | SessionNotFound>
    /** The session's state as the engine sees it now: turn state and phase, open tool calls, last sequence. */
    readonly sessionState: (input: SessionInput) => Effect.Effect<SessionState.SessionState, EventStoreFailure | SessionNotFound>
    /** Summaries of the readable stored sessions, most recently active first. */
    readonly listSessions: Effect.Effect<ReadonlyArray<Session.SessionSummary>, EventStoreFailure>
    /** The readable sessions (as `listSessions`) and the damaged ones, each with the reason it cannot be read. */
    readonly sessionListing: Effect.Effect<Listing, EventStoreFailure>
    /**
     * An image the session's log names (`user.message.images`, `tool.completed.images`), read from
     * the store's blob area: its bytes and its media type. A blob the log does not name is
     * `BlobNotFound`, whether or not it is stored; bytes that are no longer that image are an
     * `EventStoreFailure` (`corrupt`) and are never returned.
     */
    readonly sessionImage: (input: SessionImageInput) => Effect.Effect<Images.SessionImage, SessionNotFound | BlobNotFound | EventStoreFailure>
  }
}

/** Input of {@link SessionEngine.Service.sessionImage}. */
export interface SessionImageInput {
  readonly sessionId: string
  /** The image's blob hash, as the log names it. */
  readonly blob: string
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
    // effect's short-lived shapes outlive a major GC, and the code optimized for them with them (KeptShapes).
    KeptShapes.hold()
    const store = yield* EventStore
    const ids = yield* IdGenerator
    const baseTools = Option.getOrUndefined(yield* Effect.serviceOption(ToolRouter))
    const basePermissions = Option.getOrElse(yield* Effect.serviceOption(PermissionEngine.PermissionEngine), () => PermissionEngine.askAlways)
    // Every turn is a tree with its budget (of one session when no subagent starts); subagents start
    // when the tools offer the library's `task` (TaskTool's definition itself: an embedder's own tool
    // named `task` runs through its router), and their sessions' tools and permissions are narrowed.
    const subagents = Subagents.makeRuntime({
      offersTask: baseTools?.definitions.some(Task.isOwnDefinition) === true,
      maxDepth: options.maxSubagentDepth,
      maxSubagents: options.maxSubagents ?? options.maxToolCalls ?? Services.defaultOptions.maxToolCalls,
      budget: options.budget
    })
    const services: Services.Services = {
      store,
      blobs: Option.getOrUndefined(yield* Effect.serviceOption(BlobStore)),
      ids,
      watchers: Watchers.make(options.watchCapacity),
      provider: yield* ModelProvider,
      tools: baseTools === undefined || !subagents.offersTask ? baseTools : Subagents.router(baseTools, subagents),
      checkpoints: Option.getOrUndefined(yield* Effect.serviceOption(WorkspaceCheckpoints)),
      permissions: subagents.offersTask ? Subagents.permissions(basePermissions, subagents) : basePermissions,
      context: Option.getOrElse(yield* Effect.serviceOption(ContextBuilder.ContextBuilder), () => ContextBuilder.transcriptOnly),
      hooks: Option.getOrElse(yield* Effect.serviceOption(AgentHooks), () => ({})),
      options: { ...Services.defaultOptions, ...options },
      subagents
    }
    const scope = yield* Effect.scope
    // The watches run on their callers' fibers: ended when the engine's scope closes, not left waiting.
    yield* Effect.addFinalizer(() => services.watchers.close)
    const sessions = yield* LiveSessions.make(store, scope, { ...LiveSessions.defaultCacheOptions, ...options }, (sessionId) => LogFold.load(store, sessionId))
    // Added to the engine's scope after the sessions' writer locks (`LiveSessions`): a shutdown stops the runs first.
    const runs = yield* StartedNow.owner(scope)
    const engine: SessionDriver.Engine = { services, sessions, scope, runs }

    /** Commits session-level drafts (no turnId): stored, folded, handed to watchers. */
    const commitSessionLevel = (session: LiveSession.LiveSession, drafts: ReadonlyArray<AgentEvent.SessionEventDraft | AgentEvent.TurnEventDraft>) =>
      LiveSession.commit(services, session, undefined, drafts)

    /** A session-level write: a store failure that says another writer moved the session on makes it reload. */
    const forgetIfStale = (sessionId: string) => (failure: EventStoreFailure) => SessionDriver.forgetIfStale(engine, sessionId, failure)

    // Its span as the engine's other hot spans make theirs (`OwnedSpan`), not `Effect.fn`'s: once per
    // session, `Effect.fn` captured the call site's stack and its `withSpan` cost 35 Effect operations.
    const createSession = (input: CreateSessionInput) =>
      Effect.suspend((): Effect.Effect<Session.Session, InvalidInput | EventStoreFailure | SessionBusy> => {
        if (input.cwd.trim() === "") return new InvalidInput({ field: "cwd", detail: "must not be empty" })
        // A relative cwd would mean whatever directory a later driver runs in. (Whether it exists is the adapters' check: WorkingDirectory.)
        if (!isAbsolutePath(input.cwd)) return new InvalidInput({ field: "cwd", detail: "must be an absolute path" })
        if (!AgentEvent.Client.literals.includes(input.client)) {
          return new InvalidInput({ field: "client", detail: `must be one of ${AgentEvent.Client.literals.join(", ")}` })
        }
        return created({ cwd: input.cwd, client: input.client })
      }).pipe(OwnedSpan.within("SessionEngine.createSession", { captureStackTrace: false }))

    /** Stores a new session's `session.created` (a subagent's names its parent) and holds it. */
    const created = (payload: AgentEvent.PayloadOf<"session.created">) =>
      Effect.flatMap(ids.next("session"), (sessionId) =>
        Effect.flatMap(
          Effect.zipRight(sessions.holdWriter(sessionId), LiveSession.sessionCreated(services, sessionId, payload)),
          (event) =>
            Effect.flatMap(store.append(event), () => {
              const state = SessionState.fromCreated(event)
              return Effect.as(sessions.add(LiveSession.replayed(state, [event])), Session.fromState(state))
            })
        ))

    /**
     * A turn for the caller, as a stream of its events; the caller going away cancels it (or withdraws
     * it, not started) — unless `kept` says to leave it be (a subagent's turn, its parent stopped by a shutdown).
     */
    const turnStream = <E>(
      spanName: string,
      sessionId: string,
      asked: (session: LiveSession.LiveSession) => Effect.Effect<Turn.Turn, E>,
      kept?: Effect.Effect<boolean>
    ): Stream.Stream<AgentEvent.AgentEvent, E | EventStoreFailure | SessionNotFound | SessionBusy> =>
      Stream.suspend(() => {
        // What the stream took, for its end to let go: set in the same uninterruptible step that asks
        // for the turn, so the caller going away at any point after abandons it.
        let taken: { readonly session: LiveSession.LiveSession; readonly turn: Turn.Turn } | undefined
        let span: Tracer.Span | undefined
        const take = Effect.flatMap(Effect.makeSpan(spanName, { captureStackTrace: false, attributes: { sessionId } }), (made) => {
          span = made
          return Effect.flatMap(sessions.writable(sessionId), (session) =>
            Effect.uninterruptible(Effect.map(asked(session), (turn) => {
              taken = { session, turn }
              return turn.sink!
            }))).pipe(OwnedSpan.under(made))
        })
        // One channel from the turn's sink, its first step the ask, with one finalizer around it: a second scoped stream
        // (`Stream.unwrapScoped`, `Stream.withSpan`) would cost a nested stream per turn. The span ends with the stream, the turn's span its child.
        return Stream.fromChannel(Channel.ensuringWith(TurnSink.channelAfter(take), (exit) => {
          const ended = Effect.clockWith((clock) => Effect.sync(() => span?.end(clock.unsafeCurrentTimeNanos(), exit)))
          if (taken === undefined) return ended
          const { session, turn } = taken
          // The turn's end was dealt with as its sink ended (a stream read to its end, the usual case): nothing to abandon, known by a plain look.
          if (turn.sink!.ended) return ended
          const abandoned = kept === undefined
            ? SessionDriver.abandon(session, turn)
            : Effect.flatMap(kept, (keep) => keep ? Effect.void : SessionDriver.abandon(session, turn))
          return Effect.zipRight(abandoned, ended)
        }))
      })

    // A top turn's budget is its own tightened by the engine's (`Task.tighter`), stored so in its
    // `turn.started`: a process that resumes it without the engine's budget holds it to the same. A
    // subagent's turn is its parent's tree's and stores none.
    const runTurnKept = (input: RunTurnInput, kept?: Effect.Effect<boolean>, top = false): ReturnType<SessionEngine.Service["runTurn"]> =>
      turnStream<InvalidInput | TurnInProgress | EventStoreFailure>("SessionEngine.runTurn", input.sessionId, (session) =>
        Effect.gen(function*() {
          const given = input.images ?? []
          if (input.userMessage.trim() === "" && given.length === 0) {
            return yield* new InvalidInput({ field: "userMessage", detail: "must not be empty" })
          }
          // Checked and stored before the turn is asked for: a refused image leaves no event.
          const own = yield* checkBudget(input.budget)
          const budget = top ? Task.tighter(own, options.budget) : own
          if (budget?.maxCost !== undefined) yield* priced(services)
          const images = yield* Images.store(services.blobs, given)
          return yield* SessionDriver.request(engine, session, {
            _tag: "New",
            userMessage: input.userMessage,
            ...(images.length === 0 ? {} : { images }),
            ...(budget === undefined ? {} : { budget })
          })
        }), kept)

    const runTurn = (input: RunTurnInput): ReturnType<SessionEngine.Service["runTurn"]> => runTurnKept(input, undefined, true)

    subagents.api = {
      createChild: (input) => created({ cwd: input.cwd, client: input.client, parent: input.parent }),
      runTurn: (input, kept) => runTurnKept(input, kept),
      resumeTurn: (sessionId, kept) => resumeOwn(sessionId, kept),
      cancelTurn: (sessionId) => SessionDriver.cancel(engine, sessionId),
      repair: (sessionId) =>
        Effect.flatMap(sessions.writable(sessionId), (session) => SessionDriver.exclusive(engine, session, SessionDriver.closeDangling(engine, session))),
      session: (sessionId) => Effect.map(sessions.get(sessionId), (session) => session.live),
      isSubagent: (sessionId) =>
        sessions.get(sessionId).pipe(Effect.map((session) => session.live.state.parent !== undefined), Effect.orElseSucceed(() => false))
    }

    const resumeOwn = (sessionId: string, kept?: Effect.Effect<boolean>) =>
      turnStream("SessionEngine.resumeTurn", sessionId, (session) => SessionDriver.request(engine, session, { _tag: "Resume" }), kept)

    // A subagent whose parent's `task` call waits on it (after a restart) is resumed through that parent.
    const resumeTurn = (input: SessionInput) => Stream.unwrap(Effect.map(Subagents.driverOf(services, input.sessionId), (sessionId) => resumeOwn(sessionId)))

    // Its span as the engine's other hot spans make theirs (`OwnedSpan`), not `Effect.fn`'s: no call
    // site's stack captured on each call and fewer Effect operations before the turn is interrupted
    // (bench/cancel-ops.ts; row 7 times a cancel).
    const cancelTurn = (input: CancelTurnInput) =>
      SessionDriver.cancel(engine, input.sessionId, input.turnId).pipe(
        OwnedSpan.within("SessionEngine.cancelTurn", { captureStackTrace: false })
      )

    const steer = Effect.fn("SessionEngine.steer")(function*(input: SteerInput) {
      if (input.message.trim() === "") return yield* new InvalidInput({ field: "message", detail: "must not be empty" })
      const session = yield* sessions.get(input.sessionId)
      yield* SessionDriver.steer(session, { content: input.message, idempotencyKey: input.idempotencyKey }, input.turnId)
    })

    const followUp = Effect.fn("SessionEngine.followUp")(function*(input: SessionMessageInput) {
      if (input.message.trim() === "") return yield* new InvalidInput({ field: "message", detail: "must not be empty" })
      const session = yield* sessions.writable(input.sessionId)
      return { queueId: yield* SessionDriver.followUp(engine, session, { content: input.message, idempotencyKey: input.idempotencyKey }) }
    })

    const dropFollowUps = Effect.fn("SessionEngine.dropFollowUps")(function*(input: DropFollowUpsInput) {
      const session = yield* sessions.writable(input.sessionId)
      const named = input.queueIds === undefined ? undefined : new Set(input.queueIds)
      const queueIds = session.live.state.followUps.map((f) => f.queueId).filter((id) => named === undefined || named.has(id))
      if (queueIds.length === 0) return { queueIds }
      // A follow-up whose turn starts meanwhile is no longer queued: the fold keeps only those still queued.
      yield* commitSessionLevel(session, [EventDraft.followUpDropped(queueIds)]).pipe(Effect.tapError(forgetIfStale(input.sessionId)))
      return { queueIds }
    })

    const renameSession = Effect.fn("SessionEngine.renameSession")(function*(input: RenameSessionInput) {
      const normalized = SessionTitle.normalize(input.title)
      if ("invalid" in normalized) return yield* new InvalidInput({ field: "title", detail: normalized.invalid })
      const session = yield* sessions.writable(input.sessionId)
      if (session.live.state.title === normalized.title) return { title: normalized.title }
      yield* commitSessionLevel(session, [EventDraft.sessionTitled(normalized.title)]).pipe(Effect.tapError(forgetIfStale(input.sessionId)))
      return { title: normalized.title }
    })

    const forkSession = Effect.fn("SessionEngine.forkSession")(function*(input: ForkSessionInput) {
      if (!Session.isValidId(input.sessionId)) return yield* new SessionNotFound({ sessionId: input.sessionId })
      // The source is read twice, holding none of it: to the fork point to check it, then to copy it.
      const point = yield* Fork.search(store, input.sessionId, input.atSequence)
      if (point.events === 0) return yield* new SessionNotFound({ sessionId: input.sessionId })
      const atSequence = yield* point.result
      const sessionId = yield* ids.next("session")
      yield* sessions.holdWriter(sessionId)
      const now = new Date(yield* Clock.currentTimeMillis).toISOString()
      const fork = yield* Fork.write(store, ids, input.sessionId, atSequence, sessionId, now)
      yield* sessions.add(fork)
      return Session.fromState(fork.state)
    })

    const rewindSession = Effect.fn("SessionEngine.rewindSession")(function*(input: RewindSessionInput) {
      if (!Number.isSafeInteger(input.toSequence) || input.toSequence < 1) {
        return yield* new InvalidInput({ field: "toSequence", detail: "must be a sequence of the session, 1 or more" })
      }
      const session = yield* sessions.writable(input.sessionId)
      return yield* Rewind.run(engine, session, input).pipe(Effect.tapErrorTag("EventStoreFailure", forgetIfStale(input.sessionId)))
    })

    const compactSession = Effect.fn("SessionEngine.compactSession")(function*(input: CompactSessionInput) {
      const keep = input.keepRecentTokens
      if (keep !== undefined && !(Number.isSafeInteger(keep) && keep >= 0)) {
        return yield* new InvalidInput({ field: "keepRecentTokens", detail: "must be a whole number of tokens, 0 or more" })
      }
      const { sessionId } = input
      const session = yield* sessions.writable(sessionId)
      const withKeep: Services.Services = keep === undefined
        ? services
        : { ...services, options: { ...services.options, compaction: { ...services.options.compaction, keepRecentTokens: keep } } }
      // With no run: no turn starts while the summary is written; follow-ups queued meanwhile start once it ends.
      const outcome = yield* SessionDriver.exclusive(engine, session, Effect.gen(function*() {
        const { state } = session.live
        if (state.openTurn !== undefined && SessionState.isPaused(state)) {
          return yield* new TurnInProgress({ sessionId, turnId: state.openTurn.turnId })
        }
        yield* SessionDriver.closeDangling(engine, session)
        // A turn paused on its subagents stays open.
        const left = session.live.state.openTurn
        if (left !== undefined) return yield* new TurnInProgress({ sessionId, turnId: left.turnId })
        // The user asked for a compaction: with no window of theirs, a short session still gets one (all but its last turn).
        return yield* Compaction.run(withKeep, session, (drafts) => commitSessionLevel(session, drafts), "manual", undefined, keep === undefined)
      })).pipe(Effect.tapErrorTag("EventStoreFailure", forgetIfStale(sessionId)))
      switch (outcome._tag) {
        case "Compacted":
          return outcome.result
        case "Failed":
          return yield* new CompactionFailed({ sessionId, compactionId: outcome.compactionId, errorCode: outcome.errorCode })
        case "NothingToCompact":
          return yield* new NothingToCompact({ sessionId })
      }
    })

    const namedImages = new Images.NamedImages()

    const replaySession = (input: SessionInput) =>
      (Session.isValidId(input.sessionId) ? store.read(input.sessionId) : Stream.empty).pipe(
        Stream.orElseIfEmptyStream(() => Stream.fail(new SessionNotFound({ sessionId: input.sessionId }))),
        Stream.withSpan("SessionEngine.replaySession", { attributes: { sessionId: input.sessionId } })
      )

    /**
     * The watch's span lasts as long as the watch, and is the parent of what it does with the store
     * (the subscription, the first read, a gap's read) — not of each batch it takes from the live
     * feed: a span provided to the whole stream is set up again at every pull, about a third of a
     * watcher's cost per batch (with hundreds of SSE clients, each takes every batch).
     */
    const watchSession = (input: WatchSessionInput): ReturnType<SessionEngine.Service["watchSession"]> =>
      Stream.unwrapScoped(Effect.gen(function*() {
        const { sessionId } = input
        // No call site captured: the watch ends by interruption whenever its client goes away, and a
        // span that ends interrupted formats its stack (tens of µs a watcher) to name this line.
        const span = yield* Effect.makeSpanScoped("SessionEngine.watchSession", { attributes: { sessionId }, captureStackTrace: false })
        return yield* Effect.withParentSpan(watchWithin(input, span), span)
      }))

    /**
     * Whether the store holds nothing of a session from `from` on, known without reading it: this
     * engine writes the session (no other process does) and its state ends before `from`. A batch's
     * events reach the state and the watchers' feed at once, after the store has them (see
     * `LiveSession.commit`), so an event the state does not show yet reaches a watcher subscribed
     * before this through the feed. A client resuming from the session's last event (an
     * `EventSource` reconnecting, `?after=` its end) then costs no read of the log: on a JSONL
     * store, a read from a sequence goes through the log from its first line.
     */
    const pastTheEnd = (sessionId: string, from: number): boolean => {
      if (!sessions.holdsWriter(sessionId)) return false
      const session = sessions.loaded(sessionId)
      return session !== undefined && from > session.state.lastSequence
    }

    /**
     * Whether a session is stored: a log whose end the store reads as an event of it is (JSONL: 4 KiB
     * of its end), else its first event is read (JSONL: a 64 KiB chunk, or the whole log when smaller).
     */
    const isStored = (sessionId: string) =>
      Effect.flatMap(store.lastSequence?.(sessionId) ?? Effect.succeedNone, (last) =>
        Option.isSome(last) ? Effect.succeed(true) : Effect.map(Stream.runHead(store.read(sessionId)), Option.isSome))

    const watchWithin = (input: WatchSessionInput, span: Tracer.Span) =>
      Effect.gen(function*() {
        const { sessionId } = input
        if (!Session.isValidId(sessionId)) return yield* new SessionNotFound({ sessionId })
        const from = Number.isSafeInteger(input.fromSequence) ? Math.max(1, input.fromSequence!) : 1
        // Subscribed before the store is read: whatever is stored from now on reaches the feed.
        const read = (fromSequence: number) => Stream.provideService(store.read(sessionId, { fromSequence }), Tracer.ParentSpan, span)
        const live = yield* services.watchers.subscribe(sessionId, {
          interval: options.watchPollInterval ?? Duration.millis(250),
          read,
          // While this engine holds the writer lock, every write reaches the live feed.
          polling: () => !sessions.holdsWriter(sessionId),
          ...(store.lastSequence === undefined ? {} : { lastSequence: store.lastSequence(sessionId) })
        })
        if (!sessions.has(sessionId) && !(yield* isStored(sessionId))) return yield* new SessionNotFound({ sessionId })
        return Watchers.watch(live, pastTheEnd(sessionId, from) ? Stream.empty : read(from), from, read)
      })

    const sessionState = Effect.fn("SessionEngine.sessionState")(function*(input: SessionInput) {
      return (yield* sessions.get(input.sessionId)).live.state
    })

    // A subagent's waiting calls are the parent's to answer too: listed with it, labelled (`askedBy`).
    const pendingApprovals = (input: SessionInput) =>
      Effect.flatMap(sessionState(input), (state) =>
        Effect.map(Subagents.pendingBelow(services, state), (below) => [...SessionState.pendingApprovals(state), ...below]))

    /** What an "always" answer covers: the router's scope for the call, else the tool. */
    const scopeOf = (call: ToolCallInput, cwd: string): Effect.Effect<string> =>
      services.tools === undefined
        ? Effect.succeed(call.tool)
        : services.tools.prepare(call, cwd).pipe(Effect.map((prepared) => prepared.scope), Effect.orElseSucceed(() => call.tool))

    const resolvePermission = Effect.fn("SessionEngine.resolvePermission")(function*(input: ResolvePermissionInput) {
      if (input.decision !== "allow" && input.decision !== "deny") {
        return yield* new InvalidInput({ field: "decision", detail: "must be allow or deny" })
      }
      const answer = { decision: input.decision, remember: input.remember === true, idempotencyKey: input.idempotencyKey }
      yield* SessionDriver.answer(engine, input.sessionId, input.toolCallId, answer, scopeOf).pipe(
        // Not this session's call: a subagent's below it, answered on its own session (the session's own calls come first).
        Effect.catchTag("ApprovalNotPending", (notPending) =>
          Effect.flatMap(sessionState(input), (state) =>
            Effect.flatMap(Subagents.pendingBelow(services, state), (below) => {
              const askers = [...new Set(below.flatMap((call) => call.toolCallId === input.toolCallId && call.askedBy !== undefined ? [call.askedBy.sessionId] : []))]
              if (askers.length === 0) return Effect.fail(notPending)
              // Providers without call ids of their own (`call_<index>`) give sibling subagents the same one:
              // which the user meant is not ours to guess.
              if (askers.length > 1) {
                return Effect.fail(new InvalidInput({
                  field: "toolCallId",
                  detail: `subagents ${askers.sort().join(", ")} each wait on a call ${input.toolCallId}: answer it on the subagent's session`
                }))
              }
              return SessionDriver.answer(engine, askers[0]!, input.toolCallId, answer, scopeOf)
            })))
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
      renameSession,
      compactSession,
      forkSession,
      rewindSession,
      replaySession,
      watchSession,
      resolvePermission,
      pendingApprovals,
      sessionState,
      listSessions: store.list.pipe(Effect.withSpan("SessionEngine.listSessions")),
      sessionListing: store.listing.pipe(Effect.withSpan("SessionEngine.sessionListing")),
      // The log is read first: an unknown session is SessionNotFound, not an unknown image. A
      // session read before is read on from where that ended (an empty rest is no failure).
      sessionImage: (input) =>
        Images.ofSession(
          services.blobs,
          namedImages,
          input.sessionId,
          (fromSequence) => fromSequence <= 1 ? replaySession(input) : store.read(input.sessionId, { fromSequence }),
          input.blob
        ).pipe(
          Effect.withSpan("SessionEngine.sessionImage", { attributes: { sessionId: input.sessionId } })
        )
    })
  })

/** A turn's budget, checked: each limit a positive finite number. */
const checkBudget = (budget: Task.Budget | undefined): Effect.Effect<Task.Budget | undefined, InvalidInput> => {
  if (budget === undefined) return Effect.succeed(undefined)
  const bad = (["maxTokens", "maxCost", "maxSteps"] as const).find((key) => budget[key] !== undefined && !(Number.isFinite(budget[key]) && budget[key]! > 0))
  return bad === undefined
    ? Effect.succeed(budget.maxTokens === undefined && budget.maxCost === undefined && budget.maxSteps === undefined ? undefined : budget)
    : Effect.fail(new InvalidInput({ field: "budget", detail: `${bad} must be a positive number` }))
}

/**
 * A `maxCost` budget needs the model's price (but on the `fake` provider): without one the turn is refused (`InvalidInput`, field
 * `budget`, naming the model) rather than run with a cap that counts nothing.
 */
const priced = (services: Services.Services): Effect.Effect<void, InvalidInput> => {
  const { model, provider } = services.provider.capabilities
  return Pricing.spendsNothing(provider) || PromptCache.costOf(services, { inputTokens: 0, outputTokens: 0 }).cost !== null ? Effect.void : Effect.fail(
    new InvalidInput({
      field: "budget",
      detail: `maxCost: no price is known for model ${model}; give it one in the settings' \`prices\` (the engine's \`prices\` option)`
    })
  )
}

/**
 * Who drives `sessionId` when another live process does (`SessionBusy`'s holder, "pid 123 on host
 * h"), else `undefined` — and then `engine` holds the session's writer lock from now on, as resuming
 * it would take it. A surface that shows a paused turn's questions asks this first: a question
 * another process asked is answered there, and an answer given here could not be stored. The lock
 * is taken by a write that stores nothing (dropping no follow-up), so it works on every engine.
 */
export const drivenElsewhere = (engine: SessionEngine.Service, sessionId: string): Effect.Effect<string | undefined, EventStoreFailure | SessionNotFound> =>
  engine.dropFollowUps({ sessionId, queueIds: [] }).pipe(
    Effect.as(undefined),
    Effect.catchTag("SessionBusy", (busy) => Effect.succeed(busy.holder))
  )

/**
 * The engine as a layer: `SessionEngine.layer()` with the default limits, or
 * `SessionEngine.layer({ maxSteps: 10 })`. See {@link make} for the ports it uses.
 */
export const layer = (options: Options = {}): Layer.Layer<SessionEngine, never, EventStore | ModelProvider | IdGenerator> =>
  Layer.scoped(SessionEngine, make(options))
