/**
 * Trust 44 (closing 42's "serve project servers get serve-start folder env"): in `serve`, a session's
 * own project's `.mcp.json` servers were started with the env of the folder `serve` started in — another
 * project's `env.set` reached them, and their own project's did not. Now each session's project
 * servers get the env of that session's cwd: your settings' and that project's as far as it is
 * trusted. The server is the SDK fixture, whose `env` tool tells a variable's value; the built CLI runs it.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { startServe } from "../server/serveProcess.js"
import { type Running, start } from "./subprocess.js"

const dir = mkdtempSync(join(tmpdir(), "effect-agent-serve-session-env-"))
const running: Array<Running> = []
afterAll(() => {
  for (const r of running) r.child.kill("SIGKILL")
  rmSync(dir, { recursive: true, force: true })
})
const fixture = { command: process.execPath, args: [resolve(import.meta.dirname, "../fixtures/mcp/server.mjs")] }
const config = join(dir, "config")
const dataDir = join(dir, "data")
mkdirSync(config, { recursive: true })
writeFileSync(join(config, "settings.json"), JSON.stringify({ env: { set: { USER_SET: "mine" } } }))

/** A project whose settings set `PROJECT_SET` (and `env`), with a `.mcp.json` server `proj` of its own. */
const project = (name: string, env: Record<string, string>) => {
  const cwd = join(dir, name)
  mkdirSync(join(cwd, ".effect-agent"), { recursive: true })
  writeFileSync(join(cwd, ".effect-agent", "settings.json"), JSON.stringify({ env: { set: env } }))
  writeFileSync(join(cwd, ".mcp.json"), JSON.stringify({ mcpServers: { proj: fixture } }))
  return cwd
}
const trust = async (cwd: string) => {
  const r = start(["trust", "--yes"], { cwd, env: { EFFECT_AGENT_CONFIG_DIR: config } })
  r.child.stdin!.end()
  const done = await r.done
  expect(done.code, done.stderr).toBe(0)
}

const asks = ["HF_ENDPOINT", "PROJECT_SET", "USER_SET"].map((name) => ({ tool: "mcp__proj__env", args: { name } }))
/** What the server said of each variable, in the order the model asked (read-only calls run concurrently). */
const said = (events: ReadonlyArray<{ type: string; payload: Record<string, unknown> }>) => {
  const results = new Map(events.filter((e) => e.type === "tool.completed").map((e) => [e.payload.toolCallId, e.payload.result]))
  return events.filter((e) => e.type === "model.tool_call_requested").map((e) => results.get(e.payload.toolCallId))
}

describe("serve: a session's own project's MCP servers get that session's project env, not the start folder's", () => {
  it("serve started in one trusted project, a session in another: its proj server sees its own project's values and none of the start folder's", async () => {
    const started = project("started", { HF_ENDPOINT: "https://attacker.invalid", PROJECT_SET: "the start folder's" })
    const other = project("other", { PROJECT_SET: "the session's" })
    await trust(started)
    await trust(other)
    const script = join(dir, "script.json")
    writeFileSync(script, JSON.stringify({ responses: [{ toolCalls: asks }, { chunks: ["done"] }] }))
    const { server, token, url } = await startServe(["--script", script, "--data-dir", dataDir, "--allow", "mcp__proj__env"], { cwd: started, env: { EFFECT_AGENT_CONFIG_DIR: config } })
    running.push(server)
    const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" }
    const created = await fetch(`${url}/sessions`, { method: "POST", headers, body: JSON.stringify({ cwd: other }) })
    expect(created.status).toBe(201)
    const { sessionId } = (await created.json()) as { sessionId: string }
    expect((await fetch(`${url}/sessions/${sessionId}/turns`, { method: "POST", headers, body: JSON.stringify({ message: "go" }) })).status).toBe(202)
    for (;;) {
      const events = (await (await fetch(`${url}/sessions/${sessionId}/events`, { headers })).json()) as ReadonlyArray<{ type: string; payload: Record<string, unknown> }>
      if (events.some((e) => e.type === "turn.completed")) {
        expect(said(events)).toEqual(["HF_ENDPOINT=(unset)", "PROJECT_SET=the session's", "USER_SET=mine"])
        break
      }
      await new Promise((r) => setTimeout(r, 50))
    }
  }, 120_000)
})
