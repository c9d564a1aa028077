/**
 * An event store in a PostgreSQL database (`@effect/sql-pg`): for many sessions, and for processes
 * on several machines sharing one database.
 *
 * The same contract as the SQLite store, in the same shape. Events are rows keyed
 * `(session_id, sequence)`; an append is one statement that inserts the session's next sequence
 * only — `INSERT … SELECT … WHERE` the last stored sequence is the one before — so two writers
 * can never interleave a session: one wins, the other gets a `sequence_conflict` (when both race
 * for one sequence, the primary key refuses the second). The same statement keeps the `sessions`
 * summary in step. Bodies are stored as the log's JSON text, byte for byte (not `jsonb`, which
 * would reorder keys and refuse `\u0000`).
 *
 * One writer per session: the lease rows of writer/Lease.ts, shared with SQLite. Writers on other
 * machines are judged by their lease's expiry alone, set and read on the database's clock, so the
 * machines' own clocks need not agree.
 *
 * A statement PostgreSQL cancelled though its own fiber was not interrupted — the library's cancel
 * of another fiber's statement, landed on the connection after the pool gave it to us — changed
 * nothing, and runs again (see sql/LateCancel.ts).
 *
 * The schema is created and evolved by `@effect/sql`'s migrator, in the connection's schema (its
 * `search_path`). The URL is `Redacted`: it is never printed; failures name the server without its
 * user or password.
 *
 * @since 0.1.0
 */
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Pg from "pg"
import * as AgentEvent from "../domain/AgentEvent.js"
import { EventStoreFailure, type EventStoreFailureReason } from "../domain/Errors.js"
import * as LogFormat from "../domain/LogFormat.js"
import { BlobStore } from "../services/BlobStore.js"
import { EventStore, sequenceConflict } from "../services/EventStore.js"
import * as SqlBlobStore from "./blobs/SqlBlobStore.js"
import * as MemoryEventStore from "./MemoryEventStore.js"
import { codeOf } from "./sql/ErrorCode.js"
import * as EventTables from "./sql/EventTables.js"
import * as LateCancel from "./sql/LateCancel.js"
import * as SchemaVersion from "./sql/SchemaVersion.js"
import * as SessionUsage from "./sql/SessionUsage.js"
import * as Lease from "./writer/Lease.js"

/** Options of the PostgreSQL store. */
export interface Options {
  /** The database's URL, `postgres://user:password@host:5432/database`; never printed. */
  readonly url: Redacted.Redacted
  /**
   * The writer lease's timing: how long a lease lasts without renewal (default 30 s) and how often
   * its writer renews it (default a third of that). A writer that dies on another machine holds its
   * sessions until its lease expires; one on this machine is known dead at once.
   */
  readonly writerLease?: Lease.Settings
  /** The most connections the store opens (default 10). */
  readonly maxConnections?: number
  /**
   * Only read the database (the read commands: `sessions`, `pending`, `replay`, …), so that a user
   * who may only read it — a role granted SELECT alone — still lists and replays: no migration runs
   * and nothing is created or locked. A schema an older version left is read as it stands (the
   * listing folds what its tables lack from the events); a database with none of our tables reads
   * as an empty store. Appends and writer locks are refused (`permission_denied`) before any
   * statement.
   */
  readonly readOnly?: boolean
}

/** The table the migrator records applied migrations in. */
const migrationsTable = "effect_agent_migrations"

/** The schema, as migrations: append new ones, never edit old ones. */
export const migrations = Migrator.fromRecord({
  "1_events": Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    // Text compared byte for byte (COLLATE "C"): listings order ids as every other store does.
    yield* sql`
      CREATE TABLE events (
        session_id TEXT COLLATE "C" NOT NULL,
        sequence INTEGER NOT NULL,
        type TEXT NOT NULL,
        timestamp TEXT COLLATE "C" NOT NULL,
        format_version INTEGER NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (session_id, sequence)
      )`
    yield* sql`
      CREATE TABLE sessions (
        session_id TEXT COLLATE "C" PRIMARY KEY,
        cwd TEXT,
        client TEXT,
        created_at TEXT COLLATE "C" NOT NULL,
        last_activity_at TEXT COLLATE "C" NOT NULL,
        turn_count INTEGER NOT NULL,
        last_sequence INTEGER NOT NULL
      )`
    yield* sql`CREATE INDEX sessions_by_activity ON sessions (last_activity_at DESC)`
    // One row per driven session: its holder (JSON, see writer/Holder.ts), a token unique per
    // acquisition (the compare-and-swap key of a takeover), and when the lease lapses (epoch ms).
    yield* sql`
      CREATE TABLE writer_leases (
        session_id TEXT COLLATE "C" PRIMARY KEY,
        token TEXT NOT NULL,
        holder TEXT NOT NULL,
        expires_at BIGINT NOT NULL
      )`
  }),
  "2_awaiting_approvals": Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    // The calls of each session's open turn that wait for the user's answer (what `pending` lists),
    // kept by the appends in the same transaction as their events; filled once from the events here.
    yield* sql`
      CREATE TABLE awaiting_approvals (
        session_id TEXT COLLATE "C" NOT NULL,
        tool_call_id TEXT NOT NULL,
        sequence INTEGER NOT NULL,
        PRIMARY KEY (session_id, tool_call_id)
      )`
    yield* EventTables.backfillAwaiting(sql)
  }),
  "3_blobs": SqlBlobStore.migratePostgres,
  "4_session_titles": Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    // Each session's title (see `Session.SessionSummary.title`), kept by the appends in the same
    // transaction as their events; filled once from the events here.
    yield* sql`ALTER TABLE sessions ADD COLUMN IF NOT EXISTS title TEXT`
    yield* EventTables.backfillTitles(sql)
  }),
  "5_session_usage": Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    // Each session's usage and cost totals (what `sessions` lists), kept by the appends in the same
    // transaction as their `turn.completed`; filled once from the events here.
    yield* SessionUsage.createTable(sql, "pg")
    yield* EventTables.backfillUsage(sql)
  })
})

/**
 * Migrates the connection's schema to the current one. Safe when several processes start on an
 * empty database at once: the migrator locks its table while it migrates, and the table itself is
 * created first here (the migrator's own check-then-create can race).
 */
export const migrate = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const createTable = sql`
    CREATE TABLE IF NOT EXISTS ${sql(migrationsTable)} (
      migration_id integer PRIMARY KEY,
      created_at timestamp with time zone NOT NULL DEFAULT now(),
      name text NOT NULL
    )`
  // Two processes creating it at once: one of them fails on the catalog's unique key; then it exists.
  yield* Effect.retry(createTable, { times: 1 })
  return yield* Migrator.make({})({ loader: migrations, table: migrationsTable })
})


/** The reason of a SQLSTATE or system error code. */
const reasonOfCode = (code: string): EventStoreFailureReason => {
  if (code === "23505") return "sequence_conflict"
  // 53100 disk_full; 53200 out_of_memory and 53300 too_many_connections are the server's to recover from.
  if (code === "53100") return "disk_full"
  // 42501 insufficient_privilege, 28xxx invalid authorization, 25006 read_only_sql_transaction.
  if (code === "42501" || code.startsWith("28") || code === "25006") return "permission_denied"
  if (code === "XX001" || code === "XX002") return "corrupt"
  return "unavailable"
}

/** What a code means for the person reading the error. */
const explain = (code: string | undefined, message: string): string => {
  const plain = code === "53100"
    ? "the database server's disk is full"
    : code === "ECONNREFUSED" || code === "ENOTFOUND" || code === "EAI_AGAIN" || code === "ETIMEDOUT"
    ? "the database server cannot be reached"
    : code !== undefined && code.startsWith("28")
    ? "the database refused the user or password"
    : code === "42501"
    ? "the database user may not do this"
    : code === "3D000"
    ? "the database does not exist"
    : undefined
  return `${plain === undefined ? message : `${plain}: ${message}`}${code === undefined ? "" : ` (${code})`}`
}

/** The message of a database error and of its cause (the driver's own words are in the cause). */
const messageOf = (error: unknown): string => {
  const own = error instanceof Error ? error.message : String(error)
  const cause = (error as { cause?: unknown } | undefined)?.cause
  return cause instanceof Error && cause.message !== "" && !own.includes(cause.message) ? `${own}: ${cause.message}` : own
}

/** What a database error means, with its code and the driver's words (never the URL or a password): what a runner that could not connect prints. */
export const explainError = (error: unknown): string => explain(codeOf(error), messageOf(error))

/**
 * The server and database a URL names (`host:port/database`), without user or password: what
 * failures print. A password holding an unescaped `/`, `?`, `#` or `@` ends the URL's host early,
 * and the rest of it reads as the host, the port or the path: a URL whose one `@` is not after its
 * user and password, with more than one `@`, or whose path holds `@` or `:`, is called unreadable,
 * printing none of it.
 */
export const describeUrl = (url: Redacted.Redacted): string => {
  const unreadable = "postgresql (an unreadable URL)"
  try {
    const text = Redacted.value(url)
    const parsed = new URL(text)
    const ats = text.split("@").length - 1
    const userInfo = parsed.username !== "" || parsed.password !== ""
    if (ats > 1 || (ats === 1 && !userInfo) || /[@:]/.test(parsed.pathname)) return unreadable
    return `postgresql://${parsed.hostname}${parsed.port === "" ? "" : `:${parsed.port}`}${parsed.pathname}`
  } catch {
    return unreadable
  }
}

const failure = (operation: EventStoreFailure["operation"], where: string, sessionId?: string) => (error: SqlError) =>
  new EventStoreFailure({
    reason: reasonOfCode(codeOf(error) ?? ""),
    operation,
    path: where,
    detail: explain(codeOf(error), messageOf(error)),
    cause: error,
    ...(sessionId === undefined ? {} : { sessionId })
  })

/** Any error met while connecting or migrating, as a store failure naming the server. */
const openFailure = (where: string, error: unknown, what: string, operation: "append" | "read" = "append") => {
  const code = codeOf(error)
  return new EventStoreFailure({
    reason: code === undefined ? "unavailable" : reasonOfCode(code),
    operation,
    path: where,
    detail: `${what}: ${explain(code, messageOf(error))}`,
    cause: error
  })
}


/**
 * The listing's join run so that its rows stream: planned as it stands, PostgreSQL hashes one
 * table, joins and sorts every row before it sends the first (10,000 sessions: tens of ms in which
 * the client only waits, then the client decodes while the server is idle). With hash and merge
 * joins and full sorts off for this one statement (`SET LOCAL`, in a transaction of its own) it is
 * planned as an index scan of `sessions_by_activity` and a nested loop on `session_usage`'s key (the
 * rare rows last active at the same instant are put in order by the client: `EventTables`): the first row leaves at once, and
 * the server works while the client decodes. Planner settings choose a plan, never the rows or
 * their order. A failing join (a database an older version left, read-only) rolls the transaction
 * back, and the listing folds what is missing as before. (Listed inside a caller's transaction, the
 * transaction here is a savepoint, and the settings last until the caller's ends; nothing lists so.)
 */
const streamingListing = (sql: SqlClient.SqlClient) => <A>(query: Effect.Effect<A, SqlError>): Effect.Effect<A, SqlError> =>
  sql.withTransaction(
    Effect.zipRight(sql.unsafe("SET LOCAL enable_hashjoin = off; SET LOCAL enable_mergejoin = off; SET LOCAL enable_sort = off"), query)
  )

/** The planner settings of `streamingListing`, as a connection's startup options (`-c name=value`). */
const streamingSettings = "-c enable_hashjoin=off -c enable_mergejoin=off -c enable_sort=off"

/**
 * The read-only store's connection settings: its URL, and startup options holding the listing's
 * planner settings, so that each connection of its own pool starts with them and its listing's join
 * streams as one statement — no `BEGIN`, `SET LOCAL`s or `COMMIT` around it, three round trips fewer
 * (perf65sql). They choose plans only, never rows or their order; the read-only store's other
 * statements (a session's page by its key, the schema's version, the waiting calls) are planned as
 * before. Options the user gave are kept, ours after theirs: the URL's `options` (a `search_path`,
 * often), which the driver would otherwise take in place of ours, or else `PGOPTIONS`. A URL the
 * WHATWG parser cannot read is used as it is, with ours as the options — its own `options`, if any,
 * win, and its listing is then planned as the server chooses.
 */
export const streamingConnection = (url: string, env: NodeJS.ProcessEnv = process.env): { readonly connectionString: string; readonly options?: string } => {
  let parsed: URL | undefined
  try {
    parsed = new URL(url)
  } catch {
    parsed = undefined
  }
  const given = parsed?.searchParams.get("options") ?? null
  if (parsed !== undefined && given !== null) {
    parsed.searchParams.set("options", given.trim() === "" ? streamingSettings : `${given} ${streamingSettings}`)
    return { connectionString: parsed.toString() }
  }
  const fromEnv = env.PGOPTIONS
  return { connectionString: url, options: fromEnv === undefined || fromEnv.trim() === "" ? streamingSettings : `${fromEnv} ${streamingSettings}` }
}

/**
 * Builds the store on a migrated PostgreSQL client (see `migrate`). `where` names the database in
 * failures (default: "postgresql"). `streamingConnections`: the client's connections start with the
 * listing's planner settings (`streamingConnection`), so the listing runs without a transaction of its own.
 */
export const make = (
  options: { readonly writerLease?: Lease.Settings; readonly where?: string; readonly streamingConnections?: boolean } = {}
): Effect.Effect<EventStore.Service, never, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const where = options.where ?? "postgresql"
    const listingPlan = options.streamingConnections === true ? undefined : streamingListing(sql)

    const lastSequence = (sessionId: string) =>
      Effect.map(
        sql<{ last: number }>`SELECT COALESCE(MAX(sequence), 0) AS last FROM events WHERE session_id = ${sessionId}`,
        ([row]) => row?.last ?? 0
      )

    const appendEvent = (event: AgentEvent.AgentEvent): Effect.Effect<void, EventStoreFailure> =>
      Effect.gen(function*() {
        const created = event.type === "session.created" ? event.payload : undefined
        // One statement: the event only at the session's next sequence, and the summary with it.
        const inserted = yield* sql<{ sequence: number }>`
          WITH inserted AS (
            INSERT INTO events (session_id, sequence, type, timestamp, format_version, body)
            SELECT ${event.sessionId}::text, ${event.sequence}::integer, ${event.type}::text, ${event.timestamp}::text,
              ${LogFormat.currentVersion}::integer, ${AgentEvent.encodeJson(event)}::text
            WHERE (SELECT COALESCE(MAX(sequence), 0) FROM events WHERE session_id = ${event.sessionId}::text) = ${event.sequence - 1}::integer
            RETURNING session_id, sequence, type, timestamp
          ), summarized AS (
            INSERT INTO sessions (session_id, cwd, client, created_at, last_activity_at, turn_count, last_sequence)
            SELECT session_id, ${created?.cwd ?? null}::text, ${created?.client ?? null}::text, timestamp, timestamp,
              CASE WHEN type = 'turn.started' THEN 1 ELSE 0 END, sequence
            FROM inserted
            ON CONFLICT (session_id) DO UPDATE SET
              last_activity_at = EXCLUDED.last_activity_at,
              last_sequence = EXCLUDED.last_sequence,
              turn_count = sessions.turn_count + EXCLUDED.turn_count
          )
          SELECT sequence FROM inserted`
        if (inserted.length === 1) return
        return yield* sequenceConflict(event, yield* lastSequence(event.sessionId), { path: where })
      }).pipe(
        Effect.catchTag("SqlError", (error) =>
          codeOf(error) === "23505"
            // Another writer took this sequence between the check and the insert: the key refused it.
            ? Effect.fail(sequenceConflict(event, event.sequence, { path: where }))
            : Effect.fail(failure("append", where, event.sessionId)(error)))
      )

    const { append, appendAll, awaitingListing, list, listing, read } = EventTables.make({
      sql,
      where,
      failure,
      append: appendEvent,
      ...(listingPlan === undefined ? {} : { listingPlan }),
      // A statement another fiber's cancel stopped changed nothing: run again (see `LateCancel`).
      retried: LateCancel.retried
    })

    const acquireWriter = yield* Lease.make({
      ...options.writerLease,
      path: where,
      failure: (sessionId) => failure("lock", where, sessionId),
      retried: LateCancel.retried,
      // The database's clock: runners on several machines judge each other's leases on one time.
      databaseNow: sql<{ now: string }>`SELECT (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::bigint AS now`.pipe(
        Effect.map(([row]) => Number(row!.now))
      )
    })

    return EventStore.of({ append, appendAll, read, list, listing, awaitingListing, acquireWriter })
  })

/**
 * `service` (another user of the store's pool: a cluster runner's storages) with each of its
 * operations run again when PostgreSQL cancels a statement of it that its fiber did not interrupt,
 * as the store's own are (see `LateCancel`).
 */
export const retriedOnLateCancel: <S extends object>(service: S) => S = LateCancel.everyOperation

/**
 * The PostgreSQL store on the SQL client of its context (a pool the caller shares, e.g. with a
 * cluster runner on the same database): migrates the schema first. `where` names the database in
 * failures (see `describeUrl`).
 */
export const layerFromClient = (
  options: { readonly writerLease?: Lease.Settings; readonly where?: string } = {}
): Layer.Layer<EventStore | BlobStore, EventStoreFailure, SqlClient.SqlClient> => {
  const where = options.where ?? "postgresql"
  const migrated = Layer.effectDiscard(
    // A failing migration is a defect of the migrator: made typed here too.
    // A late cancel (see `LateCancel`) stops a migration's statement, which rolls its transaction back: run again.
    LateCancel.retried(migrate).pipe(
      Effect.catchAllCause((cause) => Effect.fail(openFailure(where, Cause.squash(cause), "migrating the schema failed"))),
      // A newer release's migrations (which the migrator leaves alone) are not written by this one: see `SchemaVersion`.
      Effect.zipRight(LateCancel.retried(SchemaVersion.refuseNewer({ loader: migrations, table: migrationsTable, where })).pipe(
        Effect.catchAll((error) => Effect.fail(error._tag === "EventStoreFailure" ? error : openFailure(where, error, "reading the schema's version failed")))
      ))
    )
  )
  return Layer.merge(
    Layer.effect(EventStore, make({ where, ...(options.writerLease === undefined ? {} : { writerLease: options.writerLease }) })),
    // The blob area is a table of the same schema (see `blobs/SqlBlobStore`).
    Layer.effect(BlobStore, SqlBlobStore.make({ where, retried: LateCancel.retried }))
  ).pipe(Layer.provide(migrated))
}

/**
 * The PostgreSQL store as a layer: connects (failing at once, typed, when the server cannot be
 * reached or refuses the user), migrates the schema, and closes its connections with the layer.
 */
export const layer = (options: Options): Layer.Layer<EventStore | BlobStore, EventStoreFailure> => {
  const where = describeUrl(options.url)
  const client = (options.readOnly === true
    ? PgClient.layerFromPool({ acquire: unconfirmedPool(options), applicationName: "effect-agent" })
    : PgClient.layer({
      url: options.url,
      applicationName: "effect-agent",
      ...(options.maxConnections === undefined ? {} : { maxConnections: options.maxConnections })
    })).pipe(
    // Opened to read (`sessions`, `pending`, `replay`): a failed connect is a failed read, not an append's.
    Layer.catchAllCause((cause) =>
      Layer.fail(openFailure(where, Cause.squash(cause), "connecting to the database failed", options.readOnly === true ? "read" : "append"))
    )
  )
  const stores = options.readOnly === true
    ? readOnlyStores(where)
    : layerFromClient({ where, ...(options.writerLease === undefined ? {} : { writerLease: options.writerLease }) })
  return stores.pipe(Layer.provide(client))
}

/** How long a connect may take before it fails, as `PgClient.layer`'s own check waits. */
const connectTimeoutMillis = 5_000

/**
 * The read-only store's pool, as `PgClient.layer` makes it but without its `SELECT 1`: the first
 * statement (the schema's version) connects, and a server that cannot be reached or refuses the
 * user fails it as it would have failed the check — one round trip fewer before a listing (perf64sql).
 */
const unconfirmedPool = (options: Options) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const pool = new Pg.Pool({
        // With the listing's planner settings from each connection's start (see `streamingConnection`).
        ...streamingConnection(Redacted.value(options.url)),
        connectionTimeoutMillis: connectTimeoutMillis,
        application_name: "effect-agent",
        ...(options.maxConnections === undefined ? {} : { max: options.maxConnections })
      })
      // An idle connection's error (the server restarted) is the next statement's to meet, as `PgClient.layer` leaves it.
      pool.on("error", () => undefined)
      return pool
    }),
    (pool) => Effect.promise(() => pool.end()).pipe(Effect.interruptible, Effect.timeoutOption(1000))
  )

/** What a store opened read-only refuses, before any statement. */
const readOnlyRefusal = (operation: "append" | "lock", where: string, sessionId: string) =>
  new EventStoreFailure({ reason: "permission_denied", operation, sessionId, path: where, detail: "the store was opened read-only" })

/** Whether our `events` table is there (`to_regclass` answers null without it, and needs no privilege). */
const eventsTablePresent = (sql: SqlClient.SqlClient, where: string) =>
  sql<{ readonly present: boolean }>`SELECT to_regclass('events') IS NOT NULL AS present`.pipe(
    Effect.map(([found]) => found?.present === true),
    Effect.catchAllCause((cause) => Effect.fail(openFailure(where, Cause.squash(cause), "reading the schema failed", "read")))
  )

/**
 * The stores of `Options.readOnly`: the schema as found, never migrated. Our `events` table missing
 * (`to_regclass` answers null, and needs no privilege): nothing was ever stored here, an empty store.
 * A schema a newer effect-agent migrated is refused, typed, naming the upgrade (see `SchemaVersion`):
 * read as this release knows it, its tables could be misread. A role that may not read the
 * migrations' table (granted SELECT on the store's tables alone) reads the schema as found.
 */
const readOnlyStores = (where: string): Layer.Layer<EventStore | BlobStore, EventStoreFailure, SqlClient.SqlClient> =>
  Layer.unwrapEffect(
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const readFailure = (what: string) => (cause: Cause.Cause<unknown>) => Effect.fail(openFailure(where, Cause.squash(cause), what, "read"))
      // One statement, the first (perf64sql): our table's presence and the schema's version at once.
      // Without the migrations' table, or the right to read it, it fails: then one question at a time.
      const found = yield* LateCancel.retried(
        sql<{ readonly present: boolean; readonly latest: number | string | null }>`
          SELECT to_regclass('events') IS NOT NULL AS present, (SELECT MAX(migration_id) FROM ${sql(migrationsTable)}) AS latest`
      ).pipe(
        Effect.map(([row]) => row),
        Effect.catchIf((error) => codeOf(error) === "42P01" || codeOf(error) === "42501", () => Effect.succeed(undefined)),
        Effect.catchAllCause(readFailure("reading the schema failed"))
      )
      const present = found === undefined ? yield* eventsTablePresent(sql, where) : found.present
      if (!present) return MemoryEventStore.layer
      yield* (found === undefined
        ? LateCancel.retried(SchemaVersion.refuseNewer({ loader: migrations, table: migrationsTable, where, reading: true }))
        : SchemaVersion.refusePast(Number(found.latest ?? 0), { loader: migrations, where, reading: true })).pipe(
          Effect.catchAll((error) =>
            error._tag === "EventStoreFailure"
              ? Effect.fail(error)
              // insufficient_privilege: the version cannot be read, and the schema is read as found.
              : codeOf(error) === "42501"
              ? Effect.void
              : Effect.fail(openFailure(where, error, "reading the schema's version failed", "read"))
          )
        )
      const store = yield* make({ where, streamingConnections: true })
      return Layer.merge(
        Layer.succeed(
          EventStore,
          EventStore.of({
            ...store,
            append: (event) => Effect.fail(readOnlyRefusal("append", where, event.sessionId)),
            appendAll: (events) => events.length === 0 ? Effect.void : Effect.fail(readOnlyRefusal("append", where, events[0]!.sessionId)),
            acquireWriter: (sessionId) => Effect.fail(readOnlyRefusal("lock", where, sessionId))
          })
        ),
        Layer.effect(BlobStore, SqlBlobStore.make({ where, retried: LateCancel.retried }))
      )
    })
  )
