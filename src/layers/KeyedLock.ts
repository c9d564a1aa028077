/**
 * One lock per key — a file, a session — for layers that serialize work on one key while other
 * keys go on. Locks live in an `RcMap`: made on first use, dropped once no one holds or waits for
 * them, so a long-running process keeps no lock for every key it ever saw.
 *
 * @since 0.1.0
 * @internal
 */
import * as Effect from "effect/Effect"
import * as RcMap from "effect/RcMap"
import type * as Scope from "effect/Scope"

/** Runs effects under the lock of a key: one at a time per key, in the order they asked. */
export interface KeyedLock<K> {
  readonly withLock: (key: K) => <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
}

/** A keyed lock whose locks live as long as the scope. */
export const make = <K>(): Effect.Effect<KeyedLock<K>, never, Scope.Scope> =>
  Effect.map(RcMap.make({ lookup: (_: K) => Effect.makeSemaphore(1) }), (locks) => ({
    withLock: (key) => (self) => Effect.scoped(Effect.flatMap(RcMap.get(locks, key), (lock) => lock.withPermits(1)(self)))
  }))
