/**
 * A caller's transaction (`sql.withTransaction`, on any client: @effect/sql's transaction tag is one
 * for all) around a store's write: refused, typed (`EventStoreFailure` `in_transaction`). What a
 * store writes for a turn must not be rolled back with someone else's work — the engine holds an
 * appended event as stored — and the writer lease must not be taken on the caller's connection (see
 * `Lease`).
 *
 * @since 0.1.0
 * @internal
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import { EventStoreFailure } from "../../domain/Errors.js"

/** Fails `in_transaction` when run inside a caller's transaction; nothing otherwise. */
export const refused = (options: {
  readonly operation: "append" | "lock"
  readonly sessionId: string
  /** Why, after "a turn cannot run inside a transaction (sql.withTransaction): ". */
  readonly why: string
  readonly path?: string | undefined
}): Effect.Effect<void, EventStoreFailure> =>
  Effect.flatMap(Effect.serviceOption(SqlClient.TransactionConnection), (transaction) =>
    transaction._tag === "None" ? Effect.void : Effect.fail(
      new EventStoreFailure({
        reason: "in_transaction",
        operation: options.operation,
        sessionId: options.sessionId,
        detail: `a turn cannot run inside a transaction (sql.withTransaction): ${options.why}`,
        ...(options.path === undefined ? {} : { path: options.path })
      })
    ))
