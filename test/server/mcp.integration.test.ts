/**
 * `POST /sessions` with `mcpServers` against `effect-agent serve` (the built CLI): the body's server
 * starts for that session, its tool runs once the session's approval is answered, and the log holds
 * the tool list. A body naming servers badly is 400 and starts nothing.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import type { Running } from "../cli/subprocess.js"
import { startServe } from "./serveProcess.js"

const dir = mkdtempSync(join(tmpdir(), "effect-agent-serve-mcp-"))
const running: Array<Running> = []
afterAll(() => {
  for (const r of running) r.child.kill("SIGKILL")
  rmSync(dir, { recursive: true, force: true })
})
const serverScript = resolve(import.meta.dirname, "../fixtures/mcp/server.mjs")

const launch = async (name: string, responses: ReadonlyArray<unknown>, env?: Record<string, string>) => {
  const cwd = join(dir, name)
  const markers = join(dir, `${name}-markers`)
  mkdirSync(cwd, { recursive: true })
  mkdirSync(markers, { recursive: true })
  const script = join(dir, `${name}.json`)
  writeFileSync(script, JSON.stringify({ responses }))
  const { server, stderr, token, url } = await startServe(["--script", script, "--data-dir", join(cwd, ".data")], { cwd, env })
  running.push(server)
  const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" }
  return { cwd, markers, url, headers, dataDir: join(cwd, ".data"), server, stderr }
}

const until = async <A>(check: () => Promise<A | undefined>): Promise<A> => {
  for (;;) {
    const found = await check()
    if (found !== undefined) return found
    await new Promise((r) => setTimeout(r, 50))
  }
}

describe("serve: MCP servers named in POST /sessions", () => {
  it("the body's server starts for that session; its call waits for approval, runs once approved, and the log records the tool list", async () => {
    const s = await launch("body", [{ toolCalls: [{ tool: "mcp__fixture__echo", args: { text: "over http api" } }] }, { chunks: ["done"] }])
    const body = { mcpServers: { fixture: { command: process.execPath, args: [serverScript], env: { MARKER_DIR: s.markers } } } }
    const created = await fetch(`${s.url}/sessions`, { method: "POST", headers: s.headers, body: JSON.stringify(body) })
    expect(created.status).toBe(201)
    const { sessionId } = (await created.json()) as { sessionId: string }
    expect(existsSync(join(s.markers, "started"))).toBe(true)
    expect((await fetch(`${s.url}/sessions/${sessionId}/turns`, { method: "POST", headers: s.headers, body: JSON.stringify({ message: "go" }) })).status).toBe(202)
    // The call asks (the default mode); approve it.
    const pending = await until(async () => {
      const state = (await (await fetch(`${s.url}/sessions/${sessionId}`, { headers: s.headers })).json()) as { pendingApprovals?: ReadonlyArray<{ toolCallId: string; tool: string }> }
      return state.pendingApprovals?.length ? state.pendingApprovals[0] : undefined
    })
    expect(pending.tool).toBe("mcp__fixture__echo")
    const approved = await fetch(`${s.url}/sessions/${sessionId}/approvals/${pending.toolCallId}`, { method: "POST", headers: s.headers, body: JSON.stringify({ decision: "allow" }) })
    expect(approved.status).toBeLessThan(300)
    const events = await until(async () => {
      const all = (await (await fetch(`${s.url}/sessions/${sessionId}/events`, { headers: s.headers })).json()) as ReadonlyArray<{ type: string; payload: Record<string, unknown> }>
      return all.some((e) => e.type === "turn.completed") ? all : undefined
    })
    expect(events.find((e) => e.type === "tool.completed")?.payload).toMatchObject({ result: "echo: over http api" })
    expect(events.filter((e) => e.type === "mcp.tools_listed").map((e) => e.payload.server)).toEqual(["fixture"])
    // The server's env and command are not in the log.
    expect(readFileSync(join(s.dataDir, "sessions", `${sessionId}.jsonl`), "utf8")).not.toContain(s.markers)
  }, 90_000)

  it("after a restart, a session's servers start again for its next turn, and for no other session; their env is kept outside the log, mode 0600", async () => {
    const configDir = join(dir, "restart-config")
    mkdirSync(configDir)
    const secret = "s3cret-token-value-for-the-server"
    const responses = [
      { toolCalls: [{ tool: "mcp__fixture__env", args: { name: "VISIBLE" } }] },
      { chunks: ["done"] },
      { toolCalls: [{ tool: "mcp__fixture__echo", args: { text: "not mine" } }] },
      { chunks: ["ok"] }
    ]
    const first = await launch("restart", responses, { EFFECT_AGENT_CONFIG_DIR: configDir })
    const post = (s: typeof first, path: string, body: unknown) => fetch(`${s.url}${path}`, { method: "POST", headers: s.headers, body: JSON.stringify(body) })
    const named = await post(first, "/sessions", { mcpServers: { fixture: { command: process.execPath, args: [serverScript], env: { MARKER_DIR: first.markers, SECRET_TOKEN: secret, VISIBLE: "the restored server has its env" } } } })
    expect(named.status).toBe(201)
    const { sessionId } = (await named.json()) as { sessionId: string }
    const other = ((await (await post(first, "/sessions", {})).json()) as { sessionId: string }).sessionId
    first.server.child.kill("SIGTERM")
    expect((await first.server.done).code).toBe(0)

    // Kept outside the log, readable by the user alone.
    const kept = join(configDir, "session-mcp", `${sessionId}.json`)
    expect(statSync(kept).mode & 0o777).toBe(0o600)
    expect(statSync(join(configDir, "session-mcp")).mode & 0o777).toBe(0o700)
    expect(readdirSync(join(configDir, "session-mcp"))).toEqual([`${sessionId}.json`])
    const startsBefore = readFileSync(join(first.markers, "started"), "utf8").trim().split("\n").length

    const second = await launch("restart", responses, { EFFECT_AGENT_CONFIG_DIR: configDir })
    const finished = async (id: string) =>
      until(async () => {
        const all = (await (await fetch(`${second.url}/sessions/${id}/events`, { headers: second.headers })).json()) as ReadonlyArray<{ type: string; payload: Record<string, unknown> }>
        return all.filter((e) => e.type === "turn.completed").length > 0 ? all : undefined
      })
    expect((await post(second, `/sessions/${sessionId}/turns`, { message: "go" })).status).toBe(202)
    const pending = await until(async () => {
      const state = (await (await fetch(`${second.url}/sessions/${sessionId}`, { headers: second.headers })).json()) as { pendingApprovals?: ReadonlyArray<{ toolCallId: string }> }
      return state.pendingApprovals?.length ? state.pendingApprovals[0] : undefined
    })
    expect((await post(second, `/sessions/${sessionId}/approvals/${pending.toolCallId}`, { decision: "allow" })).status).toBeLessThan(300)
    const events = await finished(sessionId)
    // The server started again, with its env.
    expect(events.find((e) => e.type === "tool.completed")?.payload).toMatchObject({ result: "VISIBLE=the restored server has its env" })
    expect(readFileSync(join(first.markers, "started"), "utf8").trim().split("\n").length).toBe(startsBefore + 1)
    expect(second.stderr()).toContain(`session ${sessionId}: its MCP servers (fixture) started again`)

    // The other session never named a server: it gets none.
    expect((await post(second, `/sessions/${other}/turns`, { message: "go" })).status).toBe(202)
    const others = await finished(other)
    expect(others.find((e) => e.type === "tool.failed")?.payload).toMatchObject({ errorCode: "unknown_tool" })
    expect(readFileSync(join(first.markers, "started"), "utf8").trim().split("\n").length).toBe(startsBefore + 1)

    // Neither the secret nor anything else of the server's configuration is in a log.
    for (const id of [sessionId, other]) {
      const log = readFileSync(join(second.dataDir, "sessions", `${id}.jsonl`), "utf8")
      expect(log).not.toContain(secret)
      expect(log).not.toContain(first.markers)
    }
    expect(readFileSync(kept, "utf8")).toContain(secret)
  }, 120_000)

  it("a bad server name, an unknown key or a server that cannot start is 400, starts nothing and stores no session", async () => {
    const s = await launch("bad", [{ chunks: ["x"] }])
    const post = (mcpServers: unknown) => fetch(`${s.url}/sessions`, { method: "POST", headers: s.headers, body: JSON.stringify({ mcpServers }) })
    const listed = async () => ((await (await fetch(`${s.url}/sessions`, { headers: s.headers })).json()) as ReadonlyArray<unknown>).length
    const badName = await post({ "a b": { command: process.execPath, args: [serverScript], env: { MARKER_DIR: s.markers } } })
    expect(badName.status).toBe(400)
    expect(((await badName.json()) as { message: string }).message).toContain("not a server name")
    expect((await post({ a: { command: "x", arg: [] } })).status).toBe(400)
    const missing = await post({ nope: { command: "no-such-mcp-server-program" } })
    expect(missing.status).toBe(400)
    expect(((await missing.json()) as { message: string }).message).toContain("\"nope\"")
    expect(existsSync(join(s.markers, "started"))).toBe(false)
    // A refused create leaves no session behind: its client never got an id to use or see it by.
    expect(await listed()).toBe(0)
    expect(existsSync(join(s.dataDir, "sessions")) ? readdirSync(join(s.dataDir, "sessions")).filter((f) => f.endsWith(".jsonl")) : []).toEqual([])
  }, 60_000)
})
