/**
 * The SQLite store's hardening: the writer lease (a dead holder on this host or an expired lease
 * from another host is taken over, a live one is SessionBusy), owner-only file modes, and errors
 * opening the database as typed failures naming the file.
 */
import { spawnSync } from "node:child_process"
import { mkdirSync, readFileSync, statSync } from "node:fs"
import { hostname } from "node:os"
import { join } from "node:path"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import { describe, expect, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as SqliteEventStore from "../../src/layers/SqliteEventStore.js"
import * as Holder from "../../src/layers/writer/Holder.js"
import { EventStore } from "../../src/services/EventStore.js"
import { tempDir } from "../helpers.js"

const storeAt = (filename: string) => Effect.map(Layer.build(SqliteEventStore.layer({ filename })), Context.get(EventStore))

/** Writes a lease row as another process would have left it. */
const leaseRow = (filename: string, sessionId: string, holder: object, expiresAt: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql`INSERT INTO writer_leases (session_id, token, holder, expires_at) VALUES (${sessionId}, 'other', ${JSON.stringify(holder)}, ${expiresAt})`
  }).pipe(Effect.provide(SqliteClient.layer({ filename })), Effect.orDie)

const deadPid = () => Number(spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], { encoding: "utf8" }).stdout)
const startTimeOf = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19]
}
const at = "2026-01-01T00:00:00.000Z"

describe("SQLite writer lease", () => {
  it.scoped("a live holder on this host is SessionBusy even with its lease expired; a dead one is taken over", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const filename = join(dir, "events.sqlite")
      const store = yield* storeAt(filename)
      yield* leaseRow(filename, "live", { pid: 1, hostname: hostname(), startTime: startTimeOf(1), startedAt: at, nonce: "n" }, 0)
      const busy = yield* Effect.either(Effect.scoped(store.acquireWriter("live")))
      expect(Either.isLeft(busy) && busy.left).toMatchObject({ _tag: "SessionBusy", holder: `pid 1 on host ${hostname()} (since ${at})` })

      yield* leaseRow(filename, "dead", { pid: deadPid(), hostname: hostname(), startedAt: at, nonce: "n" }, Number.MAX_SAFE_INTEGER)
      yield* Effect.scoped(store.acquireWriter("dead"))
      yield* leaseRow(filename, "reused", { pid: 1, hostname: hostname(), startTime: "1", startedAt: at, nonce: "n" }, Number.MAX_SAFE_INTEGER)
      yield* Effect.scoped(store.acquireWriter("reused"))
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("a holder on another host: busy until its lease expires, then taken over", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const filename = join(dir, "events.sqlite")
      const store = yield* storeAt(filename)
      const remote = { pid: 4242, hostname: `not-${hostname()}`, startedAt: at, nonce: "n" }
      yield* leaseRow(filename, "fresh", remote, Number.MAX_SAFE_INTEGER)
      const busy = yield* Effect.either(Effect.scoped(store.acquireWriter("fresh")))
      expect(Either.isLeft(busy) && busy.left).toMatchObject({ _tag: "SessionBusy", holder: `pid 4242 on host not-${hostname()} (since ${at})` })
      // The test clock stands at 0: a lease that lapsed at -1 is expired.
      yield* leaseRow(filename, "lapsed", remote, -1)
      yield* Effect.scoped(store.acquireWriter("lapsed"))
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("a holder in another container of this host is judged on the host's monotonic clock, not the wall clock", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const filename = join(dir, "events.sqlite")
      const store = yield* storeAt(filename)
      // This boot and time namespace, another pid namespace and host name (a container's): its pid
      // tells nothing here, its expiry does.
      const container = {
        pid: 1,
        hostname: "container-a",
        bootId: readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim(),
        pidNamespace: "pid:[1]",
        // As this process records it: `none` on a kernel without time namespaces.
        timeNamespace: Holder.current().timeNamespace,
        startedAt: at,
        nonce: "n"
      }
      const monotonicNow = Number(process.hrtime.bigint() / BigInt(1_000_000))
      // Lapsed on the wall clock (the TestClock's 0), an hour to go on the monotonic one: busy.
      yield* leaseRow(filename, "live", { ...container, monotonicExpiresAt: monotonicNow + 60 * 60 * 1000 }, -1)
      const busy = yield* Effect.either(Effect.scoped(store.acquireWriter("live")))
      expect(Either.isLeft(busy) && busy.left).toMatchObject({ _tag: "SessionBusy", holder: `pid 1 on host container-a (since ${at})` })
      // Lapsed on the monotonic clock, decades to go on the wall clock: taken over.
      yield* leaseRow(filename, "lapsed", { ...container, monotonicExpiresAt: monotonicNow - 1 }, Number.MAX_SAFE_INTEGER)
      yield* Effect.scoped(store.acquireWriter("lapsed"))
      // Without one (an older version's row), the wall clock's expiry tells, as before.
      yield* leaseRow(filename, "older", container, -1)
      yield* Effect.scoped(store.acquireWriter("older"))
    }).pipe(Effect.provide(NodeContext.layer)))
})

describe("SQLite files and errors", () => {
  it.scoped("the database is created 0600 in a 0700 folder, whatever the umask", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const previous = process.umask(0)
      yield* Effect.addFinalizer(() => Effect.sync(() => process.umask(previous)))
      const filename = join(dir, "data", "events.sqlite")
      const store = yield* storeAt(filename)
      yield* store.list
      expect(statSync(join(dir, "data")).mode & 0o777).toBe(0o700)
      expect(statSync(filename).mode & 0o777).toBe(0o600)
      // SQLite gives its write-ahead log and shared-memory files the database file's mode.
      yield* store.append({ id: "e1", sessionId: "s", sequence: 1, timestamp: at, type: "session.created", payload: { cwd: "/w", client: "cli" } })
      expect(statSync(`${filename}-wal`).mode & 0o777).toBe(0o600)
      expect(statSync(`${filename}-shm`).mode & 0o777).toBe(0o600)
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("a database that cannot be opened is a typed failure naming the file, not a defect", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      // A folder where the file should be: SQLite says `unable to open database file`, naming nothing.
      const filename = join(dir, "events.sqlite")
      mkdirSync(filename)
      const opened = yield* Effect.either(Effect.scoped(storeAt(filename)))
      expect(Either.isLeft(opened) && opened.left).toMatchObject({ _tag: "EventStoreFailure", reason: "permission_denied", path: filename })
      expect(Either.isLeft(opened) && opened.left.message).toContain(filename)
    }).pipe(Effect.provide(NodeContext.layer)))
})

/** The store on a client the test opens itself, migrated, after `setup` ran on that client's connection. */
const storeOn = (filename: string, options: { readonly readonly?: boolean; readonly setup?: string } = {}) =>
  Effect.gen(function*() {
    const client = yield* Layer.build(SqliteClient.layer({ filename, ...(options.readonly === true ? { readonly: true, disableWAL: true } : {}) }))
    return yield* Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      if (options.readonly !== true) yield* Migrator.make({})({ loader: SqliteEventStore.migrations, table: "effect_agent_migrations" })
      if (options.setup !== undefined) yield* sql.unsafe(options.setup)
      return yield* SqliteEventStore.make({ filename })
    }).pipe(Effect.provide(client))
  }).pipe(Effect.orDie)

const event = (sequence: number, text: string) =>
  sequence === 1
    ? { id: "e1", sessionId: "s", sequence: 1, timestamp: at, type: "session.created" as const, payload: { cwd: "/w", client: "cli" as const } }
    : { id: `e${sequence}`, sessionId: "s", turnId: "t", sequence, timestamp: at, type: "model.delta" as const, payload: { text } }

describe("SQLite errors while running", () => {
  it.scoped("a full database (SQLITE_FULL) is disk_full, naming the file, saying what it means", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const filename = join(dir, "events.sqlite")
      // A page limit makes SQLite report SQLITE_FULL, as a full disk does.
      const store = yield* storeOn(filename, { setup: "PRAGMA max_page_count = 40" })
      yield* store.append(event(1, ""))
      let failure: unknown
      for (let sequence = 2; failure === undefined && sequence < 200; sequence++) {
        const result = yield* Effect.either(store.append(event(sequence, "x".repeat(8000))))
        if (Either.isLeft(result)) failure = result.left
      }
      expect(failure).toMatchObject({ _tag: "EventStoreFailure", reason: "disk_full", operation: "append", path: filename })
      expect((failure as Error).message).toMatch(/the disk is full: .*\(SQLITE_FULL\).*events\.sqlite/)
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("a read-only database (SQLITE_READONLY) is permission_denied, naming the file", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const filename = join(dir, "events.sqlite")
      yield* Effect.scoped(storeAt(filename))
      const store = yield* storeOn(filename, { readonly: true })
      const refused = yield* Effect.either(store.append(event(1, "")))
      expect(Either.isLeft(refused) && refused.left).toMatchObject({ reason: "permission_denied", path: filename })
      expect(Either.isLeft(refused) && refused.left.message).toMatch(/read-only.*SQLITE_READONLY.*events\.sqlite/)
    }).pipe(Effect.provide(NodeContext.layer)))
})
