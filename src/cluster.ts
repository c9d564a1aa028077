/**
 * `effect-agent/cluster`: sessions as `@effect/cluster` entities on PostgreSQL (CONTRACT.md §9).
 * Each session is owned by one runner; any runner's HTTP server reaches the owner; a dead runner's
 * sessions move to another. It needs the optional peers `@effect/cluster`, `@effect/rpc`,
 * `@effect/workflow`, `@effect/sql` and `@effect/sql-pg`, and lives in a subpath of its own so that
 * importing `effect-agent` never loads them.
 *
 * @since 0.2.0
 */

/** The session entity: its protocol (start, run, cancel a turn, answer approvals, steer, follow-ups). */
export * as SessionEntity from "./cluster/SessionEntity.js"

/** How a runner makes its session engines (one per owned session, short-lived ones for reads). */
export * as Engines from "./cluster/Engines.js"

/** The session entity's behaviour on the runner that owns it. */
export * as Owner from "./cluster/Owner.js"

/** What keeps a session's entity on its runner (a working session), and what lets it go (an idle one). */
export * as KeepAlive from "./cluster/KeepAlive.js"

/** The engine and turn registry that route an HTTP server's operations to each session's owner. */
export * as Routed from "./cluster/Routed.js"

/** A runner: sharding on PostgreSQL with the session entity, and the routed engine. */
export * as Runner from "./cluster/Runner.js"

/** The shard settings every runner must share, checked at start. */
export * as ShardSettings from "./cluster/ShardSettings.js"

/** The cluster secret that connections to the runners' port prove they know. */
export * as ClusterSecret from "./cluster/ClusterSecret.js"

/** The runners' port with its handshake: the guarded socket server and connections. */
export * as RunnerPort from "./cluster/RunnerPort.js"

/** Mutual TLS for the runners' port (opt-in): a runner's certificate, key and the cluster CA. */
export * as RunnerTls from "./cluster/RunnerTls.js"
