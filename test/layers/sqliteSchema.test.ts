/**
 * The schema a SQLite database is checked against (`SqliteSchema.expected`, written out so that no
 * start migrates an empty database to learn it) is the one the migrations make: a migration added
 * without bringing the list along fails here, not in a user's store.
 */
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as SqliteEventStore from "../../src/layers/SqliteEventStore.js"
import * as SqliteSchema from "../../src/layers/sql/SqliteSchema.js"

describe("SqliteSchema.expected", () => {
  it.scoped("is what the store's migrations make of an empty database, object for object and word for word", () =>
    Effect.gen(function*() {
      const migrate = Layer.effectDiscard(Migrator.make({})({ loader: SqliteEventStore.migrations, table: "effect_agent_migrations" }))
      const context = yield* Layer.build(migrate.pipe(Layer.provideMerge(SqliteClient.layer({ filename: ":memory:" }))))
      const sql = yield* Effect.provide(SqlClient.SqlClient, context)
      const made = yield* SqliteEventStore.schemaOf(sql)
      expect(made.map((o) => ({ ...o }))).toEqual(SqliteSchema.expected)
      // Not vacuous: every table, index and trigger the store uses is in it.
      expect(SqliteSchema.expected.map((o) => `${o.type} ${o.name}`)).toEqual(expect.arrayContaining(["table events", "table sessions", "table session_usage", "table awaiting_approvals", "index sessions_by_activity", "trigger events_summarize"]))
    }))
})
