/**
 * Row 13's PostgreSQL sessions, filled in seconds: the store appends the first session (so its
 * rows are exactly what the store writes), then one statement a table copies that session's rows
 * as sessions 1 … n-1, each id and time moved as `logs.ts`'s `sessionEvents` moves them (a second a
 * session). Appending 10,000 sessions one transaction at a time took 40 minutes on a loaded machine
 * (perf64sql); the copy's tables were checked equal, row for row, to the store's own fill of the same
 * sessions (12 of them, every table), and the CLI's listing of both byte for byte the same.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as PgClient from "@effect/sql-pg/PgClient"
import { Effect, Redacted } from "effect"
import { EventStore } from "../src/index.js"
import { PostgresEventStore } from "../src/postgres.js"
import { sessionEvents, type Template } from "./logs.js"

/** The id of session `i`, as the row names them. */
export const listId = (i: number) => `sess_list${String(i).padStart(6, "0")}`

/** Fills the database at `url` (migrated by the store here) with `n` sessions of `t`, session i moved by i seconds. */
export const fillByCopy = async (url: string, t: Template, n: number) => {
  await Effect.runPromise(
    Effect.flatMap(EventStore.EventStore, (store) => store.appendAll([...sessionEvents(t, listId(0), 1, 0)])).pipe(
      Effect.provide(PostgresEventStore.layer({ url: Redacted.make(url) })),
      Effect.orDie
    )
  )
  if (n <= 1) return
  const first = listId(0)
  const shifted = (column: string) => `to_char((${column}::timestamptz + g.i * interval '1 second') AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`
  const copies = `generate_series(1, ${n - 1}) AS g(i)`
  const id = `'sess_list' || lpad(g.i::text, 6, '0')`
  await Effect.runPromise(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql.unsafe(`INSERT INTO events (session_id, sequence, type, timestamp, format_version, body)
      SELECT ${id}, e.sequence, e.type, ${shifted("e.timestamp")}, e.format_version,
        replace(replace(e.body, '"sessionId":"${first}"', '"sessionId":"' || ${id} || '"'), '"timestamp":"' || e.timestamp || '"', '"timestamp":"' || ${shifted("e.timestamp")} || '"')
      FROM events e, ${copies} WHERE e.session_id = '${first}'`)
    yield* sql.unsafe(`INSERT INTO sessions (session_id, cwd, client, created_at, last_activity_at, turn_count, last_sequence, title)
      SELECT ${id}, s.cwd, s.client, ${shifted("s.created_at")}, ${shifted("s.last_activity_at")}, s.turn_count, s.last_sequence, s.title
      FROM sessions s, ${copies} WHERE s.session_id = '${first}'`)
    yield* sql.unsafe(`INSERT INTO session_usage (session_id, unknown_model, first_sequence, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost)
      SELECT ${id}, u.unknown_model, u.first_sequence, u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens, u.cost
      FROM session_usage u, ${copies} WHERE u.session_id = '${first}'`)
    // The planner's statistics, as autovacuum would have them after the store's own fill.
    yield* sql.unsafe("ANALYZE")
  }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 })), Effect.orDie))
}
