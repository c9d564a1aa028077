/**
 * The little of the `pg` driver (a dependency of `@effect/sql-pg`, which ships no types) the
 * PostgreSQL store touches itself: a pool it makes for `PgClient.layerFromPool` (see
 * PostgresEventStore's read-only open).
 */
declare module "pg" {
  export interface PoolConfig {
    readonly connectionString?: string | undefined
    readonly connectionTimeoutMillis?: number | undefined
    readonly max?: number | undefined
    readonly application_name?: string | undefined
    /** Sent in the connection's startup packet, as `PGOPTIONS` is (`-c name=value …`). */
    readonly options?: string | undefined
  }
  export class Pool {
    constructor(config: PoolConfig)
    readonly options: PoolConfig
    on(event: "error", listener: (error: Error) => void): this
    end(): Promise<void>
  }
}
