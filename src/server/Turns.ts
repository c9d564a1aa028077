/**
 * The turns the server drives. A turn started over HTTP runs in a fiber of its own, not in the
 * request that started it: every client may disconnect and the turn goes on, its events reaching
 * the log (and `/live` watchers) all the same.
 *
 * Shutting down (the layer's scope closing) cancels the turns that run and leaves the turns that
 * wait for an approval paused: their fibers are left to the engine, whose own shutdown stops them
 * without cancelling, so the log keeps them open for any later process to resume.
 *
 * @since 0.2.0
 */
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import { type AgentEvent, type EventStoreFailure, type InvalidInput, SessionEngine, SessionState } from "../index.js"
import type { Image, SessionBusy, SessionNotFound, TurnInProgress } from "../index.js"

/** Why a turn could not start. */
export type StartFailure = EventStoreFailure | SessionNotFound | TurnInProgress | InvalidInput | SessionBusy

/** The server's running turns. */
export class Turns extends Context.Tag("effect-agent/server/Turns")<Turns, {
  /** Starts a turn; answers its id once `turn.started` is stored, or why it could not start. */
  readonly start: (
    sessionId: string,
    message: string,
    images?: ReadonlyArray<Image.ImageInput>,
    budget?: SessionEngine.RunTurnInput["budget"]
  ) => Effect.Effect<string, StartFailure>
  /** Continues the turn the log holds paused, when no turn of the session runs here (after a restart). */
  readonly resumeIfIdle: (sessionId: string) => Effect.Effect<void>
  /** Whether a turn of the session runs in this server. */
  readonly isRunning: (sessionId: string) => boolean
}>() {}

/** The registry; its scope's end cancels running turns and leaves paused ones paused. */
export const layer = Layer.scoped(
  Turns,
  Effect.gen(function*() {
    const engine = yield* SessionEngine.SessionEngine
    /** The run that drives each session now, keyed by session id; a run is an identity only. */
    const running = new Map<string, object>()

    /**
     * Drives a turn's stream to its end in a daemon fiber (detached from the request and from this
     * layer's scope, see the module's note). `first` completes with the first event's turn id, or
     * the failure that came before any event.
     */
    const drive = <E>(sessionId: string, stream: Stream.Stream<AgentEvent.AgentEvent, E>, first: Deferred.Deferred<string, E>) => {
      const run = {}
      return stream.pipe(
        Stream.runForEach((event) =>
          Effect.suspend(() => {
            if (running.get(sessionId) !== run) running.set(sessionId, run)
            return "turnId" in event && event.turnId !== undefined ? Deferred.succeed(first, event.turnId) : Effect.void
          })
        ),
        Effect.catchAll((error) =>
          Effect.flatMap(Deferred.fail(first, error), (answered) =>
            // A failure after the turn started is the store's: the engine has logged and closed what it could.
            answered ? Effect.void : Effect.logWarning("a turn's stream failed", error))
        ),
        Effect.ensuring(Effect.suspend(() => {
          if (running.get(sessionId) === run) running.delete(sessionId)
          return Deferred.interrupt(first)
        })),
        Effect.forkDaemon
      )
    }

    yield* Effect.addFinalizer(() =>
      Effect.forEach([...running.keys()], (sessionId) =>
        engine.sessionState({ sessionId }).pipe(
          Effect.flatMap((state) =>
            // A turn waiting for the user (or on a subagent that does) stays paused; any other turn is cancelled (and closed in the log).
            SessionState.isPaused(state)
              ? Effect.void
              : Effect.flatMap(engine.pendingApprovals({ sessionId }), (waiting) => waiting.length > 0 ? Effect.void : engine.cancelTurn({ sessionId }))
          ),
          Effect.catchAll(() => engine.cancelTurn({ sessionId }))
        ), { concurrency: "unbounded", discard: true })
    )

    return Turns.of({
      start: (sessionId, message, images = [], budget) =>
        Effect.gen(function*() {
          const first = yield* Deferred.make<string, StartFailure>()
          yield* drive(sessionId, engine.runTurn({ sessionId, userMessage: message, ...(images.length === 0 ? {} : { images }), ...(budget === undefined ? {} : { budget }) }), first)
          return yield* Deferred.await(first)
        }),
      resumeIfIdle: (sessionId) =>
        Effect.gen(function*() {
          if (running.has(sessionId)) return
          const first = yield* Deferred.make<string, unknown>()
          // NothingToResume / TurnInProgress: the answer reached a driver already, or nothing waits.
          yield* drive(sessionId, engine.resumeTurn({ sessionId }), first)
        }),
      isRunning: (sessionId) => running.has(sessionId)
    })
  })
)
