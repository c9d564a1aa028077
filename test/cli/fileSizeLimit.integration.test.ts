/**
 * A disk that fills mid-turn, made for real without root: the CLI runs under a file-size limit
 * (`ulimit -f`, with SIGXFSZ ignored so that a write past it fails `EFBIG` instead of killing the
 * process). The turn fails with a typed store failure that says the disk is full, the log is left
 * whole (no torn line, every stored event readable), and once the limit is gone the next process
 * closes the open turn and runs the next one.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { expectWellFormedLog } from "../helpers.js"
import { eventsOf, run, start } from "./subprocess.js"

const dir = mkdtempSync(join(tmpdir(), "effect-agent-cli-fsize-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const writeScript = (name: string, script: unknown) => {
  const file = join(dir, name)
  writeFileSync(file, JSON.stringify(script))
  return file
}

/** Runs the CLI with files limited to `kib` KiB: a write past that fails `EFBIG`. */
const limitedTo = (kib: number) => ["bash", "-c", `trap '' XFSZ; ulimit -f ${kib}; exec "$@"`, "bash"]

for (const store of ["jsonl", "sqlite"] as const) {
  describe(`the CLI under a file-size limit (${store} store)`, () => {
    it("a write past the limit fails the turn as a full disk; the log stays whole; the session goes on once there is room", async () => {
      const cwd = join(dir, store)
      mkdirSync(cwd, { recursive: true })
      const common = ["--data-dir", join(dir, `data-${store}`), "--store", store]
      const first = await run(["run", "hi", ...common, "--script", writeScript(`first-${store}.json`, { responses: [{ chunks: ["hello"] }] })], { cwd })
      expect(first.code).toBe(0)
      const sessionId = /session (\S+)/.exec(first.stderr)?.[1]
      expect(sessionId).toMatch(/^sess_/)
      const before = eventsOf((await run(["replay", sessionId!, "--json", ...common])).stdout)

      // An answer far larger than the room left: its deltas cannot all be stored.
      const big = "x".repeat(4096)
      const full = await start(["run", "a long answer", "--session", sessionId!, ...common, "--script", writeScript(`big-${store}.json`, {
        responses: [{ chunks: Array.from({ length: 64 }, () => big) }]
      })], { cwd, prefix: limitedTo(store === "jsonl" ? 16 : 64) }).done
      expect(full.signal).toBeNull()
      expect(full.code).not.toBe(0)
      // SQLite reports the failed write as an I/O error (SQLITE_IOERR); the store tells the file-size limit (storage3).
      expect(full.stderr).toMatch(store === "jsonl" ? /Event store append failed \[disk_full\]: EFBIG/ : /Event store append failed \[disk_full\]: a write failed under the process's file-size limit/)
      expect(full.stderr).not.toContain("failed unexpectedly")

      const stored = eventsOf((await run(["replay", sessionId!, "--json", ...common])).stdout)
      expect(stored.slice(0, before.length)).toEqual(before)
      expect(stored.length).toBeGreaterThan(before.length)
      expectWellFormedLog(stored, { allowOpenTurn: true })
      if (store === "jsonl") expect(readFileSync(join(dir, `data-${store}`, "sessions", `${sessionId}.jsonl`), "utf8").endsWith("\n")).toBe(true)

      const next = await run(["run", "again", "--session", sessionId!, ...common, "--script", writeScript(`next-${store}.json`, { responses: [{ chunks: ["room again"] }] })], { cwd })
      expect(next.code).toBe(0)
      expect(next.stdout).toBe("room again\n")
      const log = eventsOf((await run(["replay", sessionId!, "--json", ...common])).stdout)
      expectWellFormedLog(log)
      expect(log.slice(0, stored.length)).toEqual(stored)
      // Another process closes the turn the failed one left open: it cannot know why that one stopped.
      expect(log[stored.length]).toMatchObject({ type: "turn.completed", payload: { stopReason: "error", errorCode: "interrupted" } })
    })
  })
}
