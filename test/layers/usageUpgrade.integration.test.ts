/**
 * Upgrading a store written before session summaries carried usage and cost (issue 21 §6): the SQL
 * migration that adds `session_usage` fills it once from the stored `turn.completed` events (a
 * SQLite database opened read-only, never migrated, folds them), and a JSONL index whose entries
 * predate the totals rebuilds those entries from their logs.
 */
import { readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
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
import * as JsonlEventStore from "../../src/layers/JsonlEventStore.js"
import * as PostgresEventStore from "../../src/layers/PostgresEventStore.js"
import * as SqliteEventStore from "../../src/layers/SqliteEventStore.js"
import { EventStore } from "../../src/services/EventStore.js"
import { tempDir } from "../helpers.js"
import { freshSchemaUrl } from "../postgres.js"

const at = (n: number) => `2026-01-01T00:00:${String(n).padStart(2, "0")}.000Z`
const event = (sessionId: string, sequence: number, type: string, payload: object, turnId: string | undefined = `turn_${Math.ceil(sequence / 2)}`) =>
  ({ id: `${sessionId}-${sequence}`, sessionId, sequence, timestamp: at(sequence), type, payload, ...(turnId === undefined ? {} : { turnId }) }) as AgentEvent

/** Two sessions: one with two priced turns and one a model without a price, one whose turns reported no usage. */
const history: ReadonlyArray<AgentEvent> = [
  event("used", 1, "session.created", { cwd: "/work/used", client: "test" }, undefined),
  event("used", 2, "turn.started", { promptPreview: "p" }),
  event("used", 3, "turn.completed", { stopReason: "final", usage: { inputTokens: 10, outputTokens: 4, cacheReadTokens: 50, cacheWriteTokens: 7 }, cost: 0.5 }),
  event("used", 4, "turn.started", { promptPreview: "p" }),
  event("used", 5, "turn.completed", { stopReason: "final", usage: { inputTokens: 1, outputTokens: 1 }, cost: null, costUnknown: "model-x" }),
  event("used", 6, "turn.started", { promptPreview: "p" }),
  event("used", 7, "turn.completed", { stopReason: "cancelled", usage: { inputTokens: 2, outputTokens: 0, cacheReadTokens: 5 }, cost: 0.25 }),
  event("plain", 1, "session.created", { cwd: "/work/plain", client: "test" }, undefined),
  event("plain", 2, "turn.started", { promptPreview: "p" }),
  event("plain", 3, "turn.completed", { stopReason: "final" })
]

const expected = {
  used: { usage: { inputTokens: 13, outputTokens: 5, cacheReadTokens: 55, cacheWriteTokens: 7 }, cost: 0.75, costUnknown: ["model-x"] },
  plain: {}
}

const totalsOf = (store: EventStore.Service) =>
  Effect.map(store.list, (sessions) =>
    Object.fromEntries(sessions.map(({ cost, costUnknown, sessionId, usage }) => [sessionId, {
      ...(usage === undefined ? {} : { usage }),
      ...(cost === undefined ? {} : { cost }),
      ...(costUnknown === undefined ? {} : { costUnknown })
    }])))

/** What an older version left: the events and summaries, without `session_usage` or its migration. */
const downgrade = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`DROP TABLE session_usage`
  yield* sql`DELETE FROM effect_agent_migrations WHERE name = 'session_usage'`
})

const storeOf = <E, R>(layer: Layer.Layer<EventStore, E, R>) => Effect.map(Layer.build(layer), Context.get(EventStore))

const nextTurn = [
  event("used", 8, "turn.started", { promptPreview: "p" }),
  event("used", 9, "turn.completed", { stopReason: "final", usage: { inputTokens: 100, outputTokens: 1 }, cost: 0.125 })
]
const afterNextTurn = { ...expected, used: { ...expected.used, usage: { ...expected.used.usage, inputTokens: 113, outputTokens: 6 }, cost: 0.875 } }

describe("upgrading a store to summaries with usage and cost totals", () => {
  it.scoped("SQLite: the migration fills session_usage once from the events; a read-only open folds them; appends keep it", () =>
    Effect.gen(function*() {
      const filename = `${yield* tempDir}/db/events.sqlite`
      yield* Effect.scoped(Effect.flatMap(storeOf(SqliteEventStore.layer({ filename })), (store) => Effect.forEach(history, store.append)))
      yield* Effect.scoped(downgrade.pipe(Effect.provide(SqliteClient.layer({ filename }))))
      expect(yield* Effect.scoped(Effect.flatMap(storeOf(SqliteEventStore.layer({ filename, readOnly: true })), totalsOf))).toEqual(expected)
      const store = yield* storeOf(SqliteEventStore.layer({ filename }))
      expect(yield* totalsOf(store)).toEqual(expected)
      const sql = yield* Effect.map(Layer.build(SqliteClient.layer({ filename })), Context.get(SqlClient.SqlClient))
      expect((yield* sql<{ readonly n: number }>`SELECT count(*) AS n FROM session_usage`)[0]!.n).toBe(2)
      yield* store.appendAll(nextTurn)
      expect(yield* totalsOf(store)).toEqual(afterNextTurn)
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("PostgreSQL: the migration fills session_usage once from the events; a read-only open folds them; appends keep it", () =>
    Effect.gen(function*() {
      const url = Redacted.make(yield* freshSchemaUrl("usage_upgrade"))
      yield* Effect.scoped(Effect.flatMap(storeOf(PostgresEventStore.layer({ url })), (store) => Effect.forEach(history, store.append)))
      yield* Effect.scoped(downgrade.pipe(Effect.provide(PgClient.layer({ url, maxConnections: 1 }))))
      // The listing's join fails in its transaction (no session_usage): rolled back, the totals are folded from the events.
      expect(yield* Effect.scoped(Effect.flatMap(storeOf(PostgresEventStore.layer({ url, readOnly: true, maxConnections: 1 })), totalsOf))).toEqual(expected)
      const store = yield* storeOf(PostgresEventStore.layer({ url }))
      expect(yield* totalsOf(store)).toEqual(expected)
      yield* store.appendAll(nextTurn)
      expect(yield* totalsOf(store)).toEqual(afterNextTurn)
    }))

  it.scoped("JSONL: an index entry written before the totals is rebuilt from its log", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      const store = yield* JsonlEventStore.make({ dataDir })
      yield* Effect.forEach(history, store.append)
      expect(yield* totalsOf(store)).toEqual(expected)
      // What an older version's index says of these sessions: version 3, the same summaries without totals.
      const file = join(dataDir, "index.json")
      const index = JSON.parse(readFileSync(file, "utf8")) as { version: number; sessions: Array<{ summary: Record<string, unknown> }> }
      for (const entry of index.sessions) {
        delete entry.summary.usage
        delete entry.summary.cost
        delete entry.summary.costUnknown
      }
      // Version 3 kept its entries keyed by id.
      writeFileSync(file, JSON.stringify({ ...index, version: 3, sessions: Object.fromEntries(index.sessions.map((entry) => [entry.summary.sessionId, entry])) }))
      const reopened = yield* JsonlEventStore.make({ dataDir })
      expect(yield* totalsOf(reopened)).toEqual(expected)
      yield* reopened.appendAll(nextTurn)
      expect(yield* totalsOf(reopened)).toEqual(afterNextTurn)
    }).pipe(Effect.provide(NodeContext.layer)))
})
