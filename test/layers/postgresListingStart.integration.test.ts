/**
 * What a read-only PostgreSQL store (`sessions`, `pending`, `replay`) sends before it reads, and
 * what it says when it cannot connect (perf64sql).
 *
 * Before, opening it took three round trips before the listing's first statement: the driver's
 * `SELECT 1` connect check, `to_regclass('events')` and the migrations' `MAX(migration_id)`. Now
 * the connection is made by the first statement, which reads the schema's version and our table's
 * presence at once. Counted as the statements the `pg` driver's clients are given (`query` calls):
 * one each, as the server sees them.
 *
 * A read-only open that could not connect said "Event store append failed" (the connect's failure
 * defaulted to an append's); it says read now, naming the server, not its password, with no stack.
 */
import { createRequire } from "node:module"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { describe, expect, it } from "@effect/vitest"
import { freePort } from "../../bench/support/ports.js"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import * as PostgresEventStore from "../../src/layers/PostgresEventStore.js"
import { EventStore } from "../../src/services/EventStore.js"
import { run } from "../cli/subprocess.js"
import { freshSchemaUrl } from "../postgres.js"
import { finishedOn } from "./listingSessions.js"

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

const at = (n: number) => `2026-01-01T00:00:${String(n).padStart(2, "0")}.000Z`
const finished = (id: string): ReadonlyArray<AgentEvent> => [
  { id: `${id}-1`, sessionId: id, sequence: 1, timestamp: at(1), type: "session.created", payload: { cwd: `/work/${id}`, client: "test" } },
  { id: `${id}-2`, sessionId: id, turnId: "turn_1", sequence: 2, timestamp: at(2), type: "turn.started", payload: { promptPreview: "p" } },
  { id: `${id}-3`, sessionId: id, turnId: "turn_1", sequence: 3, timestamp: at(3), type: "turn.completed", payload: { stopReason: "final" } }
] as unknown as ReadonlyArray<AgentEvent>

describe("a read-only PostgreSQL store's start", () => {
  it.scoped("sends one statement before the listing's: the schema's version and our table's presence, which also connects", () =>
    Effect.gen(function*() {
      const url = yield* freshSchemaUrl("start")
      const writer = Context.get(yield* Layer.build(PostgresEventStore.layer({ url: Redacted.make(url) })), EventStore)
      yield* writer.appendAll(finished("sess_a"))
      yield* writer.appendAll(finished("sess_b"))

      const opened = yield* statementsOf(Layer.build(PostgresEventStore.layer({ url: Redacted.make(url), readOnly: true })))
      expect(opened.statements).toBe(1)
      const reader = Context.get(opened.result, EventStore)
      expect((yield* reader.list).map((s) => s.sessionId)).toEqual(["sess_a", "sess_b"])
    }), 60_000)

  it.scoped("an empty database (none of our tables) still reads as an empty store", () =>
    Effect.gen(function*() {
      const url = yield* freshSchemaUrl("start_empty")
      const reader = Context.get(yield* Layer.build(PostgresEventStore.layer({ url: Redacted.make(url), readOnly: true })), EventStore)
      expect(yield* reader.list).toEqual([])
    }), 60_000)

  it.scoped("a server that cannot be reached fails the read-only open as a read, typed, without the password", () =>
    Effect.gen(function*() {
      const port = yield* Effect.promise(freePort)
      const url = `postgres://someone:s3cret-pw-77@127.0.0.1:${port}/db`
      const failed = yield* Effect.either(Layer.build(PostgresEventStore.layer({ url: Redacted.make(url), readOnly: true })))
      expect(Either.isLeft(failed)).toBe(true)
      const failure = Either.isLeft(failed) ? failed.left : undefined
      expect(failure?._tag).toBe("EventStoreFailure")
      expect([failure?.operation, failure?.reason]).toEqual(["read", "unavailable"])
      expect(failure?.message).toContain("the database server cannot be reached")
      expect(failure?.message).not.toContain("s3cret-pw-77")
    }), 60_000)

  it.live("the built CLI's read commands on a server that cannot be reached: one line saying read, no password, no stack", () =>
    Effect.gen(function*() {
      const port = yield* Effect.promise(freePort)
      const store = ["--store", "postgres", "--database-url", `postgres://someone:s3cret-pw-77@127.0.0.1:${port}/db`]
      for (const args of [["sessions"], ["pending"], ["replay", "sess_a"]]) {
        const failed = yield* Effect.promise(() => run([...args, ...store]))
        expect(failed.code, failed.stderr).not.toBe(0)
        expect(failed.stderr.trim().split("\n"), failed.stderr).toHaveLength(1)
        expect(failed.stderr).toMatch(/Event store read failed \[unavailable\].*the database server cannot be reached/)
        expect(failed.stderr).toContain(`postgresql://127.0.0.1:${port}/db`)
        expect(failed.stderr).not.toMatch(/append|s3cret-pw-77|someone|\n\s+at /)
      }
    }), 60_000)
})

/**
 * Its listing (perf65sql): before, five statements — `BEGIN`, the planner's `SET LOCAL`s, the join,
 * `COMMIT`, the waiting calls. The read-only store's connections now start with those settings (after
 * the user's own options: the URL's `search_path` here), and the listing is the join and the waiting calls.
 */
describe("a read-only PostgreSQL store's listing", () => {
  it.scoped("sends two statements, the join and the waiting calls, and lists in the listing's order", () =>
    Effect.gen(function*() {
      const url = yield* freshSchemaUrl("listing")
      const writer = Context.get(yield* Layer.build(PostgresEventStore.layer({ url: Redacted.make(url) })), EventStore)
      yield* writer.appendAll(finishedOn("sess_z", 9, ["model-z"]))
      yield* writer.appendAll(finishedOn("sess_later", 30, ["model-l"]))
      yield* writer.appendAll(finishedOn("sess_two", 9, ["model-y", "model-b"]))
      yield* writer.appendAll(finishedOn("sess_a", 9, ["model-a"]))

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
