/**
 * A configuration value that is no good (`ANTHROPIC_MAX_OUTPUT_TOKENS=lots`) through the built CLI:
 * a usage error (exit code 1) on one line naming the variable and what it wants — not Effect's
 * `ConfigError` as JSON — before any request, and never the secret parts of what was set.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as WireServer from "../layers/WireServer.js"
import { run } from "./subprocess.js"

const dir = mkdtempSync(join(tmpdir(), "effect-agent-cli-config-"))
let server: WireServer.WireServer
beforeAll(async () => {
  server = await WireServer.start()
})
afterAll(async () => {
  await server.close()
  rmSync(dir, { recursive: true, force: true })
})

/** The run's stderr, which must be one usage line: exit code 1, no JSON, no request made. */
const refused = async (env: Record<string, string>) => {
  const result = await run(["run", "hi", "--data-dir", dir], { env })
  expect(result.code).toBe(1)
  expect(result.stdout).toBe("")
  expect(result.stderr).not.toContain("_op")
  expect(result.stderr.trim().split("\n")).toHaveLength(1)
  return result.stderr
}

describe("a bad configuration value", () => {
  it("is a usage error naming the variable and what it wants", async () => {
    const anthropic = { ANTHROPIC_API_KEY: "k", ANTHROPIC_BASE_URL: server.url }
    expect(await refused({ ...anthropic, ANTHROPIC_MAX_OUTPUT_TOKENS: "lots" })).toMatch(/^effect-agent: ANTHROPIC_MAX_OUTPUT_TOKENS: .*integer.*"lots"/)
    expect(await refused({ ...anthropic, ANTHROPIC_MAX_CONTEXT_TOKENS: "1.5" })).toMatch(/^effect-agent: ANTHROPIC_MAX_CONTEXT_TOKENS: .*integer/)
    // An integer the API cannot use is as bad as none.
    expect(await refused({ ...anthropic, ANTHROPIC_MAX_OUTPUT_TOKENS: "0" })).toMatch(/^effect-agent: ANTHROPIC_MAX_OUTPUT_TOKENS: .*positive integer/)
    const openAi = { OPENAI_API_KEY: "k", OPENAI_BASE_URL: server.url }
    expect(await refused({ ...openAi, OPENAI_MAX_OUTPUT_TOKENS: "-3" })).toMatch(/^effect-agent: OPENAI_MAX_OUTPUT_TOKENS: .*positive integer/)
    expect(await refused({ ...openAi, OPENAI_MAX_CONTEXT_TOKENS: "lots" })).toMatch(/^effect-agent: OPENAI_MAX_CONTEXT_TOKENS: .*integer/)
    // A base URL with credentials in it: named without them.
    const url = await refused({ ANTHROPIC_API_KEY: "k", ANTHROPIC_BASE_URL: "http://user:hunter2@127.0.0.1:9/" })
    expect(url).toMatch(/^effect-agent: ANTHROPIC_BASE_URL: /)
    expect(url).not.toContain("hunter2")
    expect(server.received).toHaveLength(0)
  })

  // leftovers43: `--provider openai --base-url` without a key (a local server) read none of the other
  // OPENAI_* variables, so a bad one passed unsaid and a good one was ignored. Failed on main: it ran.
  it("is refused for a local OpenAI-compatible server (--base-url, no key) too", async () => {
    const local = async (env: Record<string, string>) => {
      const result = await run(["run", "hi", "--provider", "openai", "--base-url", server.url, "--data-dir", dir], { env: { OPENAI_API_KEY: "", ...env } })
      expect(result.code).toBe(1)
      expect(result.stderr).not.toContain("_op")
      return result.stderr
    }
    expect(await local({ OPENAI_MAX_OUTPUT_TOKENS: "lots" })).toMatch(/^effect-agent: OPENAI_MAX_OUTPUT_TOKENS: .*integer.*"lots"/)
    expect(await local({ OPENAI_MAX_CONTEXT_TOKENS: "0" })).toMatch(/^effect-agent: OPENAI_MAX_CONTEXT_TOKENS: .*positive integer/)
    expect(server.received).toHaveLength(0)
    // A good one is used, and named: OPENAI_MODEL (blank key or none).
    for (const key of [{ OPENAI_API_KEY: "" }, {}]) {
      const named = await run(["run", "hi", "--provider", "openai", "--base-url", "http://127.0.0.1:9/v1", "--data-dir", dir], { env: { ...key, OPENAI_MODEL: "local-model" } })
      expect(named.stderr).toContain("effect-agent: answering with openai local-model at http://127.0.0.1:9/v1.")
      expect(named.stderr).not.toContain("Missing credentials")
    }
  })
})
