/**
 * A runner of the cluster: `@effect/cluster` sharding on PostgreSQL (shard locks, runners and
 * messages in the database, runners talking over TCP), the session entity registered on it, and
 * the routed engine and turn registry an HTTP server of this process mounts (see `Routed`).
 *
 * Before it joins, the runner checks its shard settings against the cluster's (`ShardSettings`).
 * When a runner dies or freezes, its shard locks (rows that expire) lapse after `shardLockTtl` and its shards move to the
 * runners left; the sessions they hold continue there (see `Owner`).
 *
 * The runners' port speaks `@effect/cluster`'s protocol over TCP after a handshake (`RunnerPort`):
 * every connection proves it knows the cluster secret (`ClusterSecret`: the cluster database's, or
 * `clusterSecret`) before one byte of it reaches the protocol, and is closed otherwise. Without
 * `tls` the traffic is not encrypted: whoever can read the runners' network reads it (sessions'
 * messages, approvals), so the port belongs on a private network or behind a firewall. With `tls`
 * (`RunnerTls`) the port speaks mutual TLS with the cluster CA, and the handshake runs inside it:
 * every runner of the cluster must then have it. The runner listens on the address it is reached
 * at (`host`) unless `listenHost` says otherwise.
 *
 * `layer` opens its own connections to the cluster's database; `layerWithClient` uses the SQL
 * client of its context, so a runner whose store is on the same database shares one pool.
 *
 * @since 0.2.0
 */
import * as RunnerAddress from "@effect/cluster/RunnerAddress"
import type * as SqlClient from "@effect/sql/SqlClient"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { PostgresEventStore } from "../postgres.js"
import * as ClusterSecret from "./ClusterSecret.js"
import * as Owner from "./Owner.js"
import * as Routed from "./Routed.js"
import * as RunnerPort from "./RunnerPort.js"
import * as RunnerTls from "./RunnerTls.js"
import * as ShardSettings from "./ShardSettings.js"

/** How a runner joins its cluster, on a SQL client of its own context (see `layerWithClient`). */
export interface ClientOptions extends Owner.Options {
  /** The address other runners reach this one at (default 127.0.0.1: one machine only). */
  readonly host?: string
  /** The address the runners' port listens on (default: `host`). */
  readonly listenHost?: string
  /** The port of the runners' traffic (default 34431). */
  readonly port: number
  /** Shards per group: the same on every runner (default 300). */
  readonly shardsPerGroup?: number
  /**
   * How long a shard lock lasts without renewal (default 35 seconds): after a runner died, how
   * long its sessions wait before another runner takes them. Locks are renewed three times as often.
   */
  readonly shardLockTtl?: Duration.DurationInput
  /**
   * The secret connections to the runners' port prove they know (at least 16 characters; the same
   * on every runner). Default: 32 random bytes the first runner writes to the cluster's database.
   */
  readonly clusterSecret?: Redacted.Redacted<string>
  /**
   * Mutual TLS on the runners' port (default none): this runner's certificate and key (PEM, the key
   * `Redacted`) and the cluster CA's certificate. The certificate must name `host` (an IP SAN for an
   * address, a DNS SAN for a name): the other runners check it there. The same on every runner.
   */
  readonly tls?: RunnerTls.RunnerTls | undefined
}

/** How a runner joins its cluster, with connections of its own to the cluster's database. */
export interface Options extends ClientOptions {
  /** The cluster's database (the event store's, or another). */
  readonly databaseUrl: Redacted.Redacted
  /** The most connections the runner opens (default 8). */
  readonly maxConnections?: number
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

/** The name a runner's connections carry in the database (`pg_stat_activity`): which runner holds which. */
export const applicationName = (options: Pick<ClientOptions, "host" | "port">) => `effect-agent-runner ${options.host ?? "127.0.0.1"}:${options.port}`

/**
 * A connection pool to the cluster's database, named for the runner (see `applicationName`). Give
 * it to both the runner (`layerWithClient`) and a store on the same database
 * (`PostgresEventStore.layerFromClient`): one pool per runner.
 */
export const client = (options: Pick<Options, "databaseUrl" | "host" | "port" | "maxConnections">): Layer.Layer<PgClient.PgClient | SqlClient.SqlClient, RunnerFailure> =>
  PgClient.layer({ url: options.databaseUrl, applicationName: applicationName(options), maxConnections: options.maxConnections ?? 8 }).pipe(
    Layer.catchAllCause((cause) =>
      Layer.fail(new RunnerFailure({ detail: `connecting to the cluster's database failed: ${PostgresEventStore.explainError(Cause.squash(cause))}` }))
    )
  )

/** The sharding of a runner with its settings checked first. */
const sharding = (options: ClientOptions) => {
  const address = RunnerAddress.make(options.host ?? "127.0.0.1", options.port)
  const listen = RunnerAddress.make(options.listenHost ?? address.host, options.port)
  const ttl = Duration.decode(options.shardLockTtl ?? Duration.seconds(35))
  const every = Duration.divide(ttl, 3).pipe(Option.getOrElse(() => ttl))
  const settings: ShardSettings.ShardSettings = { shardsPerGroup: options.shardsPerGroup ?? defaultShardsPerGroup, shardGroups: ["default"] }
  // A TLS material that does not build fails the start, with OpenSSL's code (never the material).
  const tls = options.tls
  const checked = Layer.effectDiscard(
    tls === undefined ? ShardSettings.check(settings) : Effect.zipRight(RunnerTls.check(tls), ShardSettings.check(settings))
  )
  const secret = ClusterSecret.layer(options.clusterSecret)
  return RunnerPort.layer({
    runnerAddress: Option.some(address),
    runnerListenAddress: Option.some(listen),
    shardsPerGroup: settings.shardsPerGroup,
    availableShardGroups: settings.shardGroups,
    assignedShardGroups: settings.shardGroups,
    shardLockExpiration: ttl,
    shardLockRefreshInterval: every,
    refreshAssignmentsInterval: Duration.min(every, Duration.seconds(3)),
    runnerHealthCheckInterval: Duration.min(ttl, Duration.minutes(1)),
    entityMessagePollInterval: Duration.min(every, Duration.seconds(10)),
    sendRetryInterval: Duration.millis(100)
  }, { tls }).pipe(
    Layer.provide(secret),
    Layer.catchAll((error) =>
      Layer.fail(new RunnerFailure({ detail: error._tag === "SocketServerError" ? `listening on ${listen.host}:${listen.port} failed` : error.message }))
    ),
    Layer.provide(checked)
  )
}

/**
 * The runner on the SQL client of its context: the routed `SessionEngine` and `Turns` for an HTTP
 * server of this process, with the session entity registered. Needs `Engines` (the runner's own ports).
 */
export const layerWithClient = (options: ClientOptions) =>
  Routed.turnsLayer.pipe(
    Layer.provideMerge(Routed.engineLayer),
    Layer.provideMerge(Owner.layer(options)),
    Layer.provide(sharding(options))
  )

/** The runner with its own connections to the cluster's database (see `layerWithClient`). */
export const layer = (options: Options) => layerWithClient(options).pipe(Layer.provide(client(options)))

