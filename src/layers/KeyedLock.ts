/**
 * One lock per key — a file, a session — for layers that serialize work on one key while other
 * keys go on. A key's lock exists while someone holds or waits for it and is dropped after, so a
 * long-running process keeps no lock for every key it ever saw.
 *
 * @since 0.1.0
 * @internal
 */
import * as Effect from "effect/Effect"

/** Runs effects under the lock of a key: one at a time per key, in the order they asked. */
export interface KeyedLock<K> {
  readonly withLock: (key: K) => <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
}

interface Entry {
  readonly lock: Effect.Semaphore
  users: number
}

/** A keyed lock. */
export const make = <K>(): Effect.Effect<KeyedLock<K>> =>
  Effect.sync(() => {
    const entries = new Map<K, Entry>()
    // Counting users happens synchronously, so taking and dropping an entry never race.
    const take = (key: K) =>
      Effect.sync(() => {
        let entry = entries.get(key)
        if (entry === undefined) {
          entry = { lock: Effect.unsafeMakeSemaphore(1), users: 0 }
          entries.set(key, entry)
        }
        entry.users++
        return entry
      })
    const drop = (key: K, entry: Entry) =>
      Effect.sync(() => {
        if (--entry.users === 0) entries.delete(key)
      })
    return {
      withLock: (key) => (self) => Effect.acquireUseRelease(take(key), (entry) => entry.lock.withPermits(1)(self), (entry) => drop(key, entry))
    }
  })
