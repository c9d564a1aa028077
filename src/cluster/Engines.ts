/**
 * How a runner makes session engines. A runner keeps one engine per session it owns, living as
 * long as the session's entity: when the entity stops (its shard moved to another runner, or the
 * runner shuts down) the engine's scope closes, which ends its turns and lets go of the session's
 * writer lease at once, so the next owner never waits for a lease that a live process still holds.
 * Short-lived engines serve what needs no owner (creating a session, forking); reading a session's
 * state needs none at all: it is a fold of the log, read from the store.
 *
 * @since 0.2.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import { BlobStore, EventStore, type IdGenerator, type ModelProvider, SessionEngine } from "../index.js"

/** Makes engines on the runner's ports (store, model, ids, and the optional tools and permissions). */
export class Engines extends Context.Tag("effect-agent/cluster/Engines")<Engines, {
  /** A new engine, closed (its turns ended, its leases released) with the scope. */
  readonly make: Effect.Effect<SessionEngine.SessionEngine.Service, never, Scope.Scope>
  /** The runner's store, for what only reads a session (its state is a fold of the log: no engine needed). */
  readonly store: EventStore.EventStore.Service
  /** The store's blob area, when it has one: a message's images travel between runners through it. */
  readonly blobs: BlobStore.BlobStore.Service | undefined
}>() {}

/** Engines on the ports found in the context (the optional ones too, as `SessionEngine.make` finds them). */
export const layer = (
  options: SessionEngine.Options = {}
): Layer.Layer<Engines, never, EventStore.EventStore | ModelProvider.ModelProvider | IdGenerator.IdGenerator> =>
  Layer.effect(
    Engines,
    Effect.map(Effect.context<EventStore.EventStore | ModelProvider.ModelProvider | IdGenerator.IdGenerator>(), (context) => {
      // The layer's own scope is in its context: an engine must live in its caller's scope instead.
      const ports = Context.omit(Scope.Scope)(context) as Context.Context<EventStore.EventStore | ModelProvider.ModelProvider | IdGenerator.IdGenerator>
      return {
        make: Effect.flatMap(Effect.context<Scope.Scope>(), (scope) => Effect.provide(SessionEngine.make(options), Context.merge(ports, scope))),
        store: Context.get(ports, EventStore.EventStore),
        blobs: Option.getOrUndefined(Context.getOption(ports, BlobStore.BlobStore))
      }
    })
  )

/** Runs `use` on a short-lived engine (no lease outlives it). */
export const withEngine = <A, E, R>(
  use: (engine: SessionEngine.SessionEngine.Service) => Effect.Effect<A, E, R>
): Effect.Effect<A, E, Engines | Exclude<R, Scope.Scope>> =>
  Effect.scoped(Effect.flatMap(Engines, (engines) => Effect.flatMap(engines.make, use)))
