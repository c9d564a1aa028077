/**
 * The SQL stores' usage totals (`session_usage`): what each session's turns used and cost, kept by
 * the appends in the same transaction as their `turn.completed` (as `awaiting_approvals` is), so a
 * listing reads totals without reading logs. One row per session and model without a price (`''`
 * for the priced turns), so a model's name is merged by the key, not by editing a JSON list.
 *
 * @since 0.9.0
 * @internal
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type * as AgentEvent from "../../domain/AgentEvent.js"
import type { Usage } from "../../domain/AgentEvent.js"
import * as Session from "../../domain/Session.js"

/** One row: a session's totals over the turns of one unknown-price model (`''`: the priced turns). */
export interface UsageRow {
  readonly session_id: string
  readonly unknown_model: string
  readonly first_sequence: number | string
  readonly input_tokens: number | string
  readonly output_tokens: number | string
  readonly cache_read_tokens: number | string | null
  readonly cache_write_tokens: number | string | null
  readonly cost: number | string
}

/** The table, in a dialect's column types (SQLite, or PostgreSQL with its byte-order collation and 64-bit counts). */
export const createTable = (sql: SqlClient.SqlClient, dialect: "sqlite" | "pg") => {
  const id = dialect === "pg" ? sql.unsafe(`TEXT COLLATE "C"`) : sql.unsafe("TEXT")
  const count = dialect === "pg" ? sql.unsafe("BIGINT") : sql.unsafe("INTEGER")
  const money = dialect === "pg" ? sql.unsafe("DOUBLE PRECISION") : sql.unsafe("REAL")
  return sql`
    CREATE TABLE session_usage (
      session_id ${id} NOT NULL,
      unknown_model TEXT NOT NULL,
      first_sequence ${count} NOT NULL,
      input_tokens ${count} NOT NULL,
      output_tokens ${count} NOT NULL,
      cache_read_tokens ${count},
      cache_write_tokens ${count},
      cost ${money} NOT NULL,
      PRIMARY KEY (session_id, unknown_model)
    )`
}

/** `a + b` saturating at the largest safe integer, as `AgentEvent.addCounts` (in both dialects: SQLite has no `LEAST`). */
const saturated = (a: string, b: string) => `CASE WHEN ${a} + ${b} > ${Number.MAX_SAFE_INTEGER} THEN ${Number.MAX_SAFE_INTEGER} ELSE ${a} + ${b} END`

// A cache count stays NULL while no turn of the row reported one (as the summary leaves it out).
const sumOrNull = (sql: SqlClient.SqlClient, column: string) =>
  sql.unsafe(
    `CASE WHEN session_usage.${column} IS NULL AND excluded.${column} IS NULL THEN NULL ` +
      `ELSE ${saturated(`COALESCE(session_usage.${column}, 0)`, `COALESCE(excluded.${column}, 0)`)} END`
  )

const sumOf = (sql: SqlClient.SqlClient, column: string) => sql.unsafe(saturated(`session_usage.${column}`, `excluded.${column}`))

const upsert = (sql: SqlClient.SqlClient, sessionId: string, sequence: number, change: Session.UsageChange) =>
  sql`
    INSERT INTO session_usage (session_id, unknown_model, first_sequence, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost)
    VALUES (${sessionId}, ${change.costUnknown ?? ""}, ${sequence}, ${change.usage.inputTokens}, ${change.usage.outputTokens},
      ${change.usage.cacheReadTokens ?? null}, ${change.usage.cacheWriteTokens ?? null}, ${change.cost})
    ON CONFLICT (session_id, unknown_model) DO UPDATE SET
      input_tokens = ${sumOf(sql, "input_tokens")},
      output_tokens = ${sumOf(sql, "output_tokens")},
      cache_read_tokens = ${sumOrNull(sql, "cache_read_tokens")},
      cache_write_tokens = ${sumOrNull(sql, "cache_write_tokens")},
      cost = session_usage.cost + excluded.cost`

/** The statement that adds an event's usage to its session's totals (`Session.usageChange`), or `undefined` when it adds none. */
export const statement = (sql: SqlClient.SqlClient, event: AgentEvent.AgentEvent) => {
  const change = Session.usageChange(event)
  return change === undefined ? undefined : upsert(sql, event.sessionId, event.sequence, change)
}

/**
 * The totals folded from the stored `turn.completed`, `session.compacted` and `compaction.failed` events themselves: what fills the table when
 * the migration that adds it runs on a database with sessions, and what a read-only listing of a
 * database not yet migrated answers with. A row that cannot be decoded adds nothing here.
 */
export const fromEvents = (
  sql: SqlClient.SqlClient,
  decode: (row: { readonly sequence: number; readonly format_version: number; readonly body: string }) => Either.Either<AgentEvent.AgentEvent, string>
): Effect.Effect<ReadonlyArray<UsageRow>, SqlError> =>
  Effect.map(
    sql<{ readonly session_id: string; readonly sequence: number; readonly format_version: number; readonly body: string }>`
      SELECT session_id, sequence, format_version, body FROM events WHERE type IN ('turn.completed', 'session.compacted', 'compaction.failed') ORDER BY session_id, sequence`,
    (rows) => {
      const totals = new Map<string, UsageRow>()
      for (const row of rows) {
        const event = decode(row)
        const change = Either.isRight(event) ? Session.usageChange(event.right) : undefined
        if (change === undefined) continue
        const key = `${row.session_id}\u0000${change.costUnknown ?? ""}`
        const before = totals.get(key)
        const add = (a: number | string | null | undefined, b: number | undefined) =>
          (a === null || a === undefined) && b === undefined ? null : Number(a ?? 0) + (b ?? 0)
        totals.set(key, {
          session_id: row.session_id,
          unknown_model: change.costUnknown ?? "",
          first_sequence: before?.first_sequence ?? Number(row.sequence),
          input_tokens: Number(before?.input_tokens ?? 0) + change.usage.inputTokens,
          output_tokens: Number(before?.output_tokens ?? 0) + change.usage.outputTokens,
          cache_read_tokens: add(before?.cache_read_tokens, change.usage.cacheReadTokens),
          cache_write_tokens: add(before?.cache_write_tokens, change.usage.cacheWriteTokens),
          cost: Number(before?.cost ?? 0) + change.cost
        })
      }
      return [...totals.values()]
    }
  )

/** Fills the table from the stored events: run once, by the migration that adds it. */
export const backfill = (
  sql: SqlClient.SqlClient,
  decode: Parameters<typeof fromEvents>[1]
): Effect.Effect<void, SqlError> =>
  Effect.flatMap(fromEvents(sql, decode), (rows) =>
    Effect.forEach(rows, (row) =>
      sql`
        INSERT INTO session_usage (session_id, unknown_model, first_sequence, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost)
        VALUES (${row.session_id}, ${row.unknown_model}, ${row.first_sequence}, ${row.input_tokens}, ${row.output_tokens},
          ${row.cache_read_tokens}, ${row.cache_write_tokens}, ${row.cost})`, { discard: true }))

/** A row of the table as the listing reads it, an array (`.values`, no object per row), in {@link UsageRow}'s column order. */
export type UsageValues = readonly [
  session_id: string,
  unknown_model: string,
  first_sequence: number | string,
  input_tokens: number | string,
  output_tokens: number | string,
  cache_read_tokens: number | string | null,
  cache_write_tokens: number | string | null,
  cost: number | string
]

/** The rows of the sessions waiting for approval (`awaiting_approvals`), for `pending`'s listing; no fallback (the caller lists whole). */
export const waitingRows = (sql: SqlClient.SqlClient): Effect.Effect<ReadonlyArray<UsageValues>, SqlError> =>
  sql`
    SELECT session_id, unknown_model, first_sequence, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost
    FROM session_usage WHERE session_id IN (SELECT session_id FROM awaiting_approvals)
    ORDER BY session_id, first_sequence`.values.pipe(Effect.map((values) => values as ReadonlyArray<UsageValues>))

/** The rows of the table; folded from the events when the table is not there (a database an older version wrote, opened read-only). */
export const rows = (sql: SqlClient.SqlClient, decode: Parameters<typeof fromEvents>[1]): Effect.Effect<ReadonlyArray<UsageValues>, SqlError> =>
  sql`
    SELECT session_id, unknown_model, first_sequence, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost
    FROM session_usage ORDER BY session_id, first_sequence`.values.pipe(
    Effect.map((values) => values as ReadonlyArray<UsageValues>),
    Effect.orElse(() =>
      Effect.map(fromEvents(sql, decode), (folded) =>
        folded.map((r): UsageValues => [r.session_id, r.unknown_model, r.first_sequence, r.input_tokens, r.output_tokens, r.cache_read_tokens, r.cache_write_tokens, r.cost]))
    )
  )

/**
 * One row's turns added to a session's totals (`undefined`: none yet). The counts and cost are
 * numbers or, from PostgreSQL's 64-bit columns, their text.
 */
export const addRow = (
  totals: ReturnType<typeof Session.addUsage> | undefined,
  unknownModel: string,
  inputTokens: number | string,
  outputTokens: number | string,
  cacheRead: number | string | null,
  cacheWrite: number | string | null,
  cost: number | string
): ReturnType<typeof Session.addUsage> => {
  // Field by field, not spread: a listing adds 10,000 sessions' rows.
  const usage: { -readonly [K in keyof Usage]: Usage[K] } = { inputTokens: Number(inputTokens), outputTokens: Number(outputTokens) }
  if (cacheRead !== null) usage.cacheReadTokens = Number(cacheRead)
  if (cacheWrite !== null) usage.cacheWriteTokens = Number(cacheWrite)
  return Session.addUsage(totals ?? {}, { usage, cost: Number(cost), costUnknown: unknownModel === "" ? undefined : unknownModel })
}

/** Each session's totals, its rows added in the order of their first turn. */
export const totalsBySession = (usageRows: ReadonlyArray<UsageValues>): Map<string, ReturnType<typeof Session.addUsage>> => {
  const totals = new Map<string, ReturnType<typeof Session.addUsage>>()
  const ordered = [...usageRows].sort((a, b) => a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : Number(a[2]) - Number(b[2]))
  for (const [sessionId, unknownModel, , inputTokens, outputTokens, cacheRead, cacheWrite, cost] of ordered) {
    totals.set(sessionId, addRow(totals.get(sessionId), unknownModel, inputTokens, outputTokens, cacheRead, cacheWrite, cost))
  }
  return totals
}
