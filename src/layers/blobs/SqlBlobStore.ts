/**
 * The blob area of the SQL stores (SQLite and PostgreSQL): a `blobs` table keyed by hash, created
 * by each store's migrations (`migrateSqlite`, `migratePostgres`). A put is one upsert: the same
 * bytes twice are stored once, and a blob is a row the database writes whole or not at all. A row
 * already there is rewritten only when its bytes differ — damaged by hand or by the disk — so the
 * right bytes put again repair it instead of being trusted by the name.
 *
 * @since 0.6.0
 */
import type { SqlError } from "@effect/sql/SqlError"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Blob from "../../domain/Blob.js"
import { BlobStore } from "../../services/BlobStore.js"
import { codeOf } from "../sql/ErrorCode.js"
import * as Sha256 from "./Sha256.js"

/** The SQLite migration that creates the blob table. */
export const migrateSqlite = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql`CREATE TABLE blobs (hash TEXT PRIMARY KEY, size INTEGER NOT NULL, bytes BLOB NOT NULL) WITHOUT ROWID`)

/** The PostgreSQL migration that creates the blob table. */
export const migratePostgres = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql`CREATE TABLE blobs (hash TEXT COLLATE "C" PRIMARY KEY, size INTEGER NOT NULL, bytes BYTEA NOT NULL)`)


const reasonOf = (error: SqlError): Blob.BlobFailureReason => {
  const code = codeOf(error) ?? ""
  if (code.startsWith("SQLITE_FULL") || code === "53100") return "disk_full"
  if (code.startsWith("SQLITE_READONLY") || code.startsWith("SQLITE_PERM") || code === "42501" || code === "25006") {
    return "permission_denied"
  }
  return "unavailable"
}

/**
 * Builds the store on a migrated client; `where` names the database in failures. `retried` runs a
 * statement again that failed without changing anything (PostgreSQL: see `LateCancel`).
 */
export const make = (options: {
  readonly where: string
  readonly retried?: <A, E, R>(statement: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
}): Effect.Effect<BlobStore.Service, never, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const retried = options.retried ?? ((statement) => statement)
    const failure = (operation: Blob.BlobFailure["operation"], hash: string) => (error: SqlError) =>
      new Blob.BlobFailure({ reason: reasonOf(error), operation, hash, detail: `${options.where}: the blob table could not be ${operation === "put" ? "written" : "read"}`, cause: error })

    const put: BlobStore.Service["put"] = (bytes) =>
      Effect.suspend(() => {
        const hash = Sha256.of(bytes)
        return retried(sql`INSERT INTO blobs (hash, size, bytes) VALUES (${hash}, ${bytes.byteLength}, ${Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)}) ON CONFLICT (hash) DO UPDATE SET bytes = excluded.bytes, size = excluded.size WHERE blobs.bytes <> excluded.bytes`).pipe(
          Effect.mapError(failure("put", hash)),
          Effect.as(hash)
        )
      }).pipe(Effect.withSpan("SqlBlobStore.put"))

    const get: BlobStore.Service["get"] = (hash) =>
      Effect.gen(function*() {
        if (!Blob.isHash(hash)) return yield* Effect.fail(Blob.invalidHash("get", hash))
        const rows = yield* retried(sql<{ bytes: Uint8Array }>`SELECT bytes FROM blobs WHERE hash = ${hash}`).pipe(Effect.mapError(failure("get", hash)))
        const row = rows[0]
        if (row === undefined) return yield* Effect.fail(new Blob.BlobNotFound({ hash }))
        const bytes = new Uint8Array(row.bytes.buffer, row.bytes.byteOffset, row.bytes.byteLength)
        const actual = Sha256.of(bytes)
        if (actual !== hash) return yield* Effect.fail(Blob.corrupt(hash, actual))
        return bytes
      }).pipe(Effect.withSpan("SqlBlobStore.get"))

    const has: BlobStore.Service["has"] = (hash) =>
      Blob.isHash(hash)
        ? retried(sql<{ found: number }>`SELECT 1 AS found FROM blobs WHERE hash = ${hash}`).pipe(
          Effect.mapError(failure("has", hash)),
          Effect.map((rows) => rows.length > 0)
        )
        : Effect.fail(Blob.invalidHash("has", hash))

    return BlobStore.of({ put, get, has })
  })
