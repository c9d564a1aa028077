/**
 * `serve` grows its process's table of file descriptors before clients connect: Linux doubles the
 * table when a descriptor does not fit, and in a process with threads each doubling waits for an
 * RCU grace period — 15–34 ms asleep in `accept4` in the middle of a burst of connections
 * (docs/benchmarks.md, split18). Linux only: the table's size is `FDSize` in /proc.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import type { Running } from "../cli/subprocess.js"
import { descriptorsToOpen } from "../../src/server/Server.js"
import { startServe } from "./serveProcess.js"

const dir = mkdtempSync(join(tmpdir(), "effect-agent-serve-fds-"))
const running: Array<Running> = []
afterAll(() => {
  for (const r of running) r.child.kill("SIGKILL")
  rmSync(dir, { recursive: true, force: true })
})

describe.runIf(process.platform === "linux")("serve's descriptor table", () => {
  it("has room for a thousand connections before the first one comes", async () => {
    const { server } = await startServe(["--data-dir", join(dir, ".data"), "--no-instructions"], { cwd: dir, env: { EFFECT_AGENT_CONFIG_DIR: join(dir, "config") } })
    running.push(server)
    const size = Number(/FDSize:\s+(\d+)/.exec(readFileSync(`/proc/${server.child.pid}/status`, "utf8"))![1])
    expect(size).toBeGreaterThanOrEqual(1024)
  })
})

describe("how far serve grows the table", () => {
  it("opens at most 1,024, at most half the soft limit on open files, none where the limit is unknown", () => {
    expect(descriptorsToOpen(20_000)).toBe(1024)
    expect(descriptorsToOpen(Number.MAX_SAFE_INTEGER)).toBe(1024)
    expect(descriptorsToOpen(1024)).toBe(512)
    expect(descriptorsToOpen(1)).toBe(0)
    expect(descriptorsToOpen(undefined)).toBe(0)
  })
})
