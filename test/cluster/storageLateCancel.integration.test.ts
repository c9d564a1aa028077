/**
 * A late cancel (SQLSTATE 57014 on a statement whose fiber was not interrupted, see
 * src/layers/sql/LateCancel.ts) on `@effect/cluster`'s SQL storages, which share a runner's pool
 * with the store. Unretried, the runner storage's `register` failed (a runner's start), and the
 * message storage's operations (a request saved: a turn or an answer sent to a session's owner; a
 * reply saved) failed their message. Each test holds a lock on the storage's table that its
 * statement waits for and cancels that statement from outside (test/postgresLocks.ts).
 */
import * as MessageStorage from "@effect/cluster/MessageStorage"
import * as Runner from "@effect/cluster/Runner"
import * as RunnerAddress from "@effect/cluster/RunnerAddress"
import * as RunnerStorage from "@effect/cluster/RunnerStorage"
import * as ShardId from "@effect/cluster/ShardId"
import * as ShardingConfig from "@effect/cluster/ShardingConfig"
import * as SqlMessageStorage from "@effect/cluster/SqlMessageStorage"
import * as SqlRunnerStorage from "@effect/cluster/SqlRunnerStorage"
import * as SqlClient from "@effect/sql/SqlClient"
import * as PgClient from "@effect/sql-pg/PgClient"
import { describe, expect, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { lateCancelled } from "../../src/cluster/RunnerPort.js"
import { freshSchemaUrl } from "../postgres.js"
import { cancelled, succeeded } from "../postgresLocks.js"

/** The runner's storages as `RunnerPort.layer` builds them, on a fresh schema, and an admin client on another pool. */
const setup = Effect.gen(function*() {
  const url = Redacted.make(yield* freshSchemaUrl("cluster_late_cancel"))
  const client = Layer.succeedContext(yield* Layer.build(PgClient.layer({ url, maxConnections: 4 })))
  const needs = Layer.merge(client, ShardingConfig.layer())
  const storages = yield* Layer.build(Layer.merge(
    lateCancelled(RunnerStorage.RunnerStorage, SqlRunnerStorage.layer),
    lateCancelled(MessageStorage.MessageStorage, SqlMessageStorage.layer)
  ).pipe(Layer.provide(needs)))
  const admin = Context.get(yield* Layer.build(PgClient.layer({ url, maxConnections: 3 })), SqlClient.SqlClient)
  return { runners: Context.get(storages, RunnerStorage.RunnerStorage), messages: Context.get(storages, MessageStorage.MessageStorage), admin }
})

const runner = Runner.make({ address: RunnerAddress.make("127.0.0.1", 34431), groups: ["default"], weight: 1 })

describe("@effect/cluster's SQL storages: a cancel their fiber did not ask for", () => {
  it.live("a runner's registration whose statement is cancelled registers again", () =>
    Effect.scoped(Effect.gen(function*() {
      const { admin, runners } = yield* setup
      succeeded(yield* cancelled(admin, "cluster_runners", runners.register(runner, true)))
      expect(yield* admin`SELECT address FROM cluster_runners`).toHaveLength(1)
    })))

  it.live("a message storage operation whose statement is cancelled runs again", () =>
    Effect.scoped(Effect.gen(function*() {
      const { admin, messages } = yield* setup
      succeeded(yield* cancelled(admin, "cluster_messages", messages.resetShards([ShardId.make("default", 1)])))
      succeeded(yield* cancelled(admin, "cluster_messages", messages.unprocessedMessages([ShardId.make("default", 1)])))
    })))
})
