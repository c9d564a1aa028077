/**
 * A cancel our fiber did not ask for (SQLSTATE 57014) on the PostgreSQL store. `@effect/sql-pg`
 * cancels an interrupted fiber's statement with `pg_cancel_backend(pid)` from another pooled
 * connection, and the interrupted statement's connection goes back to the pool as soon as that
 * statement ends on its own, even while the cancel is still on its way: the cancel then lands on
 * whatever statement the pool gave the connection to next — one of ours. The store runs such a
 * statement again (it rolled back, and the sequence check refuses a second copy of an event); a
 * fiber that was interrupted itself stays interrupted.
 *
 * Each test holds a lock (from a connection of its own) that the store's statement waits for, and
 * cancels that statement's backend from outside while it waits: deterministic, the waits are on
 * conditions the server reports (`pg_blocking_pids`), never on time.
 */
import { createRequire } from "node:module"
import * as SqlClient from "@effect/sql/SqlClient"
import * as PgClient from "@effect/sql-pg/PgClient"
import { describe, expect, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Scope from "effect/Scope"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import * as PostgresEventStore from "../../src/layers/PostgresEventStore.js"
import { BlobStore } from "../../src/services/BlobStore.js"
import { EventStore } from "../../src/services/EventStore.js"
import { collect } from "../helpers.js"
import { freshSchemaUrl } from "../postgres.js"
import { cancelled, firstWaitingFor, holdLock, succeeded, until, waitingFor } from "../postgresLocks.js"

const at = (n: number) => `2026-01-01T00:00:${String(n).padStart(2, "0")}.000Z`
const event = (sequence: number, type: string, payload: object, turnId: string | undefined = "turn_1") =>
  ({ id: `e${sequence}`, sessionId: "s", sequence, timestamp: at(sequence), type, payload, ...(turnId === undefined ? {} : { turnId }) }) as AgentEvent

const created = event(1, "session.created", { cwd: "/w", client: "test" }, undefined)
const started = event(2, "turn.started", { promptPreview: "p" })
const delta = (sequence: number) => event(sequence, "model.delta", { text: `t${sequence}` })
const usage = { inputTokens: 10, outputTokens: 4, cacheReadTokens: 50, cacheWriteTokens: 7 }
const completed = (sequence: number) => event(sequence, "turn.completed", { stopReason: "final", usage, cost: 0.5 })

/** The store on a fresh schema (its own pool), and an admin client on another pool for the locks and the cancels. */
const setup = Effect.gen(function*() {
  const url = Redacted.make(yield* freshSchemaUrl("late_cancel"))
  const client = yield* Layer.build(PgClient.layer({ url, maxConnections: 4 }))
  const stores = yield* Layer.build(PostgresEventStore.layerFromClient().pipe(Layer.provide(Layer.succeedContext(client))))
  const admin = Context.get(yield* Layer.build(PgClient.layer({ url, maxConnections: 3 })), SqlClient.SqlClient)
  return { events: Context.get(stores, EventStore), blobs: Context.get(stores, BlobStore), admin }
})

/** The bits of `pg`'s pool the library's own cancel is seen through (the package ships no types). */
interface PgPool {
  /** Requests waiting for a connection. */
  readonly waitingCount: number
  end(): Promise<void>
}
const Pg = createRequire(import.meta.url)("pg") as { readonly Pool: new (config: { connectionString: string; max: number }) => PgPool }

/** The store on a pool of two connections whose queue the test reads, the admin client, and the store's SQL client. */
const setupOnPool = Effect.gen(function*() {
  const url = yield* freshSchemaUrl("late_cancel_pool")
  const pool = new Pg.Pool({ connectionString: url, max: 2 })
  const client = yield* Layer.build(PgClient.layerFromPool({ acquire: Effect.acquireRelease(Effect.succeed(pool as unknown as import("pg").Pool), (p) => Effect.promise(() => p.end())) }))
  const stores = yield* Layer.build(PostgresEventStore.layerFromClient().pipe(Layer.provide(Layer.succeedContext(client))))
  const admin = Context.get(yield* Layer.build(PgClient.layer({ url: Redacted.make(url), maxConnections: 4 })), SqlClient.SqlClient)
  return { pool, sql: Context.get(client, SqlClient.SqlClient), events: Context.get(stores, EventStore), admin }
})

const sequencesOf = (events: ReadonlyArray<AgentEvent>) => events.map((e) => e.sequence)

const test = (title: string, body: (db: Effect.Effect.Success<typeof setup>) => Effect.Effect<void, unknown, Scope.Scope>) =>
  it.live(title, () => Effect.scoped(Effect.flatMap(setup, body)))

describe("PostgreSQL store: a cancel its fiber did not ask for", () => {
  test("an append whose statement is cancelled is run again: the event is stored once, and the next one follows", ({ admin, events }) =>
    Effect.gen(function*() {
      yield* events.appendAll([created, started])
      succeeded(yield* cancelled(admin, "events", events.append(delta(3))))
      yield* events.append(delta(4))
      expect(sequencesOf(yield* collect(events.read("s")))).toEqual([1, 2, 3, 4])
    }))

  test("an append cancelled inside its transaction is run again whole: its usage is counted once", ({ admin, events }) =>
    Effect.gen(function*() {
      yield* events.appendAll([created, started, delta(3)])
      // The event's row is written when the usage upsert, later in the same transaction, is cancelled.
      succeeded(yield* cancelled(admin, "session_usage", events.append(completed(4))))
      expect(sequencesOf(yield* collect(events.read("s")))).toEqual([1, 2, 3, 4])
      const [summary] = yield* events.list
      expect(summary).toMatchObject({ lastSequence: 4, turnCount: 1, usage, cost: 0.5 })
    }))

  test("a batch cancelled halfway is run again whole: every event once, in order", ({ admin, events }) =>
    Effect.gen(function*() {
      yield* events.append(created)
      succeeded(yield* cancelled(admin, "session_usage", events.appendAll([started, delta(3), completed(4)])))
      expect(sequencesOf(yield* collect(events.read("s")))).toEqual([1, 2, 3, 4])
      const [summary] = yield* events.list
      expect(summary).toMatchObject({ lastSequence: 4, turnCount: 1, usage, cost: 0.5 })
    }))

  test("a read's page whose statement is cancelled is read again: every event once", ({ admin, events }) =>
    Effect.gen(function*() {
      yield* events.appendAll([created, started])
      expect(sequencesOf(succeeded(yield* cancelled(admin, "events", collect(events.read("s")))))).toEqual([1, 2])
    }))

  test("a listing whose statements are cancelled lists again (its fallback for older schemas too)", ({ admin, events }) =>
    Effect.gen(function*() {
      yield* events.appendAll([created, started])
      // The first cancel stops the joined listing, which falls back to the listing of older schemas, itself in two steps; the second and third cancels stop those.
      expect(succeeded(yield* cancelled(admin, "sessions", events.list, 3)).map((s) => s.sessionId)).toEqual(["s"])
    }))

  test("the writer lease's taking and release run a cancelled statement again", ({ admin, events }) =>
    Effect.gen(function*() {
      yield* events.append(created)
      const scope = yield* Scope.make()
      succeeded(yield* cancelled(admin, "writer_leases", Scope.extend(events.acquireWriter("s"), scope)))
      expect(yield* admin`SELECT session_id FROM writer_leases`).toHaveLength(1)
      // A release lost would leave the lease to its expiry (and on this host, to this process's end).
      succeeded(yield* cancelled(admin, "writer_leases", Scope.close(scope, Exit.void)))
      expect(yield* admin`SELECT session_id FROM writer_leases`).toHaveLength(0)
    }))

  test("a blob whose statements are cancelled is stored and read again", ({ admin, blobs }) =>
    Effect.gen(function*() {
      const bytes = new TextEncoder().encode("late cancel")
      const hash = succeeded(yield* cancelled(admin, "blobs", blobs.put(bytes)))
      expect(new TextDecoder().decode(succeeded(yield* cancelled(admin, "blobs", blobs.get(hash))))).toBe("late cancel")
      expect(succeeded(yield* cancelled(admin, "blobs", blobs.has(hash)))).toBe(true)
    }))

  test("an interrupted append stays interrupted: it is not run again, and nothing is stored", ({ admin, events }) =>
    Effect.gen(function*() {
      yield* events.appendAll([created, started])
      const lock = yield* holdLock(admin, "events")
      const fiber = yield* Effect.fork(events.append(delta(3)))
      yield* firstWaitingFor(admin, lock.pid)
      // The library cancels the statement itself; the append must not run it again.
      expect(Exit.isInterrupted(yield* Fiber.interrupt(fiber))).toBe(true)
      yield* until(Effect.map(waitingFor(admin, lock.pid), (rows) => rows.length === 0 ? Option.some(true) : Option.none()))
      yield* lock.release
      expect(sequencesOf(yield* collect(events.read("s")))).toEqual([1, 2])
    }))

  // Could a cancel stop an append after its row is committed, so that the append run again meets its
  // own row as a sequence conflict? The latest a cancel can land is the COMMIT: here a deferred
  // trigger makes the COMMIT wait, and the cancel fails it. It rolls back (PostgreSQL takes no
  // cancel from the commit record on; one that arrives later finds the backend idle and is dropped),
  // so the append run again stores the event, once.
  test("an append cancelled in its COMMIT stored nothing: run again, the event is stored once", ({ admin, events }) =>
    Effect.gen(function*() {
      yield* events.appendAll([created, started])
      yield* admin`CREATE TABLE gate (x INTEGER)`
      yield* admin.unsafe(`CREATE FUNCTION wait_at_gate() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM count(*) FROM gate; RETURN NULL; END $$`)
      yield* admin.unsafe(`CREATE CONSTRAINT TRIGGER at_commit AFTER INSERT ON events DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION wait_at_gate()`)
      succeeded(yield* cancelled(admin, "gate", events.append(delta(3))))
      expect(sequencesOf(yield* collect(events.read("s")))).toEqual([1, 2, 3])
    }))

  it.live("a migration whose statement is cancelled runs again: the store opens on the migrated schema", () =>
    Effect.scoped(Effect.gen(function*() {
      const url = Redacted.make(yield* freshSchemaUrl("late_cancel_migrate"))
      const admin = Context.get(yield* Layer.build(PgClient.layer({ url, maxConnections: 3 })), SqlClient.SqlClient)
      // The migrator's table, made first so that a lock on it holds the migrator's own LOCK TABLE.
      yield* admin`CREATE TABLE effect_agent_migrations (migration_id integer PRIMARY KEY, created_at timestamp with time zone NOT NULL DEFAULT now(), name text NOT NULL)`
      const client = yield* Layer.build(PgClient.layer({ url, maxConnections: 4 }))
      const opening = Layer.build(PostgresEventStore.layerFromClient().pipe(Layer.provide(Layer.succeedContext(client))))
      const stores = succeeded(yield* cancelled(admin, "effect_agent_migrations", opening))
      const events = Context.get(stores, EventStore)
      yield* events.append(created)
      expect(sequencesOf(yield* collect(events.read("s")))).toEqual([1])
    })))

  it.live("the library's own cancel of an interrupted statement lands on the append its connection went to next, which runs again", () =>
    Effect.scoped(Effect.gen(function*() {
      const { admin, events, pool, sql } = yield* setupOnPool
      yield* events.append(created)
      yield* admin`CREATE TABLE gate (x INTEGER)`
      const gate = yield* holdLock(admin, "gate")
      const eventsLock = yield* holdLock(admin, "events")
      // One of the pool's two connections is busy elsewhere, so the library's cancel will wait for it.
      const began = yield* Deferred.make<void>()
      const done = yield* Deferred.make<void>()
      const busy = yield* Effect.fork(sql.withTransaction(Effect.zipRight(Deferred.succeed(began, undefined), Deferred.await(done))))
      yield* Deferred.await(began)
      // The other runs a statement that waits at the gate: the one to be interrupted.
      const interrupted = yield* Effect.fork(sql`SELECT count(*) FROM gate`)
      const backend = (yield* firstWaitingFor(admin, gate.pid)).pid
      // The append waits for a connection, then the library's cancel of the interrupted statement does.
      const append = yield* Effect.fork(events.append(started))
      yield* until(Effect.sync(() => pool.waitingCount === 1 ? Option.some(true) : Option.none()))
      const interrupting = yield* Effect.fork(Fiber.interrupt(interrupted))
      yield* until(Effect.sync(() => pool.waitingCount === 2 ? Option.some(true) : Option.none()))
      // The interrupted statement ends on its own: its connection goes to the append, which waits for `events`.
      yield* gate.release
      const appending = yield* firstWaitingFor(admin, eventsLock.pid)
      expect(appending.pid).toBe(backend)
      // A connection frees: the cancel runs, and stops the append the backend now runs.
      yield* Deferred.succeed(done, undefined)
      yield* Fiber.join(busy)
      yield* Fiber.join(interrupting)
      yield* until(Effect.gen(function*() {
        if (Option.isSome(yield* Fiber.poll(append))) return Option.some(true)
        const again = (yield* waitingFor(admin, eventsLock.pid)).some((w) => w.pid !== appending.pid || w.started !== appending.started)
        return again ? Option.some(true) : Option.none()
      }))
      yield* eventsLock.release
      succeeded(yield* Fiber.await(append))
      expect(sequencesOf(yield* collect(events.read("s")))).toEqual([1, 2])
    })))
})
