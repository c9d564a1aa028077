/**
 * The suite cleans up after itself (test/tmpSetup.ts, test/processes.ts): a run's temp files are in
 * a folder of the run's, and a process a test started ends with the test even when the test did not
 * end it (as a failing test does not).
 */
import { spawnSync } from "node:child_process"
import { existsSync, realpathSync } from "node:fs"
import { tmpdir } from "node:os"
import { basename, dirname } from "node:path"
import { describe, expect, it } from "vitest"
import type { Running } from "./cli/subprocess.js"
import { startServe } from "./server/serveProcess.js"
import { hostTmp, outsideTmp } from "./tmp.js"

describe("the run's temp folder", () => {
  it("os.tmpdir() in a test, and in a process it starts, is the run's folder; outsideTmp() is the run's folder outside /tmp", () => {
    const dir = tmpdir()
    expect(basename(dir)).toMatch(/^effect-agent-test-run-\d+-/)
    expect(dirname(dir)).toBe(hostTmp())
    const child = spawnSync(process.execPath, ["-e", "process.stdout.write(require('node:os').tmpdir())"], { encoding: "utf8" })
    expect(child.stdout).toBe(dir)
    const outside = outsideTmp()
    expect(basename(outside)).toMatch(/^effect-agent-test-run-\d+-/)
    expect(existsSync(outside)).toBe(true)
    expect(realpathSync(outside).startsWith("/tmp/")).toBe(false)
  })
})

describe("a process a test leaves running", () => {
  let left: Running | undefined
  it("a test starts `serve` and ends without stopping it (as a failing test would)", async () => {
    const serve = await startServe(["--data-dir", `${tmpdir()}/hygiene-data`, "--no-instructions"], { cwd: tmpdir() })
    left = serve.server
    expect(left.child.exitCode).toBe(null)
  })

  it("has been killed when that test ended", async () => {
    expect(left).toBeDefined()
    // On a suite without the test's finalizer this waits until the test times out: the process runs on.
    const finished = await left!.done
    expect(finished.signal).toBe("SIGKILL")
  })
})
