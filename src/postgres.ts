/**
 * `effect-agent/postgres`: event store in a PostgreSQL database, for many sessions and processes on
 * several machines (one writer per session through lease rows). It needs the optional peers
 * `@effect/sql` and `@effect/sql-pg`, and lives in a subpath of its own so that importing
 * `effect-agent` never loads them.
 *
 * @since 0.1.0
 */

/** Event store in a PostgreSQL database (needs the optional peers `@effect/sql` and `@effect/sql-pg`). */
export * as PostgresEventStore from "./layers/PostgresEventStore.js"
