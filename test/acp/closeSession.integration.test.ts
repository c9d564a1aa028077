/**
 * review58b: the MCP servers an editor named for an ACP session ran until the agent exited — there
 * was no `session/close` (the SDK 2.4 has it: `sessionCapabilities.close`). Now closing a session
 * cancels its work as `session/cancel` does (the prompt answers `cancelled`, the log closes the
 * turn), stops its servers, and the session is no longer open on the connection (`session/load`
 * opens it again). The built CLI, with the ACP SDK's own client and the MCP fixture over stdio.
 */
import * as acp from "@agentclientprotocol/sdk"
import { existsSync, mkdirSync, readFileSync } from "node:fs"
import { join, resolve } from "node:path"
import { describe, expect, it } from "vitest"
import { acpScratch, chunks, logOf } from "./client.js"
import { alive, exited } from "../processes.js"

const scratch = acpScratch("acp-close")
const serverScript = resolve(import.meta.dirname, "../fixtures/mcp/server.mjs")

describe("ACP session/close", () => {
  it("cancels the running turn, stops the session's MCP servers, and the session is no longer open here", async () => {
    const p = scratch.project({ responses: [{ toolCalls: [{ tool: "mcp__local__echo", args: { text: "hi" } }] }, { chunks: ["done"] }, { chunks: ["again"] }] })
    const markers = join(p.root, "markers")
    mkdirSync(markers, { recursive: true })
    const agent = scratch.launch(["--script", p.scriptFile, ...p.storage], { cwd: p.cwd })
    const init = await agent.initialize()
    expect(init.agentCapabilities?.sessionCapabilities).toMatchObject({ close: {} })
    const { sessionId } = await agent.agent.request(acp.methods.agent.session.new, {
      cwd: p.cwd,
      mcpServers: [{ name: "local", command: process.execPath, args: [serverScript], env: [{ name: "MARKER_DIR", value: markers }] }]
    })
    expect(existsSync(join(markers, "started"))).toBe(true)
    const serverPid = Number(readFileSync(join(markers, "started"), "utf8").trim().split("\n")[0])
    expect(alive(serverPid)).toBe(true)
    // The turn waits on the question about the MCP call (never answered by this client).
    const prompted = agent.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "go" }] })
    await agent.waitForAsked(1)

    expect(await agent.agent.request(acp.methods.agent.session.close, { sessionId })).toEqual({})
    expect((await prompted).stopReason).toBe("cancelled")
    await exited(serverPid)
    const notOpen = await agent.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "more" }] }).then(() => undefined, (e: unknown) => e)
    expect(notOpen).toMatchObject({ code: -32002 })

    // Loaded again, it goes on (without the closed session's servers: none named this time).
    await agent.agent.request(acp.methods.agent.session.load, { sessionId, cwd: p.cwd, mcpServers: [] })
    expect((await agent.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "more" }] })).stopReason).toBe("end_turn")
    expect(chunks(agent.updates).at(-1)).toBe("done")
    agent.child.stdin.end()
    await agent.exited
    const log = await logOf(sessionId, p.storage)
    expect(log.filter((e) => e.type === "turn.completed").map((e) => (e.payload as { readonly stopReason?: string }).stopReason)).toEqual(["cancelled", "final"])
  })
})
