/**
 * A real full disk (ENOSPC), not a file-size limit: mounts a 4 MiB tmpfs (needs root, or
 * CAP_SYS_ADMIN — a CI container may have neither, so this is a probe, not a test), then for JSONL
 * and SQLite runs test/layers/fullDiskChild.ts with its data dir there, fills the tmpfs to 64 KiB
 * before the turn with the 1 MiB answer, deletes the filler, and lets the same process run two more
 * turns. Prints each store's turns; exits 1 unless each is `final, EventStoreFailure disk_full,
 * final, final`. `node scripts/probe-full-disk.mjs` (after `npm ci`); it unmounts what it mounted.
 */
import { execFileSync, spawn } from "node:child_process"
import { mkdirSync, mkdtempSync, rmSync, statfsSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { pathToFileURL } from "node:url"

const root = resolve(import.meta.dirname, "..")
const tsx = pathToFileURL(createRequire(join(root, "package.json")).resolve("tsx")).href
const mount = mkdtempSync(join(tmpdir(), "effect-agent-enospc-"))
const filler = join(mount, "filler")

const turns = (kind) =>
  new Promise((done, fail) => {
    const dataDir = join(mount, kind)
    mkdirSync(dataDir)
    const child = spawn(process.execPath, ["--import", tsx, join(root, "test/layers/fullDiskChild.ts"), kind, dataDir], { cwd: root, stdio: ["pipe", "pipe", "inherit"] })
    const results = []
    let buffer = ""
    child.stdout.on("data", (chunk) => {
      buffer += chunk
      for (let end = buffer.indexOf("\n"); end >= 0; end = buffer.indexOf("\n")) {
        const line = buffer.slice(0, end)
        buffer = buffer.slice(end + 1)
        if (!line.startsWith("{")) continue
        results.push(JSON.parse(line))
        if (results.length === 1) {
          const { bavail, bsize } = statfsSync(mount)
          writeFileSync(filler, Buffer.alloc(Math.max(0, bavail * bsize - 64 * 1024)))
        }
        if (results.length === 2) rmSync(filler)
        if (results.length < 4) child.stdin.write("next\n")
        else child.stdin.end()
      }
    })
    child.once("exit", (code) => code === 0 ? done(results) : fail(new Error(`${kind}: exit ${code}`)))
  })

let failed = false
execFileSync("mount", ["-t", "tmpfs", "-o", "size=4m", "tmpfs", mount])
try {
  for (const kind of ["jsonl", "sqlite"]) {
    const results = await turns(kind)
    const held = JSON.stringify(results) === JSON.stringify([{ turn: "final" }, { turn: "EventStoreFailure", reason: "disk_full" }, { turn: "final" }, { turn: "final" }])
    failed ||= !held
    console.log(`${kind}: ${held ? "held" : "FAILED"} ${JSON.stringify(results)}`)
  }
} finally {
  execFileSync("umount", [mount])
  rmSync(mount, { recursive: true, force: true })
}
process.exit(failed ? 1 : 0)
