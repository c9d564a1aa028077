/**
 * The writer lease both SQL stores share (src/layers/writer/Lease.ts), on SQLite and on the test
 * PostgreSQL: renewed while its writer lives, taken over once it expires, never released for another
 * writer, and the sequence check as the fence against a writer that lost its lease without knowing.
 *
 * Writers on "other machines" are stores on one database with another identity (host name, boot): this
 * process cannot see their processes, so only their leases' expiry tells. Time is the TestClock's;
 * after moving it, a test waits for the renewal to reach the database (real I/O) — each renewal's
 * UPDATE, as @effect/sql traces it, is an event the test awaits — never for a time.
 */
import { spawnSync } from "node:child_process"
import { readFileSync } from "node:fs"
import { hostname } from "node:os"
import { join } from "node:path"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import { describe, expect, it } from "@effect/vitest"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as FiberId from "effect/FiberId"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Queue from "effect/Queue"
import * as Redacted from "effect/Redacted"
import * as Scope from "effect/Scope"
import * as TestClock from "effect/TestClock"
import * as Tracer from "effect/Tracer"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import * as PostgresEventStore from "../../src/layers/PostgresEventStore.js"
import * as SqliteEventStore from "../../src/layers/SqliteEventStore.js"
import * as Holder from "../../src/layers/writer/Holder.js"
import * as Lease from "../../src/layers/writer/Lease.js"
import type { EventStore } from "../../src/services/EventStore.js"
import { collect, tempDir } from "../helpers.js"
import { freshSchemaUrl } from "../postgres.js"

const ttl = Duration.seconds(30)

/** A migrated database of each SQL kind, as a client in the scope. */
const databases: ReadonlyArray<[string, Effect.Effect<Context.Context<SqlClient.SqlClient>, unknown, Scope.Scope | NodeContext.NodeContext>]> = [
  ["sqlite", Effect.gen(function*() {
    const dir = yield* tempDir
    const client = yield* Layer.build(SqliteClient.layer({ filename: join(dir, "events.sqlite") }))
    yield* Migrator.make({})({ loader: SqliteEventStore.migrations, table: "effect_agent_migrations" }).pipe(Effect.provide(client))
    return client
  })],
  ["postgres", Effect.gen(function*() {
    const url = yield* freshSchemaUrl("lease")
    const client = yield* Layer.build(PgClient.layer({ url: Redacted.make(url) }))
    yield* PostgresEventStore.migrate.pipe(Effect.provide(client))
    return client
  })]
]

/** A writer that says it runs on `host`: this process cannot judge it by its pid. */
// Another machine has another boot: its monotonic clock is not this one's, and its lease is judged by its expiry on the Clock.
const on = (host: string) => (now: Date): Holder.Holder => ({ ...Holder.current(now), hostname: host, bootId: `boot of ${host}` })

const at = "2026-01-01T00:00:00.000Z"
const event = (sequence: number, text = `e${sequence}`): AgentEvent =>
  sequence === 1
    ? { id: "e1", sessionId: "s", sequence: 1, timestamp: at, type: "session.created", payload: { cwd: "/w", client: "test" } }
    : { id: `e${sequence}-${text}`, sessionId: "s", turnId: "t", sequence, timestamp: at, type: "model.delta", payload: { text } }

const deadPid = () => Number(spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], { encoding: "utf8" }).stdout)
const startTimeOf = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19]
}

/** Each lease renewal that reached the database: the renew loop's UPDATE, seen as its `sql.execute` span ends. */
class Renewals extends Context.Tag("test/Renewals")<Renewals, Queue.Dequeue<void>>() {}

/** A tracer over the current one that offers every finished renewal to `Renewals` (the renewer runs on the store's runtime, made under it). */
const tracingRenewals = <A, E, R>(effect: Effect.Effect<A, E, R | Renewals>) =>
  Effect.gen(function*() {
    const renewals = yield* Queue.unbounded<void>()
    const base = yield* Effect.tracer
    const tracer = Tracer.make({
      span: (...args) => {
        const span = base.span(...args)
        if (args[0] !== "sql.execute") return span
        const end = span.end.bind(span)
        return Object.assign(span, {
          end: (endTime: bigint, exit: Exit.Exit<unknown, unknown>) => {
            end(endTime, exit)
            if (String(span.attributes.get("db.query.text")).trimStart().startsWith("UPDATE writer_leases SET expires_at")) renewals.unsafeOffer(undefined)
          }
        })
      },
      context: base.context
    })
    return yield* effect.pipe(Effect.provideService(Renewals, renewals), Effect.withTracer(tracer))
  })

for (const [kind, database] of databases) {
  describe(`SQL writer lease: ${kind}`, () => {
    const test = (title: string, body: (db: Context.Context<SqlClient.SqlClient>) => Effect.Effect<void, unknown, Scope.Scope | Renewals>) =>
      it.scoped(title, () => tracingRenewals(Effect.flatMap(database, body)).pipe(Effect.provide(NodeContext.layer)))

    /**
     * A store on the database, for a writer with these lease settings: expiries on the writer's
     * clock (the TestClock's), PostgreSQL's database clock being tested on its own below.
     */
    const storeOn = (db: Context.Context<SqlClient.SqlClient>, writerLease: Lease.Settings): Effect.Effect<EventStore.Service> =>
      (kind === "sqlite"
        ? SqliteEventStore.make({ filename: "events.sqlite", writerLease })
        : PostgresEventStore.make({ writerLease: { clock: "writer", ...writerLease } })).pipe(Effect.provide(db))

    const leaseRow = (db: Context.Context<SqlClient.SqlClient>, sessionId: string) =>
      Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ holder: string; expires_at: number | string }>`SELECT holder, expires_at FROM writer_leases WHERE session_id = ${sessionId}`).pipe(
        Effect.map(([row]) => row === undefined ? undefined : { holder: Holder.parse(row.holder)!, expiresAt: Number(row.expires_at) }),
        Effect.provide(db),
        Effect.orDie
      )

    const writeRow = (db: Context.Context<SqlClient.SqlClient>, sessionId: string, holder: object, expiresAt: number) =>
      Effect.flatMap(SqlClient.SqlClient, (sql) =>
        sql`INSERT INTO writer_leases (session_id, token, holder, expires_at) VALUES (${sessionId}, 'other', ${JSON.stringify(holder)}, ${expiresAt})`).pipe(
          Effect.provide(db),
          Effect.orDie
        )

    /** Waits, renewal by renewal (real I/O: the database is real), until the session's lease lasts until `expiresAt`. */
    const renewedUntil = (db: Context.Context<SqlClient.SqlClient>, sessionId: string, expiresAt: number) =>
      Effect.gen(function*() {
        const renewals = yield* Renewals
        while ((yield* leaseRow(db, sessionId))?.expiresAt !== expiresAt) yield* Queue.take(renewals)
      })

    test("a held lease is renewed while its writer lives: another machine's writer stays busy past the ttl, until the scope closes", (db) =>
      Effect.gen(function*() {
        const a = yield* storeOn(db, { ttl, identity: on("machine-a") })
        const b = yield* storeOn(db, { ttl, identity: on("machine-b") })
        const held = yield* Scope.make()
        yield* Scope.extend(a.acquireWriter("s"), held)
        // Four renewals: the clock ends past the first expiry (ttl) and the lease still holds.
        const renewEvery = Duration.toMillis(ttl) / 3
        for (let i = 1; i <= 4; i++) {
          yield* TestClock.adjust(Duration.millis(renewEvery))
          yield* renewedUntil(db, "s", (yield* Clock.currentTimeMillis) + Duration.toMillis(ttl))
        }
        const busy = yield* Effect.either(Effect.scoped(b.acquireWriter("s")))
        expect(Either.isLeft(busy) && busy.left).toMatchObject({ _tag: "SessionBusy", sessionId: "s" })
        expect(Either.isLeft(busy) && busy.left._tag === "SessionBusy" && busy.left.holder).toMatch(/^pid \d+ on host machine-a \(since /)
        yield* Scope.close(held, Exit.void)
        expect(yield* leaseRow(db, "s")).toBeUndefined()
        yield* Effect.scoped(b.acquireWriter("s"))
      }))

    test("a writer is not taken inside a caller's transaction: a typed refusal, no lease row left, nothing waiting on the transaction", (db) =>
      Effect.gen(function*() {
        // On main the lease was taken in the transaction and released on another connection: SQLite's
        // one connection waited for the transaction's permit (a hang), PostgreSQL's DELETE did not see
        // the uncommitted row, which the COMMIT then left held by this live process.
        const a = yield* storeOn(db, { ttl, identity: on("machine-a") })
        const sql = Context.get(db, SqlClient.SqlClient)
        const refused = yield* Effect.either(sql.withTransaction(Effect.scoped(a.acquireWriter("s"))))
        expect(Either.isLeft(refused) && refused.left).toMatchObject({ _tag: "EventStoreFailure", reason: "in_transaction", operation: "lock", sessionId: "s" })
        expect(Either.isLeft(refused) && refused.left.message).toMatch(/cannot run inside a transaction/)
        expect(yield* leaseRow(db, "s")).toBeUndefined()
        // Outside one, as before.
        yield* Effect.scoped(a.acquireWriter("s"))
        expect(yield* leaseRow(db, "s")).toBeUndefined()
      }))

    test("an append inside a caller's transaction is refused, the writer already held: nothing goes into the transaction a rollback would drop", (db) =>
      Effect.gen(function*() {
        // On main the lease refusal did not fire (the writer was taken before, outside): the appends
        // went into the caller's transaction, stored as far as the engine knew, and its rollback dropped them.
        const a = yield* storeOn(db, { ttl, identity: on("machine-a") })
        const sql = Context.get(db, SqlClient.SqlClient)
        yield* Scope.extend(a.acquireWriter("s"), yield* Effect.scope)
        const single = yield* Effect.either(sql.withTransaction(a.append(event(1))))
        const batch = yield* Effect.either(sql.withTransaction(a.appendAll([event(1), event(2)])))
        for (const refused of [single, batch]) {
          expect(Either.isLeft(refused) && refused.left).toMatchObject({ _tag: "EventStoreFailure", reason: "in_transaction", operation: "append", sessionId: "s" })
          expect(Either.isLeft(refused) && refused.left.message).toMatch(/cannot run inside a transaction/)
        }
        expect(yield* collect(a.read("s"))).toEqual([])
        // Outside one, as before.
        yield* a.appendAll([event(1), event(2)])
        expect((yield* collect(a.read("s"))).map((e) => e.sequence)).toEqual([1, 2])
      }))

    test("a lease its writer stopped renewing is taken over once it expires; the sequence check fences the old writer; its release leaves the new lease", (db) =>
      Effect.gen(function*() {
        // A stalled writer: it would renew only long after its lease lapsed.
        const stalled = yield* storeOn(db, { ttl, renewEvery: Duration.times(ttl, 10), identity: on("machine-a") })
        const next = yield* storeOn(db, { ttl, identity: on("machine-b") })
        const third = yield* storeOn(db, { ttl, identity: on("machine-c") })
        const held = yield* Scope.make()
        yield* Scope.extend(stalled.acquireWriter("s"), held)
        yield* stalled.append(event(1))
        expect(yield* Effect.either(Effect.scoped(next.acquireWriter("s")))).toMatchObject({ left: { _tag: "SessionBusy" } })

        yield* TestClock.adjust(Duration.sum(ttl, Duration.millis(1)))
        const taken = yield* Scope.make()
        yield* Scope.extend(next.acquireWriter("s"), taken)
        expect((yield* leaseRow(db, "s"))?.holder.hostname).toBe("machine-b")
        yield* next.append(event(2, "new"))
        // The old writer does not know: its next event is refused, nothing stored.
        const fenced = yield* Effect.either(stalled.append(event(2, "old")))
        expect(Either.isLeft(fenced) && fenced.left.reason).toBe("sequence_conflict")
        expect((yield* collect(next.read("s"))).map((e) => e.type === "model.delta" ? e.payload.text : e.type)).toEqual(["session.created", "new"])

        // The old writer's scope closing deletes its own lease only.
        yield* Scope.close(held, Exit.void)
        expect((yield* leaseRow(db, "s"))?.holder.hostname).toBe("machine-b")
        expect(yield* Effect.either(Effect.scoped(third.acquireWriter("s")))).toMatchObject({ left: { _tag: "SessionBusy", holder: expect.stringContaining("machine-b") } })
        yield* Scope.close(taken, Exit.void)
        yield* Effect.scoped(third.acquireWriter("s"))
      }))

    test("a writer whose lease was taken from it finds out at its next renewal and leaves the new lease as it is", (db) => {
      const takenNoticed = Deferred.unsafeMake<void>(FiberId.none)
      const logger = Logger.make(({ message }) => {
        const text = (Array.isArray(message) ? message : [message]).join(" ")
        if (text.includes("the writer lease of session s was taken by another writer")) Deferred.unsafeDone(takenNoticed, Exit.void)
      })
      return Effect.gen(function*() {
        const stalled = yield* storeOn(db, { ttl, renewEvery: Duration.times(ttl, 2), identity: on("machine-a") })
        const next = yield* storeOn(db, { ttl, identity: on("machine-b") })
        yield* stalled.acquireWriter("s")
        yield* TestClock.adjust(Duration.sum(ttl, Duration.millis(1)))
        yield* next.acquireWriter("s")
        const takenAt = yield* Clock.currentTimeMillis
        // Past the stalled writer's renewal (at 2 × ttl), with the new holder's own renewals (every ttl / 3).
        for (let i = 1; i <= 3; i++) {
          yield* TestClock.adjust(Duration.millis(Duration.toMillis(ttl) / 3))
          yield* renewedUntil(db, "s", (yield* Clock.currentTimeMillis) + Duration.toMillis(ttl))
        }
        expect(yield* Clock.currentTimeMillis).toBeGreaterThan(Duration.toMillis(Duration.times(ttl, 2)))
        yield* Deferred.await(takenNoticed)
        const row = yield* leaseRow(db, "s")
        expect(row?.holder.hostname).toBe("machine-b")
        expect(row?.expiresAt).toBe(takenAt + Duration.toMillis(ttl) * 2)
      }).pipe(Effect.provide(Logger.replace(Logger.defaultLogger, logger)))
    })

    test("on this host the holder's process tells: a live one is busy with its lease expired, a dead one or a reused pid is taken over at once", (db) =>
      Effect.gen(function*() {
        const store = yield* storeOn(db, {})
        yield* writeRow(db, "live", { pid: 1, hostname: hostname(), startTime: startTimeOf(1), startedAt: at, nonce: "n" }, -1)
        const busy = yield* Effect.either(Effect.scoped(store.acquireWriter("live")))
        expect(Either.isLeft(busy) && busy.left).toMatchObject({ _tag: "SessionBusy", holder: `pid 1 on host ${hostname()} (since ${at})` })
        yield* writeRow(db, "dead", { pid: deadPid(), hostname: hostname(), startedAt: at, nonce: "n" }, Number.MAX_SAFE_INTEGER)
        yield* Effect.scoped(store.acquireWriter("dead"))
        yield* writeRow(db, "reused", { pid: 1, hostname: hostname(), startTime: "1", startedAt: at, nonce: "n" }, Number.MAX_SAFE_INTEGER)
        yield* Effect.scoped(store.acquireWriter("reused"))
      }))

    test("a lease row of this process whose release was lost is taken again at once; one this process holds stays busy for its other stores", (db) =>
      Effect.gen(function*() {
        // mend59cluster (review59a): a release whose DELETE failed (the database down as the scope
        // closed) left a row naming this live process; its pid said "alive", so on main every later
        // take in this process was `SessionBusy` with itself (`pid <own pid>`) until it restarted.
        const store = yield* storeOn(db, {})
        const other = yield* storeOn(db, {})
        yield* writeRow(db, "lost", Holder.current(), Number.MAX_SAFE_INTEGER)
        yield* Scope.extend(store.acquireWriter("lost"), yield* Effect.scope)
        expect((yield* leaseRow(db, "lost"))?.holder.pid).toBe(process.pid)
        // A lease this process does hold is busy for another store of it, as before.
        const busy = yield* Effect.either(Effect.scoped(other.acquireWriter("lost")))
        expect(Either.isLeft(busy) && busy.left).toMatchObject({ _tag: "SessionBusy", holder: expect.stringContaining(`pid ${process.pid} on host ${hostname()}`) })
      }))

    test("a live writer on another machine with this host name (another boot) is busy until its lease expires, not taken over at once", (db) =>
      Effect.gen(function*() {
        // mend56 (review56 F1): a holder of this host name and another boot id was judged dead
        // ("rebooted") at once — but host names repeat across machines (a pod spec's `hostname:`,
        // compose, cloned VMs): a second writer took a live, renewed lease. Failed on main: B got the lease.
        const sameName = (now: Date): Holder.Holder => ({ ...Holder.current(now), bootId: "boot of the other machine", pid: 4242 })
        const stalled = yield* storeOn(db, { ttl, renewEvery: Duration.times(ttl, 10), identity: sameName })
        const here = yield* storeOn(db, { ttl })
        yield* Scope.extend(stalled.acquireWriter("s"), yield* Effect.scope)
        const busy = yield* Effect.either(Effect.scoped(here.acquireWriter("s")))
        expect(Either.isLeft(busy) && busy.left).toMatchObject({ _tag: "SessionBusy", holder: expect.stringContaining(`pid 4242 on host ${hostname()}`) })
        // Really gone (a reboot of this machine, or the other one lost): its lease expires, one ttl later.
        yield* TestClock.adjust(Duration.sum(ttl, Duration.millis(1)))
        yield* Effect.scoped(here.acquireWriter("s"))
      }))

    test("a holder text no release wrote is judged by its lease's expiry: busy while it lasts, taken over after", (db) =>
      Effect.gen(function*() {
        // mend56 (review56): on main such a row was taken at once, however long its lease still ran.
        const store = yield* storeOn(db, {})
        const now = yield* Clock.currentTimeMillis
        yield* writeRow(db, "garbled", { nonsense: true }, now + Duration.toMillis(ttl))
        const busy = yield* Effect.either(Effect.scoped(store.acquireWriter("garbled")))
        expect(Either.isLeft(busy) && busy.left).toMatchObject({ _tag: "SessionBusy", holder: "a writer this release cannot read" })
        yield* writeRow(db, "expired", { nonsense: true }, now - 1)
        yield* Effect.scoped(store.acquireWriter("expired"))
      }))
  })
}

describe("SQL writer lease: postgres, on the database's clock", () => {
  /** A fresh migrated schema and a store on it for a writer that says it runs on `host`, with its own (Test)Clock. */
  const database = Effect.gen(function*() {
    const url = yield* freshSchemaUrl("leaseclock")
    const db = yield* Layer.build(PgClient.layer({ url: Redacted.make(url) }))
    yield* PostgresEventStore.migrate.pipe(Effect.provide(db))
    const storeOn = (host: string) => PostgresEventStore.make({ writerLease: { ttl, identity: on(host) } }).pipe(Effect.provide(db))
    const databaseNow = Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ now: string }>`SELECT (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::bigint AS now`).pipe(
      Effect.map(([row]) => Number(row!.now)),
      Effect.provide(db),
      Effect.orDie
    )
    const expiryOf = (sessionId: string) =>
      Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ expires_at: string }>`SELECT expires_at FROM writer_leases WHERE session_id = ${sessionId}`).pipe(
        Effect.map(([row]) => row === undefined ? undefined : Number(row.expires_at)),
        Effect.provide(db),
        Effect.orDie
      )
    return { db, storeOn, databaseNow, expiryOf }
  })

  it.scoped("a writer whose clock runs an hour ahead does not judge another machine's live lease expired, and sets its own on the database's time", () =>
    Effect.gen(function*() {
      const { databaseNow, expiryOf, storeOn } = yield* database
      const a = yield* storeOn("machine-a")
      const b = yield* storeOn("machine-b")
      const before = yield* databaseNow
      yield* a.acquireWriter("s")
      const expiry = (yield* expiryOf("s"))!
      // The TestClock reads 1970: the expiry is the database's now plus the ttl, not the writer's.
      expect(expiry).toBeGreaterThanOrEqual(before + Duration.toMillis(ttl))
      expect(expiry).toBeLessThanOrEqual((yield* databaseNow) + Duration.toMillis(ttl))
      // B's clock jumps far past A's expiry as B reckons time; on the database's clock A's lease is live.
      yield* TestClock.setTime(expiry + Duration.toMillis(Duration.hours(1)))
      expect(yield* Effect.either(Effect.scoped(b.acquireWriter("s")))).toMatchObject({ left: { _tag: "SessionBusy", holder: expect.stringContaining("machine-a") } })
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("a lease expired on the database's clock is taken over by a writer whose clock runs behind", () =>
    Effect.gen(function*() {
      const { databaseNow, db, storeOn } = yield* database
      const gone = { pid: 4242, hostname: "machine-gone", startedAt: at, nonce: "n" }
      const expired = (yield* databaseNow) - 1
      yield* Effect.flatMap(SqlClient.SqlClient, (sql) =>
        sql`INSERT INTO writer_leases (session_id, token, holder, expires_at) VALUES ('s', 'other', ${JSON.stringify(gone)}, ${expired})`).pipe(
          Effect.provide(db),
          Effect.orDie
        )
      // The TestClock reads 1970: on the writer's own clock the lease would last decades more.
      expect(yield* Clock.currentTimeMillis).toBe(0)
      const b = yield* storeOn("machine-b")
      yield* b.acquireWriter("s")
    }).pipe(Effect.provide(NodeContext.layer)))
})

describe("lease timing", () => {
  it("defaults to a 30 s ttl renewed every 10 s; both configurable", () => {
    expect(Lease.timing({})).toEqual({ ttlMs: 30_000, renewMs: 10_000 })
    expect(Lease.timing({ ttl: "3 seconds" })).toEqual({ ttlMs: 3000, renewMs: 1000 })
    expect(Lease.timing({ ttl: "3 seconds", renewEvery: "500 millis" })).toEqual({ ttlMs: 3000, renewMs: 500 })
  })
})
