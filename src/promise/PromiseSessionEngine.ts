/**
 * The engine for callers outside Effect (CONTRACT.md §6): Promises and async iterables on a
 * `ManagedRuntime`. Breaking out of a `for await` over `runTurn` cancels the turn, and so does
 * aborting the `signal` passed to it.
 *
 * @since 0.1.0
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Cause from "effect/Cause"
import * as Data from "effect/Data"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Stream from "effect/Stream"
import type { AgentEvent } from "../domain/AgentEvent.js"
import type { Session, SessionSummary } from "../domain/Session.js"
import type { OpenToolCall, SessionState } from "../domain/SessionState.js"
import * as SessionEngine from "../engine/SessionEngine.js"
import * as FakeModelProvider from "../layers/FakeModelProvider.js"
import * as JsonlEventStore from "../layers/JsonlEventStore.js"
import * as WorkingDirectory from "../layers/WorkingDirectory.js"
import * as PreImages from "../layers/workspace/PreImages.js"
import type { BlobStore } from "../services/BlobStore.js"
import type { EventStore } from "../services/EventStore.js"
import * as IdGenerator from "../services/IdGenerator.js"
import type { ModelProvider } from "../services/ModelProvider.js"

/**
 * What every method of a disposed engine rejects with (and every iteration throws), and what a call
 * still running when `dispose()` stopped it rejects with: one tagged error, whatever the method.
 */
export class EngineDisposed extends Data.TaggedError("EngineDisposed")<{ readonly message: string }> {
  constructor() {
    super({ message: "This session engine has been disposed: make a new one (makeSessionEngine) to go on." })
  }
}

/** Options of {@link makeSessionEngine}. Everything has an embedded default. */
export interface Options {
  /** Where the JSONL store keeps its files (default `./.effect-agent`). Ignored when `store` is given. */
  readonly dataDir?: string
  /** The event store layer (default: JSONL files in `dataDir`). */
  readonly store?: Layer.Layer<EventStore, unknown>
  /** The model layer (default: the built-in echo model). */
  readonly model?: Layer.Layer<ModelProvider, unknown>
  /** The id layer (default: random ids). */
  readonly ids?: Layer.Layer<IdGenerator.IdGenerator, unknown>
  /**
   * The optional engine services — a `ToolRouter`, a `PermissionEngine`, a `ContextBuilder`,
   * `AgentHooks` — as one layer (merge several with `Layer.mergeAll`). What they need of the
   * platform (`FileSystem`, `Path`, …: `WorkspaceTools.layer()` does) is provided by Node's.
   */
  readonly services?: Layer.Layer<never, unknown, NodeContext.NodeContext>
  /**
   * Keep workspace checkpoints (`PreImages`: pre-images of the files tool calls change, in the
   * store's blob area), so that `rewindSession` restores files: `true` for the default caps, or the
   * caps. The store must provide a `BlobStore` (every built-in store does). Default: off.
   */
  readonly checkpoints?: boolean | PreImages.Options
  /** Limits and timings of turns. */
  readonly limits?: SessionEngine.Options
  /** Replaces the whole engine layer; the other options are then ignored. */
  readonly layer?: Layer.Layer<SessionEngine.SessionEngine, unknown>
}

/** The session engine with Promises and async iterables. */
export interface PromiseSessionEngine {
  /** Creates a session in `cwd`: an absolute path to an existing directory, stored as its real path (rejects `InvalidInput` otherwise). */
  readonly createSession: (input: SessionEngine.CreateSessionInput) => Promise<Session>
  /**
   * Runs one turn. Iterate it with `for await`; `break` cancels the turn. Aborting `signal`
   * cancels it too: the iteration then ends with `turn.completed {stopReason: "cancelled"}`. A
   * signal that is already aborted rejects at once and starts nothing.
   */
  readonly runTurn: (input: SessionEngine.RunTurnInput & { readonly signal?: AbortSignal }) => AsyncIterable<AgentEvent>
  /** Continues a turn paused in the log (its process stopped while a call waited for approval). */
  readonly resumeTurn: (input: SessionEngine.SessionInput) => AsyncIterable<AgentEvent>
  /** Answers a call paused on `ask`. */
  readonly resolvePermission: (input: SessionEngine.ResolvePermissionInput) => Promise<void>
  /** The calls waiting for the user's decision. */
  readonly pendingApprovals: (input: SessionEngine.SessionInput) => Promise<ReadonlyArray<OpenToolCall>>
  /** Cancels the running turn and resolves once it has ended. Never rejects. */
  readonly cancelTurn: (input: SessionEngine.CancelTurnInput) => Promise<void>
  /** Sends a message into the running turn (stored as `turn.steered` at its next step boundary); rejects `NoTurnInProgress` when none runs (or, with `turnId`, when that turn does not). */
  readonly steer: (input: SessionEngine.SteerInput) => Promise<void>
  /** Queues a message to run as its own turn once the session is idle (`followup.queued`); resolves with its queue id. */
  readonly followUp: (input: SessionEngine.SessionMessageInput) => Promise<SessionEngine.FollowUpQueued>
  /** Drops the queued follow-ups that have not started; resolves with their queue ids. */
  readonly dropFollowUps: (input: SessionEngine.DropFollowUpsInput) => Promise<SessionEngine.FollowUpsDropped>
  /** Names the session (`session.titled`); answers the title as stored. */
  readonly renameSession: (input: SessionEngine.RenameSessionInput) => Promise<{ readonly title: string }>
  /** Compacts the session's context now; see `SessionEngine.compactSession`. `signal` aborts it (`compaction.failed {cancelled}`). */
  readonly compactSession: (input: SessionEngine.CompactSessionInput & { readonly signal?: AbortSignal }) => Promise<SessionEngine.CompactionResult>
  /** Forks a session at a closed point (default: the session as it is now, but a turn or compaction still open); resolves with the new session. */
  readonly forkSession: (input: SessionEngine.ForkSessionInput) => Promise<Session>
  /** Rewinds the session and the files the agent changed to a point between turns; see `SessionEngine.rewindSession`. Rejects `RewindRefused` naming files changed outside the agent unless `force`. */
  readonly rewindSession: (input: SessionEngine.RewindSessionInput) => Promise<SessionEngine.SessionRewound>
  readonly replaySession: (input: SessionEngine.SessionInput) => AsyncIterable<AgentEvent>
  /**
   * Watches a session: its stored events from `fromSequence`, then live ones across turns, each
   * exactly once. Never ends by itself: `break` out of the `for await`, or abort `signal` (the
   * iteration then simply ends).
   */
  readonly watchSession: (input: SessionEngine.WatchSessionInput & { readonly signal?: AbortSignal }) => AsyncIterable<AgentEvent>
  readonly sessionState: (input: SessionEngine.SessionInput) => Promise<SessionState>
  readonly listSessions: () => Promise<ReadonlyArray<SessionSummary>>
  /**
   * Cancels running turns (their logs record it; a turn waiting for approval stays paused) and releases
   * the runtime. Every later call rejects (every iteration throws) `EngineDisposed`; `dispose()` again
   * and `cancelTurn` resolve.
   */
  readonly dispose: () => Promise<void>
}

const defaultLayer = (options: Options): Layer.Layer<SessionEngine.SessionEngine, unknown> =>
  SessionEngine.layer(options.limits).pipe(
    Layer.provide(withCheckpoints(
      options.store ?? JsonlEventStore.layer({ dataDir: options.dataDir ?? ".effect-agent" }).pipe(Layer.provide(NodeContext.layer)),
      options.checkpoints
    )),
    Layer.provide(options.model ?? FakeModelProvider.layer()),
    Layer.provide(options.ids ?? IdGenerator.layer),
    Layer.provide((options.services ?? Layer.empty).pipe(Layer.provide(NodeContext.layer)))
  )

/** The store, and the workspace checkpoints on its blob area when asked for. */
const withCheckpoints = (store: Layer.Layer<EventStore, unknown>, checkpoints: Options["checkpoints"]) =>
  checkpoints === undefined || checkpoints === false
    ? store
    : Layer.merge(store, PreImages.layer(checkpoints === true ? {} : checkpoints).pipe(Layer.provide(store as Layer.Layer<EventStore | BlobStore, unknown>)))

/** Builds a Promise-based engine. Call `dispose()` when done. */
export const makeSessionEngine = (options: Options = {}): PromiseSessionEngine => {
  const runtime = ManagedRuntime.make(options.layer ?? defaultLayer(options))
  let disposed = false
  // Rejects with the typed error itself (a SessionNotFound, an EventStoreFailure), not a wrapper;
  // once disposed, with EngineDisposed (not the runtime's own string or a FiberFailure).
  const withEngine = <A, E>(f: (engine: SessionEngine.SessionEngine.Service) => Effect.Effect<A, E>, signal?: AbortSignal): Promise<A> =>
    disposed ? Promise.reject(new EngineDisposed()) : runtime.runPromiseExit(Effect.flatMap(SessionEngine.SessionEngine, f), signal === undefined ? undefined : { signal }).then((exit) =>
      Exit.isSuccess(exit)
        ? exit.value
        : Promise.reject(disposed && (Cause.isInterruptedOnly(exit.cause) || Cause.isDie(exit.cause)) ? new EngineDisposed() : Cause.squash(exit.cause))
    )

  const iterate = <E>(stream: (engine: SessionEngine.SessionEngine.Service) => Stream.Stream<AgentEvent, E>): AsyncIterable<AgentEvent> => ({
    async *[Symbol.asyncIterator]() {
      if (disposed) throw new EngineDisposed()
      const rt = await runtime.runtime().catch((cause: unknown) => Promise.reject(disposed ? new EngineDisposed() : cause))
      // yield* forwards an early return (a `break`) to the inner iterator, which interrupts the stream.
      yield* Stream.toAsyncIterableRuntime(Stream.unwrap(Effect.map(SessionEngine.SessionEngine, stream)), rt)
    }
  })

  const runTurn: PromiseSessionEngine["runTurn"] = ({ signal, ...input }) => {
    if (signal === undefined) return iterate((engine) => engine.runTurn(input))
    return iterate((engine) =>
      Stream.unwrapScoped(Effect.gen(function*() {
        if (signal.aborted) return yield* Effect.fail(signal.reason)
        const aborted = yield* Deferred.make<void>()
        const started = yield* Deferred.make<string>()
        const onAbort = () => Deferred.unsafeDone(aborted, Effect.void)
        signal.addEventListener("abort", onAbort, { once: true })
        yield* Effect.addFinalizer(() => Effect.sync(() => signal.removeEventListener("abort", onAbort)))
        // Cancel this turn, by id, once it has started and the signal has fired.
        yield* Deferred.await(aborted).pipe(
          Effect.zipRight(Deferred.await(started)),
          Effect.flatMap((turnId) => engine.cancelTurn({ sessionId: input.sessionId, turnId })),
          Effect.forkScoped
        )
        return engine.runTurn(input).pipe(
          Stream.tap((event) => event.type === "turn.started" ? Deferred.succeed(started, event.turnId) : Effect.void)
        )
      }))
    )
  }

  return {
    // The cwd is checked and made canonical here, where the file system is (the engine only checks it is absolute).
    createSession: (input) =>
      withEngine((engine) => Effect.flatMap(WorkingDirectory.canonical(input.cwd), (cwd) => engine.createSession({ ...input, cwd }))),
    runTurn,
    resumeTurn: (input) => iterate((engine) => engine.resumeTurn(input)),
    resolvePermission: (input) => withEngine((engine) => engine.resolvePermission(input)),
    pendingApprovals: (input) => withEngine((engine) => engine.pendingApprovals(input)),
    // Never rejects: on a disposed engine no turn runs, there is nothing to cancel.
    cancelTurn: (input) => disposed ? Promise.resolve() : withEngine((engine) => engine.cancelTurn(input)),
    steer: (input) => withEngine((engine) => engine.steer(input)),
    followUp: (input) => withEngine((engine) => engine.followUp(input)),
    dropFollowUps: (input) => withEngine((engine) => engine.dropFollowUps(input)),
    renameSession: (input) => withEngine((engine) => engine.renameSession(input)),
    compactSession: ({ signal, ...input }) => withEngine((engine) => engine.compactSession(input), signal),
    forkSession: (input) => withEngine((engine) => engine.forkSession(input)),
    rewindSession: (input) => withEngine((engine) => engine.rewindSession(input)),
    replaySession: (input) => iterate((engine) => engine.replaySession(input)),
    watchSession: ({ signal, ...input }) =>
      iterate((engine) =>
        signal === undefined ? engine.watchSession(input) : engine.watchSession(input).pipe(
          Stream.interruptWhen(Effect.async<void>((resume) => {
            if (signal.aborted) return resume(Effect.void)
            const onAbort = () => resume(Effect.void)
            signal.addEventListener("abort", onAbort, { once: true })
            return Effect.sync(() => signal.removeEventListener("abort", onAbort))
          }))
        )
      ),
    sessionState: (input) => withEngine((engine) => engine.sessionState(input)),
    listSessions: () => withEngine((engine) => engine.listSessions),
    dispose: () => {
      disposed = true
      return runtime.dispose()
    }
  }
}
