/**
 * The shard settings every runner of a cluster must share. A runner that counted shards
 * differently would map a session to another shard than its peers do, and two runners would drive
 * one session (or none would, and callers would wait forever). So the first runner writes its
 * settings to a one-row table of the database, and every later runner compares its own with it
 * before it joins: a mismatch refuses to start, naming both.
 *
 * @since 0.2.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"

/** The settings that decide which shard a session lives in. */
export interface ShardSettings {
  readonly shardsPerGroup: number
  readonly shardGroups: ReadonlyArray<string>
}

/** This runner's shard settings differ from the ones the cluster's database holds. */
export class ShardSettingsMismatch extends Schema.TaggedError<ShardSettingsMismatch>()("ShardSettingsMismatch", {
  expected: Schema.String,
  given: Schema.String
}) {
  override get message(): string {
    return `This runner's shard settings (${this.given}) differ from the cluster's (${this.expected}): every runner must use the same; start it with the cluster's settings`
  }
}

/** The settings could not be read or written. */
export class ShardSettingsUnavailable extends Schema.TaggedError<ShardSettingsUnavailable>()("ShardSettingsUnavailable", {
  detail: Schema.String
}) {
  override get message(): string {
    return `The cluster's shard settings could not be checked: ${this.detail}`
  }
}

/** The settings as one line, e.g. `300 shards per group, groups default`. */
export const describe = (settings: ShardSettings): string =>
  `${settings.shardsPerGroup} shards per group, groups ${settings.shardGroups.join(",")}`

/**
 * Records the settings when the database has none yet, else checks they are the same. Two runners
 * starting at once on an empty database: one row wins, the other is compared with it.
 */
export const check = (
  settings: ShardSettings,
  options: { readonly table?: string } = {}
): Effect.Effect<void, ShardSettingsMismatch | ShardSettingsUnavailable, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const table = sql(options.table ?? "effect_agent_cluster_settings")
    const given = describe(settings)
    yield* sql`CREATE TABLE IF NOT EXISTS ${table} (id INTEGER PRIMARY KEY, settings TEXT NOT NULL)`
    yield* sql`INSERT INTO ${table} (id, settings) VALUES (1, ${given}) ON CONFLICT (id) DO NOTHING`
    const rows = yield* sql<{ settings: string }>`SELECT settings FROM ${table} WHERE id = 1`
    const expected = rows[0]?.settings
    if (expected !== given) return yield* new ShardSettingsMismatch({ expected: expected ?? "none", given })
  }).pipe(
    // Two runners creating the table at once: one of them fails on PostgreSQL's catalog and tries again.
    Effect.retry({ while: (error) => error._tag === "SqlError", times: 3, schedule: Schedule.spaced(Duration.millis(200)) }),
    Effect.catchTag("SqlError", (error) => Effect.fail(new ShardSettingsUnavailable({ detail: error.message })))
  )
