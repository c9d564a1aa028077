/**
 * The SQL stores with two processes on one database (SQLite: one file; PostgreSQL: the test
 * server): appends racing on one session never interleave, and of two processes racing for one
 * session's writer lease exactly one holds it.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { pathToFileURL } from "node:url"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { afterAll, describe, expect, it } from "vitest"
import type { EventStoreFailure } from "../../src/domain/Errors.js"
import * as PostgresEventStore from "../../src/layers/PostgresEventStore.js"
import * as SqliteEventStore from "../../src/layers/SqliteEventStore.js"
import { EventStore } from "../../src/services/EventStore.js"
import { collect } from "../helpers.js"
import { freshSchemaUrl } from "../postgres.js"
import { ownedByTest } from "../processes.js"

const dir = mkdtempSync(join(tmpdir(), "effect-agent-stores-"))
const children: Array<ChildProcess> = []
afterAll(() => {
  for (const child of children) child.kill("SIGKILL")
  rmSync(dir, { recursive: true, force: true })
})
const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href
const writerScript = resolve(import.meta.dirname, "storeWriter.ts")

type Kind = "sqlite" | "postgres"
const layerOf = (kind: Kind, database: string): Layer.Layer<EventStore, EventStoreFailure, NodeContext.NodeContext> =>
  kind === "sqlite" ? SqliteEventStore.layer({ filename: database }) : PostgresEventStore.layer({ url: Redacted.make(database) })

/** A fresh database of the kind: a file, or a schema of the test server. */
const freshDatabase = (kind: Kind, name: string) =>
  kind === "sqlite" ? Promise.resolve(join(dir, `${name}.sqlite`)) : Effect.runPromise(freshSchemaUrl(name))

const withStore = <A, E>(kind: Kind, database: string, f: (store: EventStore.Service) => Effect.Effect<A, E>) =>
  Effect.runPromise(Effect.flatMap(EventStore, f).pipe(Effect.provide(layerOf(kind, database)), Effect.provide(NodeContext.layer)))

/** Starts storeWriter.ts; resolves `ready` once its store is open. */
const writer = (kind: Kind, database: string, args: ReadonlyArray<string>) => {
  const child = ownedByTest(spawn(process.execPath, ["--import", tsx, writerScript, kind, ...args], {
    stdio: ["pipe", "pipe", "pipe"],
    env: { ...process.env, EFFECT_AGENT_TEST_DB: database }
  }))
  children.push(child)
  let out = ""
  let err = ""
  let onReady: () => void = () => {}
  let onLine: () => void = () => {}
  let gone: (error: Error) => void = () => {}
  const ready = new Promise<void>((ok, fail) => {
    onReady = ok
    gone = fail
  })
  const reported = new Promise<void>((ok, fail) => {
    onLine = ok
    const before = gone
    gone = (error) => {
      before(error)
      fail(error)
    }
  })
  child.stdout.setEncoding("utf8").on("data", (c: string) => {
    out += c
    if (out.startsWith("ready\n")) onReady()
    if (/^ready\n.+\n/.test(out)) onLine()
  })
  child.stderr.setEncoding("utf8").on("data", (c: string) => (err += c))
  const done = new Promise<{ code: number | null; err: string }>((ok) => child.on("close", (code) => ok({ code, err })))
  // A writer that ends before it is ready or has reported fails the test with what it said, rather
  // than leaving it to time out.
  void done.then(({ code, err }) => gone(new Error(`the writer ended (exit ${code}) before it was ready and had reported: ${out}${err}`)))
  const report = () => JSON.parse(out.replace(/^ready\n/, "").trim()) as Record<string, unknown>
  return { child, ready, reported, done, report, stderr: () => err }
}

const openerScript = resolve(import.meta.dirname, "sqliteOpener.ts")

/** Runs sqliteOpener.ts on `file`: what it printed. */
const opener = (file: string) =>
  new Promise<string>((ok) => {
    const child = ownedByTest(spawn(process.execPath, ["--import", tsx, openerScript, file], { stdio: ["ignore", "pipe", "pipe"] }))
    children.push(child)
    let out = ""
    child.stdout.setEncoding("utf8").on("data", (c: string) => (out += c))
    child.stderr.setEncoding("utf8").on("data", (c: string) => (out += c))
    child.on("close", () => ok(out.trim()))
  })

describe("sqlite, a new database opened by two processes at once", () => {
  // The one that found the other's migrations under way checked the schema before they were
  // committed, and refused the database as one that came with a repository ("a missing table or
  // index"): about one pair in eight on a busy machine.
  it("both open it: the one that finds the other migrating waits for it", async () => {
    const files = Array.from({ length: 8 }, (_, i) => join(dir, `fresh-${i}.sqlite`))
    const outputs = await Promise.all(files.flatMap((file) => [opener(file), opener(file)]))
    expect(outputs).toEqual(outputs.map(() => "opened"))
  }, 120_000)
})

for (const kind of ["sqlite", "postgres"] as const) {
  describe(`${kind} with two processes`, () => {
    it("appending to one session at once: each sequence once, typed conflicts for the loser, no gap", async () => {
      const database = await freshDatabase(kind, "appends")
      await withStore(kind, database, (store) =>
        store.append({ id: "c", sessionId: "shared", sequence: 1, timestamp: "2026-01-01T00:00:00.000Z", type: "session.created", payload: { cwd: "/w", client: "test" } }))
      const writers = ["a", "b"].map((tag) => writer(kind, database, ["shared", tag, "100"]))
      // Both stores are open: give the start signal to both at once.
      await Promise.all(writers.map((w) => w.ready))
      for (const w of writers) w.child.stdin.end("go\n")
      const results = await Promise.all(writers.map((w) => w.done))
      for (const r of results) expect(r.code, r.err).toBe(0)
      const reports = writers.map((w) => w.report() as { appended: number; conflicts: number })
      expect(reports.map((r) => r.appended)).toEqual([100, 100])
      const log = await withStore(kind, database, (store) => collect(store.read("shared")))
      expect(log.map((e) => e.sequence)).toEqual(Array.from({ length: 201 }, (_, i) => i + 1))
      expect(log.filter((e) => e.type === "model.delta" && e.payload.text === "a")).toHaveLength(100)
      expect(log.filter((e) => e.type === "model.delta" && e.payload.text === "b")).toHaveLength(100)
      // Both raced for the same sequences: the losers were told so, typed, and retried.
      expect(reports[0]!.conflicts + reports[1]!.conflicts).toBeGreaterThan(0)
    }, 90_000)

    it("racing for one session's writer lease: exactly one process holds it, the other is SessionBusy naming it", async () => {
      const database = await freshDatabase(kind, "lease")
      const racers = ["a", "b"].map((tag) => writer(kind, database, ["raced", tag, "lock"]))
      await Promise.all(racers.map((w) => w.ready))
      for (const w of racers) w.child.stdin.write("go\n")
      await Promise.all(racers.map((w) => w.reported))
      const reports = racers.map((w) => w.report())
      expect(reports.filter((r) => r.held === true), JSON.stringify(reports)).toHaveLength(1)
      const holder = racers[reports.findIndex((r) => r.held === true)]!
      const loser = reports.find((r) => r.held === false)!
      expect(loser.busy).toContain(`SessionBusy`)
      expect(loser.busy).toContain(`pid ${holder.child.pid} on host `)
      for (const w of racers) w.child.stdin.end()
      for (const r of await Promise.all(racers.map((w) => w.done))) expect(r.code, r.err).toBe(0)
    }, 60_000)
  })
}
