/**
 * PostgreSQL statements cancelled although their own fiber was not interrupted, run again.
 *
 * `@effect/sql-pg` cancels an interrupted fiber's statement with `pg_cancel_backend(pid)`, run on
 * another connection of the pool. The interrupted statement's connection goes back to the pool as
 * soon as that statement ends on its own, which can be before the cancel has run (the cancel waits
 * for a free connection, and for the server, like any query). The cancel names a backend, not a
 * statement: it then stops whatever the pool gave the connection to next, which fails with SQLSTATE
 * 57014 ("canceling statement due to user request") though nothing asked for it. On a loaded
 * machine, or a pool shared with a cluster runner whose fibers are interrupted as it stops, that
 * can be a store's append.
 *
 * A statement that fails so changed nothing: PostgreSQL rolls a failed statement back, and with it
 * the transaction it ran in. So the SQL store's operations built of such statements (an append
 * and its transaction, a batch, a read's page, a listing, taking and releasing the writer lease, a blob)
 * run again, a few times at most. An append run again is guarded besides by the sequence check:
 * an event already stored at its sequence is refused, never stored twice.
 *
 * A fiber that was interrupted is never run again: the library resumes it with the interruption,
 * which a retry does not catch. `statement_timeout` also reports 57014 (only the message, in the
 * server's language, differs); such a statement runs again too, the same few times.
 *
 * @since 0.14.0
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import { codeOf } from "./ErrorCode.js"

/** SQLSTATE `query_canceled`. */
const queryCanceled = "57014"

/** How many times a cancelled operation runs again: each late cancel stops one statement. */
const attempts = 3

/** Whether a failure (or any of its causes) is a statement PostgreSQL cancelled. */
export const isCancelled = (error: unknown): boolean => codeOf(error) === queryCanceled

/** Runs `effect` again when it fails because a statement of it was cancelled, at most {@link attempts} times. */
export const retried = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.retry(effect, { schedule: Schedule.recurs(attempts), while: isCancelled })

/**
 * A service of the pool whose every operation (an effect, or a function giving one) runs again as
 * {@link retried} does: `@effect/cluster`'s SQL storages, whose statements share the runner's pool
 * with the store's. Each of their operations is one statement, a transaction, or statements that
 * may run twice (a delete, an upsert), so one stopped by a late cancel changed nothing that a second
 * run minds.
 */
export const everyOperation = <S extends object>(service: S): S => {
  const wrapped: Record<PropertyKey, unknown> = {}
  for (const key of Reflect.ownKeys(service)) {
    const value: unknown = (service as Record<PropertyKey, unknown>)[key]
    wrapped[key] = typeof value === "function"
      ? (...args: ReadonlyArray<unknown>) => {
        const result: unknown = value.apply(service, args)
        return Effect.isEffect(result) ? retried(result) : result
      }
      : Effect.isEffect(value)
      ? retried(value)
      : value
  }
  return wrapped as S
}
