/**
 * The read commands on PostgreSQL (`sessions`, `pending`, `replay`) as a user who may only read the
 * database — a role with SELECT alone, as a dashboard or an auditor gets. Before, every command
 * migrated the schema first (CREATE TABLE, LOCK TABLE), so such a role could list nothing. Opened
 * read-only, the store runs no migration and creates nothing, reads what is there (a database with
 * none of our tables reads as an empty store) and refuses appends, typed, without a statement.
 */
import { randomBytes } from "node:crypto"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import * as SqlClient from "@effect/sql/SqlClient"
import * as PgClient from "@effect/sql-pg/PgClient"
import { describe, expect, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import * as PostgresEventStore from "../../src/layers/PostgresEventStore.js"
import { EventStore } from "../../src/services/EventStore.js"
import { run } from "../cli/subprocess.js"
import { freshSchemaUrl } from "../postgres.js"

/** The tools golden up to its second call's ask: a session whose turn waits for the user's answer to `call_2`. */
const waiting: ReadonlyArray<AgentEvent> = readFileSync(join(import.meta.dirname, "..", "..", "fixtures", "golden", "tools.jsonl"), "utf8")
  .trim().split("\n").slice(1, 16).map((line) => JSON.parse(line) as AgentEvent)
const waitingId = waiting[0]!.sessionId

/** The schema a URL's `search_path` names (see `freshSchemaUrl`). */
const schemaOf = (url: string) => /search_path=([a-z0-9_]+)/.exec(decodeURIComponent(new URL(url).search))![1]!

/** A login role that may read the schema's tables and nothing else; its URL into the same schema. */
const readerUrl = (url: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const schema = schemaOf(url)
    const role = `reader_${randomBytes(4).toString("hex")}`
    const password = randomBytes(8).toString("hex")
    yield* sql.unsafe(`CREATE ROLE ${role} LOGIN PASSWORD '${password}'`)
    yield* sql.unsafe(`GRANT USAGE ON SCHEMA ${schema} TO ${role}`)
    yield* sql.unsafe(`GRANT SELECT ON ALL TABLES IN SCHEMA ${schema} TO ${role}`)
    const reader = new URL(url)
    reader.username = role
    reader.password = password
    return reader.toString()
  }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 })))

const tablesIn = (url: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ n: number }>`SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = ${schemaOf(url)}`).pipe(
    Effect.map(([row]) => row!.n),
    Effect.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 }))
  )

const storeOf = (options: PostgresEventStore.Options) => Effect.map(Layer.build(PostgresEventStore.layer(options)), Context.get(EventStore))

describe("PostgreSQL opened read-only", () => {
  it.scoped("a reader role lists, finds what waits and reads; an append is refused, typed", () =>
    Effect.gen(function*() {
      const url = yield* freshSchemaUrl("ro")
      const writer = yield* storeOf({ url: Redacted.make(url) })
      yield* writer.appendAll(waiting)
      const reader = yield* storeOf({ url: Redacted.make(yield* readerUrl(url)), readOnly: true })
      const listed = yield* reader.list
      expect(listed.map((s) => [s.sessionId, s.awaitingApproval])).toEqual([[waitingId, ["call_2"]]])
      const refused = yield* Effect.either(reader.append({ ...waiting[14]!, id: "evt_16", sequence: 16 }))
      expect(Either.isLeft(refused) && refused.left.reason).toBe("permission_denied")
      expect((yield* writer.list)[0]!.lastSequence).toBe(15)
    }), 60_000)

  it.scoped("a database with none of our tables reads as an empty store, and nothing is created in it", () =>
    Effect.gen(function*() {
      const url = yield* freshSchemaUrl("ro_empty")
      const reader = yield* storeOf({ url: Redacted.make(url), readOnly: true })
      expect(yield* reader.list).toEqual([])
      expect(yield* tablesIn(url)).toBe(0)
    }), 60_000)

  // stores59: a read-only open reads the migrations' table to refuse a newer release's schema; a
  // role that may not read that table reads the schema as found, as before.
  it.scoped("a reader role that may not read the migrations' table still lists", () =>
    Effect.gen(function*() {
      const url = yield* freshSchemaUrl("ro_nomig")
      const writer = yield* storeOf({ url: Redacted.make(url) })
      yield* writer.appendAll(waiting)
      const reader = yield* readerUrl(url)
      yield* Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(`REVOKE SELECT ON effect_agent_migrations FROM ${new URL(reader).username}`)).pipe(
        Effect.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 }))
      )
      const store = yield* storeOf({ url: Redacted.make(reader), readOnly: true })
      expect((yield* store.list).map((s) => s.sessionId)).toEqual([waitingId])
    }), 60_000)

  it.live("the built CLI's read commands on a newer release's database say to upgrade", () =>
    Effect.gen(function*() {
      const url = yield* freshSchemaUrl("ro_newer_cli")
      yield* Effect.scoped(Effect.flatMap(storeOf({ url: Redacted.make(url) }), (store) => store.appendAll(waiting)))
      yield* Effect.flatMap(SqlClient.SqlClient, (sql) => sql`INSERT INTO effect_agent_migrations (migration_id, name) VALUES (99, 'future')`).pipe(
        Effect.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 }))
      )
      const store = ["--store", "postgres", "--database-url", yield* readerUrl(url)]
      for (const args of [["sessions"], ["replay", waitingId]]) {
        const refused = yield* Effect.promise(() => run([...args, ...store]))
        expect(refused.code, refused.stderr).not.toBe(0)
        expect(refused.stderr).toMatch(/from a newer effect-agent.*upgrade effect-agent to read it/)
        expect(refused.stderr).not.toMatch(/corrupt|remove it/)
      }
    }), 60_000)

  it.live("the built CLI's read commands work as a reader role", () =>
    Effect.gen(function*() {
      const url = yield* freshSchemaUrl("ro_cli")
      // Listed before anything is stored: an empty store, named without its URL, and nothing created.
      const empty = yield* Effect.promise(() => run(["sessions", "--store", "postgres", "--database-url", url]))
      expect([empty.code, empty.stderr.trim()]).toEqual([0, "No sessions in the PostgreSQL database."])
      expect(yield* tablesIn(url)).toBe(0)
      yield* Effect.scoped(Effect.flatMap(storeOf({ url: Redacted.make(url) }), (store) => store.appendAll(waiting)))
      const reader = yield* readerUrl(url)
      const store = ["--store", "postgres", "--database-url", reader]
      const sessions = yield* Effect.promise(() => run(["sessions", ...store]))
      expect(sessions.stderr).toBe("")
      expect(sessions.stdout).toContain(waitingId)
      const pending = yield* Effect.promise(() => run(["pending", ...store]))
      expect(pending.code, pending.stderr).toBe(0)
      expect(pending.stdout).toContain("call_2")
      const replay = yield* Effect.promise(() => run(["replay", waitingId, "--json", ...store]))
      expect(replay.code, replay.stderr).toBe(0)
      expect(replay.stdout.trim().split("\n")).toHaveLength(waiting.length)
    }), 60_000)
})
