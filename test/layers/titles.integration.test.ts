/**
 * Session titles in every store's listing (issue 23): derived from the first user message, replaced
 * by the user's `session.titled`, kept in the store's session index — and backfilled from the logs
 * when the index was written by a version without titles (a JSONL index of version 3, a SQL
 * database before the migration that adds the column, a SQLite database opened read-only before it).
 */
import { readFileSync, writeFileSync } from "node:fs"
import Database from "better-sqlite3"
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
import type * as Scope from "effect/Scope"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import * as JsonlEventStore from "../../src/layers/JsonlEventStore.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import * as PostgresEventStore from "../../src/layers/PostgresEventStore.js"
import * as SqliteEventStore from "../../src/layers/SqliteEventStore.js"
import { EventStore } from "../../src/services/EventStore.js"
import { tempDir } from "../helpers.js"
import { freshSchemaUrl } from "../postgres.js"

const at = (n: number) => `2026-01-01T00:00:${String(n).padStart(2, "0")}.000Z`
const event = (sessionId: string, sequence: number, type: string, payload: object, turnId?: string) =>
  ({ id: `${sessionId}-${sequence}`, sessionId, sequence, timestamp: at(sequence), type, payload, ...(turnId === undefined ? {} : { turnId }) }) as AgentEvent

const turn = (sessionId: string, from: number, content: string, turnId: string, images?: ReadonlyArray<object>) => [
  event(sessionId, from, "turn.started", { promptPreview: content.slice(0, 80) }, turnId),
  event(sessionId, from + 1, "user.message", images === undefined ? { content } : { content, images }, turnId),
  event(sessionId, from + 2, "turn.completed", { stopReason: "final" }, turnId)
]

const hostile = `\n  \x1b[31mFix\x1b[0m the\tbuild \x07on CI ${"and then some more words ".repeat(40_000)}\nsecond line`
const image = { blob: "a".repeat(64), mediaType: "image/png", bytes: 10 }

/** Four sessions: titled by a hostile first message; renamed after; renamed before its first message; images only. */
const history: ReadonlyArray<AgentEvent> = [
  event("derived", 1, "session.created", { cwd: "/work/a", client: "test" }),
  ...turn("derived", 2, hostile, "t1"),
  ...turn("derived", 5, "a later message changes nothing", "t2"),
  event("renamed", 1, "session.created", { cwd: "/work/b", client: "test" }),
  ...turn("renamed", 2, "first words", "t1"),
  event("renamed", 5, "session.titled", { title: "My own name" }),
  ...turn("renamed", 6, "another message", "t2"),
  event("early", 1, "session.created", { cwd: "/work/c", client: "test" }),
  event("early", 2, "session.titled", { title: "Named first" }),
  ...turn("early", 3, "the message after", "t1"),
  event("pictures", 1, "session.created", { cwd: "/work/d", client: "test" }),
  ...turn("pictures", 2, "", "t1", [image, image]),
  event("untitled", 1, "session.created", { cwd: "/work/e", client: "test" })
]

const expected = {
  derived: "Fix the build on CI and then some more words and then some…",
  renamed: "My own name",
  early: "Named first",
  pictures: "2 images",
  untitled: undefined
}

const titlesOf = (store: EventStore.Service) =>
  Effect.map(store.list, (sessions) => Object.fromEntries(sessions.map((s) => [s.sessionId, s.title])))

const storeOf = <E, R>(layer: Layer.Layer<EventStore, E, R>) => Effect.map(Layer.build(layer), Context.get(EventStore))

const stores: ReadonlyArray<[string, Effect.Effect<EventStore.Service, unknown, Scope.Scope | NodeContext.NodeContext>]> = [
  ["memory", MemoryEventStore.make],
  ["jsonl", Effect.flatMap(tempDir, (dataDir) => JsonlEventStore.make({ dataDir }))],
  ["sqlite", Effect.flatMap(tempDir, (dir) => storeOf(SqliteEventStore.layer({ filename: `${dir}/db/events.sqlite` })))],
  ["postgres", Effect.flatMap(freshSchemaUrl("titles"), (url) => storeOf(PostgresEventStore.layer({ url: Redacted.make(url) })))]
]

/**
 * What an older version left: no `title` column, no record of the migration that adds it nor of any
 * after it (the migrator runs only migrations newer than the newest it recorded); later migrations'
 * tables go with them (the usage totals').
 */
const withoutTitles = (migration: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const [row] = yield* sql<{ readonly migration_id: number }>`SELECT migration_id FROM effect_agent_migrations WHERE name = ${migration}`
    yield* sql`ALTER TABLE sessions DROP COLUMN title`
    yield* sql`DROP TABLE IF EXISTS session_usage`
    yield* sql`DELETE FROM effect_agent_migrations WHERE migration_id >= ${row!.migration_id}`
  })

/** A title a store's own cache or rows can hold when they came with a repository: a U+202E override makes `gnp.exe` read `exe.png` wherever it is shown; 300 KB in every listing. */
const plantedTitle = `My \u202egnp.exe\u202c \x1b[31mname ${"y".repeat(300_000)}`

/** `plantedTitle` as a log's `session.titled` is read: plain, cut to 200 characters. */
const expectStored = (title: string | undefined) => {
  expect(title?.startsWith("My gnp.exe name yyy")).toBe(true)
  expect(Array.from(title!).length).toBeLessThanOrEqual(200)
  expect(title).not.toMatch(/[\u202a-\u202e\x1b]/)
}

describe("session titles in the listing", () => {
  for (const [name, make] of stores) {
    it.scoped(`${name}: derived from the first message (plain, one line, ≤ 60 characters), replaced by session.titled`, () =>
      Effect.gen(function*() {
        const store = yield* make
        for (const e of history) yield* store.append(e)
        const titles = yield* titlesOf(store)
        expect(titles).toEqual(expected)
        expect(Array.from(titles.derived!).length).toBeLessThanOrEqual(60)
        // A batch keeps the title as single appends do.
        yield* store.appendAll([event("untitled", 2, "session.titled", { title: "Batch" }), ...turn("untitled", 3, "x", "t1")])
        expect((yield* titlesOf(store)).untitled).toBe("Batch")
      }).pipe(Effect.provide(NodeContext.layer)))
  }

  it.scoped("JSONL: an index that came with the data dir (a repository's .effect-agent) lists its titles plain and cut, as a log's session.titled", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      const store = yield* JsonlEventStore.make({ dataDir })
      for (const e of history) yield* store.append(e)
      // A listing writes the index.
      expect((yield* titlesOf(store)).renamed).toBe("My own name")
      const indexFile = join(dataDir, "index.json")
      const index = JSON.parse(readFileSync(indexFile, "utf8")) as { sessions: Array<{ summary: { sessionId: string; title?: string } }> }
      for (const entry of index.sessions) if (entry.summary.sessionId === "renamed") entry.summary.title = plantedTitle
      writeFileSync(indexFile, JSON.stringify(index))
      const reopened = yield* JsonlEventStore.make({ dataDir, readOnly: true })
      expectStored((yield* titlesOf(reopened)).renamed)
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("SQLite: a database that came with the repository lists its sessions' titles plain and cut, as a log's session.titled", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const filename = `${dir}/events.sqlite`
      yield* Effect.scoped(Effect.gen(function*() {
        const store = yield* storeOf(SqliteEventStore.layer({ filename }))
        for (const e of history) yield* store.append(e)
      }))
      // The schema is the store's own; its rows are the repository's.
      const db = new Database(filename)
      db.prepare("UPDATE sessions SET title = ? WHERE session_id = 'renamed'").run(plantedTitle)
      db.close()
      expectStored((yield* titlesOf(yield* storeOf(SqliteEventStore.layer({ filename, readOnly: true })))).renamed)
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("PostgreSQL: a database whose rows another writer left lists its sessions' titles plain and cut, as a log's session.titled", () =>
    Effect.gen(function*() {
      // SQLite's row reader was tested with such a title, PostgreSQL's was not: the same reader
      // (EventTables' listing) on the other dialect's rows, a writer's store and a read-only one.
      const url = Redacted.make(yield* freshSchemaUrl("titles_planted"))
      const store = yield* storeOf(PostgresEventStore.layer({ url }))
      for (const e of history) yield* store.append(e)
      yield* Effect.scoped(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`UPDATE sessions SET title = ${plantedTitle} WHERE session_id = 'renamed'`).pipe(
        Effect.provide(PgClient.layer({ url, maxConnections: 1 }))
      ))
      expectStored((yield* titlesOf(store)).renamed)
      expectStored((yield* titlesOf(yield* storeOf(PostgresEventStore.layer({ url, readOnly: true })))).renamed)
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("JSONL: an index written by a version without titles (3) opens, and its titles are backfilled from the logs", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      const store = yield* JsonlEventStore.make({ dataDir })
      for (const e of history) yield* store.append(e)
      expect(yield* titlesOf(store)).toEqual(expected)
      const indexFile = join(dataDir, "index.json")
      const index = JSON.parse(readFileSync(indexFile, "utf8")) as { version: number; sessions: Array<{ summary: { sessionId: string; title?: string } }> }
      expect(index.version).toBe(5)
      // As the previous version wrote it: version 3, entries keyed by id, summaries without titles, the journal read to its end.
      for (const entry of index.sessions) delete entry.summary.title
      writeFileSync(indexFile, JSON.stringify({ ...index, version: 3, sessions: Object.fromEntries(index.sessions.map((entry) => [entry.summary.sessionId, entry])) }))
      const reopened = yield* JsonlEventStore.make({ dataDir, readOnly: true })
      expect(yield* titlesOf(reopened)).toEqual(expected)
      const saved = JSON.parse(readFileSync(indexFile, "utf8")) as { version: number; sessions: Array<{ summary: { sessionId: string; title?: string } }> }
      expect(saved.version).toBe(5)
      expect(saved.sessions.find((entry) => entry.summary.sessionId === "renamed")).toMatchObject({ summary: { title: "My own name" } })
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("SQLite: the migration adds the column and fills it from the events; a read-only open of an older database folds them", () =>
    Effect.gen(function*() {
      const filename = `${yield* tempDir}/db/events.sqlite`
      yield* Effect.scoped(Effect.flatMap(storeOf(SqliteEventStore.layer({ filename })), (store) => Effect.forEach(history, store.append)))
      yield* Effect.scoped(withoutTitles("session_titles").pipe(Effect.provide(SqliteClient.layer({ filename }))))
      expect(yield* Effect.scoped(Effect.flatMap(storeOf(SqliteEventStore.layer({ filename, readOnly: true })), titlesOf))).toEqual(expected)
      const store = yield* storeOf(SqliteEventStore.layer({ filename }))
      expect(yield* titlesOf(store)).toEqual(expected)
      yield* store.append(event("derived", 8, "session.titled", { title: "Later" }))
      expect((yield* titlesOf(store)).derived).toBe("Later")
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("PostgreSQL: the migration adds the column and fills it from the events", () =>
    Effect.gen(function*() {
      const url = Redacted.make(yield* freshSchemaUrl("titles_upgrade"))
      yield* Effect.scoped(Effect.flatMap(storeOf(PostgresEventStore.layer({ url })), (store) => Effect.forEach(history, store.append)))
      yield* Effect.scoped(withoutTitles("session_titles").pipe(Effect.provide(PgClient.layer({ url, maxConnections: 1 }))))
      const store = yield* storeOf(PostgresEventStore.layer({ url }))
      expect(yield* titlesOf(store)).toEqual(expected)
    }))
})
