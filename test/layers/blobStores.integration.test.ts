/**
 * The blob area's contract, run against every store's layer: memory, JSONL (files under the data
 * dir), SQLite and PostgreSQL (a table, made by the store's migrations). Each store is built through
 * its event store's own layer, so the test also proves that layer provides its `BlobStore`.
 */
import { createHash } from "node:crypto"
import { readdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as SqlClient from "@effect/sql/SqlClient"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import { describe, expect, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import * as JsonlEventStore from "../../src/layers/JsonlEventStore.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import * as PostgresEventStore from "../../src/layers/PostgresEventStore.js"
import * as SqliteEventStore from "../../src/layers/SqliteEventStore.js"
import { BlobStore } from "../../src/services/BlobStore.js"
import { EventStore } from "../../src/services/EventStore.js"
import { tempDir } from "../helpers.js"
import { freshSchemaUrl } from "../postgres.js"

/** A store's blob area, and what the test needs of its insides: how many copies of a blob it holds, and a way to damage one. */
interface Subject {
  readonly blobs: BlobStore.Service
  readonly copies?: (hash: string) => Effect.Effect<number>
  readonly damage?: (hash: string) => Effect.Effect<void>
}

const sqlOn = <A>(client: Layer.Layer<SqlClient.SqlClient, unknown>, query: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) =>
  Effect.flatMap(SqlClient.SqlClient, query).pipe(Effect.provide(client), Effect.orDie)

const stores: ReadonlyArray<[string, Effect.Effect<Subject, unknown, Scope.Scope | NodeContext.NodeContext>]> = [
  ["memory", Effect.map(Layer.build(MemoryEventStore.layer), (context) => ({ blobs: Context.get(context, BlobStore) }))],
  ["jsonl", Effect.gen(function*() {
    const dataDir = yield* tempDir
    const context = yield* Layer.build(JsonlEventStore.layer({ dataDir }))
    Context.get(context, EventStore)
    const file = (hash: string) => join(dataDir, "blobs", hash.slice(0, 2), hash)
    return {
      blobs: Context.get(context, BlobStore),
      copies: (hash) => Effect.sync(() => readdirSync(join(dataDir, "blobs", hash.slice(0, 2))).filter((name) => name.includes(hash)).length),
      damage: (hash) => Effect.sync(() => writeFileSync(file(hash), Buffer.concat([readFileSync(file(hash)), Buffer.from("!")])))
    } satisfies Subject
  })],
  ["sqlite", Effect.gen(function*() {
    const dir = yield* tempDir
    const filename = `${dir}/db/events.sqlite`
    const context = yield* Layer.build(SqliteEventStore.layer({ filename }))
    Context.get(context, EventStore)
    const client = SqliteClient.layer({ filename })
    return {
      blobs: Context.get(context, BlobStore),
      copies: (hash) => sqlOn(client, (sql) => Effect.map(sql<{ n: number }>`SELECT count(*) AS n FROM blobs WHERE hash = ${hash}`, ([row]) => Number(row!.n))),
      damage: (hash) => sqlOn(client, (sql) => Effect.asVoid(sql`UPDATE blobs SET bytes = ${Buffer.from("tampered")} WHERE hash = ${hash}`))
    } satisfies Subject
  })],
  ["postgres", Effect.gen(function*() {
    const url = yield* freshSchemaUrl("blobs")
    const context = yield* Layer.build(PostgresEventStore.layer({ url: Redacted.make(url) }))
    Context.get(context, EventStore)
    const client = PgClient.layer({ url: Redacted.make(url), maxConnections: 1 })
    return {
      blobs: Context.get(context, BlobStore),
      copies: (hash) => sqlOn(client, (sql) => Effect.map(sql<{ n: number }>`SELECT count(*)::int AS n FROM blobs WHERE hash = ${hash}`, ([row]) => Number(row!.n))),
      damage: (hash) => sqlOn(client, (sql) => Effect.asVoid(sql`UPDATE blobs SET bytes = ${Buffer.from("tampered")} WHERE hash = ${hash}`))
    } satisfies Subject
  })]
]

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex")
/** Bytes of every value 0–255, several times over: no text encoding may survive them unchanged by accident. */
const binary = Uint8Array.from({ length: 70_000 }, (_, i) => (i * 7 + (i >> 8)) % 256)

for (const [name, makeStore] of stores) {
  describe(`BlobStore contract: ${name}`, () => {
    const test = (title: string, body: (subject: Subject) => Effect.Effect<void, unknown, Scope.Scope>) =>
      it.scoped(title, () => Effect.flatMap(makeStore, body).pipe(Effect.provide(NodeContext.layer)), 60_000)

    test("put returns the SHA-256 of the bytes; get returns them byte for byte; has tells", ({ blobs }) =>
      Effect.gen(function*() {
        const hash = yield* blobs.put(binary)
        expect(hash).toBe(sha256(binary))
        expect(yield* blobs.has(hash)).toBe(true)
        expect(Buffer.from(yield* blobs.get(hash)).equals(Buffer.from(binary))).toBe(true)
        const empty = yield* blobs.put(new Uint8Array(0))
        expect(empty).toBe(sha256(new Uint8Array(0)))
        expect((yield* blobs.get(empty)).byteLength).toBe(0)
      }))

    test("the same bytes put twice (and at once) are stored once", ({ blobs, copies }) =>
      Effect.gen(function*() {
        const bytes = Uint8Array.from([137, 80, 78, 71, 1, 2, 3])
        const hashes = yield* Effect.all(Array.from({ length: 8 }, () => blobs.put(bytes)), { concurrency: 8 })
        expect(new Set(hashes)).toEqual(new Set([sha256(bytes)]))
        yield* blobs.put(Uint8Array.from(bytes))
        if (copies !== undefined) expect(yield* copies(hashes[0]!)).toBe(1)
        expect(Array.from(yield* blobs.get(hashes[0]!))).toEqual(Array.from(bytes))
      }))

    test("an unknown blob is BlobNotFound; a name that is not a hash is refused before it reaches a file or a row", ({ blobs }) =>
      Effect.gen(function*() {
        const unknown = sha256(Uint8Array.from([1]))
        expect(yield* blobs.has(unknown)).toBe(false)
        const missing = yield* Effect.flip(blobs.get(unknown))
        expect(missing._tag).toBe("BlobNotFound")
        for (const name of ["../../sessions/x", "ABCDEF", `${unknown}/..`, `${unknown.slice(0, 63)}G`, ""]) {
          const refused = yield* Effect.flip(blobs.get(name))
          expect(refused).toMatchObject({ _tag: "BlobFailure", reason: "invalid_hash" })
          expect(yield* Effect.flip(blobs.has(name))).toMatchObject({ _tag: "BlobFailure", reason: "invalid_hash" })
        }
      }))

    test("a blob whose stored bytes no longer match its hash is a corrupt failure, never returned", ({ blobs, damage }) =>
      Effect.gen(function*() {
        if (damage === undefined) return expect(name).toBe("memory") // nothing outside the process can change its bytes
        const hash = yield* blobs.put(binary)
        yield* damage(hash)
        const failure = yield* Effect.flip(blobs.get(hash))
        expect(failure).toMatchObject({ _tag: "BlobFailure", reason: "corrupt", operation: "get", hash })
        expect(failure.message).toContain("corrupt")
      }))

    test("a put of the right bytes repairs a damaged blob: an existing file or row is checked, not trusted by its name", ({ blobs, copies, damage }) =>
      Effect.gen(function*() {
        if (damage === undefined) return expect(name).toBe("memory")
        const hash = yield* blobs.put(binary)
        yield* damage(hash)
        expect(yield* blobs.put(binary)).toBe(hash)
        expect(Buffer.from(yield* blobs.get(hash)).equals(Buffer.from(binary))).toBe(true)
        if (copies !== undefined) expect(yield* copies(hash)).toBe(1)
      }))

    test("the caller's buffer is not shared: changing it after the put changes nothing stored", ({ blobs }) =>
      Effect.gen(function*() {
        const bytes = Uint8Array.from([1, 2, 3, 4])
        const hash = yield* blobs.put(bytes)
        bytes[0] = 9
        expect(Array.from(yield* blobs.get(hash))).toEqual([1, 2, 3, 4])
      }))
  })
}

describe("BlobStore: JSONL files", () => {
  it.scoped("a blob is written whole under blobs/<aa>/<hash>: a stray temporary file left by a crash is never read as the blob", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      const blobs = Context.get(yield* Layer.build(JsonlEventStore.layer({ dataDir })), BlobStore)
      const bytes = Uint8Array.from([255, 216, 255, 0, 1])
      const hash = sha256(bytes)
      // What a crash between the write and the rename leaves: a torn temporary file beside the name.
      const folder = join(dataDir, "blobs", hash.slice(0, 2))
      const { mkdirSync } = yield* Effect.promise(() => import("node:fs"))
      mkdirSync(folder, { recursive: true })
      writeFileSync(join(folder, `.${hash}.abc.tmp`), bytes.subarray(0, 2))
      expect(yield* blobs.has(hash)).toBe(false)
      expect((yield* Effect.flip(blobs.get(hash)))._tag).toBe("BlobNotFound")
      expect(yield* blobs.put(bytes)).toBe(hash)
      expect(readFileSync(join(folder, hash))).toEqual(Buffer.from(bytes))
      expect(readdirSync(folder).filter((f) => f.endsWith(".tmp") && f !== `.${hash}.abc.tmp`)).toEqual([])
    }).pipe(Effect.provide(NodeContext.layer)))
})
