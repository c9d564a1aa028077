/**
 * review46 f3: `repair` held the whole log in memory — every line collected, then the new log joined
 * into one string: 503 MB took 3.1 GB, and a log past 512 MB failed untyped ("Invalid string
 * length"). It now reads the log twice, a line at a time, and writes the new one in 64 KiB writes.
 * Shown without timing: a 100 MB log is repaired by a CLI whose heap is capped at 64 MB (on main
 * 602492b the process aborts, out of heap).
 */
import { closeSync, mkdirSync, openSync, writeSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { run, scratch, start } from "./subprocess.js"

const { dataDir } = scratch("repair-memory")
const sessionId = "sess_BIGLOGAAAAAAAAAAAAAAAAAAAA"
const at = "2026-01-01T00:00:00.000Z"

/** A valid log of about `mb` MB (100 KiB deltas of one open turn) with a stray line at line 4. */
const writeBigLog = (mb: number) => {
  mkdirSync(join(dataDir, "sessions"), { recursive: true })
  const fd = openSync(join(dataDir, "sessions", `${sessionId}.jsonl`), "wx", 0o600)
  const line = (value: unknown) => writeSync(fd, (typeof value === "string" ? value : JSON.stringify(value)) + "\n")
  line({ format: "effect-agent/events", version: 1 })
  line({ id: "e1", sessionId, sequence: 1, timestamp: at, type: "session.created", payload: { cwd: "/w", client: "cli" } })
  line({ id: "e2", sessionId, turnId: "t1", sequence: 2, timestamp: at, type: "turn.started", payload: { promptPreview: "p" } })
  line("{\"not\":\"an event\"}")
  const text = "x".repeat(100 * 1024)
  for (let sequence = 3; sequence < 3 + mb * 10; sequence++) {
    line({ id: `e${sequence}`, sessionId, turnId: "t1", sequence, timestamp: at, type: "model.delta", payload: { text } })
  }
  closeSync(fd)
}

describe("repair of a long log", () => {
  it("does not hold the log in memory: 100 MB repaired under a 64 MB heap", async () => {
    writeBigLog(100)
    // `env` sets the heap cap: the helper clears NODE_OPTIONS for the node it starts.
    const repaired = await start(["repair", sessionId, "--data-dir", dataDir], { prefix: ["env", "NODE_OPTIONS=--max-old-space-size=64"] }).done
    expect(repaired.signal).toBeNull()
    expect(repaired.code).toBe(0)
    expect(repaired.stdout).toContain(`Repaired ${sessionId}: kept 1002 events, dropped 1 line, closed turn t1 as interrupted.`)
    const replayed = await run(["replay", sessionId, "--data-dir", dataDir])
    expect(replayed.code).toBe(0)
  }, 600_000)
})
