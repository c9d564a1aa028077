/**
 * `effect-agent/sqlite`: event store in one SQLite file, for many sessions and several processes.
 * It needs the optional peer `@effect/sql-sqlite-node` (a native module), and lives in a subpath of
 * its own so that importing `effect-agent` never loads it.
 *
 * @since 0.1.0
 */

/** Event store in one SQLite file, for many sessions and several processes (needs the optional peer `@effect/sql-sqlite-node`). */
export * as SqliteEventStore from "./layers/SqliteEventStore.js"
