/**
 * What a read-only PostgreSQL store (`sessions`) sends for its listing (perf65sql). Before, five
 * statements: `BEGIN`, the planner's `SET LOCAL`s, the join, `COMMIT`, then the waiting calls —
 * the transaction only carried the settings that make the join stream. Now the read-only store's
 * connections start with those settings (startup options, after the user's own: the URL's
 * `search_path` here), and the listing is the join and the waiting calls. Counted as the statements
 * the `pg` driver's clients are given (`query` calls), as the server sees them. An instant's sessions
 * are listed by id, a session's models by first turn, as on SQLite (test/layers/sqlListingOrder.test.ts).
 */
import { createRequire } from "node:module"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { describe, expect, it } from "@effect/vitest"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import * as PostgresEventStore from "../../src/layers/PostgresEventStore.js"
import { EventStore } from "../../src/services/EventStore.js"
import { freshSchemaUrl } from "../postgres.js"

/** The `pg` the store's driver loads (a CommonJS package: one instance for `@effect/sql-pg` and us). */
const Pg = createRequire(import.meta.url)("pg") as { Client: { prototype: { query: (...args: Array<unknown>) => unknown } } }

/** The statements `effect` hands the driver's clients, counted at `Client.prototype.query`. */
const statementsOf = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.acquireUseRelease(
    Effect.sync(() => {
      const original = Pg.Client.prototype.query
      const counted = { n: 0, original }
      Pg.Client.prototype.query = function(this: unknown, ...args: Array<unknown>) {
        counted.n++
        return original.apply(this, args)
      }
      return counted
    }),
    (counted) => Effect.map(effect, (result) => ({ result, statements: counted.n })),
    (counted) => Effect.sync(() => void (Pg.Client.prototype.query = counted.original))
  )

const at = (second: number) => `2026-01-01T00:00:${String(second).padStart(2, "0")}.000Z`

/** A session of finished turns, each on a model without a price, its last event at `last`. */
const session = (id: string, last: number, models: ReadonlyArray<string>): ReadonlyArray<AgentEvent> => {
  const events: Array<Record<string, unknown>> = [{ id: `${id}-1`, sessionId: id, sequence: 1, timestamp: at(1), type: "session.created", payload: { cwd: `/work/${id}`, client: "test" } }]
  models.forEach((model, t) => {
    const turnId = `turn_${t + 1}`
    events.push({ id: `${id}-${events.length + 1}`, sessionId: id, turnId, sequence: events.length + 1, timestamp: at(2), type: "turn.started", payload: { promptPreview: "p" } })
    events.push({
      id: `${id}-${events.length + 1}`,
      sessionId: id,
      turnId,
      sequence: events.length + 1,
      timestamp: t === models.length - 1 ? at(last) : at(2),
      type: "turn.completed",
      payload: { stopReason: "final", usage: { inputTokens: 10, outputTokens: 1 }, cost: null, costUnknown: model }
    })
  })
  return events as unknown as ReadonlyArray<AgentEvent>
}

describe("a read-only PostgreSQL store's listing", () => {
  it.scoped("sends two statements, the join and the waiting calls, and lists in the listing's order", () =>
    Effect.gen(function*() {
      const url = yield* freshSchemaUrl("listing")
      const writer = Context.get(yield* Layer.build(PostgresEventStore.layer({ url: Redacted.make(url) })), EventStore)
      yield* writer.appendAll(session("sess_z", 9, ["model-z"]))
      yield* writer.appendAll(session("sess_later", 30, ["model-l"]))
      yield* writer.appendAll(session("sess_two", 9, ["model-y", "model-b"]))
      yield* writer.appendAll(session("sess_a", 9, ["model-a"]))

      const reader = Context.get(yield* Layer.build(PostgresEventStore.layer({ url: Redacted.make(url), readOnly: true })), EventStore)
      const listed = yield* statementsOf(reader.listing)
      expect(listed.result.sessions.map((s) => [s.sessionId, s.costUnknown])).toEqual([
        ["sess_later", ["model-l"]],
        ["sess_a", ["model-a"]],
        ["sess_two", ["model-y", "model-b"]],
        ["sess_z", ["model-z"]]
      ])
      expect(listed.statements).toBe(2)
      // The writer's listing, inside its own transaction, lists the same.
      expect(yield* writer.list).toEqual(listed.result.sessions)
    }), 60_000)
})

describe("the read-only store's connection settings", () => {
  const own = "-c enable_hashjoin=off -c enable_mergejoin=off -c enable_sort=off"
  it("adds the listing's planner settings after the URL's own options, or PGOPTIONS", () => {
    const withPath = PostgresEventStore.streamingConnection("postgres://u:p@h:5432/db?options=-c%20search_path%3Ds1", {})
    expect(new URL(withPath.connectionString).searchParams.get("options")).toBe(`-c search_path=s1 ${own}`)
    expect(withPath.options).toBeUndefined()
    expect(PostgresEventStore.streamingConnection("postgres://u:p@h/db", { PGOPTIONS: "-c search_path=s2" })).toEqual({
      connectionString: "postgres://u:p@h/db",
      options: `-c search_path=s2 ${own}`
    })
    expect(PostgresEventStore.streamingConnection("postgres://u:p@h/db", {})).toEqual({ connectionString: "postgres://u:p@h/db", options: own })
  })
})
