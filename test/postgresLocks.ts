/**
 * Late cancels on the test PostgreSQL, made deterministic: a lock held from a connection of its own,
 * a statement that waits for it, and a cancel of that statement's backend from outside, every wait
 * on a condition the server reports (`pg_blocking_pids`), never on time.
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"

/** A statement waiting for a lock: its backend and when it started (a statement run again starts later). */
export interface Waiting {
  readonly pid: number
  readonly started: string
}

/** Holds `LOCK TABLE table` in a transaction of its own until `release`; `pid` is the backend holding it. */
export const holdLock = (admin: SqlClient.SqlClient, table: string) =>
  Effect.gen(function*() {
    const locked = yield* Deferred.make<number>()
    const released = yield* Deferred.make<void>()
    const holder = yield* Effect.fork(admin.withTransaction(Effect.gen(function*() {
      yield* admin.unsafe(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`)
      const [row] = yield* admin<{ pid: number }>`SELECT pg_backend_pid() AS pid`
      yield* Deferred.succeed(locked, row!.pid)
      yield* Deferred.await(released)
    })))
    return { pid: yield* Deferred.await(locked), release: Effect.zipRight(Deferred.succeed(released, undefined), Fiber.join(holder)) }
  })

/** The statements waiting for `holder`'s lock now. */
export const waitingFor = (admin: SqlClient.SqlClient, holder: number) =>
  admin<Waiting>`SELECT pid, query_start::text AS started FROM pg_stat_activity WHERE ${holder} = ANY(pg_blocking_pids(pid))`

/** The one statement waiting for `holder`'s lock, once one does. */
export const firstWaitingFor = (admin: SqlClient.SqlClient, holder: number) =>
  until(Effect.map(waitingFor(admin, holder), (rows) => Option.fromNullable(rows[0])))

/** Polls until `found` answers something: a condition the server reports, checked every few ms. */
export const until = <A, E, R>(found: Effect.Effect<Option.Option<A>, E, R>): Effect.Effect<A, E, R> =>
  Effect.flatMap(found, Option.match({ onSome: Effect.succeed, onNone: () => Effect.zipRight(Effect.sleep("5 millis"), until(found)) }))

/**
 * Runs `operation` while `table` is locked and cancels, `times` times, the statement of it that
 * waits for the lock (from outside: the operation's fiber is not interrupted), each time once the
 * operation either failed or waits again with a statement started anew; then lets the lock go.
 * The operation's exit.
 */
export const cancelled = <A, E, R>(admin: SqlClient.SqlClient, table: string, operation: Effect.Effect<A, E, R>, times = 1) =>
  Effect.gen(function*() {
    const lock = yield* holdLock(admin, table)
    const fiber = yield* Effect.fork(operation)
    let waiting = yield* firstWaitingFor(admin, lock.pid)
    for (let round = 0; round < times; round++) {
      const cancelledOne = waiting
      yield* admin`SELECT pg_cancel_backend(${cancelledOne.pid})`
      const next = yield* until(Effect.gen(function*() {
        if (Option.isSome(yield* Fiber.poll(fiber))) return Option.some(Option.none<Waiting>())
        const again = (yield* waitingFor(admin, lock.pid)).find((w) => w.pid !== cancelledOne.pid || w.started !== cancelledOne.started)
        return again === undefined ? Option.none() : Option.some(Option.some(again))
      }))
      if (Option.isNone(next)) break
      waiting = next.value
    }
    yield* lock.release
    return yield* Fiber.await(fiber)
  })

export const succeeded = <A, E>(exit: Exit.Exit<A, E>): A => {
  if (Exit.isSuccess(exit)) return exit.value
  throw new Error(`expected a success, got ${String(exit.cause)}`)
}

