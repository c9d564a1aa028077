/**
 * An event store in one SQLite file (`@effect/sql-sqlite-node`, WAL): for many sessions, and for
 * several processes sharing one data dir.
 *
 * Events are rows keyed `(session_id, sequence)`. An append is one `INSERT … SELECT … WHERE` that
 * only inserts the session's next sequence, so two writers — fibers or processes — can never
 * interleave a session: one wins, the other gets a `sequence_conflict`. A trigger keeps the
 * `sessions` table (cwd, client, created, last activity, turn count) in step, in the same statement.
 * Each row records its log format version; reading migrates older rows. The schema is created and
 * evolved by `@effect/sql`'s migrator.
 *
 * @since 0.1.0
 */
import * as FileSystem from "@effect/platform/FileSystem"
import * as Path from "@effect/platform/Path"
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as AgentEvent from "../domain/AgentEvent.js"
import { EventStoreFailure, type EventStoreFailureReason } from "../domain/Errors.js"
import * as LogFormat from "../domain/LogFormat.js"
import type { SessionSummary } from "../domain/Session.js"
import { EventStore, sequenceConflict } from "../services/EventStore.js"

/** Options of the SQLite store. */
export interface Options {
  /** The database file; its folder is created when missing. */
  readonly filename: string
}

/** The schema, as migrations: append new ones, never edit old ones. */
export const migrations = Migrator.fromRecord({
  "1_events": Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql`
      CREATE TABLE events (
        session_id TEXT NOT NULL,
        sequence INTEGER NOT NULL,
        type TEXT NOT NULL,
        timestamp TEXT NOT NULL,
        format_version INTEGER NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (session_id, sequence)
      ) WITHOUT ROWID`
    yield* sql`
      CREATE TABLE sessions (
        session_id TEXT PRIMARY KEY,
        cwd TEXT,
        client TEXT,
        created_at TEXT NOT NULL,
        last_activity_at TEXT NOT NULL,
        turn_count INTEGER NOT NULL,
        last_sequence INTEGER NOT NULL
      )`
    yield* sql`CREATE INDEX sessions_by_activity ON sessions (last_activity_at DESC)`
    // The summary moves with every insert, inside the inserting statement: it cannot fall behind.
    yield* sql`
      CREATE TRIGGER events_summarize AFTER INSERT ON events BEGIN
        INSERT INTO sessions (session_id, cwd, client, created_at, last_activity_at, turn_count, last_sequence)
        VALUES (
          NEW.session_id,
          CASE WHEN NEW.type = 'session.created' THEN json_extract(NEW.body, '$.payload.cwd') END,
          CASE WHEN NEW.type = 'session.created' THEN json_extract(NEW.body, '$.payload.client') END,
          NEW.timestamp, NEW.timestamp, 0, NEW.sequence
        )
        ON CONFLICT (session_id) DO UPDATE SET
          last_activity_at = NEW.timestamp,
          last_sequence = NEW.sequence,
          turn_count = turn_count + (NEW.type = 'turn.started');
      END`
  })
})

const sqliteCode = (error: SqlError): string | undefined => (error.cause as { code?: unknown } | undefined)?.code as string | undefined

const reasonOf = (error: SqlError): EventStoreFailureReason => {
  const code = sqliteCode(error) ?? ""
  if (code.startsWith("SQLITE_CONSTRAINT")) return "sequence_conflict"
  if (code === "SQLITE_FULL") return "disk_full"
  if (code === "SQLITE_READONLY" || code === "SQLITE_PERM" || code === "SQLITE_CANTOPEN") return "permission_denied"
  if (code === "SQLITE_CORRUPT" || code === "SQLITE_NOTADB") return "corrupt"
  return "unavailable"
}

const failure = (operation: EventStoreFailure["operation"], filename: string, sessionId?: string) => (error: SqlError) =>
  new EventStoreFailure({
    reason: reasonOf(error),
    operation,
    path: filename,
    detail: `${error.message}${sqliteCode(error) === undefined ? "" : ` (${sqliteCode(error)})`}`,
    cause: error,
    ...(sessionId === undefined ? {} : { sessionId })
  })

const pageSize = 500

/** Builds the store on a migrated SQLite client. */
export const make = (options: Options): Effect.Effect<EventStore.Service, never, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const { filename } = options

    const append = (event: AgentEvent.AgentEvent): Effect.Effect<void, EventStoreFailure> =>
      Effect.gen(function*() {
        const inserted = yield* sql<{ sequence: number }>`
          INSERT INTO events (session_id, sequence, type, timestamp, format_version, body)
          SELECT ${event.sessionId}, ${event.sequence}, ${event.type}, ${event.timestamp}, ${LogFormat.currentVersion}, ${AgentEvent.encodeJson(event)}
          WHERE (SELECT COALESCE(MAX(sequence), 0) FROM events WHERE session_id = ${event.sessionId}) = ${event.sequence - 1}
          RETURNING sequence`
        if (inserted.length === 1) return
        const [last] = yield* sql<{ last: number }>`SELECT COALESCE(MAX(sequence), 0) AS last FROM events WHERE session_id = ${event.sessionId}`
        return yield* sequenceConflict(event, last?.last ?? 0, { path: filename })
      }).pipe(
        Effect.catchTag("SqlError", (error) =>
          reasonOf(error) === "sequence_conflict"
            // Another writer took this sequence between the check and the insert: the key refused it.
            ? Effect.fail(sequenceConflict(event, event.sequence, { path: filename }))
            : Effect.fail(failure("append", filename, event.sessionId)(error)))
      )

    const read: EventStore.Service["read"] = (sessionId, readOptions) => {
      const page = (from: number) =>
        sql<{ sequence: number; format_version: number; body: string }>`
          SELECT sequence, format_version, body FROM events
          WHERE session_id = ${sessionId} AND sequence >= ${from}
          ORDER BY sequence LIMIT ${pageSize}`.pipe(Effect.mapError(failure("read", filename, sessionId)))
      const decode = (row: { sequence: number; format_version: number; body: string }) => {
        const event = Either.flatMap(
          Either.try({ try: () => JSON.parse(row.body) as unknown, catch: () => "not JSON" }),
          (raw) => Either.flatMap(LogFormat.migrate(row.format_version, raw), (migrated) => Either.mapLeft(AgentEvent.decodeUnknown(migrated), () => "not a valid event"))
        )
        return Either.isRight(event) && event.right.sequence === row.sequence && event.right.sessionId === sessionId
          ? Effect.succeed(event.right)
          : Effect.fail(new EventStoreFailure({ reason: "corrupt", operation: "read", sessionId, sequence: row.sequence, path: filename, detail: "a stored event is not valid" }))
      }
      return Stream.paginateChunkEffect(readOptions?.fromSequence ?? 1, (from) =>
        Effect.map(page(from), (rows) => [Chunk.unsafeFromArray(rows), rows.length === pageSize ? Option.some(rows.at(-1)!.sequence + 1) : Option.none<number>()] as const)).pipe(
          Stream.mapEffect(decode)
        )
    }

    const list = sql<{
      session_id: string
      cwd: string
      client: SessionSummary["client"]
      created_at: string
      last_activity_at: string
      turn_count: number
      last_sequence: number
    }>`
      SELECT session_id, cwd, client, created_at, last_activity_at, turn_count, last_sequence FROM sessions
      WHERE cwd IS NOT NULL
      ORDER BY last_activity_at DESC, session_id`.pipe(
      Effect.map((rows) =>
        rows.map((r): SessionSummary => ({
          sessionId: r.session_id,
          cwd: r.cwd,
          client: r.client,
          createdAt: r.created_at,
          lastActivityAt: r.last_activity_at,
          turnCount: r.turn_count,
          lastSequence: r.last_sequence
        }))
      ),
      Effect.mapError(failure("list", filename))
    )

    return EventStore.of({ append, read, list })
  })

/**
 * The SQLite store as a layer: opens (creating) the file in WAL mode and migrates the schema. It
 * needs a `FileSystem` and a `Path` (for example `NodeContext.layer`) to create the file's folder.
 */
export const layer = (options: Options): Layer.Layer<EventStore, EventStoreFailure, FileSystem.FileSystem | Path.Path> => {
  const prepareFolder = Layer.effectDiscard(Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const folder = path.dirname(path.resolve(options.filename))
    yield* fs.makeDirectory(folder, { recursive: true }).pipe(
      Effect.mapError((error) =>
        new EventStoreFailure({ reason: "unavailable", operation: "append", path: folder, detail: error.message, cause: error })
      )
    )
  }))
  const migrated = Layer.effectDiscard(
    Migrator.make({})({ loader: migrations, table: "effect_agent_migrations" }).pipe(
      Effect.mapError((error) =>
        new EventStoreFailure({ reason: "unavailable", operation: "append", path: options.filename, detail: `migrating the schema failed: ${error.message}`, cause: error })
      )
    )
  )
  const client = SqliteClient.layer({ filename: options.filename }).pipe(
    Layer.mapError((error) => new EventStoreFailure({ reason: "unavailable", operation: "append", path: options.filename, detail: error.message, cause: error })),
    Layer.provide(prepareFolder)
  )
  return Layer.effect(EventStore, make(options)).pipe(Layer.provide(migrated), Layer.provide(client))
}
