/**
 * Review 52: a trusted project's `env` reached the user's own MCP servers. Those run outside the
 * sandbox, in the config folder, with the tokens the user's `mcp.json` gives them; a name only one
 * server reads passes both of `ProjectLimits`' lists — github-mcp-server's `GITHUB_HOST` sends the
 * user's token to the repository's host (that name is now refused too, so the test sets
 * `HF_ENDPOINT`, which a project may still set for its own code) — while `trust` said the project's
 * values were "for commands". Now a project's `env` goes to commands and to the project's own `.mcp.json` servers
 * only; every other server (the user's `mcp.json`, `--mcp-config`, a client's body in `serve`) gets
 * the user's own settings' `env` alone. Each case failed on main. The server is the SDK fixture,
 * whose `env` tool tells a variable's value; the built CLI runs it.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { startServe } from "../server/serveProcess.js"
import { type Running, start } from "./subprocess.js"

const dir = mkdtempSync(join(tmpdir(), "effect-agent-project-env-mcp-"))
const running: Array<Running> = []
afterAll(() => {
  for (const r of running) r.child.kill("SIGKILL")
  rmSync(dir, { recursive: true, force: true })
})
const serverScript = resolve(import.meta.dirname, "../fixtures/mcp/server.mjs")
const fixture = { command: process.execPath, args: [serverScript] }

/** A repository whose trusted settings set `HF_ENDPOINT`, with a `.mcp.json` server of its own; the user's settings set `USER_SET`. */
const setup = (name: string) => {
  const root = join(dir, name)
  const p = { root, cwd: join(root, "repo"), config: join(root, "config"), dataDir: join(root, "data"), script: join(root, "script.json") }
  for (const d of [join(p.cwd, ".effect-agent"), p.config]) mkdirSync(d, { recursive: true })
  writeFileSync(join(p.cwd, ".effect-agent", "settings.json"), JSON.stringify({ env: { set: { HF_ENDPOINT: "https://attacker.invalid", PROJECT_SET: "theirs" } } }))
  writeFileSync(join(p.cwd, ".mcp.json"), JSON.stringify({ mcpServers: { proj: fixture } }))
  // Your rule for the project's server says it is for the project's (a rule for MCP tools covers servers of its origin only).
  writeFileSync(join(p.config, "settings.json"), JSON.stringify({ env: { set: { USER_SET: "mine" } }, rules: [{ decision: "allow", tool: "mcp__proj__env", projectServer: true }] }))
  writeFileSync(join(p.config, "mcp.json"), JSON.stringify({ mcpServers: { mine: { ...fixture, env: { GITHUB_PERSONAL_ACCESS_TOKEN: "ghp_user_secret" } } } }))
  return p
}
type Setup = ReturnType<typeof setup>

const cli = async (p: Setup, args: ReadonlyArray<string>) => {
  const r = start(args, { cwd: p.cwd, env: { EFFECT_AGENT_CONFIG_DIR: p.config } })
  r.child.stdin!.end()
  return r.done
}

const asks = (server: string) => ["HF_ENDPOINT", "PROJECT_SET", "USER_SET"].map((name) => ({ tool: `mcp__${server}__env`, args: { name } }))
/**
 * What each server said of each variable, from a log's `tool.completed` events, in the order the
 * model asked. Read-only calls of one response run concurrently, so the log's completion order is
 * whichever server answered first (the first clean-clone run under load saw `proj` finish early).
 */
const said = (events: ReadonlyArray<{ type: string; payload: Record<string, unknown> }>) => {
  const results = new Map(events.filter((e) => e.type === "tool.completed").map((e) => [e.payload.toolCallId, e.payload.result]))
  return events.filter((e) => e.type === "model.tool_call_requested").map((e) => results.get(e.payload.toolCallId))
}
const mineSees = ["HF_ENDPOINT=(unset)", "PROJECT_SET=(unset)", "USER_SET=mine"]
const projectSees = ["HF_ENDPOINT=https://attacker.invalid", "PROJECT_SET=theirs", "USER_SET=mine"]

describe("a trusted project's env reaches commands and its own MCP servers, never the user's", () => {
  it("run: the user's mcp.json server and --mcp-config's get the user's env only; the project's .mcp.json server gets the project's too; trust says so", async () => {
    const p = setup("run")
    const flagged = join(p.root, "flagged.json")
    writeFileSync(flagged, JSON.stringify({ mcpServers: { flagged: fixture } }))
    writeFileSync(p.script, JSON.stringify({ responses: [{ toolCalls: [...asks("mine"), ...asks("flagged"), ...asks("proj")] }, { chunks: ["done"] }] }))
    const trusted = await cli(p, ["trust", "--yes"])
    expect(trusted.code, trusted.stderr).toBe(0)
    expect(trusted.stdout).toContain(`sets HF_ENDPOINT="https://attacker.invalid" for commands and this project's MCP servers`)
    const done = await cli(p, ["run", "go", "--script", p.script, "--data-dir", p.dataDir, "--mcp-config", flagged, "--allow", "mcp__mine__env", "--allow", "mcp__flagged__env"])
    expect(done.code, done.stderr).toBe(0)
    const sessionId = /session (sess_\S+)/.exec(done.stderr)![1]!
    const log = (await cli(p, ["replay", sessionId, "--json", "--data-dir", p.dataDir])).stdout
    const events = log.trim().split("\n").map((line) => JSON.parse(line))
    expect(said(events)).toEqual([...mineSees, ...mineSees, ...projectSees])
  }, 120_000)

  it("serve: a server the client's body names gets the user's env only", async () => {
    const p = setup("serve")
    writeFileSync(p.script, JSON.stringify({ responses: [{ toolCalls: asks("body") }, { chunks: ["done"] }] }))
    const trusted = await cli(p, ["trust", "--yes"])
    expect(trusted.code, trusted.stderr).toBe(0)
    const { server, token, url } = await startServe(["--script", p.script, "--data-dir", p.dataDir, "--allow", "mcp__body__env"], { cwd: p.cwd, env: { EFFECT_AGENT_CONFIG_DIR: p.config } })
    running.push(server)
    const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" }
    const created = await fetch(`${url}/sessions`, { method: "POST", headers, body: JSON.stringify({ mcpServers: { body: fixture } }) })
    expect(created.status).toBe(201)
    const { sessionId } = (await created.json()) as { sessionId: string }
    expect(said(await turnOf(url, headers, sessionId))).toEqual(mineSees)
  }, 120_000)

  // Trust 44 (closing 42: "serve project servers get serve-start folder env"): a session's own
  // project's servers got the env of the folder `serve` started in — another project's values, not
  // their own. Failed on main: the session's proj saw the start folder's HF_ENDPOINT and PROJECT_SET.
  it("serve: a session's own project's server gets that session's project env, not the start folder's", async () => {
    const p = setup("serve-other")
    const other = join(p.root, "other")
    mkdirSync(join(other, ".effect-agent"), { recursive: true })
    writeFileSync(join(other, ".effect-agent", "settings.json"), JSON.stringify({ env: { set: { PROJECT_SET: "the session's" } } }))
    writeFileSync(join(other, ".mcp.json"), JSON.stringify({ mcpServers: { proj: fixture } }))
    writeFileSync(p.script, JSON.stringify({ responses: [{ toolCalls: asks("proj") }, { chunks: ["done"] }] }))
    for (const cwd of [p.cwd, other]) {
      const trusted = await cli({ ...p, cwd }, ["trust", "--yes"])
      expect(trusted.code, trusted.stderr).toBe(0)
    }
    const { server, token, url } = await startServe(["--script", p.script, "--data-dir", p.dataDir], { cwd: p.cwd, env: { EFFECT_AGENT_CONFIG_DIR: p.config } })
    running.push(server)
    const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" }
    const created = await fetch(`${url}/sessions`, { method: "POST", headers, body: JSON.stringify({ cwd: other }) })
    expect(created.status).toBe(201)
    const { sessionId } = (await created.json()) as { sessionId: string }
    expect(said(await turnOf(url, headers, sessionId))).toEqual(["HF_ENDPOINT=(unset)", "PROJECT_SET=the session's", "USER_SET=mine"])
  }, 120_000)
})

/** Starts a turn of a `serve` session and waits for it to complete: its events. */
const turnOf = async (url: string, headers: Record<string, string>, sessionId: string) => {
  expect((await fetch(`${url}/sessions/${sessionId}/turns`, { method: "POST", headers, body: JSON.stringify({ message: "go" }) })).status).toBe(202)
  for (;;) {
    const events = (await (await fetch(`${url}/sessions/${sessionId}/events`, { headers })).json()) as ReadonlyArray<{ type: string; payload: Record<string, unknown> }>
    if (events.some((e) => e.type === "turn.completed")) return events
    await new Promise((r) => setTimeout(r, 50))
  }
}
