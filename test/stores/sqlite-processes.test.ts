import { spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { pathToFileURL } from "node:url"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Effect from "effect/Effect"
import { afterAll, describe, expect, it } from "vitest"
import * as SqliteEventStore from "../../src/layers/SqliteEventStore.js"
import { EventStore } from "../../src/services/EventStore.js"
import { collect } from "../helpers.js"

const dir = mkdtempSync(join(tmpdir(), "effect-agent-sqlite-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href
const writerScript = resolve(import.meta.dirname, "sqlite-writer.ts")

const withStore = <A, E>(filename: string, f: (store: EventStore.Service) => Effect.Effect<A, E>) =>
  Effect.runPromise(Effect.flatMap(EventStore, f).pipe(Effect.provide(SqliteEventStore.layer({ filename })), Effect.provide(NodeContext.layer)))

describe("SQLite with two processes", () => {
  it("appending to one session at once: each sequence once, typed conflicts for the loser, no gap", async () => {
    const filename = join(dir, "shared.sqlite")
    await withStore(filename, (store) =>
      store.append({ id: "c", sessionId: "shared", sequence: 1, timestamp: "2026-01-01T00:00:00.000Z", type: "session.created", payload: { cwd: "/w", client: "test" } }))
    const writers = ["a", "b"].map((tag) => {
      const child = spawn(process.execPath, ["--import", tsx, writerScript, filename, "shared", tag, "100"], { stdio: ["pipe", "pipe", "pipe"] })
      let out = ""
      let err = ""
      let onReady: () => void = () => {}
      const ready = new Promise<void>((ok) => (onReady = ok))
      child.stdout.setEncoding("utf8").on("data", (c: string) => {
        out += c
        if (out.startsWith("ready\n")) onReady()
      })
      child.stderr.setEncoding("utf8").on("data", (c: string) => (err += c))
      const done = new Promise<{ code: number | null; out: string; err: string }>((ok) => child.on("close", (code) => ok({ code, out: out.replace(/^ready\n/, ""), err })))
      return { child, ready, done }
    })
    // Both stores are open: give the start signal to both at once.
    await Promise.all(writers.map((w) => w.ready))
    for (const w of writers) w.child.stdin.end("go\n")
    const results = await Promise.all(writers.map((w) => w.done))
    for (const r of results) expect(r.code, r.err).toBe(0)
    const reports = results.map((r) => JSON.parse(r.out) as { appended: number; conflicts: number })
    expect(reports.map((r) => r.appended)).toEqual([100, 100])
    const log = await withStore(filename, (store) => collect(store.read("shared")))
    expect(log.map((e) => e.sequence)).toEqual(Array.from({ length: 201 }, (_, i) => i + 1))
    expect(log.filter((e) => e.type === "model.delta" && e.payload.text === "a")).toHaveLength(100)
    expect(log.filter((e) => e.type === "model.delta" && e.payload.text === "b")).toHaveLength(100)
    // Both raced for the same sequences: the losers were told so, typed, and retried.
    expect(reports[0]!.conflicts + reports[1]!.conflicts).toBeGreaterThan(0)
  })
})
