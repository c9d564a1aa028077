/**
 * A turn run inside a caller's `sql.withTransaction` on a session whose writer the engine already
 * holds (taken by an earlier turn, kept in the engine's cache): the lease's refusal does not fire
 * then. On main the turn's appends ran inside the caller's transaction, on the caller's connection:
 * on the store's database they were gone at its rollback while the engine held them as stored
 * (test/layers/sqlLease.integration.test.ts); here, another database's, the append failed
 * `unavailable` ("Failed to prepare statement", naming the store's file) — the test failed on main.
 * Now the first append is refused `in_transaction`, nothing stored, and the session goes on outside.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import * as SqlClient from "@effect/sql/SqlClient"
import { describe, expect, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import { join } from "node:path"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import * as SessionEngineModule from "../../src/engine/SessionEngine.js"
import * as FakeModelProvider from "../../src/layers/FakeModelProvider.js"
import * as SqliteEventStore from "../../src/layers/SqliteEventStore.js"
import * as IdGenerator from "../../src/services/IdGenerator.js"
import { collect, tempDir, typesOf } from "../helpers.js"

describe("a turn inside a caller's SQL transaction, the session's writer already held", () => {
  it.scoped("is refused at its first append (in_transaction): nothing stored, nothing rolled back under the engine; the session goes on outside", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const context = yield* Layer.build(
        SessionEngineModule.layer().pipe(
          Layer.provideMerge(SqliteEventStore.layer({ filename: join(dir, "events.sqlite") })),
          Layer.provide(FakeModelProvider.layer({ responses: [{ chunks: ["one"] }, { chunks: ["two"] }, { chunks: ["three"] }] })),
          Layer.provide(IdGenerator.layerSequential)
        )
      )
      // The caller's own database: @effect/sql has one transaction tag for every client.
      const caller = Context.get(yield* Layer.build(SqliteClient.layer({ filename: join(dir, "mine.sqlite") })), SqlClient.SqlClient)
      const engine = Context.get(context, SessionEngine)
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      yield* collect(engine.runTurn({ sessionId, userMessage: "one" }))
      const before = yield* collect(engine.replaySession({ sessionId }))

      const inside = yield* Effect.either(caller.withTransaction(collect(engine.runTurn({ sessionId, userMessage: "two" }))))
      expect(Either.isLeft(inside) && inside.left).toMatchObject({ _tag: "EventStoreFailure", reason: "in_transaction", operation: "append" })
      expect(yield* collect(engine.replaySession({ sessionId }))).toEqual(before)

      const outside = yield* collect(engine.runTurn({ sessionId, userMessage: "three" }))
      expect(outside.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
      expect(typesOf(yield* collect(engine.replaySession({ sessionId }))).filter((t) => t === "turn.started")).toHaveLength(2)
    }).pipe(Effect.provide(NodeContext.layer)))
})
