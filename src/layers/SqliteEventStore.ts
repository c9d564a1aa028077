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
 * One writer per session: a writer holds a lease row (`writer_leases`) naming it (pid, host, the
 * process's start time) with an expiry it renews while it lives. Another process gets
 * `SessionBusy`; a lease whose holder is gone (on this host: its process is gone; elsewhere: the
 * lease expired) is taken over by a compare-and-swap on the row's token. See writer/Lease.ts,
 * shared with the PostgreSQL store.
 *
 * The database file is created owner-only (0600; SQLite gives its WAL files the same mode), its
 * folder 0700. Errors name the file: a folder that cannot be opened, a read-only or full disk.
 *
 * @since 0.1.0
 */
import * as FileSystem from "@effect/platform/FileSystem"
import * as Path from "@effect/platform/Path"
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import { chmodSync, closeSync, copyFileSync, existsSync, mkdtempSync, openSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Cause from "effect/Cause"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import * as AgentEvent from "../domain/AgentEvent.js"
import { EventStoreFailure, type EventStoreFailureReason } from "../domain/Errors.js"
import * as LogFormat from "../domain/LogFormat.js"
import { BlobStore } from "../services/BlobStore.js"
import { EventStore, sequenceConflict } from "../services/EventStore.js"
import * as Directories from "./Directories.js"
import * as SqlBlobStore from "./blobs/SqlBlobStore.js"
import * as EventTables from "./sql/EventTables.js"
import * as SchemaVersion from "./sql/SchemaVersion.js"
import * as SessionUsage from "./sql/SessionUsage.js"
import * as SqliteBusy from "./sql/SqliteBusy.js"
import * as SqliteFileLimit from "./sql/SqliteFileLimit.js"
import * as SqliteSchema from "./sql/SqliteSchema.js"
import * as Lease from "./writer/Lease.js"

/** Options of the SQLite store. */
export interface Options {
  /** The database file; its folder is created when missing. */
  readonly filename: string
  /**
   * The writer lease's timing: how long a lease lasts without renewal (default 30 s) and how often
   * its writer renews it (default a third of that). Only holders on other hosts rely on the expiry:
   * on this host a dead holder is known at once.
   */
  readonly writerLease?: Lease.Settings
  /**
   * Only read the database (the read commands: `sessions`, `replay`, …), so that one the process
   * cannot write still reads: it is opened read-only, with no folder made and no migration run
   * (appends fail `permission_denied`). A WAL database whose folder cannot be written is readable in
   * place only while a writer has it open (its `-shm` file exists); otherwise — no process has it
   * open, so nothing is changing it — a copy in the temporary folder is read. A missing file reads as
   * an empty store.
   */
  readonly readOnly?: boolean
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
  }),
  "2_writer_leases": Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    // One row per driven session: its holder (JSON, see Holder), a token unique per acquisition
    // (the compare-and-swap key of a takeover), and when the lease lapses (epoch ms).
    yield* sql`
      CREATE TABLE writer_leases (
        session_id TEXT PRIMARY KEY,
        token TEXT NOT NULL,
        holder TEXT NOT NULL,
        expires_at INTEGER NOT NULL
      )`
  }),
  "3_awaiting_approvals": Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    // The calls of each session's open turn that wait for the user's answer (what `pending` lists),
    // kept by the appends in the same transaction as their events; filled once from the events here.
    yield* sql`
      CREATE TABLE awaiting_approvals (
        session_id TEXT NOT NULL,
        tool_call_id TEXT NOT NULL,
        sequence INTEGER NOT NULL,
        PRIMARY KEY (session_id, tool_call_id)
      ) WITHOUT ROWID`
    yield* EventTables.backfillAwaiting(sql)
  }),
  "4_blobs": SqlBlobStore.migrateSqlite,
  "5_session_titles": Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    // Each session's title (see `Session.SessionSummary.title`), kept by the appends in the same
    // transaction as their events; filled once from the events here. Added only when missing: a
    // database whose migration records were lost keeps its column.
    const columns = yield* sql<{ readonly name: string }>`SELECT name FROM pragma_table_info('sessions')`
    if (!columns.some((c) => c.name === "title")) yield* sql`ALTER TABLE sessions ADD COLUMN title TEXT`
    yield* EventTables.backfillTitles(sql)
  }),
  "6_session_usage": Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    // Each session's usage and cost totals (what `sessions` lists), kept by the appends in the same
    // transaction as their `turn.completed`; filled once from the events here.
    yield* SessionUsage.createTable(sql, "sqlite")
    yield* EventTables.backfillUsage(sql)
  })
})

/** The SQLite (or file system) error code of an error or of its cause, e.g. `SQLITE_FULL`, `EACCES`. */
const codeOf = (error: unknown): string | undefined => {
  const own = (error as { code?: unknown } | undefined)?.code
  if (typeof own === "string") return own
  const inner = (error as { cause?: { code?: unknown } } | undefined)?.cause?.code
  return typeof inner === "string" ? inner : undefined
}
const sqliteCode = (error: SqlError): string | undefined => codeOf(error)

/** The reason of a SQLite or file system error code; the extended codes (`SQLITE_IOERR_WRITE`) count as their base. */
const reasonOfCode = (code: string): EventStoreFailureReason => {
  if (code.startsWith("SQLITE_CONSTRAINT")) return "sequence_conflict"
  if (code.startsWith("SQLITE_FULL") || Directories.noRoom(code)) return "disk_full"
  if (code.startsWith("SQLITE_READONLY") || code.startsWith("SQLITE_PERM") || code.startsWith("SQLITE_CANTOPEN")) return "permission_denied"
  if (code === "EACCES" || code === "EPERM" || code === "EROFS" || code === "EISDIR" || code === "ENOTDIR") return "permission_denied"
  if (code.startsWith("SQLITE_CORRUPT") || code.startsWith("SQLITE_NOTADB")) return "corrupt"
  return "unavailable"
}
const reasonOf = (error: SqlError): EventStoreFailureReason => reasonOfCode(sqliteCode(error) ?? "")

/** What a code means for the person reading the error (SQLite's own words, like `disk I/O error`, say little). */
const explain = (code: string | undefined, message: string): string => {
  const base = code ?? ""
  const plain = base.startsWith("SQLITE_FULL") || Directories.noRoom(base)
    ? "the disk is full"
    : base.startsWith("SQLITE_READONLY") || base === "EROFS"
    ? "the database file or its folder is read-only"
    : base.startsWith("SQLITE_CANTOPEN") || base === "EACCES" || base === "EPERM" || base === "EISDIR" || base === "ENOTDIR"
    ? "the database file cannot be opened (check that it is a file and that its folder exists and is writable)"
    : base.startsWith("SQLITE_IOERR")
    ? "the disk failed a read or write (a full or read-only disk, or a failing one)"
    : undefined
  return `${plain === undefined ? message : `${plain}: ${message}`}${code === undefined ? "" : ` (${code})`}`
}

const failure = (operation: EventStoreFailure["operation"], filename: string, sessionId?: string) => (error: SqlError) => {
  const code = sqliteCode(error)
  // A file at its size limit: `disk_full`, as the JSONL store says for the same `EFBIG` (see SqliteFileLimit).
  const limited = SqliteFileLimit.isFileSizeLimit(code)
  return new EventStoreFailure({
    reason: limited ? "disk_full" : reasonOf(error),
    operation,
    path: filename,
    detail: limited ? `a write failed under the process's file-size limit (ulimit -f): ${error.message} (${code})` : explain(code, error.message),
    cause: error,
    ...(sessionId === undefined ? {} : { sessionId })
  })
}

/** Any error met while opening the database (often a defect of the driver) as a store failure naming the file. */
const openFailure = (filename: string, error: unknown, what = "opening the database failed") => {
  const code = codeOf(error)
  const message = error instanceof Error ? error.message : String(error)
  return new EventStoreFailure({
    reason: code === undefined ? "unavailable" : reasonOfCode(code),
    operation: "append",
    path: filename,
    detail: `${what}: ${explain(code, message)}`,
    cause: error
  })
}


/** Builds the store on a migrated SQLite client. */
export const make = (options: Options): Effect.Effect<EventStore.Service, never, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const { filename } = options

    const appendEvent = (event: AgentEvent.AgentEvent): Effect.Effect<void, EventStoreFailure> =>
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

    // Busy waits run again on the scheduler, not in SQLite on the main thread (see `SqliteBusy`).
    const retried = SqliteBusy.retried
    const { append, appendAll, awaitingListing, list, listing, read } = EventTables.make({ sql, where: filename, failure, append: appendEvent, retried })

    const acquireWriter = yield* Lease.make({
      ...options.writerLease,
      retried,
      path: filename,
      failure: (sessionId) => failure("lock", filename, sessionId),
      // Its writers share a host: leases are judged on its monotonic clock, which a step of the wall clock does not move.
      monotonic: Lease.hostMonotonic
    })

    return EventStore.of({ append, appendAll, read, list, listing, awaitingListing, acquireWriter })
  })

const migrate = Layer.effectDiscard(
  Migrator.make({})({ loader: migrations, table: "effect_agent_migrations" }).pipe(Effect.mapError((error) => error.cause ?? error))
)

/**
 * Run before anything else on a connection: the functions a schema's triggers, views, defaults and
 * checks may call are SQLite's harmless ones only (a database file can come with a repository).
 */
const hardened = Layer.effectDiscard(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`PRAGMA trusted_schema = OFF`))

/** The schema of the database on `sql`, as `SqliteSchema.expected` lists the migrations' (user objects only, same order). */
export const schemaOf = (sql: SqlClient.SqlClient) =>
  sql<SqliteSchema.SchemaObject>`SELECT type, name, tbl_name, sql FROM sqlite_master WHERE substr(name, 1, 7) <> 'sqlite_' ORDER BY type, name`

/**
 * What makes a database's schema not the one the migrations make, or undefined. Before the
 * migrations (`complete` false) a database may be behind, but may hold nothing they do not make,
 * and its triggers and views are theirs word for word; after them it is theirs exactly. A
 * repository's database with a trigger of its own would run it inside each of the user's appends.
 */
const schemaDifference = (actual: ReadonlyArray<SqliteSchema.SchemaObject>, expected: ReadonlyArray<SqliteSchema.SchemaObject>, complete: boolean): string | undefined => {
  const byName = new Map(expected.map((o) => [o.name, o]))
  for (const object of actual) {
    const mine = byName.get(object.name)
    if (mine === undefined || mine.type !== object.type) return `${object.type} ${JSON.stringify(object.name)}`
    if ((complete || object.type === "trigger" || object.type === "view") && (mine.sql !== object.sql || mine.tbl_name !== object.tbl_name)) {
      return `${object.type} ${JSON.stringify(object.name)} as defined`
    }
  }
  if (complete && actual.length !== expected.length) return incomplete
  return undefined
}

/** What `schemaDifference` says of a schema that is the migrations' so far, but not all of them. */
const incomplete = "a missing table or index"

/** The refusal of a database whose schema is not the migrations'. */
const foreignSchema = (filename: string, difference: string) =>
  new EventStoreFailure({
    reason: "corrupt",
    operation: "append",
    path: filename,
    detail: `the database's schema is not the one effect-agent makes (${difference}): a database that came with a repository can run SQL of its own in your appends; remove it, or use another --data-dir`
  })

/** How the database's schema differs from the migrations' (see `schemaDifference`), or undefined. */
const differenceOf = (filename: string, complete: boolean) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    schemaOf(sql).pipe(
      Effect.mapError((error) => openFailure(filename, error)),
      Effect.map((actual) => schemaDifference(actual, SqliteSchema.expected, complete))
    ))

/** Fails unless the database's schema is the migrations' (see `schemaDifference`). */
const verify = (filename: string, complete: boolean) =>
  Effect.flatMap(differenceOf(filename, complete), (difference) => difference === undefined ? Effect.void : Effect.fail(foreignSchema(filename, difference)))

/** The migrations are another process's, under way (see `layer`). */
class MigratingElsewhere extends Data.TaggedError("MigratingElsewhere")<{}> {}

/**
 * Reads the database's schema into a connection, unprepared: the first statement a connection
 * prepares reads the schema, so its preparation is what a writer holding the database locked refuses
 * busy — and the client keeps a failed preparation for its statement (10 minutes), so every retry of
 * that statement failed at once. Unprepared, each try prepares again; a busy preparation, which the
 * client throws (a defect), is a failure here, for `SqliteBusy.retried`. Once read, the schema is
 * the connection's: later statements prepare without a lock.
 */
const schemaLoaded: Effect.Effect<void, unknown, SqlClient.SqlClient> = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql`SELECT count(*) FROM sqlite_master`.unprepared.pipe(
    Effect.catchAllDefect((defect) => SqliteBusy.isBusy(defect) ? Effect.fail(defect) : Effect.die(defect)),
    Effect.asVoid
  ))

/** `SchemaVersion.refuseNewer`'s failure for a store opened read-only (the only `read` failure of its opening). */
const isNewerRefusal = (error: unknown): error is EventStoreFailure => error instanceof EventStoreFailure && error.operation === "read"

/** The client of a store that is only read (see `Options.readOnly`). */
const readOnlyClient = (filename: string): Layer.Layer<SqlClient.SqlClient, EventStoreFailure> => {
  // Busy waits run on the scheduler here too (see `SqliteBusy`), from the first read on: with
  // better-sqlite3's own 5 s, a writer holding the database locked stalled the whole process that long.
  const shortWait = Layer.effectDiscard(Effect.flatMap(SqlClient.SqlClient, SqliteBusy.shortWait))
  const open = (file: string) =>
    Layer.provideMerge(Layer.merge(hardened, shortWait), SqliteClient.layer({ filename: file, readonly: true, disableWAL: true }))
  // Opening succeeds either way; the first read tells whether SQLite can share the file from here.
  // It reads the schema, which must be the migrations' (perhaps behind): a view of a repository's
  // own in a table's place could make a listing endless. A database busy (a writer holding it
  // locked) is waited for, then refused — never read from a copy taken under the writer's lock.
  // A newer release's migrations are refused by name first (see `SchemaVersion`): compared, its
  // tables were taken for a repository's, and the user told to remove a good database.
  const probe = Layer.effectDiscard(Effect.zipRight(
    SqliteBusy.retried(schemaLoaded).pipe(Effect.mapError((error) => openFailure(filename, error))),
    SqliteBusy.retried(
      SchemaVersion.refuseNewer({ loader: migrations, table: "effect_agent_migrations", where: filename, reading: true }).pipe(
        Effect.catchAll((error) => Effect.fail(error._tag === "EventStoreFailure" ? error : openFailure(filename, error))),
        Effect.zipRight(verify(filename, false))
      )
    )
  ))
  const inPlace = probe.pipe(Layer.provideMerge(open(filename)))
  const copy = Layer.unwrapScoped(
    Effect.gen(function*() {
      const dir = yield* Effect.acquireRelease(
        Effect.sync(() => mkdtempSync(join(tmpdir(), "effect-agent-sqlite-"))),
        (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
      )
      const file = join(dir, "effect-agent.sqlite")
      copyFileSync(filename, file)
      if (existsSync(`${filename}-wal`)) copyFileSync(`${filename}-wal`, `${file}-wal`)
      return probe.pipe(Layer.provideMerge(open(file)))
    })
  )
  const empty = migrate.pipe(Layer.provideMerge(SqliteClient.layer({ filename: ":memory:" })))
  // A newer release's database (see `probe`) is refused as it is: a copy would be refused the same.
  const kept = (error: unknown) => SqliteBusy.isBusy(error) || isNewerRefusal(error)
  const inPlaceOrCopy = inPlace.pipe(Layer.catchAllCause((cause) => kept(Cause.squash(cause)) ? Layer.failCause(cause) : copy))
  return Layer.unwrapEffect(Effect.sync(() => existsSync(filename) ? inPlaceOrCopy : empty)).pipe(
    Layer.catchAllCause((cause) => {
      const error = Cause.squash(cause)
      return Layer.fail(isNewerRefusal(error) ? error : openFailure(filename, error))
    })
  )
}

/**
 * The SQLite store as a layer: opens (creating) the file in WAL mode and migrates the schema. It
 * needs a `FileSystem` and a `Path` (for example `NodeContext.layer`) to create the file's folder.
 * With `readOnly`, see `Options.readOnly`.
 */
export const layer = (options: Options): Layer.Layer<EventStore | BlobStore, EventStoreFailure, FileSystem.FileSystem | Path.Path> => {
  // The blob area is a table of the same database (see `blobs/SqlBlobStore`).
  const stores = Layer.merge(Layer.effect(EventStore, make(options)), Layer.effect(BlobStore, SqlBlobStore.make({ where: options.filename, retried: SqliteBusy.retried })))
  if (options.readOnly === true) return stores.pipe(Layer.provide(readOnlyClient(options.filename)))
  const prepareFolder = Layer.effectDiscard(Effect.gen(function*() {
    const path = yield* Path.Path
    const folder = path.dirname(path.resolve(options.filename))
    yield* Effect.try({ try: () => Directories.makeSync(folder, 0o700), catch: (error) => error }).pipe(
      Effect.mapError((error) =>
        new EventStoreFailure({
          reason: reasonOfCode(codeOf(error) ?? ""),
          operation: "append",
          path: folder,
          detail: `could not create the database's folder: ${explain(codeOf(error), error instanceof Error ? error.message : String(error))}`,
          cause: error
        })
      )
    )
    // Created here, owner only, before SQLite opens it (SQLite would use the umask's mode).
    yield* Effect.try({
      try: () => {
        const fd = openSync(options.filename, "wx", 0o600)
        closeSync(fd)
        chmodSync(options.filename, 0o600)
      },
      catch: (error) => error
    }).pipe(
      Effect.catchAll((error) => codeOf(error) === "EEXIST" ? Effect.void : Effect.fail(openFailure(options.filename, error)))
    )
  }))
  // The schema checked before the migrations run anything on it, and after. Two processes opening a
  // new database at once both run the migrator; the one that finds the other's under way (their rows
  // already inserted, in its transaction) returns at once, with tables still missing. It waits for
  // them: the migrator runs again, and the schema is checked again, while all that differs is what
  // the migrations have not made yet (at most 10 s). Before, that process refused the database as
  // one that came with a repository.
  const migrated = Layer.effectDiscard(
    Migrator.make({})({ loader: migrations, table: "effect_agent_migrations" }).pipe(
      Effect.mapError((error) => openFailure(options.filename, error.cause ?? error, "migrating the schema failed")),
      Effect.zipRight(differenceOf(options.filename, true)),
      Effect.flatMap((difference): Effect.Effect<void, EventStoreFailure | MigratingElsewhere> =>
        difference === undefined ? Effect.void : difference === incomplete ? Effect.fail(new MigratingElsewhere()) : Effect.fail(foreignSchema(options.filename, difference))
      ),
      Effect.retry({ while: (error: EventStoreFailure | MigratingElsewhere) => error._tag === "MigratingElsewhere", schedule: Schedule.spaced("50 millis"), times: 200 }),
      Effect.catchTag("MigratingElsewhere", () => Effect.fail(foreignSchema(options.filename, incomplete)))
    )
  )
  // A newer release's migrations are refused by name before the schema is compared (which would
  // call their tables a repository's): see `SchemaVersion`.
  const notNewer = SchemaVersion.refuseNewer({ loader: migrations, table: "effect_agent_migrations", where: options.filename }).pipe(
    Effect.catchAll((error) => Effect.fail(error._tag === "EventStoreFailure" ? error : openFailure(options.filename, error)))
  )
  const checked = Layer.effectDiscard(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`PRAGMA trusted_schema = OFF`).pipe(
    Effect.mapError((error) => openFailure(options.filename, error)),
    Effect.zipRight(notNewer),
    Effect.zipRight(verify(options.filename, false))
  ))
  const client = Layer.provideMerge(checked, SqliteClient.layer({ filename: options.filename })).pipe(
    // The driver throws while opening (a folder that is not writable, a read-only disk): a defect, made typed here.
    Layer.catchAllCause((cause) => Layer.fail(openFailure(options.filename, Cause.squash(cause)))),
    Layer.provide(prepareFolder)
  )
  // After the migrations, which keep SQLite's own wait (two processes opening a new database at
  // once): from here a busy database is waited for on the scheduler (see `SqliteBusy`).
  const shortBusyWait = Layer.effectDiscard(Effect.flatMap(SqlClient.SqlClient, SqliteBusy.shortWait).pipe(
    Effect.mapError((error) => openFailure(options.filename, error))
  ))
  return stores.pipe(Layer.provide(shortBusyWait), Layer.provide(migrated), Layer.provide(client))
}
