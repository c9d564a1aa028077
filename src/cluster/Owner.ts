/**
 * The session entity on the runner that owns it: one engine per session (see `Engines`), and the
 * server's own turn registry on it, so a turn started through any runner runs here detached from
 * the request, as `effect-agent serve` runs its turns. The entity stops when its shard moves, when
 * the runner stops, or once the session has been idle for `maxIdleTime` (see `KeepAlive`: it is
 * kept while the session works): running turns are cancelled (and closed in the log), paused ones
 * stay paused, and the session's writer lease is released for the next owner. A runner's memory
 * thus holds the sessions that work or were used lately, not every session it ever drove.
 *
 * Messages that change what a session holds come with an idempotency key (see `SessionEntity`),
 * which the engine stores with their event and answers from when the same message comes again.
 *
 * When a runner dies instead, nothing closes: its sessions' leases lapse, the shards move once the
 * shard locks expire, and the first write on the next owner takes the lease over (waiting for it to
 * expire when the dead runner was on another machine, see `leaseWait`) and closes the turn the dead
 * runner left open (`turn.completed {stopReason: "error", errorCode: "interrupted"}`).
 *
 * @since 0.2.0
 */
import * as Entity from "@effect/cluster/Entity"
import type * as Sharding from "@effect/cluster/Sharding"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import { EventStoreFailure, type Image, MonotonicTime, SessionEngine, SessionState } from "../index.js"
import { Turns } from "../server.js"
import * as CarriedImages from "./CarriedImages.js"
import * as Engines from "./Engines.js"
import * as KeepAlive from "./KeepAlive.js"
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
   * Called when a session's entity stops on this runner (idle, or the runner stopping), once its
   * engine has closed and released the session's writer lease: what a test awaits instead of
   * polling the lease table.
   */
  readonly onReleased?: (sessionId: string) => Effect.Effect<void>
  /**
   * How long a write waits while another process holds the session's writer lease (default 40
   * seconds). A runner that died on another machine holds its sessions' leases until they expire
   * (the store's lease ttl, 30 seconds by default): the next owner waits that out rather than
   * answering `SessionBusy`. A live holder (a CLI driving the session) still gets `SessionBusy`
   * once the wait is over.
   */
  readonly leaseWait?: Duration.DurationInput
  /**
   * How long a session's entity stays on this runner once idle (default 5 minutes): then its engine
   * closes and its writer lease is released; its next message loads it again from the store.
   */
  readonly maxIdleTime?: Duration.DurationInput
  /** How long a turn waiting for the user keeps its entity (default 1 hour; see `KeepAlive`). */
  readonly approvalHold?: Duration.DurationInput
  /**
   * Fault injection, for tests only: called once a message that changes the session is in the log
   * (a steer: once stored at its step boundary) and before it is answered — a test kills the runner
   * here to see the message delivered again to the next owner.
   */
  readonly afterStored?: (message: "FollowUp" | "ResolvePermission" | "Steer", sessionId: string) => Effect.Effect<void>
}

/** The default {@link Options.leaseWait}: the SQL stores' default lease ttl and some. */
export const defaultLeaseWait = Duration.seconds(40)

/** The default {@link Options.maxIdleTime}. */
export const defaultMaxIdleTime = Duration.minutes(5)

/**
 * How a write waits for the session's writer lease a runner that died still holds: tried again every
 * 250 ms while it is `SessionBusy`, until `leaseWait` has passed since the write began. Passed on
 * monotonic time (`Schedule.upTo` reads the wall clock): a runner's clock stepped back an hour kept a
 * request waiting an hour more, one stepped forward answered `SessionBusy` at the first refusal.
 * The wait counts from the write's start, for a stream too (`Schedule.upTo` restarted after each
 * element): a turn meets `SessionBusy` when it takes the lease, before its first event.
 */
export const whileBusy = (leaseWait: Duration.DurationInput) =>
  Effect.map(MonotonicTime.millis, (start) =>
    Schedule.spaced(Duration.millis(250)).pipe(
      Schedule.whileInput((error: { readonly _tag: string }) => error._tag === "SessionBusy"),
      Schedule.checkEffect(() => Effect.map(MonotonicTime.millis, (now) => now - start < Duration.toMillis(leaseWait)))
    ))

/**
 * A stream tried again as {@link whileBusy} says, but only while it has given nothing: a stream run
 * again starts over — a turn's, with its message, as a second turn — so one that failed `SessionBusy`
 * after an element fails so, however long or short it ran (a turn meets `SessionBusy` before its
 * first event, so this changes nothing a turn does today: it keeps a later change from running a
 * turn twice).
 */
export const streamWhileBusy = (leaseWait: Duration.DurationInput) => <A, E extends { readonly _tag: string }, R>(stream: Stream.Stream<A, E, R>) =>
  Stream.unwrap(Effect.map(whileBusy(leaseWait), (schedule) =>
    Stream.suspend(() => {
      let given = false
      const watched = Stream.mapChunks(stream, (chunk) => {
        given ||= chunk.length > 0
        return chunk
      })
      return Stream.retry(watched, Schedule.whileInput(schedule, () => !given))
    })))

/** Registers the session entity on this runner: needs `Engines` and the sharding of the runner. */
export const layer = (options: Options = {}) =>
  SessionEntity.toLayer(
    Effect.gen(function*() {
      const leaseWait = options.leaseWait ?? defaultLeaseWait
      const write = <A, E extends { readonly _tag: string }>(effect: Effect.Effect<A, E>) =>
        forWire(Effect.flatMap(whileBusy(leaseWait), (schedule) => Effect.retry(effect, schedule)))
      const writeStream = <A, E extends { readonly _tag: string }>(stream: Stream.Stream<A, E>) =>
        streamForWire(streamWhileBusy(leaseWait)(stream))
      const address = yield* Entity.CurrentAddress
      const sessionId = address.entityId
      const engines = yield* Engines.Engines
      /** A message's carried images, read back from the shared blob area (see `CarriedImages`). */
      const images = (refs: ReadonlyArray<Image.ImageRef> | undefined) => CarriedImages.take(engines.blobs, refs ?? [])
      // Added before the engine: finalizers run in reverse, so this one runs once the engine has closed.
      const { onReleased } = options
      if (onReleased !== undefined) yield* Effect.addFinalizer(() => onReleased(sessionId))
      // In the entity's scope: closed when the entity stops.
      const engine = yield* engines.make
      const turns = yield* Layer.build(Turns.layer).pipe(
        Effect.map(Context.get(Turns.Turns)),
        Effect.provideService(SessionEngine.SessionEngine, engine)
      )
      const cluster = yield* Effect.context<Entity.CurrentAddress | Sharding.Sharding>()
      const keeper = yield* KeepAlive.make({
        engine,
        sessionId,
        keepAlive: (enabled) => Effect.provide(Entity.keepAlive(enabled), cluster),
        ...(options.approvalHold === undefined ? {} : { approvalHold: options.approvalHold })
      })
      /** After each message, whatever it did, the keeper looks at the session. */
      const checked = <A, E>(effect: Effect.Effect<A, E>) => Effect.ensuring(effect, keeper.check)
      /** A message that drives the session: the turn the log held open is this engine's business from now (`resumes`). */
      const driving = <A, E>(resumes: boolean, effect: Effect.Effect<A, E>) => Effect.zipRight(Effect.sync(() => keeper.drove(resumes)), checked(effect))
      const stored = (message: "FollowUp" | "ResolvePermission" | "Steer", key: string) =>
        options.afterStored === undefined ? Effect.void : Effect.zipRight(storedInLog(engine, sessionId, key), options.afterStored(message, sessionId))
      if (options.onOwned !== undefined) yield* options.onOwned(sessionId)
      return SessionEntity.of({
        StartTurn: ({ payload }) =>
          driving(true, write(Effect.flatMap(images(payload.images), (given) => Effect.map(turns.start(sessionId, payload.message, given, payload.budget), (turnId) => ({ turnId }))))),
        RunTurn: ({ payload }) =>
          Stream.unwrap(driving(true, Effect.map(images(payload.images), (given) =>
            writeStream(engine.runTurn({
              sessionId,
              userMessage: payload.message,
              ...(given.length === 0 ? {} : { images: given }),
              ...(payload.budget === undefined ? {} : { budget: payload.budget })
            })))))
            .pipe(Stream.ensuring(keeper.check)),
        ResumeTurn: () => Stream.unwrap(driving(true, Effect.succeed(writeStream(engine.resumeTurn({ sessionId }))))).pipe(Stream.ensuring(keeper.check)),
        ResumeIfIdle: () => driving(true, turns.resumeIfIdle(sessionId)),
        CancelTurn: ({ payload }) => checked(engine.cancelTurn(payload.turnId === undefined ? { sessionId } : { sessionId, turnId: payload.turnId })),
        ResolvePermission: ({ payload }) =>
          checked(write(Effect.zipRight(engine.resolvePermission({ sessionId, ...payload }), stored("ResolvePermission", payload.idempotencyKey)))),
        Steer: ({ payload }) =>
          checked(forWire(Effect.zipRight(engine.steer({ sessionId, ...payload }), stored("Steer", payload.idempotencyKey)))),
        FollowUp: ({ payload }) => driving(false, write(Effect.tap(engine.followUp({ sessionId, ...payload }), () => stored("FollowUp", payload.idempotencyKey)))),
        DropFollowUps: ({ payload }) => checked(write(engine.dropFollowUps({ sessionId, queueIds: payload.queueIds }))),
        RenameSession: ({ payload }) => checked(write(engine.renameSession({ sessionId, title: payload.title }))),
        RewindSession: ({ payload }) => checked(write(engine.rewindSession({ sessionId, ...payload }))),
        CompactSession: ({ payload }) =>
          checked(write(engine.compactSession(
            payload.keepRecentTokens === undefined ? { sessionId } : { sessionId, keepRecentTokens: payload.keepRecentTokens }
          )))
      })
    }),
    // Idle entities go (and their engines with them); the keeper keeps those whose session works.
    { maxIdleTime: options.maxIdleTime ?? defaultMaxIdleTime, concurrency: "unbounded" }
  )

/** Waits until the message with this key is in the session's log (for `afterStored`: tests only). */
const storedInLog = (engine: SessionEngine.SessionEngine.Service, sessionId: string, key: string) =>
  engine.sessionState({ sessionId }).pipe(
    Effect.map((state) => SessionState.findApplied(state, key) !== undefined),
    Effect.repeat({ until: (found) => found, schedule: Schedule.spaced(Duration.millis(10)) }),
    Effect.ignore
  )
