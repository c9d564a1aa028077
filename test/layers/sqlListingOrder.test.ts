/**
 * The SQL stores' listing join (sql/EventTables.ts) on SQLite: ordered in SQL by last activity
 * alone, each instant's rows put in order by id and first turn in the store (perf65sql). In SQL the
 * tie-break (`ORDER BY s.last_activity_at DESC, s.session_id, u.first_sequence`) planned a temporary
 * B-tree that SQLite's sorter filled and emptied row by row, though an instant holds one row nearly
 * always. The statement is read from `@effect/sql`'s `sql.execute` span and planned by SQLite itself.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import Database from "better-sqlite3"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Tracer from "effect/Tracer"
import { join } from "node:path"
import * as SqliteEventStore from "../../src/layers/SqliteEventStore.js"
import { EventStore } from "../../src/services/EventStore.js"
import { tempDir } from "../helpers.js"
import { finishedOn as session } from "./listingSessions.js"

/** The text of each statement `effect` sends, read from its `sql.execute` span. */
const statementsOf = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const base = yield* Effect.tracer
    const spans: Array<Tracer.Span> = []
    const tracer = Tracer.make({
      span: (...args) => {
        const span = base.span(...args)
        if (args[0] === "sql.execute") spans.push(span)
        return span
      },
      context: base.context
    })
    const result = yield* Effect.withTracer(effect, tracer)
    return { result, statements: spans.map((span) => String(span.attributes.get("db.query.text"))) }
  })

describe("the SQL listing's order", () => {
  it.scoped("plans the join without SQLite's sorter, and lists an instant's sessions by id and a session's models by first turn", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const filename = join(dir, "events.sqlite")
      const store = Context.get(yield* Layer.build(SqliteEventStore.layer({ filename })), EventStore)
      // Appended out of id order, all last active at the same instant but one; `sess_two`'s models
      // used in an order that is not their names'.
      yield* store.appendAll(session("sess_z", 9, ["model-z"]))
      yield* store.appendAll(session("sess_later", 30, ["model-l"]))
      yield* store.appendAll(session("sess_two", 9, ["model-y", "model-b"]))
      yield* store.appendAll(session("sess_a", 9, ["model-a"]))
      yield* store.appendAll(session("sess_m", 9, ["model-m"]))

      const { result, statements } = yield* statementsOf(store.list)
      expect(result.map((s) => [s.sessionId, s.costUnknown])).toEqual([
        ["sess_later", ["model-l"]],
        ["sess_a", ["model-a"]],
        ["sess_m", ["model-m"]],
        ["sess_two", ["model-y", "model-b"]],
        ["sess_z", ["model-z"]]
      ])
      expect(result.find((s) => s.sessionId === "sess_two")?.usage).toEqual({ inputTokens: 20, outputTokens: 2 })

      const joinText = statements.find((text) => text.includes("LEFT JOIN session_usage"))
      expect(joinText).toBeDefined()
      const db = new Database(filename, { readonly: true })
      try {
        const plan = (db.prepare(`EXPLAIN QUERY PLAN ${joinText}`).all() as ReadonlyArray<{ readonly detail: string }>).map((row) => row.detail)
        expect(plan.some((detail) => detail.includes("sessions_by_activity"))).toBe(true)
        expect(plan.filter((detail) => detail.includes("TEMP B-TREE"))).toEqual([])
      } finally {
        db.close()
      }
    }).pipe(Effect.provide(NodeContext.layer)))
})
