/**
 * The first append to a version-0 log upgrades it (stores43): the new log was built in memory —
 * every event collected, then joined into one string — so a long old log needed several times its
 * size. It is now streamed (read a chunk at a time, written in 64 KiB writes). Shown without timing:
 * a 200 MB version-0 log is upgraded and appended to by a node whose heap is capped at 64 MB, running
 * the built store (dist/); on main the process dies out of heap.
 */
import { spawnSync } from "node:child_process"
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readSync, rmSync, writeSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { pathToFileURL } from "node:url"
import { afterAll, describe, expect, it } from "vitest"

const root = resolve(import.meta.dirname, "../..")
const dataDir = mkdtempSync(join(tmpdir(), "effect-agent-upgrade-memory-"))
afterAll(() => rmSync(dataDir, { recursive: true, force: true }))
const sessionId = "sess_BIGVZEROAAAAAAAAAAAAAAAAAA"
const at = "2026-01-01T00:00:00.000Z"

/** A version-0 log (no header) of about `mb` MB: 100 KiB deltas of one open turn; returns its last sequence. */
const writeOldLog = (mb: number) => {
  mkdirSync(join(dataDir, "sessions"), { recursive: true })
  const fd = openSync(join(dataDir, "sessions", `${sessionId}.jsonl`), "wx", 0o600)
  const line = (value: unknown) => writeSync(fd, JSON.stringify(value) + "\n")
  line({ id: "e1", sessionId, sequence: 1, timestamp: at, type: "session.created", payload: { cwd: "/w", client: "cli" } })
  line({ id: "e2", sessionId, turnId: "t1", sequence: 2, timestamp: at, type: "turn.started", payload: { promptPreview: "p" } })
  const text = "x".repeat(100 * 1024)
  let sequence = 3
  for (; sequence < 3 + mb * 10; sequence++) line({ id: `e${sequence}`, sessionId, turnId: "t1", sequence, timestamp: at, type: "model.delta", payload: { text } })
  closeSync(fd)
  return sequence - 1
}

describe("upgrading a long version-0 log", () => {
  it("does not hold the log in memory: 200 MB upgraded under a 64 MB heap", () => {
    const last = writeOldLog(200)
    const script = `
      import * as Effect from "effect/Effect"
      import * as NodeContext from "@effect/platform-node/NodeContext"
      import { JsonlEventStore } from ${JSON.stringify(pathToFileURL(join(root, "dist/index.js")).href)}
      const event = { id: "late", sessionId: ${JSON.stringify(sessionId)}, turnId: "t1", sequence: ${last + 1}, timestamp: ${JSON.stringify(at)}, type: "model.delta", payload: { text: "after" } }
      await Effect.runPromise(Effect.scoped(Effect.flatMap(JsonlEventStore.make({ dataDir: ${JSON.stringify(dataDir)} }), (store) => store.append(event))).pipe(Effect.provide(NodeContext.layer)))
      console.log("appended")
    `
    const child = spawnSync(process.execPath, ["--max-old-space-size=64", "--input-type=module", "-e", script], { cwd: root, encoding: "utf8", env: { ...process.env, NODE_OPTIONS: "" } })
    expect(child.signal).toBeNull()
    expect(child.stderr).not.toContain("heap")
    expect(child.status).toBe(0)
    expect(child.stdout).toContain("appended")
    const file = join(dataDir, "sessions", `${sessionId}.jsonl`)
    // The new log begins with its header; the original is kept beside it.
    const head = Buffer.alloc(64)
    const fd = openSync(file, "r")
    readSync(fd, head, 0, 64, 0)
    closeSync(fd)
    expect(head.toString("utf8")).toMatch(/^\{"format":"effect-agent\/events","version":\d+\}\n/)
    expect(existsSync(`${file}.v0`)).toBe(true)
  }, 600_000)
})
