/**
 * A cold listing (no index: the first listing, after `repair`, the index deleted) of a large log
 * (review 46): it read each log whole into one buffer to find its header and its last newline, up
 * to 8 logs at once — a 1.26 GB log made `sessions` take 1.47 GB, and one over 2 GiB "cannot be
 * read" (a valid log, replayed in 250 MB). Now only the header and the end are read, a chunk at a
 * time, and the summary is folded from the log as a stream: the listing's memory does not grow with
 * the log.
 *
 * Run in a process of its own: its peak memory (`maxRSS`) is the measure, and a test worker's
 * is the peak of every file it ran before.
 */
import { execFileSync } from "node:child_process"
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, statSync, writeSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { afterAll, describe, expect, it } from "vitest"

const root = mkdtempSync(join(tmpdir(), "effect-agent-index-memory-"))
afterAll(() => rmSync(root, { recursive: true, force: true }))
const repository = resolve(import.meta.dirname, "../..")
const store = new URL("../../dist/layers/JsonlEventStore.js", import.meta.url).href

const sessionId = "sess_01M966CGK83NDE6NHP2XMKHTA8"

/** A valid log of `deltas` model deltas of 1 MiB each (a turn left open), written a line at a time. */
const writeLog = (file: string, deltas: number) => {
  const fd = openSync(file, "w")
  let sequence = 0
  const line = (type: string, payload: object, turn = true) =>
    writeSync(fd, JSON.stringify({ id: `evt_${++sequence}`, sessionId, ...(turn ? { turnId: "turn_1" } : {}), sequence, timestamp: "2026-01-01T00:00:00.000Z", type, payload }) + "\n")
  writeSync(fd, JSON.stringify({ format: "effect-agent/events", version: 1 }) + "\n")
  line("session.created", { cwd: "/work", client: "cli" }, false)
  line("turn.started", { promptPreview: "hello" })
  line("user.message", { content: "hello" })
  const text = "x".repeat(1024 * 1024)
  for (let i = 0; i < deltas; i++) line("model.delta", { text })
  closeSync(fd)
}

/** What a cold listing of `dataDir` says, and how far the process's peak memory rose (MB) while it ran. */
const coldListing = (dataDir: string): { readonly listed: ReadonlyArray<readonly [string, number]>; readonly damaged: number; readonly grewMb: number } => {
  const script = `
    const Effect = await import("effect/Effect")
    const NodeContext = await import("@effect/platform-node/NodeContext")
    const { make } = await import(${JSON.stringify(store)})
    const before = process.resourceUsage().maxRSS
    const { sessions, damaged } = await Effect.runPromise(Effect.provide(Effect.scoped(Effect.flatMap(make({ dataDir: ${JSON.stringify(dataDir)}, readOnly: true }), (s) => s.listing)), NodeContext.layer))
    const grewMb = (process.resourceUsage().maxRSS - before) / 1024
    process.stdout.write(JSON.stringify({ listed: sessions.map((s) => [s.sessionId, s.lastSequence]), damaged: damaged.length, grewMb }))`
  return JSON.parse(execFileSync(process.execPath, ["--input-type=module", "-e", script], { cwd: repository, encoding: "utf8", timeout: 300_000 }))
}

describe("a cold listing of a large log", () => {
  it("does not read the log into memory", () => {
    const dataDir = join(root, "large")
    mkdirSync(join(dataDir, "sessions"), { recursive: true })
    const log = join(dataDir, "sessions", `${sessionId}.jsonl`)
    writeLog(log, 384)
    const logMb = statSync(log).size / 1024 / 1024
    const { damaged, grewMb, listed } = coldListing(dataDir)
    expect(damaged).toBe(0)
    expect(listed).toEqual([[sessionId, 387]])
    // Reading it whole took the log's size and more; the stream's chunks and a line at a time, far less.
    expect(grewMb, `grew ${grewMb} MB listing a log of ${logMb} MB`).toBeLessThan(logMb / 3)
  }, 300_000)
})
