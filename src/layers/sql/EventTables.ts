/**
 * What the SQL stores share on their common tables (`events` keyed `(session_id, sequence)` with the
 * log's JSON text as `body`, and the `sessions` summary): a batch append in one transaction, the
 * paged read that migrates and checks each row, and the listing. Each store brings its own
 * single-event `append` (the dialects differ there) and its own translation of driver errors.
 *
 * @since 0.1.0
 * @internal
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import * as Cause from "effect/Cause"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as AgentEvent from "../../domain/AgentEvent.js"
import { EventStoreFailure } from "../../domain/Errors.js"
import * as LogFormat from "../../domain/LogFormat.js"
import * as Session from "../../domain/Session.js"
import type { SessionSummary } from "../../domain/Session.js"
import * as SessionTitle from "../../domain/SessionTitle.js"
import { batchConflict, type EventStore } from "../../services/EventStore.js"
import * as CallerTransaction from "./CallerTransaction.js"
import * as SessionUsage from "./SessionUsage.js"

/** What a store gives the shared operations. */
export interface Options {
  readonly sql: SqlClient.SqlClient
  /** How failures name the store: a file, or a server without its credentials. */
  readonly where: string
  /** Translates a driver error of an operation into the store's failure. */
  readonly failure: (operation: EventStoreFailure["operation"], where: string, sessionId?: string) => (error: SqlError) => EventStoreFailure
  /** The store's append of one event. */
  readonly append: (event: AgentEvent.AgentEvent) => Effect.Effect<void, EventStoreFailure>
  /**
   * How the store runs the listing's join (default: as it is). PostgreSQL runs it under planner
   * settings that make it stream (see `PostgresEventStore`); the rows and their order are the same.
   */
  readonly listingPlan?: <A>(query: Effect.Effect<A, SqlError>) => Effect.Effect<A, SqlError>
  /**
   * How an operation runs again when it failed without changing anything (default: it does not).
   * PostgreSQL runs again a statement cancelled that its fiber did not interrupt (see `LateCancel`).
   */
  readonly retried?: <A, E, R>(operation: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
}

const once = <A, E, R>(operation: Effect.Effect<A, E, R>) => operation

/** Rows read per query when streaming a session. */
const pageSize = 500

interface EventRow {
  readonly sequence: number
  readonly format_version: number
  readonly body: string
}

/**
 * A `sessions` row as the listing reads it, an array (`.values`): 10,000 rows as arrays cost the
 * driver about half what objects with named fields do.
 */
type SessionValues = readonly [
  session_id: string,
  cwd: string,
  client: SessionSummary["client"],
  created_at: string,
  last_activity_at: string,
  turn_count: number,
  last_sequence: number,
  title: string | null
]

/** A row of the listing's join of `sessions` and `session_usage`: the session's values, then one usage row's (all null for a session without usage). */
type JoinedValues = readonly [
  ...SessionValues,
  unknown_model: string | null,
  input_tokens: number | string | null,
  output_tokens: number | string | null,
  cache_read_tokens: number | string | null,
  cache_write_tokens: number | string | null,
  cost: number | string | null,
  first_sequence: number | string | null
]

/**
 * Text in the order SQL compares it here (SQLite's BINARY, PostgreSQL's `COLLATE "C"`: UTF-8's bytes,
 * which is code point order). JavaScript's `<` compares UTF-16 units, which differs only where a
 * surrogate (U+D800–DFFF, half of a character past U+FFFF) meets a unit of U+E000–FFFF: each unit is
 * mapped so surrogates come after those.
 */
const byteOrder = (a: string, b: string): number => {
  const length = Math.min(a.length, b.length)
  for (let i = 0; i < length; i++) {
    const x = a.charCodeAt(i)
    const y = b.charCodeAt(i)
    if (x !== y) {
      const key = (c: number) => c < 0xd800 ? c : c >= 0xe000 ? c - 0x800 : c + 0x2000
      return key(x) - key(y)
    }
  }
  return a.length - b.length
}

/** The listing's order within one instant of last activity: by id, then a session's usage rows by their first turn. */
const withinInstant = (a: JoinedValues, b: JoinedValues): number =>
  a[0] === b[0] ? Number(a[14] ?? 0) - Number(b[14] ?? 0) : byteOrder(a[0], b[0])

/**
 * The join's rows in the listing's order. The statement orders them by last activity alone: each
 * instant's rows are then next to each other, whatever the plan, and are put in order here — by id,
 * then a session's usage rows by their first turn. In SQL (`ORDER BY …, s.session_id,
 * u.first_sequence`) that tie-break ran the database's sorter on every row, though an instant holds one
 * session's one row nearly always (perf65sql): here a run of one row costs one comparison, `===`.
 */
const inListingOrder = (rows: Array<JoinedValues>): ReadonlyArray<JoinedValues> => {
  for (let start = 0; start < rows.length;) {
    const instant = rows[start]![4]
    let end = start + 1
    while (end < rows.length && rows[end]![4] === instant) end++
    if (end - start > 1) {
      const run = rows.slice(start, end).sort(withinInstant)
      for (let i = 0; i < run.length; i++) rows[start + i] = run[i]!
    }
    start = end
  }
  return rows
}

/**
 * The statement that keeps `awaiting_approvals` (the calls of a session's open turn waiting for the
 * user: what `pending` lists) in step with an event, or `undefined` when the event changes nothing
 * there. The change is `Session.awaitingChange`, the one every store applies.
 */
const awaitingStatement = (sql: SqlClient.SqlClient, event: AgentEvent.AgentEvent) => {
  const change = Session.awaitingChange(event)
  if (change === undefined) return undefined
  switch (change._tag) {
    case "Add":
      return sql`
        INSERT INTO awaiting_approvals (session_id, tool_call_id, sequence)
        VALUES (${event.sessionId}, ${change.toolCallId}, ${event.sequence})
        ON CONFLICT (session_id, tool_call_id) DO NOTHING`
    case "Remove":
      return sql`DELETE FROM awaiting_approvals WHERE session_id = ${event.sessionId} AND tool_call_id = ${change.toolCallId}`
    case "Clear":
      return sql`DELETE FROM awaiting_approvals WHERE session_id = ${event.sessionId}`
  }
}

/**
 * The statement that keeps a session's `title` column in step with an event (`Session.titleChange`,
 * the change every store applies), or `undefined` when the event changes nothing there: a message
 * titles a session with no title yet, the user's title replaces any.
 */
const titleStatement = (sql: SqlClient.SqlClient, event: AgentEvent.AgentEvent) => {
  const change = Session.titleChange(event)
  if (change === undefined) return undefined
  return change._tag === "Set"
    ? sql`UPDATE sessions SET title = ${change.title} WHERE session_id = ${event.sessionId}`
    : sql`UPDATE sessions SET title = ${change.title} WHERE session_id = ${event.sessionId} AND title IS NULL`
}

/** The statements that keep the listing's side tables and columns in step with an event, in the event's transaction. */
const summaryStatements = (sql: SqlClient.SqlClient, event: AgentEvent.AgentEvent) =>
  [awaitingStatement(sql, event), titleStatement(sql, event), SessionUsage.statement(sql, event)].filter((statement) => statement !== undefined)

/**
 * Each session's title, folded from the stored events themselves: what fills `sessions.title` when
 * the migration that adds it runs on a database that has sessions, and what a read-only listing of a
 * database not yet migrated answers with. Only the events that change it are read.
 */
export const titlesFromEvents = (sql: SqlClient.SqlClient): Effect.Effect<ReadonlyMap<string, string>, SqlError> =>
  Effect.map(
    sql<EventRow & { readonly session_id: string }>`
      SELECT session_id, sequence, format_version, body FROM events
      WHERE type IN ('user.message', 'session.titled') OR format_version < ${LogFormat.currentVersion}
      ORDER BY session_id, sequence`,
    (rows) => {
      const titles = new Map<string, string>()
      for (const row of rows) {
        const event = decodeRow(row)
        if (Either.isLeft(event)) continue
        const title = Session.applyTitle(titles.get(row.session_id), Session.titleChange(event.right))
        if (title !== undefined) titles.set(row.session_id, title)
      }
      return titles
    }
  )

/** Fills `sessions.title` from the stored events: run once, by the migration that adds the column. */
export const backfillTitles = (sql: SqlClient.SqlClient): Effect.Effect<void, SqlError> =>
  Effect.flatMap(titlesFromEvents(sql), (titles) =>
    Effect.forEach(titles, ([sessionId, title]) => sql`UPDATE sessions SET title = ${title} WHERE session_id = ${sessionId}`, { discard: true }))

interface AwaitingRow {
  readonly session_id: string
  readonly tool_call_id: string
}

/**
 * The calls waiting for approval, folded from the stored events themselves: what fills
 * `awaiting_approvals` when the migration that adds it runs on a database that has sessions, and
 * what a read-only listing of a database not yet migrated answers with. Only the events that change
 * it are read. A row that cannot be decoded changes nothing here (reading that session reports it).
 */
export const awaitingFromEvents = (sql: SqlClient.SqlClient): Effect.Effect<ReadonlyArray<AwaitingRow & { readonly sequence: number }>, SqlError> =>
  Effect.map(
    sql<EventRow & { readonly session_id: string }>`
      SELECT session_id, sequence, format_version, body FROM events
      WHERE type IN ('permission.resolved', 'tool.failed', 'turn.completed') OR format_version < ${LogFormat.currentVersion}
      ORDER BY session_id, sequence`,
    (rows) => {
      const waiting = new Map<string, Map<string, number>>()
      for (const row of rows) {
        const event = decodeRow(row)
        if (Either.isLeft(event)) continue
        const change = Session.awaitingChange(event.right)
        if (change === undefined) continue
        const calls = waiting.get(row.session_id) ?? new Map<string, number>()
        waiting.set(row.session_id, calls)
        if (change._tag === "Clear") calls.clear()
        else if (change._tag === "Remove") calls.delete(change.toolCallId)
        else if (!calls.has(change.toolCallId)) calls.set(change.toolCallId, row.sequence)
      }
      return Array.from(waiting, ([session_id, calls]) => Array.from(calls, ([tool_call_id, sequence]) => ({ session_id, tool_call_id, sequence }))).flat()
    }
  )

/** Fills `awaiting_approvals` from the stored events: run once, by the migration that adds the table. */
export const backfillAwaiting = (sql: SqlClient.SqlClient): Effect.Effect<void, SqlError> =>
  Effect.flatMap(awaitingFromEvents(sql), (rows) =>
    Effect.forEach(rows, (row) =>
      sql`INSERT INTO awaiting_approvals (session_id, tool_call_id, sequence) VALUES (${row.session_id}, ${row.tool_call_id}, ${row.sequence})`, { discard: true }))

/** Fills `session_usage` from the stored events: run once, by the migration that adds the table. */
export const backfillUsage = (sql: SqlClient.SqlClient): Effect.Effect<void, SqlError> => SessionUsage.backfill(sql, decodeRow)

/** A stored row as an event: migrated from its format version, then decoded. */
const decodeRow = (row: EventRow) =>
  Either.flatMap(
    Either.try({ try: () => JSON.parse(row.body) as unknown, catch: () => "not JSON" }),
    (raw) => Either.flatMap(LogFormat.migrate(row.format_version, raw), (migrated) => Either.mapLeft(AgentEvent.decodeUnknown(migrated), () => "not a valid event"))
  )

/**
 * `sql.withTransaction`, with a failed COMMIT as the `SqlError` it is: @effect/sql makes it a defect
 * (`orDie`), yet a COMMIT is where a full disk meets a SQLite append in WAL mode (its pages are
 * written then), and an append must fail typed (`EventStoreFailure`), never as a crash of the turn.
 *
 * A failed ROLLBACK does not replace the failure that asked for it. @effect/sql rolls back when the
 * transaction's effect fails, and makes a failed ROLLBACK a defect in place of that failure; SQLite
 * rolls a transaction back itself when a statement inside it meets a full disk or an I/O error (an
 * INSERT whose pages spill to the WAL, a file at its size limit), so that ROLLBACK fails "no
 * transaction is active" and the append failed `unavailable` with the ROLLBACK's `SQLITE_ERROR`
 * instead of the disk's own error. The effect's own failure is kept and answered.
 */
const transaction = <A, E, R>(sql: SqlClient.SqlClient, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | SqlError, R> =>
  Effect.suspend((): Effect.Effect<A, E | SqlError, R> => {
    let failed: Cause.Cause<E> | undefined
    return sql.withTransaction(Effect.tapErrorCause(effect, (cause) => Effect.sync(() => void (failed = cause)))).pipe(
      Effect.catchSomeDefect((defect): Option.Option<Effect.Effect<never, E | SqlError>> =>
        defect instanceof SqlError ? Option.some(failed === undefined ? Effect.fail(defect) : Effect.failCause(failed)) : Option.none()
      )
    )
  })

/** The shared operations of an SQL store. */
export const make = ({ append: appendEvent, failure, listingPlan, retried = once, sql, where }: Options): Pick<EventStore.Service, "append" | "appendAll" | "read" | "list" | "listing"> & Required<Pick<EventStore.Service, "awaitingListing">> => {
  /**
   * An append inside a caller's transaction is refused: it would be rolled back with the caller's
   * work while the engine holds it as stored. The lease refuses a writer taken there; this is for a
   * writer the engine took before (its session cached), whose turn then runs inside one.
   */
  const outsideTransactions = (sessionId: string) =>
    CallerTransaction.refused({ operation: "append", sessionId, why: "its events are appended outside one, never rolled back with yours", path: where })

  const append = (event: AgentEvent.AgentEvent): Effect.Effect<void, EventStoreFailure> => {
    const statements = summaryStatements(sql, event)
    if (statements.length === 0) return Effect.zipRight(outsideTransactions(event.sessionId), retried(appendEvent(event)))
    // Run again whole: a failure rolled the transaction back.
    return Effect.zipRight(outsideTransactions(event.sessionId), retried(transaction(sql, Effect.zipRight(appendEvent(event), Effect.all(statements, { discard: true }))))).pipe(
      Effect.catchTag("SqlError", (error) => Effect.fail(failure("append", where, event.sessionId)(error)))
    )
  }

  // One transaction: a failure anywhere rolls the whole batch back.
  const appendAll = (events: ReadonlyArray<AgentEvent.AgentEvent>): Effect.Effect<void, EventStoreFailure> => {
    if (events.length === 0) return Effect.void
    const conflict = batchConflict(events)
    if (conflict !== undefined) return Effect.fail(conflict)
    const step = (event: AgentEvent.AgentEvent) => {
      const statements = summaryStatements(sql, event)
      return statements.length === 0 ? appendEvent(event) : Effect.zipRight(appendEvent(event), Effect.all(statements, { discard: true }))
    }
    return Effect.zipRight(outsideTransactions(events[0]!.sessionId), retried(transaction(sql, Effect.forEach(events, step, { discard: true })))).pipe(
      Effect.catchTag("SqlError", (error) => Effect.fail(failure("append", where, events[0]!.sessionId)(error)))
    )
  }

  const read: EventStore.Service["read"] = (sessionId, readOptions) => {
    // A page, not the stream, runs again: the events already given are not given twice.
    const page = (from: number) =>
      retried(sql<EventRow>`
        SELECT sequence, format_version, body FROM events
        WHERE session_id = ${sessionId} AND sequence >= ${from}
        ORDER BY sequence LIMIT ${pageSize}`).pipe(Effect.mapError(failure("read", where, sessionId)))
    const decode = (row: EventRow) => {
      const event = decodeRow(row)
      return Either.isRight(event) && event.right.sequence === row.sequence && event.right.sessionId === sessionId
        ? Effect.succeed(event.right)
        : Effect.fail(new EventStoreFailure({ reason: "corrupt", operation: "read", sessionId, sequence: row.sequence, path: where, detail: "a stored event is not valid" }))
    }
    // The rows must run on one by one, as a JSONL log's lines must: a row lost (a hand edit, a
    // partial restore) was read past in silence, and the session's next turn then refused it as an
    // "Impossible event", with `repair` finding nothing to repair.
    const gap = (expected: number, found: number) =>
      new EventStoreFailure({
        reason: "corrupt",
        operation: "read",
        sessionId,
        sequence: found,
        path: where,
        detail: `gap in sequence: expected ${expected}, found ${found}; a stored event is missing (a row deleted, a partial restore): ` +
          `restore it from a backup, or \`effect-agent fork ${sessionId} --at <sequence>\` to continue from the end of a turn before ${expected}`
      })
    return Stream.suspend(() => {
      const from = readOptions?.fromSequence ?? 1
      let expected = Math.max(1, from)
      return Stream.paginateChunkEffect(from, (from) =>
        Effect.map(page(from), (rows) => [Chunk.unsafeFromArray(rows), rows.length === pageSize ? Option.some(rows.at(-1)!.sequence + 1) : Option.none<number>()] as const)).pipe(
          Stream.mapEffect((row) => row.sequence === expected++ ? decode(row) : Effect.fail(gap(expected - 1, row.sequence)))
        )
    })
  }

  // A database opened read-only before the migration that adds the table (an older version wrote
  // it): the calls are folded from the events instead, as the migration would.
  const awaitingRows = sql<AwaitingRow>`SELECT session_id, tool_call_id FROM awaiting_approvals ORDER BY session_id, sequence`.pipe(
    Effect.orElse(() => awaitingFromEvents(sql))
  )

  // Likewise a database before the migration that adds `sessions.title`: the titles are folded from the events.
  const sessionRows: Effect.Effect<ReadonlyArray<SessionValues>, SqlError> = sql`
    SELECT session_id, cwd, client, created_at, last_activity_at, turn_count, last_sequence, title FROM sessions
    WHERE cwd IS NOT NULL
    ORDER BY last_activity_at DESC, session_id`.values.pipe(
    Effect.map((rows) => rows as ReadonlyArray<SessionValues>),
    Effect.orElse(() =>
      Effect.zipWith(
        sql`
          SELECT session_id, cwd, client, created_at, last_activity_at, turn_count, last_sequence FROM sessions
          WHERE cwd IS NOT NULL
          ORDER BY last_activity_at DESC, session_id`.values,
        titlesFromEvents(sql),
        (rows, titles) => rows.map((row): SessionValues => [...row, titles.get(row[0] as string) ?? null] as unknown as SessionValues)
      )
    )
  )

  /** The calls waiting for approval, by session. */
  const waitingBySession = (awaiting: ReadonlyArray<AwaitingRow>) => {
    const waiting = new Map<string, Array<string>>()
    for (const a of awaiting) {
      const calls = waiting.get(a.session_id)
      if (calls === undefined) waiting.set(a.session_id, [a.tool_call_id])
      else calls.push(a.tool_call_id)
    }
    return waiting
  }

  /**
   * A session's summary from its row, its waiting calls and its usage totals: the fields in the
   * order the other stores give them, set one by one (a listing makes 10,000 of these; the row is
   * read by index, not destructured, and no object is spread).
   */
  const summary = (
    row: SessionValues,
    calls: ReadonlyArray<string> | undefined,
    totals: ReturnType<typeof SessionUsage.addRow> | undefined
  ): SessionSummary => {
    const built: { -readonly [K in keyof SessionSummary]: SessionSummary[K] } = {
      sessionId: row[0],
      cwd: row[1],
      client: row[2],
      createdAt: row[3],
      lastActivityAt: row[4],
      turnCount: row[5],
      lastSequence: row[6]
    }
    if (calls !== undefined) built.awaitingApproval = calls
    const title = row[7]
    // A database can come with a repository: its title is read as a log's `session.titled` is.
    if (title !== undefined && title !== null) built.title = SessionTitle.stored(title)
    if (totals !== undefined) {
      built.usage = totals.usage
      built.cost = totals.cost
      if (totals.costUnknown !== undefined) built.costUnknown = totals.costUnknown
    }
    return built
  }

  /** The summaries of the sessions' rows, with their waiting calls and usage totals. */
  const summaries = (rows: ReadonlyArray<SessionValues>, awaiting: ReadonlyArray<AwaitingRow>, usage: ReadonlyArray<SessionUsage.UsageValues>) => {
    const totals = SessionUsage.totalsBySession(usage)
    const waiting = waitingBySession(awaiting)
    return rows.map((row) => summary(row, waiting.get(row[0]), totals.get(row[0])))
  }

  // The listing's sessions with their usage rows, in one query: a session's row once per usage
  // row (one, mostly: the priced turns; one more per model without a price), in the listing's
  // order, then its rows' first turns. 10,000 sessions are 10,000 rows to decode instead of 20,000
  // in two queries (~20 % less of the driver's time) and no sort of the usage rows by session. A
  // database without `session_usage` or `sessions.title` (an older version's, opened read-only)
  // is listed by the queries that fold what is missing from the events.
  // Ordered by last activity alone; each instant's rows are put in order by id and first turn after (`inListingOrder`).
  const joinedQuery = sql`
    SELECT s.session_id, s.cwd, s.client, s.created_at, s.last_activity_at, s.turn_count, s.last_sequence, s.title,
      u.unknown_model, u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens, u.cost, u.first_sequence
    FROM sessions s LEFT JOIN session_usage u ON u.session_id = s.session_id
    WHERE s.cwd IS NOT NULL
    ORDER BY s.last_activity_at DESC`.values
  const joinedRows = listingPlan === undefined ? joinedQuery : listingPlan(joinedQuery)
  const joined = (rows: ReadonlyArray<ReadonlyArray<unknown>>, awaiting: ReadonlyArray<AwaitingRow>) => {
    const waiting = waitingBySession(awaiting)
    const listed: Array<SessionSummary> = []
    const joinedRows = inListingOrder(rows as Array<JoinedValues>)
    for (let i = 0; i < joinedRows.length;) {
      const row = joinedRows[i]!
      const sessionId = row[0]
      let totals: ReturnType<typeof SessionUsage.addRow> | undefined
      // The session's usage rows follow its first; read by index (a destructuring per row is an iterator's walk).
      for (let usage = row; usage[0] === sessionId; usage = joinedRows[i]!) {
        if (usage[8] !== null) totals = SessionUsage.addRow(totals, usage[8], usage[9]!, usage[10]!, usage[11], usage[12], usage[13]!)
        if (++i === joinedRows.length) break
      }
      // No session waits, mostly: no lookup (hashing each row's fresh id) then.
      listed.push(summary(row as unknown as SessionValues, waiting.size === 0 ? undefined : waiting.get(sessionId), totals))
    }
    return listed
  }

  const list = Effect.all([joinedRows, awaitingRows]).pipe(
    Effect.map(([rows, awaiting]) => joined(rows, awaiting)),
    Effect.orElse(() =>
      Effect.map(Effect.all([sessionRows, awaitingRows, SessionUsage.rows(sql, decodeRow)]), ([rows, awaiting, usage]) => summaries(rows, awaiting, usage))
    ),
    // A cancel on the join falls back to the queries for older schemas; one on those runs the listing again.
    retried,
    Effect.mapError(failure("list", where))
  )

  // A row that cannot be read fails that session's read, not the listing: nothing is listed apart.
  const listing = Effect.map(list, (sessions) => ({ sessions, damaged: [] }))

  // `pending`'s listing: the rows of the sessions in `awaiting_approvals` only (none, usually),
  // where the whole listing decodes every session's row and usage (10,000 sessions: 20,000 rows,
  // most of a listing's time). A database without the table or the title column (an older
  // version's, opened read-only) is listed whole and filtered, as `listing` folds it.
  const waitingSessionRows = sql`
    SELECT session_id, cwd, client, created_at, last_activity_at, turn_count, last_sequence, title FROM sessions
    WHERE cwd IS NOT NULL AND session_id IN (SELECT session_id FROM awaiting_approvals)
    ORDER BY last_activity_at DESC, session_id`.values
  // The calls first: with none waiting (a listing's usual answer) there is no session to read, and
  // `pending` sends one statement, not three (perf63sql) — what an empty table says the other two
  // would have found, since they read only the sessions it names.
  const awaitingListing = sql<AwaitingRow>`SELECT session_id, tool_call_id FROM awaiting_approvals ORDER BY session_id, sequence`.pipe(
    Effect.flatMap((awaiting) =>
      awaiting.length === 0
        ? Effect.succeed([])
        : Effect.map(
          Effect.all([waitingSessionRows, SessionUsage.waitingRows(sql)]),
          ([rows, usage]) => summaries(rows as ReadonlyArray<SessionValues>, awaiting, usage)
        )
    ),
    // Any failure here, a cancel too, is answered by the whole listing (which runs a cancelled statement again).
    Effect.orElse(() => Effect.map(list, (sessions) => sessions.filter((s) => s.awaitingApproval !== undefined))),
    Effect.map((sessions) => ({ sessions, damaged: [] }))
  )

  return { append, appendAll, read, list, listing, awaitingListing }
}
