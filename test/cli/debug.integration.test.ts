/**
 * `EFFECT_AGENT_DEBUG=1`: the CLI's launcher (bin.ts) turns on source maps before the program's
 * modules load, so a failure's stack names the source files even though the shipped bin is a bundle.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { run } from "./subprocess.js"

const dir = mkdtempSync(join(tmpdir(), "effect-agent-debug-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe("the CLI under EFFECT_AGENT_DEBUG=1", () => {
  it("prints a failure's stack with the sources' file names (src/…/*.ts), not the bundle's chunks", async () => {
    const finished = await run(["replay", "no-such-session"], { cwd: dir, env: { EFFECT_AGENT_DEBUG: "1" } })
    expect(finished.code).toBe(1)
    expect(finished.stderr).toMatch(/\/src\/[\w/]+\.ts:\d+:\d+/)
    expect(finished.stderr).not.toMatch(/dist\/cli\/chunks\//)
  })

  it("without it, the same failure is one line and no stack", async () => {
    const finished = await run(["replay", "no-such-session"], { cwd: dir })
    expect(finished.code).toBe(1)
    expect(finished.stderr.trim().split("\n")).toEqual([expect.stringMatching(/^effect-agent: .*no-such-session/)])
  })
})
