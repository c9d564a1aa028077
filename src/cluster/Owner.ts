/**
 * The session entity on the runner that owns it: one engine per session (see `Engines`), and the
 * server's own turn registry on it, so a turn started through any runner runs here detached from
 * the request, as `effect-agent serve` runs its turns. The entity stops when its shard moves or the
 * runner stops: running turns are cancelled (and closed in the log), paused ones stay paused, and
 * the session's writer lease is released for the next owner.
 *
 * When a runner dies instead, nothing closes: its sessions' leases lapse, the shards move once the
 * shard locks expire, and the first write on the next owner takes the lease over (waiting for it to
 * expire when the dead runner was on another machine, see `leaseWait`) and closes the turn the dead
 * runner left open (`turn.completed {stopReason: "error", errorCode: "interrupted"}`).
 *
 * @since 0.2.0
 */
import * as Entity from "@effect/cluster/Entity"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import { EventStoreFailure, SessionEngine } from "../index.js"
import { Turns } from "../server.js"
import * as Engines from "./Engines.js"
import { SessionEntity } from "./SessionEntity.js"

/**
 * A store failure as it crosses to another runner: its reason and detail, not its cause (paths,
 * stacks) — which is logged here, on the runner where it happened, so the original error is kept.
 */
const withoutCause = <E>(error: E): Effect.Effect<E> => {
  if (!(error instanceof EventStoreFailure)) return Effect.succeed(error)
  const { cause: _cause, ...fields } = error
  return Effect.as(Effect.logError("a session's store failed", error), new EventStoreFailure(fields) as E)
}

const forWire = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.catchAll(effect, (error) => Effect.flip(withoutCause(error)))
const streamForWire = <A, E, R>(stream: Stream.Stream<A, E, R>) =>
  Stream.catchAll(stream, (error) => Stream.fromEffect(Effect.flip(withoutCause(error))))

/** How a runner owns its sessions. */
export interface Options {
  /** Called when a session's entity starts on this runner (it owns the session from then). */
  readonly onOwned?: (sessionId: string) => Effect.Effect<void>
  /**
   * How long a write waits while another process holds the session's writer lease (default 40
   * seconds). A runner that died on another machine holds its sessions' leases until they expire
   * (the store's lease ttl, 30 seconds by default): the next owner waits that out rather than
   * answering `SessionBusy`. A live holder (a CLI driving the session) still gets `SessionBusy`
   * once the wait is over.
   */
  readonly leaseWait?: Duration.DurationInput
}

/** The default {@link Options.leaseWait}: the SQL stores' default lease ttl and some. */
export const defaultLeaseWait = Duration.seconds(40)

/** Registers the session entity on this runner: needs `Engines` and the sharding of the runner. */
export const layer = (options: Options = {}) =>
  SessionEntity.toLayer(
    Effect.gen(function*() {
      const whileBusy = Schedule.spaced(Duration.millis(250)).pipe(
        Schedule.upTo(options.leaseWait ?? defaultLeaseWait),
        Schedule.whileInput((error: { readonly _tag: string }) => error._tag === "SessionBusy")
      )
      const write = <A, E extends { readonly _tag: string }>(effect: Effect.Effect<A, E>) => forWire(Effect.retry(effect, whileBusy))
      const writeStream = <A, E extends { readonly _tag: string }>(stream: Stream.Stream<A, E>) => streamForWire(Stream.retry(stream, whileBusy))
      const address = yield* Entity.CurrentAddress
      const sessionId = address.entityId
      const engines = yield* Engines.Engines
      // In the entity's scope: closed when the entity stops.
      const engine = yield* engines.make
      const turns = yield* Layer.build(Turns.layer).pipe(
        Effect.map(Context.get(Turns.Turns)),
        Effect.provideService(SessionEngine.SessionEngine, engine)
      )
      if (options.onOwned !== undefined) yield* options.onOwned(sessionId)
      return SessionEntity.of({
        StartTurn: ({ payload }) => write(Effect.map(turns.start(sessionId, payload.message), (turnId) => ({ turnId }))),
        RunTurn: ({ payload }) => writeStream(engine.runTurn({ sessionId, userMessage: payload.message })),
        ResumeTurn: () => writeStream(engine.resumeTurn({ sessionId })),
        ResumeIfIdle: () => turns.resumeIfIdle(sessionId),
        CancelTurn: ({ payload }) => engine.cancelTurn(payload.turnId === undefined ? { sessionId } : { sessionId, turnId: payload.turnId }),
        ResolvePermission: ({ payload }) => write(engine.resolvePermission({ sessionId, ...payload })),
        Steer: ({ payload }) => forWire(engine.steer({ sessionId, message: payload.message })),
        FollowUp: ({ payload }) => write(engine.followUp({ sessionId, message: payload.message })),
        DropFollowUps: () => write(engine.dropFollowUps({ sessionId })),
        CompactSession: ({ payload }) => write(engine.compactSession(
          payload.keepRecentTokens === undefined ? { sessionId } : { sessionId, keepRecentTokens: payload.keepRecentTokens }
        ))
      })
    }),
    // A session's entity lives while its runner owns it: a turn may run for long without messages.
    { maxIdleTime: Infinity, concurrency: "unbounded" }
  )
