/**
 * A real full disk (ENOSPC), not a file-size limit: mounts a 4 MiB tmpfs (needs root, or
 * CAP_SYS_ADMIN — a CI container may have neither, so this is a probe, not a test), then for JSONL
 * and SQLite runs test/layers/fullDiskChild.ts with its data dir there, fills the tmpfs to 64 KiB
 * before the turn with the 1 MiB answer, deletes the filler, and lets the same process run two more
 * turns. Prints each store's turns; exits 1 unless each is `final, EventStoreFailure disk_full,
 * final, final`. `node --import tsx scripts/probe-full-disk.ts`; it unmounts what it mounted.
 */
import { execFileSync } from "node:child_process"
import { mkdirSync, mkdtempSync, rmSync, statfsSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { driveFullDisk } from "../test/layers/fullDiskDriver.js"

const mount = mkdtempSync(join(tmpdir(), "effect-agent-enospc-"))
const filler = join(mount, "filler")
const expected = JSON.stringify([{ turn: "final" }, { turn: "EventStoreFailure", reason: "disk_full" }, { turn: "final" }, { turn: "final" }])

let failed = false
execFileSync("mount", ["-t", "tmpfs", "-o", "size=4m", "tmpfs", mount])
try {
  for (const kind of ["jsonl", "sqlite"] as const) {
    const dataDir = join(mount, kind)
    mkdirSync(dataDir)
    const turns = await driveFullDisk(kind, dataDir, {
      fill: () => {
        const { bavail, bsize } = statfsSync(mount)
        writeFileSync(filler, Buffer.alloc(Math.max(0, bavail * bsize - 64 * 1024)))
      },
      free: () => rmSync(filler)
    })
    const held = JSON.stringify(turns) === expected
    failed ||= !held
    console.log(`${kind}: ${held ? "held" : "FAILED"} ${JSON.stringify(turns)}`)
  }
} finally {
  execFileSync("umount", [mount])
  rmSync(mount, { recursive: true, force: true })
}
process.exit(failed ? 1 : 0)
