/**
 * A runner of the cluster: `@effect/cluster` sharding on PostgreSQL (shard locks, runners and
 * messages in the database, runners talking over TCP), the session entity registered on it, and
 * the routed engine and turn registry an HTTP server of this process mounts (see `Routed`).
 *
 * Before it joins, the runner checks its shard settings against the cluster's (`ShardSettings`).
 * When a runner dies, its shard locks lapse after `shardLockTtl` and its shards move to the
 * runners left; the sessions they hold continue there (see `Owner`).
 *
 * @since 0.2.0
 */
import * as RunnerAddress from "@effect/cluster/RunnerAddress"
import * as NodeClusterSocket from "@effect/platform-node/NodeClusterSocket"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as Duration from "effect/Duration"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as Owner from "./Owner.js"
import * as Routed from "./Routed.js"
import * as ShardSettings from "./ShardSettings.js"

/** How a runner joins its cluster. */
export interface Options extends Owner.Options {
  /** The cluster's database (the event store's, or another). */
  readonly databaseUrl: Redacted.Redacted
  /** The address other runners reach this one at (default 127.0.0.1: one machine only). */
  readonly host?: string
  /** The port of the runners' traffic (default 34431). */
  readonly port: number
  /** Shards per group: the same on every runner (default 300). */
  readonly shardsPerGroup?: number
  /**
   * How long a shard lock lasts without renewal (default 35 seconds): after a runner died, how
   * long its sessions wait before another runner takes them. Locks are renewed three times as often.
   */
  readonly shardLockTtl?: Duration.DurationInput
}

/** The runner could not join its cluster (the database, the runners' port). */
export class RunnerFailure extends Schema.TaggedError<RunnerFailure>()("RunnerFailure", {
  detail: Schema.String
}) {
  override get message(): string {
    return `The cluster runner could not start: ${this.detail}`
  }
}

/** The default port of the runners' traffic. */
export const defaultPort = 34431

/** The default shards per group. */
export const defaultShardsPerGroup = 300

/** The sharding of a runner with its settings checked first. */
const sharding = (options: Options) => {
  const address = RunnerAddress.make(options.host ?? "127.0.0.1", options.port)
  const ttl = Duration.decode(options.shardLockTtl ?? Duration.seconds(35))
  const every = Duration.divide(ttl, 3).pipe(Option.getOrElse(() => ttl))
  const settings: ShardSettings.ShardSettings = { shardsPerGroup: options.shardsPerGroup ?? defaultShardsPerGroup, shardGroups: ["default"] }
  const database = PgClient.layer({ url: options.databaseUrl, applicationName: "effect-agent-cluster", maxConnections: 8 }).pipe(
    Layer.catchAllCause(() => Layer.fail(new RunnerFailure({ detail: "connecting to the cluster's database failed" })))
  )
  const checked = Layer.effectDiscard(ShardSettings.check(settings))
  return NodeClusterSocket.layer({
    storage: "sql",
    shardingConfig: {
      runnerAddress: Option.some(address),
      runnerListenAddress: Option.some(address),
      shardsPerGroup: settings.shardsPerGroup,
      availableShardGroups: settings.shardGroups,
      assignedShardGroups: settings.shardGroups,
      shardLockExpiration: ttl,
      shardLockRefreshInterval: every,
      refreshAssignmentsInterval: Duration.min(every, Duration.seconds(3)),
      runnerHealthCheckInterval: Duration.min(ttl, Duration.minutes(1)),
      entityMessagePollInterval: Duration.min(every, Duration.seconds(10)),
      sendRetryInterval: Duration.millis(100)
    }
  }).pipe(
    Layer.catchAll((error) =>
      Layer.fail(new RunnerFailure({ detail: error._tag === "SocketServerError" ? `listening on ${address.host}:${address.port} failed` : error.message }))
    ),
    Layer.provide(checked),
    Layer.provide(database)
  )
}

/**
 * The runner: the routed `SessionEngine` and `Turns` for an HTTP server of this process, with the
 * session entity registered. Needs `Engines` (the runner's own ports).
 */
export const layer = (options: Options) =>
  Routed.turnsLayer.pipe(
    Layer.provideMerge(Routed.engineLayer),
    Layer.provideMerge(Owner.layer(options)),
    Layer.provide(sharding(options))
  )

