/**
 * `serve`'s MCP servers are bounded: the servers of the workspace files (your `mcp.json`, a trusted
 * `.mcp.json`) start once per cwd and every session of that cwd shares them; a session starts only
 * the servers its `POST /sessions` body names. Before, every session started every server again, and
 * none stopped before `serve` did (5 sessions, 5 processes). After a restart a session that named no
 * server still has the shared servers' tools (before, none). Shutdown leaves no server process.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import type { Running } from "../cli/subprocess.js"
import { startServe } from "./serveProcess.js"
import { alive } from "../processes.js"

const dir = mkdtempSync(join(tmpdir(), "effect-agent-serve-mcp-shared-"))
const running: Array<Running> = []
afterAll(() => {
  for (const r of running) r.child.kill("SIGKILL")
  rmSync(dir, { recursive: true, force: true })
})
const serverScript = resolve(import.meta.dirname, "../fixtures/mcp/server.mjs")

const pids = (markers: string): ReadonlyArray<number> =>
  existsSync(join(markers, "started")) ? readFileSync(join(markers, "started"), "utf8").trim().split("\n").map((line) => Number(line.trim().split(/\s+/).at(-1))) : []
const until = async <A>(check: () => Promise<A | undefined>): Promise<A> => {
  for (;;) {
    const found = await check()
    if (found !== undefined) return found
    await new Promise((r) => setTimeout(r, 50))
  }
}

describe("serve: MCP servers per cwd, not per session", () => {
  it("five sessions share the cwd's servers; a body's server is that session's; shutdown stops all; after a restart a session that named none has the shared tools", async () => {
    const cwd = join(dir, "repo")
    const config = join(dir, "config")
    const shared = join(dir, "shared-markers")
    const own = join(dir, "own-markers")
    for (const d of [cwd, config, shared, own]) mkdirSync(d, { recursive: true })
    writeFileSync(join(config, "mcp.json"), JSON.stringify({ mcpServers: { fixture: { command: process.execPath, args: [serverScript], env: { MARKER_DIR: shared } } } }))
    const script = join(dir, "script.json")
    writeFileSync(script, JSON.stringify({ responses: [{ toolCalls: [{ tool: "mcp__fixture__echo", args: { text: "shared after restart" } }] }, { chunks: ["done"] }] }))
    const launch = async () => {
      const s = await startServe(["--script", script, "--data-dir", join(dir, "data"), "--allow", "mcp__fixture__*"], { cwd, env: { EFFECT_AGENT_CONFIG_DIR: config } })
      running.push(s.server)
      return { ...s, headers: { authorization: `Bearer ${s.token}`, "content-type": "application/json" } }
    }
    const first = await launch()
    const post = (s: typeof first, path: string, body: unknown) => fetch(`${s.url}${path}`, { method: "POST", headers: s.headers, body: JSON.stringify(body) })
    const ids: Array<string> = []
    for (let i = 0; i < 5; i++) {
      const created = await post(first, "/sessions", {})
      expect(created.status).toBe(201)
      ids.push(((await created.json()) as { sessionId: string }).sessionId)
    }
    // Before: five processes of the same server, one per session.
    expect(pids(shared)).toHaveLength(1)
    const body = { mcpServers: { mine: { command: process.execPath, args: [serverScript], env: { MARKER_DIR: own } } } }
    for (let i = 0; i < 2; i++) expect((await post(first, "/sessions", body)).status).toBe(201)
    expect(pids(own)).toHaveLength(2)
    expect(pids(shared)).toHaveLength(1)
    first.server.child.kill("SIGTERM")
    expect((await first.server.done).code).toBe(0)
    for (const pid of [...pids(shared), ...pids(own)]) expect(alive(pid), `server process ${pid} after shutdown`).toBe(false)

    // Restarted: the first session named no server; its turn has the cwd's servers' tools (before: unknown_tool).
    const second = await launch()
    expect((await post(second, `/sessions/${ids[0]}/turns`, { message: "go" })).status).toBe(202)
    const events = await until(async () => {
      const all = (await (await fetch(`${second.url}/sessions/${ids[0]}/events`, { headers: second.headers })).json()) as ReadonlyArray<{ type: string; payload: Record<string, unknown> }>
      return all.some((e) => e.type === "turn.completed") ? all : undefined
    })
    expect(events.find((e) => e.type === "tool.completed")?.payload).toMatchObject({ result: "echo: shared after restart" })
    expect(pids(shared)).toHaveLength(2)
    second.server.child.kill("SIGTERM")
    expect((await second.server.done).code).toBe(0)
    for (const pid of pids(shared)) expect(alive(pid)).toBe(false)
  }, 120_000)
})
