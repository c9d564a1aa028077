/**
 * ACP sessions of one cwd share the servers of the workspace files (here your `mcp.json`): started at
 * the first `session/new`, not again for each (before: one process per session, each until the
 * agent exited); closing the last session of that cwd stops them. The built CLI over stdio.
 */
import * as acp from "@agentclientprotocol/sdk"
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join, resolve } from "node:path"
import { describe, expect, it } from "vitest"
import { isolatedConfigDir } from "../cli/subprocess.js"
import { acpScratch } from "./client.js"
import { alive, exited } from "../processes.js"

const scratch = acpScratch("acp-shared")
const serverScript = resolve(import.meta.dirname, "../fixtures/mcp/server.mjs")

describe("ACP: the files' MCP servers per cwd", () => {
  it("three sessions in one cwd start the server once; closing the last stops it; a new session starts it again", async () => {
    const p = scratch.project({ responses: [{ chunks: ["x"] }] })
    const markers = join(p.root, "markers")
    mkdirSync(markers, { recursive: true })
    writeFileSync(join(isolatedConfigDir(), "mcp.json"), JSON.stringify({ mcpServers: { fixture: { command: process.execPath, args: [serverScript], env: { MARKER_DIR: markers } } } }))
    const pids = () => existsSync(join(markers, "started")) ? readFileSync(join(markers, "started"), "utf8").trim().split("\n").map(Number) : []
    const agent = scratch.launch(["--script", p.scriptFile, ...p.storage], { cwd: p.cwd })
    await agent.initialize()
    const ids: Array<string> = []
    for (let i = 0; i < 3; i++) ids.push((await agent.agent.request(acp.methods.agent.session.new, { cwd: p.cwd, mcpServers: [] })).sessionId)
    expect(pids()).toHaveLength(1)
    const [pid] = pids()
    for (const sessionId of ids.slice(0, 2)) await agent.agent.request(acp.methods.agent.session.close, { sessionId })
    expect(alive(pid!)).toBe(true)
    await agent.agent.request(acp.methods.agent.session.close, { sessionId: ids[2]! })
    await exited(pid!)
    await agent.agent.request(acp.methods.agent.session.new, { cwd: p.cwd, mcpServers: [] })
    expect(pids()).toHaveLength(2)
    agent.child.stdin.end()
    await agent.exited
    for (const started of pids()) await exited(started)
  })
})
