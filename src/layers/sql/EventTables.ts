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
import type { SqlError } from "@effect/sql/SqlError"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as AgentEvent from "../../domain/AgentEvent.js"
import { EventStoreFailure } from "../../domain/Errors.js"
import * as LogFormat from "../../domain/LogFormat.js"
import type { SessionSummary } from "../../domain/Session.js"
import { batchConflict, type EventStore } from "../../services/EventStore.js"

/** What a store gives the shared operations. */
export interface Options {
  readonly sql: SqlClient.SqlClient
  /** How failures name the store: a file, or a server without its credentials. */
  readonly where: string
  /** Translates a driver error of an operation into the store's failure. */
  readonly failure: (operation: EventStoreFailure["operation"], where: string, sessionId?: string) => (error: SqlError) => EventStoreFailure
  /** The store's append of one event. */
  readonly append: (event: AgentEvent.AgentEvent) => Effect.Effect<void, EventStoreFailure>
}

/** Rows read per query when streaming a session. */
const pageSize = 500

interface EventRow {
  readonly sequence: number
  readonly format_version: number
  readonly body: string
}

interface SessionRow {
  readonly session_id: string
  readonly cwd: string
  readonly client: SessionSummary["client"]
  readonly created_at: string
  readonly last_activity_at: string
  readonly turn_count: number
  readonly last_sequence: number
}

/** The shared operations of an SQL store. */
export const make = ({ append, failure, sql, where }: Options): Pick<EventStore.Service, "appendAll" | "read" | "list" | "listing"> => {
  // One transaction: a failure anywhere rolls the whole batch back.
  const appendAll = (events: ReadonlyArray<AgentEvent.AgentEvent>): Effect.Effect<void, EventStoreFailure> => {
    if (events.length === 0) return Effect.void
    const conflict = batchConflict(events)
    if (conflict !== undefined) return Effect.fail(conflict)
    return sql.withTransaction(Effect.forEach(events, append, { discard: true })).pipe(
      Effect.catchTag("SqlError", (error) => Effect.fail(failure("append", where, events[0]!.sessionId)(error)))
    )
  }

  const read: EventStore.Service["read"] = (sessionId, readOptions) => {
    const page = (from: number) =>
      sql<EventRow>`
        SELECT sequence, format_version, body FROM events
        WHERE session_id = ${sessionId} AND sequence >= ${from}
        ORDER BY sequence LIMIT ${pageSize}`.pipe(Effect.mapError(failure("read", where, sessionId)))
    const decode = (row: EventRow) => {
      const event = Either.flatMap(
        Either.try({ try: () => JSON.parse(row.body) as unknown, catch: () => "not JSON" }),
        (raw) => Either.flatMap(LogFormat.migrate(row.format_version, raw), (migrated) => Either.mapLeft(AgentEvent.decodeUnknown(migrated), () => "not a valid event"))
      )
      return Either.isRight(event) && event.right.sequence === row.sequence && event.right.sessionId === sessionId
        ? Effect.succeed(event.right)
        : Effect.fail(new EventStoreFailure({ reason: "corrupt", operation: "read", sessionId, sequence: row.sequence, path: where, detail: "a stored event is not valid" }))
    }
    return Stream.paginateChunkEffect(readOptions?.fromSequence ?? 1, (from) =>
      Effect.map(page(from), (rows) => [Chunk.unsafeFromArray(rows), rows.length === pageSize ? Option.some(rows.at(-1)!.sequence + 1) : Option.none<number>()] as const)).pipe(
        Stream.mapEffect(decode)
      )
  }

  const list = sql<SessionRow>`
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
    Effect.mapError(failure("list", where))
  )

  // A row that cannot be read fails that session's read, not the listing: nothing is listed apart.
  const listing = Effect.map(list, (sessions) => ({ sessions, damaged: [] }))

  return { appendAll, read, list, listing }
}
