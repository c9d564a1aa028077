/**
 * The shard settings every runner must share (`ShardSettings.check`, on the test PostgreSQL): the
 * first runner records them, runners starting at once agree, and other settings are refused typed.
 */
import { describe, expect, it } from "@effect/vitest"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import { ShardSettings } from "../../src/cluster.js"
import { freshDatabaseUrl } from "../postgres.js"

describe("ShardSettings.check", () => {
  it.live("records the first settings; the same pass, at once too; others fail ShardSettingsMismatch", () =>
    Effect.gen(function*() {
      const url = yield* freshDatabaseUrl("shard_settings")
      // Each runner has its own connections: four start at once on an empty database.
      const check = (settings: ShardSettings.ShardSettings) =>
        ShardSettings.check(settings).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 })))
      const same = { shardsPerGroup: 12, shardGroups: ["default"] }
      yield* Effect.all([check(same), check(same), check(same), check(same)], { concurrency: "unbounded" })
      const refused = yield* Effect.flip(check({ shardsPerGroup: 13, shardGroups: ["default"] }))
      expect(refused).toBeInstanceOf(ShardSettings.ShardSettingsMismatch)
      expect(refused.message).toContain("(13 shards per group, groups default) differ from the cluster's (12 shards per group, groups default)")
      expect(yield* Effect.flip(check({ shardsPerGroup: 12, shardGroups: ["default", "other"] }))).toMatchObject({ _tag: "ShardSettingsMismatch" })
      yield* check(same)
    }))
})
