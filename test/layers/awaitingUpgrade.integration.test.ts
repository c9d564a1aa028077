/**
 * Upgrading a SQL store written before the listings carried the calls waiting for approval (issue
 * 24, item 5): the migration that adds `awaiting_approvals` fills it once from the stored events, so
 * `pending` finds a session left waiting by the older version; a SQLite database opened read-only,
 * which is never migrated, answers from the events themselves.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as SqlClient from "@effect/sql/SqlClient"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import { describe, expect, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import * as PostgresEventStore from "../../src/layers/PostgresEventStore.js"
import * as SqliteEventStore from "../../src/layers/SqliteEventStore.js"
import { EventStore } from "../../src/services/EventStore.js"
import { tempDir } from "../helpers.js"
import { freshSchemaUrl } from "../postgres.js"

const at = (n: number) => `2026-01-01T00:00:${String(n).padStart(2, "0")}.000Z`
const event = (sessionId: string, sequence: number, type: string, payload: object, turnId: string | undefined = "turn_1") =>
  ({ id: `${sessionId}-${sequence}`, sessionId, sequence, timestamp: at(sequence), type, payload, ...(turnId === undefined ? {} : { turnId }) }) as AgentEvent

/** Three sessions: one waits for two calls (one answered since), one finished after an ask, one never asked. */
const history: ReadonlyArray<AgentEvent> = ["waiting", "finished", "quiet"].flatMap((id) => [
  event(id, 1, "session.created", { cwd: `/work/${id}`, client: "test" }, undefined),
  event(id, 2, "turn.started", { promptPreview: "p" }),
  ...(id === "quiet" ? [] : [
    event(id, 3, "permission.resolved", { toolCallId: "call_1", decision: "ask", actor: "policy" }),
    event(id, 4, "permission.resolved", { toolCallId: "call_2", decision: "ask", actor: "policy" }),
    event(id, 5, "permission.resolved", { toolCallId: "call_1", decision: "allow", actor: "user" })
  ]),
  ...(id === "finished" ? [event(id, 6, "turn.completed", { stopReason: "cancelled" })] : [])
])

/**
 * What an older version left: the events and summaries, without the table, its migration or any
 * migration after it (the migrator runs only migrations newer than the newest it recorded, as an
 * older version's database has none of them).
 */
const downgrade = (migration: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const [row] = yield* sql<{ readonly migration_id: number }>`SELECT migration_id FROM effect_agent_migrations WHERE name = ${migration}`
    yield* sql`DROP TABLE awaiting_approvals`
    // Later migrations' tables go with them (the blob area's).
    yield* sql`DROP TABLE IF EXISTS blobs`
    yield* sql`DROP TABLE IF EXISTS session_usage`
    yield* sql`DELETE FROM effect_agent_migrations WHERE migration_id >= ${row!.migration_id}`
  })

const waitingOf = (store: EventStore.Service) =>
  Effect.map(store.list, (sessions) => Object.fromEntries(sessions.map((s) => [s.sessionId, s.awaitingApproval ?? []])))

const expected = { waiting: ["call_2"], finished: [], quiet: [] }

const storeOf = <E, R>(layer: Layer.Layer<EventStore, E, R>) => Effect.map(Layer.build(layer), Context.get(EventStore))

describe("upgrading a SQL store to listings that carry the calls waiting for approval", () => {
  it.scoped("SQLite: the migration fills the table once from the events; a read-only open folds them", () =>
    Effect.gen(function*() {
      const filename = `${yield* tempDir}/db/events.sqlite`
      yield* Effect.scoped(Effect.flatMap(storeOf(SqliteEventStore.layer({ filename })), (store) => Effect.forEach(history, store.append)))
      yield* Effect.scoped(downgrade("awaiting_approvals").pipe(Effect.provide(SqliteClient.layer({ filename }))))
      // Never migrated: the read-only listing answers from the events, and so does `pending`'s (no table to narrow it by).
      expect(yield* Effect.scoped(Effect.flatMap(storeOf(SqliteEventStore.layer({ filename, readOnly: true })), waitingOf))).toEqual(expected)
      const awaiting = yield* Effect.scoped(Effect.flatMap(storeOf(SqliteEventStore.layer({ filename, readOnly: true })), (store) => store.awaitingListing!))
      expect(awaiting.sessions.map((s) => [s.sessionId, s.awaitingApproval])).toEqual([["waiting", ["call_2"]]])
      const store = yield* storeOf(SqliteEventStore.layer({ filename }))
      expect(yield* waitingOf(store)).toEqual(expected)
      const sql = yield* Effect.map(Layer.build(SqliteClient.layer({ filename })), Context.get(SqlClient.SqlClient))
      expect(yield* sql`SELECT session_id, tool_call_id FROM awaiting_approvals`).toEqual([{ session_id: "waiting", tool_call_id: "call_2" }])
      // Kept by the appends from then on.
      yield* store.append(event("waiting", 6, "permission.resolved", { toolCallId: "call_2", decision: "deny", actor: "user" }))
      expect(yield* waitingOf(store)).toEqual({ ...expected, waiting: [] })
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("PostgreSQL: the migration fills the table once from the events", () =>
    Effect.gen(function*() {
      const url = Redacted.make(yield* freshSchemaUrl("awaiting_upgrade"))
      yield* Effect.scoped(Effect.flatMap(storeOf(PostgresEventStore.layer({ url })), (store) => Effect.forEach(history, store.append)))
      yield* Effect.scoped(downgrade("awaiting_approvals").pipe(Effect.provide(PgClient.layer({ url, maxConnections: 1 }))))
      const store = yield* storeOf(PostgresEventStore.layer({ url }))
      expect(yield* waitingOf(store)).toEqual(expected)
      yield* store.append(event("waiting", 6, "permission.resolved", { toolCallId: "call_2", decision: "deny", actor: "user" }))
      expect(yield* waitingOf(store)).toEqual({ ...expected, waiting: [] })
    }))
})
