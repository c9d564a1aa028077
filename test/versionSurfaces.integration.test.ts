/**
 * The built CLI reports package.json's version: `--version`, and the ACP agent's `initialize`
 * (`agentInfo`). `/openapi.json`'s `info.version` is checked in server/api.test; the single source is
 * checked in version.test.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { startAgent } from "./acp/client.js"
import { run } from "./cli/subprocess.js"

const packageVersion = (JSON.parse(readFileSync(join(import.meta.dirname, "..", "package.json"), "utf8")) as { version: string }).version
const dir = mkdtempSync(join(tmpdir(), "effect-agent-version-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe("every surface reports package.json's version", () => {
  it("--version", async () => {
    const shown = await run(["--version"], { cwd: dir })
    expect(shown.code).toBe(0)
    expect(shown.stdout.trim()).toBe(packageVersion)
  })

  it("ACP initialize's agentInfo", async () => {
    const script = join(dir, "script.json")
    writeFileSync(script, JSON.stringify({ responses: [] }))
    const agent = startAgent(["--script", script, "--data-dir", join(dir, "data")], { cwd: dir })
    try {
      expect((await agent.initialize()).agentInfo).toEqual({ name: "effect-agent", version: packageVersion })
    } finally {
      agent.child.stdin.end()
      await agent.exited
    }
  })
})
