/**
 * A database a newer effect-agent migrated is not written by this one.
 *
 * The migrator runs the migrations a database has not had yet and leaves alone the ones it has —
 * including ones this release does not know, a newer release's (a table its appends keep in step, a
 * column its readers expect). Writing to such a schema as this release knows it would leave that
 * table behind the events, or worse; so a store opened for writing reads the highest migration
 * applied and refuses, typed, one past the highest its migrations have. A store opened read-only
 * is refused the same way, saying "upgrade … to read it": SQLite's schema, checked against this
 * release's, would otherwise be taken for one that came with a repository, to remove; PostgreSQL's
 * was read as found, its newer tables as this release knows them (unless the reading role may not
 * read the migrations' table: then it still is).
 *
 * @since 0.14.0
 * @internal
 */
import type * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"
import { EventStoreFailure } from "../../domain/Errors.js"

/** The highest migration id recorded in `table`, 0 when it has none or does not exist yet (a new database). */
const highestApplied = (table: string): Effect.Effect<number, SqlError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const exists = yield* sql.onDialectOrElse({
      pg: () => sql<{ readonly present: boolean }>`SELECT to_regclass(${table}) IS NOT NULL AS present`,
      orElse: () => sql<{ readonly present: number }>`SELECT count(*) > 0 AS present FROM sqlite_master WHERE type = 'table' AND name = ${table}`
    })
    if (!exists[0]?.present) return 0
    const [row] = yield* sql<{ readonly latest: number | string | null }>`SELECT MAX(migration_id) AS latest FROM ${sql(table)}`
    return Number(row?.latest ?? 0)
  })

/**
 * Fails when the database's migrations in `table` went past the highest of `loader`'s: a typed
 * `EventStoreFailure` (`unavailable`) naming both, nothing written.
 */
export const refuseNewer = (options: {
  readonly loader: Migrator.Loader
  readonly table: string
  /** Where the database is, for the failure (a file, or a server without its credentials). */
  readonly where: string
  /** The store is opened read-only: the failure says so (operation `read`, "upgrade … to read it"). */
  readonly reading?: boolean
}): Effect.Effect<void, EventStoreFailure | SqlError | Migrator.MigrationError, SqlClient.SqlClient> =>
  Effect.flatMap(highestApplied(options.table), (applied) => refusePast(applied, options))

/**
 * Fails as `refuseNewer` does when `applied` — the highest migration id the database recorded, read
 * by the caller (PostgreSQL's read-only open reads it in the statement that connects) — is past the
 * highest of `loader`'s.
 */
export const refusePast = (applied: number, options: {
  readonly loader: Migrator.Loader
  readonly where: string
  readonly reading?: boolean
}): Effect.Effect<void, EventStoreFailure | Migrator.MigrationError> =>
  Effect.gen(function*() {
    const known = Math.max(0, ...(yield* options.loader).map(([id]) => id))
    if (applied <= known) return
    return yield* new EventStoreFailure({
      reason: "unavailable",
      operation: options.reading === true ? "read" : "append",
      path: options.where,
      detail: `the database is from a newer effect-agent: its schema is at migration ${applied}, this release knows migrations up to ${known}; ` +
        `upgrade effect-agent to ${options.reading === true ? "read" : "write to"} it`
    })
  })
