/**
 * SQLite's writer lease across a wall clock stepped forward, with real processes: the holder is a
 * CLI run in a pid namespace and under a host name of its own (another container on this host: its
 * pid tells this one nothing, so its lease is judged by its expiry), the second a CLI run whose wall clock reads an
 * hour ahead (test/fixtures/clock/wallClockAhead.mjs). Expiries of one host are judged on its
 * monotonic clock, which a step of the wall clock does not move: the live holder keeps its lease.
 */
import { spawnSync } from "node:child_process"
import { writeFileSync } from "node:fs"
import { join, resolve } from "node:path"
import { pathToFileURL } from "node:url"
import { describe, expect, it } from "vitest"
import { replayLog, scratch, sessionIdIn, start } from "../cli/subprocess.js"

const { dir, dataDir } = scratch("sqlite-lease-clock")
const store = ["--store", "sqlite", "--data-dir", dataDir]
const writeScript = (name: string, script: unknown) => {
  const file = join(dir, name)
  writeFileSync(file, JSON.stringify(script))
  return file
}
/**
 * A container's namespaces: pid and host name of its own (as root, or in a user namespace), the CLI
 * killed with `unshare` if the test kills it.
 */
const containerFlags = [["--pid", "--uts", "--fork", "--kill-child"], ["--user", "--map-root-user", "--pid", "--uts", "--fork", "--kill-child"]].find((flags) =>
  spawnSync("unshare", [...flags, "true"], { stdio: "ignore" }).status === 0
)
const wallClockAhead = resolve(__dirname, "../fixtures/clock/wallClockAhead.mjs")

describe.skipIf(containerFlags === undefined)("SQLite writer lease across a wall clock stepped forward (real processes)", () => {
  it("a holder in another container keeps its lease when a second process's wall clock reads an hour ahead", async () => {
    // The model takes ten minutes before its first chunk: the turn is open, the session held.
    const holder = start(["run", "think slowly", ...store, "--script", writeScript("slow.json", { responses: [{ chunks: ["never"], delay: "10 minutes" }] })], {
      cwd: dir,
      prefix: ["unshare", ...containerFlags!, "--", "sh", "-c", "hostname \"$0\" && exec \"$@\"", "container-a"]
    })
    let holderErr = ""
    holder.child.stderr!.on("data", (chunk: string) => (holderErr += chunk))
    await holder.waitForStderr(/session \S+\n/)
    const sessionId = sessionIdIn(holderErr)!
    const before = await replayLog(sessionId, store)

    const second = start(["run", "me too", "--session", sessionId, ...store, "--script", writeScript("second.json", { responses: [{ chunks: ["I should never run."] }] })], {
      cwd: dir,
      env: { EFFECT_AGENT_TEST_WALL_CLOCK_AHEAD_MS: String(60 * 60 * 1000) },
      prefix: ["sh", "-c", `exec "$0" --import=${pathToFileURL(wallClockAhead).href} "$@"`]
    })
    second.child.stdin!.end()
    // The preload does step the clock (else this test would pass on a clock that never moved): in one
    // process, `Date.now` read after the machine's own time (`new Date`, which the preload leaves) is at
    // least the hour ahead — no comparison of times across processes, nothing that a slow machine moves.
    const read = spawnSync(process.execPath, [`--import=${pathToFileURL(wallClockAhead).href}`, "-e", "const machine = new Date().getTime(); process.stdout.write(String(Date.now() - machine))"], {
      env: { ...process.env, NODE_OPTIONS: "", EFFECT_AGENT_TEST_WALL_CLOCK_AHEAD_MS: String(60 * 60 * 1000) },
      encoding: "utf8"
    })
    expect(Number(read.stdout)).toBeGreaterThanOrEqual(60 * 60 * 1000)
    const busy = await second.done
    expect(busy.stderr).toContain("SessionBusy")
    expect(busy.stderr).toContain("on host container-a")
    expect(busy.stdout).toBe("")
    expect(await replayLog(sessionId, store)).toEqual(before)
    holder.child.kill("SIGKILL")
    await holder.done
  }, 60_000)
})
