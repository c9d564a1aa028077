/**
 * The CLI's errors a new user meets on the second day, each saying what to do, through the built CLI.
 * Each case failed on the CLI before (`EFFECT_AGENT_TEST_BIN`).
 */
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { startServe } from "../server/serveProcess.js"
import { folders, runClosed } from "./subprocess.js"

const { folder } = folders("says-what-to-do")

describe("errors that say what to do", () => {
  // It printed "effect-agent: " and nothing else: @effect/platform's ServeError has no message of its own.
  it("serve on a port in use names the port and the way out", async () => {
    const cwd = folder("port")
    const first = await startServe(["--data-dir", join(cwd, "data")], { cwd })
    try {
      const port = new URL(first.url).port
      const second = await runClosed(cwd, ["serve", "--port", port, "--data-dir", join(cwd, "data")])
      expect(second.code).toBe(1)
      expect(second.stderr).toBe(
        `effect-agent: port ${port} on 127.0.0.1 is in use (another effect-agent serve?): stop that one, or pick another port with --port (--port 0 takes a free one)\n`
      )
    } finally {
      first.server.child.kill("SIGTERM")
      await first.server.done
    }
  })

  // The echo model answered, and only "no API key set" said why the model asked for was not used.
  it("--model with no API key says the model it did not use, and how to use one", async () => {
    const cwd = folder("model")
    const result = await runClosed(cwd, ["run", "hi", "--model", "claude-sonnet-5-5", "--data-dir", join(cwd, "data")])
    expect(result.code).toBe(0)
    expect(result.stderr.split("\n")[0]).toBe(
      "effect-agent: no API key set (ANTHROPIC_API_KEY, OPENAI_API_KEY): answering with the built-in echo model, not claude-sonnet-5-5; set a key, or --provider openai --base-url <url> for a local server."
    )
    // --provider fake asks for the echo model: the --model beside it is not a model it missed.
    const fake = await runClosed(cwd, ["run", "hi", "--provider", "fake", "--model", "claude-sonnet-5-5", "--data-dir", join(cwd, "data")])
    expect(fake.stderr.split("\n")[0]).toBe("effect-agent: no API key set (ANTHROPIC_API_KEY, OPENAI_API_KEY): answering with the built-in echo model.")
  })

  // Other agents keep their servers in settings.json: a user who tried it read only that the key is unexpected.
  it("mcpServers in a settings file says where MCP servers go", async () => {
    const cwd = folder("mcp-in-settings")
    const config = join(cwd, "config")
    mkdirSync(config)
    writeFileSync(join(config, "settings.json"), JSON.stringify({ mcpServers: { echo: { command: "node", args: ["server.mjs"] } } }))
    const result = await runClosed(cwd, ["run", "hi", "--data-dir", join(cwd, "data")], { EFFECT_AGENT_CONFIG_DIR: config })
    expect(result.code).toBe(1)
    expect(result.stderr).toBe(
      `effect-agent: ${join(config, "settings.json")}: mcpServers: is unexpected, expected: "mode" | "rules" | "env" | "instructions" | "prices" | "promptCaching"; MCP servers go in mcp.json beside it (docs/mcp.md)\n`
    )
  })
})
