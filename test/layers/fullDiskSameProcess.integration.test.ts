/**
 * A full disk met and freed inside one process: fullDiskChild.ts runs under a soft file-size limit
 * (`ulimit -S -f`, SIGXFSZ ignored, so a write past it fails `EFBIG`), its second turn fails typed
 * on the full disk, then the test lifts the limit with `prlimit` while the process lives, and its
 * next turns must work. For SQLite the write that fails is the COMMIT of a batch (WAL pages are
 * written then): a connection left inside the failed transaction would fail every later append of
 * the process (`cannot start a transaction within a transaction`). It is not: SQLite rolls a
 * transaction whose COMMIT failed with SQLITE_FULL / SQLITE_IOERR back itself (timing4 probe;
 * scripts/probe-full-disk.mjs checks the same on a real full tmpfs).
 */
import { execFileSync, spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { pathToFileURL } from "node:url"
import { afterAll, describe, expect, it } from "vitest"
import { ownedByTest } from "../processes.js"

const dir = mkdtempSync(join(tmpdir(), "effect-agent-full-disk-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href
const childScript = resolve(import.meta.dirname, "fullDiskChild.ts")

/** Runs fullDiskChild.ts under a soft limit of `kib` KiB; `step(n)` answers its n-th line of output. */
const drive = (kind: "jsonl" | "sqlite", kib: number, step: (line: number, pid: number) => void) =>
  new Promise<ReadonlyArray<unknown>>((done, fail) => {
    const dataDir = mkdtempSync(join(dir, `${kind}-`))
    const child = ownedByTest(spawn("bash", ["-c", `trap '' XFSZ; ulimit -S -f ${kib}; exec "$@"`, "bash", process.execPath, "--import", tsx, childScript, kind, dataDir], {
      stdio: ["pipe", "pipe", "pipe"]
    }))
    const lines: Array<unknown> = []
    let buffer = ""
    let stderr = ""
    child.stderr.on("data", (chunk) => (stderr += chunk))
    child.stdout.on("data", (chunk) => {
      buffer += chunk
      for (let end = buffer.indexOf("\n"); end >= 0; end = buffer.indexOf("\n")) {
        const line = buffer.slice(0, end)
        buffer = buffer.slice(end + 1)
        // The engine's log lines (a warning when it closes the turn left open) share stdout.
        if (!line.startsWith("{")) continue
        lines.push(JSON.parse(line))
        step(lines.length, child.pid!)
        if (lines.length < 4) child.stdin.write("next\n")
        else child.stdin.end()
      }
    })
    child.once("exit", (code) => code === 0 ? done(lines) : fail(new Error(`exit ${code}: ${stderr}`)))
  })

describe("a full disk freed while the process lives", () => {
  for (const [kind, kib, reason] of [["jsonl", 64, "disk_full"], ["sqlite", 512, "unavailable"]] as const) {
    it(`${kind}: the turn that meets it fails typed, the turns after it work in the same process`, async () => {
      const turns = await drive(kind, kib, (line, pid) => {
        if (line === 2) execFileSync("prlimit", ["--pid", String(pid), "--fsize=unlimited:"])
      })
      expect(turns).toEqual([
        { turn: "final" },
        // SQLite reports EFBIG as an I/O error (SQLITE_IOERR), not as a full disk.
        { turn: "EventStoreFailure", reason },
        { turn: "final" },
        { turn: "final" }
      ])
    })
  }
})
