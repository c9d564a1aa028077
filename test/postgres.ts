/**
 * The test PostgreSQL server (started once per run by test/postgresSetup.ts): each test takes a
 * schema of its own in it, so tests never see each other's rows — or, for a cluster, a database of
 * its own (see {@link freshDatabaseUrl}).
 */
import { randomBytes } from "node:crypto"
import * as SqlClient from "@effect/sql/SqlClient"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import { inject } from "vitest"

let made = 0
/** Tells this module's schemas from those of a re-evaluated copy in the same process (a worker that resets modules between files). */
const instance = randomBytes(3).toString("hex")

/** The URL of a fresh, empty schema: connections made with it create and find their tables there (its `search_path`). */
export const freshSchemaUrl = (label = "t"): Effect.Effect<string> =>
  Effect.gen(function*() {
    const server = inject("postgresUrl")
    const schema = `${label.replace(/[^a-z0-9_]/gi, "_").toLowerCase()}_${process.pid}_${instance}_${made++}`
    yield* Effect.flatMap(SqlClient.SqlClient, (sql) => sql`CREATE SCHEMA ${sql(schema)}`).pipe(
      Effect.provide(PgClient.layer({ url: Redacted.make(server), maxConnections: 1 })),
      Effect.orDie
    )
    return `${server}?options=${encodeURIComponent(`-c search_path=${schema}`)}`
  })

/**
 * The URL of a fresh, empty database. A cluster test takes one, as a cluster should (docs/scaling.md):
 * its runners' tables (`cluster_locks`, `cluster_runners`, the cluster secret) are then its own.
 */
export const freshDatabaseUrl = (label = "t"): Effect.Effect<string> =>
  Effect.gen(function*() {
    const server = inject("postgresUrl")
    const database = `${label.replace(/[^a-z0-9_]/gi, "_").toLowerCase()}_${process.pid}_${instance}_${made++}`
    yield* Effect.flatMap(SqlClient.SqlClient, (sql) => sql`CREATE DATABASE ${sql(database)}`).pipe(
      Effect.provide(PgClient.layer({ url: Redacted.make(server), maxConnections: 1 })),
      Effect.orDie
    )
    const url = new URL(server)
    url.pathname = `/${database}`
    return url.toString()
  })
