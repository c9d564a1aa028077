/**
 * A session of an SQL store with a row missing (review 46): a hand edit, a partial restore. SQLite
 * and PostgreSQL read past the gap in silence — `replay` printed the session without the lost
 * event, `run --session` then refused it as an "Impossible event", and `repair` said there was
 * nothing to repair. Now a read fails typed at the gap, as a JSONL log's does (`gap in sequence`),
 * naming what the user can do; the events before the gap are read (a fork at a turn before it
 * reads no further).
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as SqlClient from "@effect/sql/SqlClient"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import { describe, expect, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import * as PostgresEventStore from "../../src/layers/PostgresEventStore.js"
import * as SqliteEventStore from "../../src/layers/SqliteEventStore.js"
import { EventStore } from "../../src/services/EventStore.js"
import { tempDir } from "../helpers.js"
import { freshSchemaUrl } from "../postgres.js"

/** A store of each kind, and a client of its database (to lose a row as a hand edit would). */
const stores: ReadonlyArray<[string, Effect.Effect<{ readonly store: EventStore.Service; readonly sql: Layer.Layer<SqlClient.SqlClient> }, unknown, Scope.Scope | NodeContext.NodeContext>]> = [
  ["sqlite", Effect.gen(function*() {
    const filename = `${yield* tempDir}/events.sqlite`
    const store = yield* Effect.map(Layer.build(SqliteEventStore.layer({ filename })), Context.get(EventStore))
    return { store, sql: Layer.orDie(SqliteClient.layer({ filename })) }
  })],
  ["postgres", Effect.gen(function*() {
    const url = yield* freshSchemaUrl("sequence_gap")
    const store = yield* Effect.map(Layer.build(PostgresEventStore.layer({ url: Redacted.make(url) })), Context.get(EventStore))
    return { store, sql: Layer.orDie(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 })) }
  })]
]

const event = (sequence: number, type: string, payload: object, turnId?: string) =>
  ({ id: `evt_${sequence}`, sessionId: "sess_gap", sequence, timestamp: "2026-01-01T00:00:00.000Z", type, payload, ...(turnId === undefined ? {} : { turnId }) }) as AgentEvent

const session = [
  event(1, "session.created", { cwd: "/work", client: "test" }),
  event(2, "turn.started", { promptPreview: "one" }, "turn_1"),
  event(3, "user.message", { content: "one" }, "turn_1"),
  event(4, "turn.completed", { stopReason: "final" }, "turn_1"),
  event(5, "turn.started", { promptPreview: "two" }, "turn_2"),
  event(6, "user.message", { content: "two" }, "turn_2"),
  event(7, "model.delta", { text: "hi" }, "turn_2"),
  event(8, "turn.completed", { stopReason: "final" }, "turn_2")
]

describe.each(stores)("%s: a session with a row missing", (_name, make) => {
  it.scoped("fails typed at the gap, saying what to do; the events before it are read", () =>
    Effect.gen(function*() {
      const { sql, store } = yield* make
      yield* store.appendAll(session)
      yield* Effect.flatMap(SqlClient.SqlClient, (client) => client`DELETE FROM events WHERE session_id = 'sess_gap' AND sequence = 6`).pipe(Effect.provide(sql))
      const failure = yield* Effect.flip(Stream.runCollect(store.read("sess_gap")))
      expect(failure).toMatchObject({ _tag: "EventStoreFailure", reason: "corrupt", operation: "read", sessionId: "sess_gap", sequence: 7 })
      expect(failure.detail).toContain("gap in sequence: expected 6, found 7")
      expect(failure.detail).toContain("effect-agent fork sess_gap --at <sequence>")
      // From a sequence: the same gap.
      expect((yield* Effect.flip(Stream.runCollect(store.read("sess_gap", { fromSequence: 5 })))).detail).toContain("expected 6, found 7")
      // The first turn is read whole: what a fork at its end reads.
      const before = yield* Stream.runCollect(Stream.take(store.read("sess_gap"), 4))
      expect(Chunk.toArray(before).map((e) => e.sequence)).toEqual([1, 2, 3, 4])
      // Past the gap: read as stored.
      expect(Chunk.toArray(yield* Stream.runCollect(store.read("sess_gap", { fromSequence: 7 }))).map((e) => e.sequence)).toEqual([7, 8])
    }).pipe(Effect.provide(NodeContext.layer)))
})
