/**
 * SQLite's busy wait, off the main thread's back.
 *
 * Another connection holding the database's write lock (another process's transaction, a
 * checkpoint) makes a statement wait for it: better-sqlite3 waits synchronously, up to its busy
 * timeout (5 s by default), on the one thread every fiber, timer and request of the process shares
 * — a turn's append stalled the whole process for seconds, then failed `SQLITE_BUSY`. So a store's
 * connection waits {@link busyTimeoutMs} at most inside SQLite, and an operation refused busy runs
 * again after a backoff on Effect's scheduler (its `Clock`), until {@link deadline}.
 *
 * A statement refused busy changed nothing, and SQLite rolls back a transaction whose statement
 * failed so (or `@effect/sql` does, as the transaction fails): an append runs again whole, and the
 * sequence check refuses a second copy of an event anyway.
 *
 * @since 0.14.0
 * @internal
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import { codeOf } from "./ErrorCode.js"

/** How long SQLite itself waits for a lock, blocking the thread: a few ms, enough for a short transaction. */
export const busyTimeoutMs = 25

/** How long an operation refused busy keeps trying before it fails (`unavailable`, `SQLITE_BUSY`). */
export const deadline = "10 seconds"

/** Sets the connection's busy timeout to {@link busyTimeoutMs} (better-sqlite3 opens it at 5 s). */
export const shortWait = (sql: SqlClient.SqlClient) => sql.unsafe(`PRAGMA busy_timeout = ${busyTimeoutMs}`)

/** Whether a failure (or a cause of it) is SQLite's `SQLITE_BUSY` (or an extended code of it). */
export const isBusy = (error: unknown): boolean => codeOf(error)?.startsWith("SQLITE_BUSY") === true

/** 10 ms, doubling, at most 200 ms apart, for {@link deadline} in all. */
const backoff = Schedule.exponential("10 millis").pipe(Schedule.union(Schedule.spaced("200 millis")), Schedule.upTo(deadline))

/** Runs `operation` again while it fails `SQLITE_BUSY`, after a backoff, until {@link deadline}. */
export const retried = <A, E, R>(operation: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.retry(operation, { schedule: backoff, while: isBusy })
