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
import * as Fiber from "effect/Fiber"
import * as FiberId from "effect/FiberId"
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
   * signal that is already aborted rejects at once and starts nothing; one aborted before the turn
   * started (behind a stopped process's follow-ups) withdraws it and the iteration ends. One-shot: a
   * second iteration of the same iterable throws.
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
  /** Compacts the session's context now; see `SessionEngine.compactSession`. `signal` aborts it (`compaction.failed {cancelled}`; rejects with `signal.reason`). */
  readonly compactSession: (input: SessionEngine.CompactSessionInput & { readonly signal?: AbortSignal }) => Promise<SessionEngine.CompactionResult>
  /** Forks a session at a closed point (default: the session as it is now, but a turn or compaction still open); resolves with the new session. */
  readonly forkSession: (input: SessionEngine.ForkSessionInput) => Promise<Session>
  /** Rewinds the session and the files the agent changed to a point between turns; see `SessionEngine.rewindSession`. Rejects `RewindRefused` naming files changed outside the agent unless `force`. */
  readonly rewindSession: (input: SessionEngine.RewindSessionInput) => Promise<SessionEngine.SessionRewound>
  readonly replaySession: (input: SessionEngine.SessionInput) => AsyncIterable<AgentEvent>
  /**
   * Watches a session: its stored events from `fromSequence`, then live ones across turns, each
   * exactly once. Never ends by itself: `break` out of the `for await`, or abort `signal` (the
   * iteration then simply ends; already aborted, it ends at once).
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

/**
 * One `abort` listener per signal, fanning out to the calls that share it: a signal shared by many
 * calls at once would otherwise collect a listener each (and Node warns past ten).
 */
const aborts = new WeakMap<AbortSignal, Set<() => void>>()
const onAbort = (signal: AbortSignal, f: () => void): () => void => {
  let listeners = aborts.get(signal)
  if (listeners === undefined) {
    const set = new Set<() => void>()
    listeners = set
    aborts.set(signal, set)
    signal.addEventListener("abort", () => {
      aborts.delete(signal)
      for (const listener of set) listener()
    }, { once: true })
  }
  listeners.add(f)
  const added = listeners
  return () => void added.delete(f)
}

/** Builds a Promise-based engine. Call `dispose()` when done. */
export const makeSessionEngine = (options: Options = {}): PromiseSessionEngine => {
  const runtime = ManagedRuntime.make(options.layer ?? defaultLayer(options))
  let disposed = false
  let disposing: Promise<void> | undefined = undefined
  // Every call and iteration runs on a fiber of its own, kept here while it runs. dispose() interrupts
  // the calls (and waits for them to end) before it releases the runtime, so that none goes on writing
  // once the writer locks are released; then the iterations, once the runtime's scope has cancelled the
  // running turns (as a `break` would not: the session's queued follow-ups would start).
  const calls = new Set<Fiber.RuntimeFiber<unknown, unknown>>()
  const iterations = new Set<Fiber.RuntimeFiber<unknown, unknown>>()
  const fork = <A, E>(effect: Effect.Effect<A, E, SessionEngine.SessionEngine>, running = calls): Fiber.RuntimeFiber<A, unknown> => {
    const fiber = runtime.runFork(effect)
    running.add(fiber)
    fiber.addObserver(() => running.delete(fiber))
    return fiber
  }
  // The typed error itself (a SessionNotFound, an EventStoreFailure), not a wrapper; once disposed,
  // EngineDisposed (not the runtime's own string or a FiberFailure); interrupted by the caller's
  // signal, the signal's reason (an AbortError).
  const failure = (cause: Cause.Cause<unknown>, signal?: AbortSignal): unknown =>
    disposed && (Cause.isInterruptedOnly(cause) || Cause.isDie(cause))
      ? new EngineDisposed()
      : signal?.aborted === true && Cause.isInterruptedOnly(cause)
      ? signal.reason
      : Cause.squash(cause)
  const withEngine = <A, E>(f: (engine: SessionEngine.SessionEngine.Service) => Effect.Effect<A, E>, signal?: AbortSignal): Promise<A> => {
    if (disposed) return Promise.reject(new EngineDisposed())
    if (signal?.aborted === true) return Promise.reject(signal.reason)
    const fiber = fork(Effect.flatMap(SessionEngine.SessionEngine, f))
    const stop = signal === undefined ? undefined : onAbort(signal, () => fiber.unsafeInterruptAsFork(FiberId.none))
    return new Promise<A>((resolve, reject) =>
      fiber.addObserver((exit) => {
        stop?.()
        if (Exit.isSuccess(exit)) resolve(exit.value)
        else reject(failure(exit.cause, signal))
      })
    )
  }

  /**
   * An iteration of a stream of the engine: its own fiber runs the stream, one event per `next()`.
   * `return()` (a `break`) interrupts it at once, even while a `next()` waits (an idle watch, a turn
   * queued behind others): that `next()` then answers done. `oneShot`: a second iteration throws
   * rather than run the stream (the turn) again.
   */
  const iterate = <E>(stream: (engine: SessionEngine.SessionEngine.Service) => Stream.Stream<AgentEvent, E>, oneShot?: string): AsyncIterable<AgentEvent> => {
    let iterated = false
    return {
      [Symbol.asyncIterator]() {
        const again = oneShot !== undefined && iterated
        iterated = true
        let fiber: Fiber.RuntimeFiber<void, unknown> | undefined = undefined
        let pending: { resolve: (result: IteratorResult<AgentEvent>) => void; reject: (error: unknown) => void } | undefined = undefined
        let ended: { readonly error: unknown } | undefined = undefined
        const latch = Effect.unsafeMakeLatch(false)
        const settle = (f: (waiting: NonNullable<typeof pending>) => void) => {
          const waiting = pending
          pending = undefined
          if (waiting !== undefined) f(waiting)
        }
        const finish = (error: unknown) => {
          if (ended === undefined) ended = { error }
          settle((waiting) => error === undefined ? waiting.resolve({ done: true, value: undefined }) : waiting.reject(error))
        }
        return {
          next() {
            if (ended !== undefined) {
              const { error } = ended
              ended = { error: undefined }
              return error === undefined ? Promise.resolve({ done: true, value: undefined }) : Promise.reject(error)
            }
            if (again) return Promise.reject(new Error(oneShot))
            if (disposed) return Promise.reject(new EngineDisposed())
            const result = new Promise<IteratorResult<AgentEvent>>((resolve, reject) => (pending = { resolve, reject }))
            if (fiber === undefined) {
              const started = fork(Stream.runForEach(Stream.unwrap(Effect.map(SessionEngine.SessionEngine, stream)), (value) =>
                latch.whenOpen(Effect.sync(() => {
                  latch.unsafeClose()
                  settle((waiting) => waiting.resolve({ done: false, value }))
                }))), iterations)
              fiber = started
              started.addObserver((exit) => finish(Exit.isSuccess(exit) ? undefined : failure(exit.cause)))
            }
            latch.unsafeOpen()
            return result
          },
          return() {
            const current = fiber
            if (ended === undefined) finish(undefined)
            ended = { error: undefined }
            if (current === undefined) return Promise.resolve({ done: true, value: undefined })
            return new Promise<IteratorResult<AgentEvent>>((resolve) => {
              current.addObserver(() => resolve({ done: true, value: undefined }))
              current.unsafeInterruptAsFork(FiberId.none)
            })
          }
        }
      }
    }
  }

  const runTurn: PromiseSessionEngine["runTurn"] = ({ signal, ...input }) => {
    const once = "This runTurn iterable has been iterated already: call runTurn again for another turn."
    if (signal === undefined) return iterate((engine) => engine.runTurn(input), once)
    return iterate((engine) =>
      Stream.unwrapScoped(Effect.gen(function*() {
        if (signal.aborted) return yield* Effect.fail(signal.reason)
        const aborted = yield* Deferred.make<void>()
        const started = yield* Deferred.make<string>()
        const early = yield* Deferred.make<void>()
        const stop = onAbort(signal, () => Deferred.unsafeDone(aborted, Effect.void))
        yield* Effect.addFinalizer(() => Effect.sync(stop))
        // Aborted before the turn started (queued behind others): the stream is interrupted, which
        // withdraws it. Once started: the turn is cancelled by id, and the iteration ends with its
        // `turn.completed {cancelled}`.
        yield* Deferred.await(aborted).pipe(
          Effect.zipRight(Deferred.poll(started)),
          Effect.flatMap((turnId) =>
            turnId._tag === "None"
              ? Deferred.succeed(early, undefined)
              : Effect.flatMap(turnId.value, (id) => engine.cancelTurn({ sessionId: input.sessionId, turnId: id }))
          ),
          Effect.forkScoped
        )
        return engine.runTurn(input).pipe(
          Stream.tap((event) => event.type === "turn.started" ? Deferred.succeed(started, event.turnId) : Effect.void),
          Stream.interruptWhenDeferred(early)
        )
      })), once)
  }

  return {
    // The cwd is checked and made canonical here, where the file system is (the engine only checks it is absolute).
    createSession: (input) =>
      withEngine((engine) => Effect.flatMap(WorkingDirectory.canonical(input.cwd), (cwd) => engine.createSession({ ...input, cwd }))),
    runTurn,
    resumeTurn: (input) => iterate((engine) => engine.resumeTurn(input), "This resumeTurn iterable has been iterated already: call resumeTurn again."),
    resolvePermission: (input) => withEngine((engine) => engine.resolvePermission(input)),
    pendingApprovals: (input) => withEngine((engine) => engine.pendingApprovals(input)),
    // Never rejects: on a disposed engine no turn runs, there is nothing to cancel.
    // Nor when the engine's layer fails to build: no turn runs then either.
    cancelTurn: (input) => disposed ? Promise.resolve() : withEngine((engine) => engine.cancelTurn(input)).catch(() => undefined),
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
            return Effect.sync(onAbort(signal, () => resume(Effect.void)))
          }))
        )
      ),
    sessionState: (input) => withEngine((engine) => engine.sessionState(input)),
    listSessions: () => withEngine((engine) => engine.listSessions),
    // The calls still running are interrupted (each rejects EngineDisposed) and have ended before the
    // runtime, and with it the writer locks, is released; the iterations still running once it is (a
    // watch, a turn not yet started) throw EngineDisposed.
    dispose: () => {
      disposed = true
      disposing ??= Effect.runPromise(Fiber.interruptAll([...calls])).then(() => runtime.dispose()).then(() =>
        Effect.runPromise(Fiber.interruptAll([...iterations]))
      )
      return disposing
    }
  }
}
