/**
 * ACP `session/new` with `mcpServers`: the agent (the built CLI, `effect-agent acp`) starts the
 * servers the client names for that session — a real SDK server over stdio, and one over
 * Streamable HTTP — and their tools run as any tool does, through the session's permission policy.
 */
import * as acp from "@agentclientprotocol/sdk"
import { spawn } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { isolatedConfigDir } from "../cli/subprocess.js"
import { type Agent, choose, logOf, startAgent } from "./client.js"
import { ownedByTest } from "../processes.js"

const dir = mkdtempSync(join(tmpdir(), "effect-agent-acp-mcp-"))
const running: Array<{ kill: (signal: NodeJS.Signals) => unknown }> = []
afterAll(() => {
  for (const child of running) child.kill("SIGKILL")
  rmSync(dir, { recursive: true, force: true })
})
const serverScript = resolve(import.meta.dirname, "../fixtures/mcp/server.mjs")

const workspace = (name: string, script: unknown) => {
  const root = join(dir, name)
  const cwd = join(root, "work")
  const markers = join(root, "markers")
  mkdirSync(cwd, { recursive: true })
  mkdirSync(markers, { recursive: true })
  const scriptFile = join(root, "script.json")
  writeFileSync(scriptFile, JSON.stringify(script))
  const storage = ["--data-dir", join(root, "data")]
  return { cwd, markers, storage, args: ["--script", scriptFile, ...storage] }
}

/** The fixture over Streamable HTTP on a free port of 127.0.0.1, its URL once it listens. */
const httpServer = async (markers: string) => {
  const portFile = join(markers, "port")
  const child = ownedByTest(spawn(process.execPath, [serverScript, "--http", portFile], { env: { ...process.env, MARKER_DIR: markers }, stdio: "ignore" }))
  running.push(child)
  while (!existsSync(portFile) || readFileSync(portFile, "utf8") === "") await new Promise((r) => setTimeout(r, 20))
  return `http://127.0.0.1:${readFileSync(portFile, "utf8")}/mcp`
}

const script = {
  responses: [
    { toolCalls: [{ tool: "mcp__local__echo", args: { text: "over stdio" } }, { tool: "mcp__remote__add", args: { a: 1, b: 2 } }] },
    { chunks: ["done"] }
  ]
}

const finish = async (agent: Agent) => {
  agent.child.stdin.end()
  return agent.exited
}

describe("ACP session/new with mcpServers", () => {
  it("the client's stdio and HTTP servers start for that session; their calls ask, run once allowed, and the tool lists are in the log", async () => {
    const { args, cwd, markers, storage } = workspace("both", script)
    const url = await httpServer(markers)
    const agent = startAgent(args, { cwd, answer: choose("allow_once") })
    running.push(agent.child)
    const init = await agent.initialize()
    expect(init.agentCapabilities?.mcpCapabilities).toEqual({ http: true, sse: false })
    const { sessionId } = await agent.agent.request(acp.methods.agent.session.new, {
      cwd,
      mcpServers: [
        { name: "local", command: process.execPath, args: [serverScript], env: [{ name: "MARKER_DIR", value: markers }] },
        { type: "http", name: "remote", url, headers: [] }
      ]
    })
    const answer = await agent.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "go" }] })
    expect(answer.stopReason).toBe("end_turn")
    // Each call asked the client first (the default mode asks for MCP tools).
    expect(agent.asked.map((a) => a.params.toolCall.title ?? "")).toHaveLength(2)
    const completed = agent.updates.map((n) => n.update).flatMap((u) => u.sessionUpdate === "tool_call_update" && u.status === "completed" ? [u.rawOutput] : [])
    expect(completed).toEqual(expect.arrayContaining([{ result: "echo: over stdio" }, { result: "3" }]))
    await finish(agent)
    const log = await logOf(sessionId, storage)
    expect(log.filter((e) => e.type === "mcp.tools_listed").map((e) => e.type === "mcp.tools_listed" ? e.payload.server : "")).toEqual(["local", "remote"])
  }, 90_000)

  it("an SSE server is refused with invalid params naming the transport; a server that cannot start refuses the request", async () => {
    const { args, cwd } = workspace("bad", script)
    const agent = startAgent(args, { cwd })
    running.push(agent.child)
    await agent.initialize()
    const sse = await agent.agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [{ type: "sse", name: "old", url: "http://127.0.0.1:1/sse", headers: [] }] }).then(
      () => undefined,
      (error: acp.RequestError) => error
    )
    expect(sse?.code).toBe(-32602)
    expect(sse?.message + JSON.stringify(sse?.data)).toContain("SSE")
    const missing = await agent.agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [{ name: "nope", command: "no-such-mcp-server-program", args: [], env: [] }] }).then(
      () => undefined,
      (error: acp.RequestError) => error
    )
    expect(JSON.stringify(missing?.data)).toContain("mcp_server_failed")
    // A refused session/new stores no session: the client never got its id.
    expect((await agent.agent.request(acp.methods.agent.session.list, {})).sessions).toEqual([])
    await finish(agent)
  }, 60_000)

  // An editor names the same servers for every project it opens (Zed's context servers): started in
  // the session's cwd, `npx -y <package>` ran what a clone's node_modules/.bin had, `python -m` a
  // module of the clone. They start in the user's config folder now, as the servers of their mcp.json.
  it("a client's stdio server starts in the user's config folder, not in the session's cwd", async () => {
    const { args, cwd, markers } = workspace("folder", { responses: [{ toolCalls: [{ tool: "mcp__local__env", args: { name: "PWD" } }] }, { chunks: ["done"] }] })
    const agent = startAgent(args, { cwd, answer: choose("allow_once") })
    running.push(agent.child)
    await agent.initialize()
    const { sessionId } = await agent.agent.request(acp.methods.agent.session.new, {
      cwd,
      mcpServers: [{ name: "local", command: process.execPath, args: [serverScript], env: [{ name: "MARKER_DIR", value: markers }] }]
    })
    const answer = await agent.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "go" }] })
    expect(answer.stopReason).toBe("end_turn")
    const completed = agent.updates.map((n) => n.update).flatMap((u) => u.sessionUpdate === "tool_call_update" && u.status === "completed" ? [u.rawOutput] : [])
    expect(completed).toEqual([{ result: `PWD=${isolatedConfigDir()}` }])
    await finish(agent)
  }, 60_000)
})
