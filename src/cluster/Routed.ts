/**
 * The session engine and the turn registry the HTTP server of a runner uses: what changes a
 * session goes to the runner that owns it, through the session entity's client (that runner may be
 * this one); what only reads goes to the shared store from here — a session's state is a fold of
 * its log, read without an engine. Creating and forking a session use a short-lived engine, whose
 * writer lease ends with it, so the new session's owner takes it at its first turn. Each message
 * that changes what a session holds gets an idempotency key here, once, so that the cluster
 * delivering it again (its owner died before answering) never applies it twice (see `SessionEntity`).
 *
 * @since 0.2.0
 */
import type { AlreadyProcessingMessage, MailboxFull, PersistenceError } from "@effect/cluster/ClusterError"
import type * as Sharding from "@effect/cluster/Sharding"
import { randomUUID } from "node:crypto"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import { BlobStore, type Image, InvalidInput, SessionEngine, SessionState } from "../index.js"
import { Turns } from "../server.js"
import * as Engines from "./Engines.js"
import * as FoldedStates from "./FoldedStates.js"
import { SessionEntity } from "./SessionEntity.js"

/** The cluster's own message failures (a mailbox full, a message already being processed, storage). */
type ClusterFailure = MailboxFull | AlreadyProcessingMessage | PersistenceError

const isClusterFailure = (error: { readonly _tag: string }): error is ClusterFailure =>
  error._tag === "MailboxFull" || error._tag === "AlreadyProcessingMessage" || error._tag === "PersistenceError"

/** A cluster failure is a defect here: the engine's API has no such error (the server answers 500 and logs it). */
const orDieCluster = <A, E extends { readonly _tag: string }, R>(effect: Effect.Effect<A, E | ClusterFailure, R>): Effect.Effect<A, Exclude<E, ClusterFailure>, R> =>
  Effect.catchIf(effect, isClusterFailure, Effect.die) as Effect.Effect<A, Exclude<E, ClusterFailure>, R>

const streamOrDieCluster = <A, E extends { readonly _tag: string }, R>(
  stream: Stream.Stream<A, E | ClusterFailure, R>
): Stream.Stream<A, Exclude<E, ClusterFailure>, R> =>
  Stream.catchAll(stream, (error) => isClusterFailure(error) ? Stream.die(error) : Stream.fail(error as Exclude<E, ClusterFailure>))

/**
 * Only a stored session gets a message: an owner keeps an entity (and its engine) for every session
 * it is sent, so an unknown id fails `SessionNotFound` here, read from the store, and reaches none.
 */
const storedIn = (engine: SessionEngine.SessionEngine.Service) => (sessionId: string) =>
  Stream.runDrain(Stream.take(engine.replaySession({ sessionId }), 1))

/** A key for a message that has none from its caller: made once, so every delivery of the message carries the same. */
const keyOf = (given: string | undefined) => given ?? randomUUID()

/**
 * A session's state as its log says — the fold every engine keeps, read from the store (the owner
 * may be another runner, and an engine per read would cost an engine's making and closing for
 * nothing). A state read before is read on from its last sequence, never folded again from the whole
 * log (see `FoldedStates`).
 */
export const stateOf = (states: FoldedStates.FoldedStates) => (sessionId: string) =>
  states.get(sessionId).pipe(Effect.withSpan("Routed.sessionState", { attributes: { sessionId } }))

/** A message's images as the payload carries them: put in the shared blob area here, referenced in the message (absent when none). */
const carriedBy = (blobs: Engines.Engines["Type"]["blobs"]) => (images: ReadonlyArray<Image.ImageInput> | undefined) =>
  images === undefined || images.length === 0
    ? Effect.succeed({})
    : Effect.map(BlobStore.putImages(blobs, images), (refs) => ({ images: refs }))

/**
 * A turn's budget as the message carries it (absent when none). The owner's engine checks it; one
 * the message cannot carry (a limit not finite) is refused here as the engine would refuse it.
 */
const budgetOf = (budget: SessionEngine.RunTurnInput["budget"]) => {
  if (budget === undefined) return Effect.succeed({})
  const bad = (["maxTokens", "maxCost", "maxSteps"] as const).find((key) => budget[key] !== undefined && !Number.isFinite(budget[key]))
  return bad === undefined
    ? Effect.succeed({ budget })
    : Effect.fail(new InvalidInput({ field: "budget", detail: `${bad} must be a positive number` }))
}

/** The routed engine: needs the runner's sharding (for the entity's client) and `Engines`. */
export const engineLayer: Layer.Layer<SessionEngine.SessionEngine, never, Sharding.Sharding | Engines.Engines> =
  Layer.scoped(
    SessionEngine.SessionEngine,
    Effect.gen(function*() {
      const client = yield* SessionEntity.client
      const engines = yield* Engines.Engines
      // Reads only: it never takes a lease (every write goes to the owner), and reads the store fresh.
      const reader = yield* engines.make
      const fresh = <A, E>(use: (engine: SessionEngine.SessionEngine.Service) => Effect.Effect<A, E>) =>
        Engines.withEngine(use).pipe(Effect.provideService(Engines.Engines, engines))
      const stored = storedIn(reader)
      const state = stateOf(FoldedStates.make(engines.store))
      const carried = carriedBy(engines.blobs)
      const owner = <A, E extends { readonly _tag: string }>(sessionId: string, send: Effect.Effect<A, E | ClusterFailure>) =>
        Effect.zipRight(stored(sessionId), orDieCluster(send))
      const ownerStream = <A, E extends { readonly _tag: string }>(sessionId: string, send: Stream.Stream<A, E | ClusterFailure>) =>
        Stream.unwrap(Effect.as(stored(sessionId), streamOrDieCluster(send)))
      return SessionEngine.SessionEngine.of({
        createSession: (input) => fresh((engine) => engine.createSession(input)),
        forkSession: (input) => fresh((engine) => engine.forkSession(input)),
        runTurn: ({ budget, images, sessionId, userMessage }) =>
          Stream.unwrap(Effect.flatMap(budgetOf(budget), (limits) =>
            Effect.map(carried(images), (refs) => ownerStream(sessionId, client(sessionId).RunTurn({ message: userMessage, ...refs, ...limits }))))),
        resumeTurn: ({ sessionId }) => ownerStream(sessionId, client(sessionId).ResumeTurn()),
        resolvePermission: ({ decision, idempotencyKey, remember, sessionId, toolCallId }) =>
          owner(sessionId, client(sessionId).ResolvePermission({ toolCallId, decision, remember: remember ?? false, idempotencyKey: keyOf(idempotencyKey) })),
        cancelTurn: ({ sessionId, turnId }) =>
          owner(sessionId, client(sessionId).CancelTurn(turnId === undefined ? {} : { turnId })).pipe(
            // Never fails, as the engine's: nothing to cancel in an unknown session; a store failure is logged.
            Effect.catchTags({ SessionNotFound: () => Effect.void }),
            Effect.catchAll((error) => Effect.logWarning("cancelling a turn failed", error))
          ),
        steer: ({ idempotencyKey, message, sessionId, turnId }) =>
          owner(sessionId, client(sessionId).Steer({ message, idempotencyKey: keyOf(idempotencyKey), ...(turnId === undefined ? {} : { turnId }) })),
        followUp: ({ idempotencyKey, message, sessionId }) =>
          owner(sessionId, client(sessionId).FollowUp({ message, idempotencyKey: keyOf(idempotencyKey) })),
        dropFollowUps: ({ queueIds, sessionId }) => owner(sessionId, client(sessionId).DropFollowUps(queueIds === undefined ? {} : { queueIds })),
        renameSession: ({ sessionId, title }) => owner(sessionId, client(sessionId).RenameSession({ title })),
        rewindSession: ({ force, sessionId, toSequence }) =>
          owner(sessionId, client(sessionId).RewindSession(force === undefined ? { toSequence } : { toSequence, force })),
        compactSession: ({ keepRecentTokens, sessionId }) =>
          owner(sessionId, client(sessionId).CompactSession(keepRecentTokens === undefined ? {} : { keepRecentTokens })),
        // Folded from the store: the owner may be another runner.
        sessionState: ({ sessionId }) => state(sessionId),
        // With the asks of the subagents it waits on, labelled, as the engine's (answered through this session's owner).
        pendingApprovals: ({ sessionId }) =>
          Effect.flatMap(state(sessionId), (parent) =>
            Effect.map(SessionState.pendingBelow(parent, state), (below) => [...SessionState.pendingApprovals(parent), ...below])),
        replaySession: (input) => reader.replaySession(input),
        // It holds no lease: it follows the store (every `watchPollInterval`).
        watchSession: (input) => reader.watchSession(input),
        listSessions: reader.listSessions,
        sessionListing: reader.sessionListing,
        // Read from the shared store, as replays are.
        sessionImage: (input) => reader.sessionImage(input)
      })
    })
  )

/**
 * The HTTP server's turn registry on a runner: turns start on the owner and run there, detached
 * from the request and from this runner (see `Owner`).
 */
export const turnsLayer: Layer.Layer<Turns.Turns, never, Sharding.Sharding | SessionEngine.SessionEngine | Engines.Engines> = Layer.effect(
  Turns.Turns,
  Effect.gen(function*() {
    const client = yield* SessionEntity.client
    const stored = storedIn(yield* SessionEngine.SessionEngine)
    const carried = carriedBy((yield* Engines.Engines).blobs)
    // `isRunning` answers at once and the owner may be another runner: a session's phase is read from
    // its log instead (a turn whose approved call has not started yet shows as paused meanwhile).
    return Turns.Turns.of({
      start: (sessionId, message, images, budget) =>
        Effect.zipRight(
          stored(sessionId),
          Effect.flatMap(budgetOf(budget), (limits) =>
            Effect.flatMap(carried(images), (refs) =>
              orDieCluster(Effect.map(client(sessionId).StartTurn({ message, ...refs, ...limits }), ({ turnId }) => turnId))))
        ),
      resumeIfIdle: (sessionId) =>
        Effect.zipRight(stored(sessionId), client(sessionId).ResumeIfIdle()).pipe(
          Effect.catchAll((error) => Effect.logWarning("resuming a turn failed", error))
        ),
      isRunning: () => false
    })
  })
)
