/**
 * A kept state (`FoldedStates`) and a log another connection changed under it, on a real database:
 * two stores on one SQLite file or one PostgreSQL schema, as two processes would have. A log deleted
 * answers `SessionNotFound`, never the state it had; a log replaced by another with the same id
 * answers the new log's state, never the old one read on with the new events.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as SqlClient from "@effect/sql/SqlClient"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import { describe, expect, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import * as FoldedStates from "../../src/cluster/FoldedStates.js"
import type { AgentEvent } from "../../src/index.js"
import { EventStore, SessionState } from "../../src/index.js"
import * as PostgresEventStore from "../../src/layers/PostgresEventStore.js"
import * as SqliteEventStore from "../../src/layers/SqliteEventStore.js"
import { freshSchemaUrl } from "../postgres.js"

/** A log by hand: created, then `titles` titles; `tag` tells one log of the id from another. */
const logOf = (sessionId: string, tag: string, titles: number): ReadonlyArray<AgentEvent.AgentEvent> => {
  const at = (sequence: number) => ({ id: `${tag}-${sequence}`, sessionId, sequence, timestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, sequence)).toISOString() })
  return [
    { ...at(1), type: "session.created", payload: { cwd: `/work/${tag}`, client: "test" } },
    ...Array.from({ length: titles }, (_, i) => ({ ...at(i + 2), type: "session.titled", payload: { title: `${tag} ${i + 1}` } }))
  ] as ReadonlyArray<AgentEvent.AgentEvent>
}

const storeOf = (kind: "sqlite" | "postgres", database: string) =>
  Layer.build(kind === "sqlite" ? SqliteEventStore.layer({ filename: database }) : PostgresEventStore.layer({ url: Redacted.make(database) })).pipe(
    Effect.map((context) => context.unsafeMap.get(EventStore.EventStore.key) as EventStore.EventStore.Service)
  )

/** Another connection deletes the session's rows, as another process would. */
const deleteLog = (kind: "sqlite" | "postgres", database: string, sessionId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.forEach(["events", "sessions", "session_usage", "awaiting_approvals", "writer_leases"], (table) =>
      sql`DELETE FROM ${sql(table)} WHERE session_id = ${sessionId}`)).pipe(
    Effect.provide(
      kind === "sqlite"
        ? Layer.orDie(SqliteClient.layer({ filename: database })) as Layer.Layer<SqlClient.SqlClient>
        : Layer.orDie(PgClient.layer({ url: Redacted.make(database), maxConnections: 1 })) as Layer.Layer<SqlClient.SqlClient>
    ),
    Effect.orDie
  )

const wholeFold = (store: EventStore.EventStore.Service, sessionId: string) =>
  Effect.map(Stream.runCollect(store.read(sessionId)), (log) => Either.getOrThrow(SessionState.replay(Chunk.toReadonlyArray(log)))!)

for (const kind of ["sqlite", "postgres"] as const) {
  describe(`FoldedStates on ${kind}, the log changed by another connection`, () => {
    it.scopedLive("a deleted log is not found; a log replaced under the same id is folded anew", () =>
      Effect.gen(function*() {
        const dir = mkdtempSync(join(tmpdir(), "effect-agent-folded-"))
        yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
        const database = kind === "sqlite" ? join(dir, "events.sqlite") : yield* freshSchemaUrl("folded_states")
        const writer = yield* storeOf(kind, database)
        const reader = yield* storeOf(kind, database)
        const states = FoldedStates.make(reader)

        const deleted = "sess_deletedlog"
        yield* writer.appendAll(logOf(deleted, "first", 2))
        expect((yield* states.get(deleted)).title).toBe("first 2")
        yield* deleteLog(kind, database, deleted)
        expect(yield* Effect.flip(states.get(deleted))).toMatchObject({ _tag: "SessionNotFound", sessionId: deleted })
        expect(states.size()).toBe(0)

        // Replaced by a longer log of another session under the same id: the new log's state, folded whole.
        const replaced = "sess_replacedlog"
        yield* writer.appendAll(logOf(replaced, "old", 2))
        expect((yield* states.get(replaced)).cwd).toBe("/work/old")
        yield* deleteLog(kind, database, replaced)
        yield* writer.appendAll(logOf(replaced, "new", 5))
        const anew = yield* states.get(replaced)
        expect(anew).toEqual(yield* wholeFold(writer, replaced))
        expect(anew.cwd).toBe("/work/new")
        // And read on as before once it is kept.
        yield* writer.append(logOf(replaced, "new", 6).at(-1)!)
        expect((yield* states.get(replaced)).title).toBe("new 6")
      }).pipe(Effect.provide(NodeContext.layer)))
  })
}
