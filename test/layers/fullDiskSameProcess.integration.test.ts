/**
 * A full disk met and freed inside one process: fullDiskChild.ts runs under a soft file-size limit
 * (`ulimit -S -f`, SIGXFSZ ignored, so a write past it fails `EFBIG`), its second turn fails typed
 * on the full disk, then the test lifts the limit with `prlimit` while the process lives, and its
 * next turns must work. For SQLite the write that fails is the COMMIT of a batch (WAL pages are
 * written then): a connection left inside the failed transaction would fail every later append of
 * the process (`cannot start a transaction within a transaction`). It is not: SQLite rolls a
 * transaction whose COMMIT failed with SQLITE_FULL / SQLITE_IOERR back itself (timing4 probe;
 * scripts/probe-full-disk.ts checks the same on a real full tmpfs).
 */
import { execFileSync } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { ownedByTest } from "../processes.js"
import { driveFullDisk } from "./fullDiskDriver.js"

const dir = mkdtempSync(join(tmpdir(), "effect-agent-full-disk-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe("a full disk freed while the process lives", () => {
  for (const [kind, kib] of [["jsonl", 64], ["sqlite", 512]] as const) {
    it(`${kind}: the turn that meets it fails typed, the turns after it work in the same process`, async () => {
      const turns = await driveFullDisk(kind, mkdtempSync(join(dir, `${kind}-`)), {
        prefix: ["bash", "-c", `trap '' XFSZ; ulimit -S -f ${kib}; exec "$@"`, "bash"],
        free: (pid) => execFileSync("prlimit", ["--pid", String(pid), "--fsize=unlimited:"]),
        started: (child) => ownedByTest(child)
      })
      expect(turns).toEqual([
        { turn: "final" },
        // SQLite reports EFBIG as an I/O error (SQLITE_IOERR); the store tells the file-size limit (storage3).
        { turn: "EventStoreFailure", reason: "disk_full" },
        { turn: "final" },
        { turn: "final" }
      ])
    })
  }
})
