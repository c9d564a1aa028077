/**
 * The writer lease of the SQL stores (SQLite, PostgreSQL): one writer per session, across processes
 * and machines that share one database.
 *
 * A writer holds a row of `writer_leases` naming it (see Holder) with a token unique to its
 * acquisition and an expiry (epoch ms), and renews the expiry from a fiber (on the store's runtime) that lives as long as
 * the acquisition's scope. Another writer gets `SessionBusy` naming the holder, unless the holder is
 * gone: on this host (same boot, same pid namespace) its process tells at once; from anywhere else
 * only the expiry can, so a lease whose holder stopped renewing is taken over once it lapsed. A
 * takeover is a compare-and-swap on the token, so of two writers taking over one lease, one wins.
 * Of its own rows a process knows for sure: one whose token it does not hold is a release it lost.
 *
 * The lease does not guard appends: a writer that lost its lease without knowing (paused longer
 * than the ttl, cut off from the database) is stopped by the stores' sequence check instead, which
 * refuses a sequence another writer already took.
 *
 * Expiries are set and judged on one clock for all writers: the database's, where the store has
 * one (PostgreSQL: `clock_timestamp()`), so machines sharing the database need not agree on the
 * time; SQLite's writers share a machine and use its clock (Effect's `Clock`, so tests drive it with
 * `TestClock`; `clock: "writer"` does the same on PostgreSQL). On a wall clock, a step forward of
 * more than two thirds of the ttl let a second process take a live holder's lease (one in another
 * container, whose process it cannot see); so where the store gives `monotonic` (SQLite: the host's
 * `CLOCK_MONOTONIC`, the same for every process and container of one boot), a lease also carries
 * its expiry on that clock (`monotonicExpiresAt`, in the holder's JSON, rewritten at each renewal),
 * and a holder that shares it (`Holder.sharesMonotonicClock`) is judged on it alone. The wall-clock
 * `expires_at` stays for the rest: a holder on another host, or one written by an older version.
 *
 * The statements are plain SQL both SQLite and PostgreSQL run; each store creates the table in its
 * own migrations (`session_id` text primary key, `token` text, `holder` text, `expires_at` an
 * integer wide enough for epoch ms).
 *
 * @since 0.1.0
 * @internal
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Runtime from "effect/Runtime"
import type * as Scope from "effect/Scope"
import { EventStoreFailure, SessionBusy } from "../../domain/Errors.js"
import * as PlainRelease from "../PlainRelease.js"
import * as CallerTransaction from "../sql/CallerTransaction.js"
import * as Holder from "./Holder.js"

/** How long a lease lasts and how often its writer renews it. */
export interface Timing {
  /** How long a lease lasts without renewal (default 30 seconds). */
  readonly ttl?: Duration.DurationInput
  /** How often the writer renews its lease (default a third of `ttl`); keep it well under `ttl`. */
  readonly renewEvery?: Duration.DurationInput
}

/** The lease settings a SQL store takes. */
export interface Settings extends Timing {
  /**
   * Who this writer says it is (default: this process, `Holder.current`). Tests use it to stand in
   * for a writer on another machine.
   */
  readonly identity?: (now: Date) => Holder.Holder
  /**
   * Whose clock sets and judges expiries: the database's (the default where the store reads one,
   * see `Options.databaseNow`) or each writer's own (`"writer"`: Effect's `Clock`).
   */
  readonly clock?: "database" | "writer"
}

/** What the lease needs from its store: how to name a database error. */
export interface Options extends Settings {
  /** The store's failure for a database error met while taking the lease. */
  readonly failure: (sessionId: string) => (error: SqlError) => EventStoreFailure
  /** Where the database is, for failures (a file name; for a server, its address without secrets). */
  readonly path?: string
  /** The database's time (epoch ms), for a store whose database has a clock all writers share. */
  readonly databaseNow?: Effect.Effect<number, SqlError>
  /**
   * The host's monotonic time (ms), for a store whose writers mostly share a host (SQLite: `hostMonotonic`):
   * leases of holders that read the same clock are judged on it, whatever the wall clock does.
   */
  readonly monotonic?: Effect.Effect<number>
  /**
   * How a step runs again when it failed without changing anything (default: it does not).
   * PostgreSQL runs again a statement cancelled that its fiber did not interrupt (see `LateCancel`).
   */
  readonly retried?: <A, E, R>(step: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
}

/** The default ttl: long enough for a busy machine's pauses, short enough to wait out after a crash. */
export const defaultTtl = Duration.seconds(30)

/** The lease's timing as milliseconds, defaults applied. */
export const timing = (settings: Timing): { readonly ttlMs: number; readonly renewMs: number } => {
  const ttlMs = Duration.toMillis(settings.ttl ?? defaultTtl)
  const renewMs = settings.renewEvery === undefined ? ttlMs / 3 : Duration.toMillis(settings.renewEvery)
  return { ttlMs, renewMs: Math.max(1, Math.floor(renewMs)) }
}

/** The host's monotonic clock in milliseconds: `CLOCK_MONOTONIC` (`process.hrtime`), since boot, shared by its processes. */
export const hostMonotonic: Effect.Effect<number> = Effect.sync(() => Number(process.hrtime.bigint() / BigInt(1_000_000)))

/** A lease row's expiry on the host's monotonic clock, if its holder's JSON carries one. */
const monotonicExpiryOf = (holderText: string): number | undefined => {
  try {
    const value = (JSON.parse(holderText) as { readonly monotonicExpiresAt?: unknown }).monotonicExpiresAt
    return typeof value === "number" && Number.isFinite(value) ? value : undefined
  } catch {
    return undefined
  }
}

type Attempt =
  | { readonly _tag: "Held"; readonly takenOverFrom: Holder.Holder | undefined; readonly expired: boolean }
  | { readonly _tag: "Busy"; readonly holder: string }
  | { readonly _tag: "Retry" }

/**
 * The tokens of the leases this process holds or is taking, whatever its store: a row naming this
 * process with a token not here is a lease it let go whose DELETE was lost (the database was down
 * when the scope closed). Its pid alone said "alive" for ever, and the process was `SessionBusy`
 * with itself until it restarted; it is taken over at once instead. A token is added before the
 * row is written, so no reader of this process sees its row without it.
 */
const heldHere = new Set<string>()

/** A lease row as read back (PostgreSQL returns a `bigint` column as text). */
interface Row {
  readonly token: string
  readonly holder: string
  readonly expires_at: number | string
}

/**
 * The `acquireWriter` of a SQL store: takes the session's lease for the scope, renews it while the
 * scope is open, and deletes it when the scope closes.
 */
export const make = (options: Options) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const { renewMs, ttlMs } = timing(options)
    const identity = options.identity ?? Holder.current
    const retried = options.retried ?? ((step) => step)
    /** The time expiries are set and judged on (see the module's comment). */
    const now: Effect.Effect<number, SqlError> = options.clock !== "writer" && options.databaseNow !== undefined
      ? options.databaseNow
      : Clock.currentTimeMillis

    /** Now on the host's monotonic clock, where the store gives one. */
    const monotonicNow: Effect.Effect<number | undefined> = options.monotonic ?? Effect.succeed(undefined)
    /** The holder column: who we are, and our expiry on the host's monotonic clock if there is one. */
    const holderText = (me: Holder.Holder, monotonicAt: number | undefined) =>
      JSON.stringify(monotonicAt === undefined ? me : { ...me, monotonicExpiresAt: monotonicAt + ttlMs })

    /** One try: held (with a gone holder taken over, if any), busy, or the row moved meanwhile (retry). */
    const attempt = (sessionId: string, me: Holder.Holder): Effect.Effect<Attempt, SqlError> =>
      Effect.gen(function*() {
        const at = yield* now
        const monotonicAt = yield* monotonicNow
        const expires = at + ttlMs
        const [row] = yield* sql<Row>`SELECT token, holder, expires_at FROM writer_leases WHERE session_id = ${sessionId}`
        if (row === undefined) {
          const inserted = yield* sql<{ token: string }>`
            INSERT INTO writer_leases (session_id, token, holder, expires_at)
            VALUES (${sessionId}, ${me.nonce}, ${holderText(me, monotonicAt)}, ${expires})
            ON CONFLICT (session_id) DO NOTHING
            RETURNING token`
          return inserted.length === 1 ? { _tag: "Held", takenOverFrom: undefined, expired: false } : { _tag: "Retry" }
        }
        const holder = Holder.parse(row.holder)
        // On this host the holder's process tells; from another host (or container) only the expiry
        // can — and for a holder text that is not one (another release's, a hand-edited row) too:
        // judged dead, it was taken at once, whoever wrote it.
        // A row of this process whose token it does not hold is a release that was lost: dead.
        const liveness = holder === undefined
          ? "unknown"
          : Holder.isThisProcess(holder) && !heldHere.has(row.token)
          ? "dead"
          : Holder.liveness(holder)
        // A holder reading our monotonic clock is judged on it: a step of the wall clock moves neither.
        const monotonicExpiry = holder !== undefined && monotonicAt !== undefined && Holder.sharesMonotonicClock(holder)
          ? monotonicExpiryOf(row.holder)
          : undefined
        const expired = monotonicExpiry !== undefined ? monotonicExpiry <= monotonicAt! : Number(row.expires_at) <= at
        if (liveness === "alive" || (liveness === "unknown" && !expired)) {
          return { _tag: "Busy", holder: holder === undefined ? "a writer this release cannot read" : Holder.describe(holder) }
        }
        // Compare-and-swap on the token: of two writers taking over one lease, one wins.
        const taken = yield* sql<{ token: string }>`
          UPDATE writer_leases SET token = ${me.nonce}, holder = ${holderText(me, monotonicAt)}, expires_at = ${expires}
          WHERE session_id = ${sessionId} AND token = ${row.token}
          RETURNING token`
        return taken.length === 1 ? { _tag: "Held", takenOverFrom: holder, expired: liveness === "unknown" } : { _tag: "Retry" }
      })

    /** Pushes the expiry on every `renewEvery` until the lease is taken from us; a failed renewal is retried the next time. */
    const renew = (sessionId: string, me: Holder.Holder) =>
      Effect.gen(function*() {
        while (true) {
          yield* Effect.sleep(Duration.millis(renewMs))
          // Run again like every other statement of the lease (a busy SQLite, a late cancel): a renewal missed waits a third of the ttl.
          const renewed = yield* retried(Effect.flatMap(Effect.zip(now, monotonicNow), ([at, monotonicAt]) =>
            monotonicAt === undefined
              ? sql<{ token: string }>`
                UPDATE writer_leases SET expires_at = ${at + ttlMs}
                WHERE session_id = ${sessionId} AND token = ${me.nonce}
                RETURNING token`
              : sql<{ token: string }>`
                UPDATE writer_leases SET expires_at = ${at + ttlMs}, holder = ${holderText(me, monotonicAt)}
                WHERE session_id = ${sessionId} AND token = ${me.nonce}
                RETURNING token`
          )).pipe(
            Effect.catchAll((error) =>
              Effect.as(Effect.logWarning(`effect-agent: could not renew the writer lease of session ${sessionId}: ${error.message}`), [{ token: me.nonce }])
            )
          )
          if (renewed.length === 0) {
            // Our lease lapsed and another writer took it: from here on the sequence check stops our appends.
            return yield* Effect.logWarning(`effect-agent: the writer lease of session ${sessionId} was taken by another writer`)
          }
        }
      })

    /** Takes the lease as `me`, whose token is among this process's from before its first statement until a failure. */
    const take = (sessionId: string) =>
      Effect.flatMap(Clock.currentTimeMillis, (at) => {
        const me = identity(new Date(at))
        heldHere.add(me.nonce)
        return Effect.onError(takeAs(sessionId, me), () => Effect.sync(() => void heldHere.delete(me.nonce)))
      })

    const takeAs = (sessionId: string, me: Holder.Holder) =>
      Effect.gen(function*() {
        for (let round = 0; round < 100; round++) {
          // An attempt reads the row again, so one that failed without changing anything runs again whole.
          const result = yield* retried(attempt(sessionId, me))
          if (result._tag === "Busy") return yield* new SessionBusy({ sessionId, holder: result.holder })
          if (result._tag === "Held") {
            if (result.takenOverFrom !== undefined) {
              const why = result.expired ? "whose lease expired" : "which is gone"
              yield* Effect.logWarning(`effect-agent: took over the writer lease of session ${sessionId} left by ${Holder.describe(result.takenOverFrom)}, ${why}`)
            }
            return me
          }
        }
        return yield* new EventStoreFailure({
          reason: "unavailable",
          operation: "lock",
          sessionId,
          detail: "the writer lease kept changing",
          ...(options.path === undefined ? {} : { path: options.path })
        })
      }).pipe(Effect.catchTag("SqlError", (error) => Effect.fail(options.failure(sessionId)(error))))

    // The renewer and the DELETE run on the store's runtime (its context and refs when it was made),
    // not the acquirer's: `Effect.acquireRelease` and `forkScoped` kept the fiber that took the lease
    // — its context, span and annotations — alive for the lease's whole life (a session held in the
    // engine's cache), and ran the DELETE inside a transaction the acquirer was in, if it was. Their
    // warnings name the session in their text; their queries are traced under the store, which
    // outlives the turn that first took the lease.
    const runtime = yield* Effect.runtime<never>()
    /** Starts `effect` in a fiber of its own on the store's runtime (when run, not when built: a finalizer is built at the acquire). */
    const onStore = <A, E>(effect: Effect.Effect<A, E>) => Effect.sync(() => Runtime.runFork(runtime)(effect))

    /**
     * A caller's transaction (`sql.withTransaction`, on any client: @effect/sql's transaction tag is
     * one for all) would take the lease in it, while the renewer and the DELETE run on other
     * connections: PostgreSQL's DELETE misses the uncommitted row (left held by this live process)
     * or waits for the transaction's row lock, SQLite's one connection waits for the transaction's
     * permit. Taken outside it, the lease would be fine on PostgreSQL but wait for the same permit on
     * SQLite; and the turn's appends would go into the caller's transaction, which may roll back
     * events the engine holds as stored. So a writer is refused there, on both (and an append too,
     * for a writer taken before the transaction: see `EventTables`).
     */
    const outsideTransactions = (sessionId: string) =>
      CallerTransaction.refused({ operation: "lock", sessionId, why: "its session's writer lease is taken outside one", path: options.path })

    return (sessionId: string): Effect.Effect<void, SessionBusy | EventStoreFailure, Scope.Scope> =>
      Effect.zipRight(outsideTransactions(sessionId), PlainRelease.acquireRelease(
        // Renewed while held; interruptible even when acquired from an uninterruptible region (the engine takes locks so).
        Effect.flatMap(take(sessionId), (me) => Effect.map(onStore(Effect.interruptible(renew(sessionId, me))), (renewer) => ({ me, renewer }))),
        // The renewer stops first, then the row goes. A release lost leaves the row to its expiry,
        // and to this process's next taking of it (its token is no longer held here): run again.
        ({ me, renewer }) =>
          Effect.zipRight(
            Fiber.interrupt(renewer),
            Effect.flatMap(onStore(retried(sql`DELETE FROM writer_leases WHERE session_id = ${sessionId} AND token = ${me.nonce}`).pipe(Effect.ignore)), Fiber.join)
          ).pipe(Effect.ensuring(Effect.sync(() => void heldHere.delete(me.nonce))))
      )).pipe(Effect.asVoid)
  })
