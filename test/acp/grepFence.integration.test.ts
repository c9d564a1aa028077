/**
 * The grep tool's walk over ACP leaves out what the session's rules fence, and answers, as `run`'s
 * does. Before, ACP's session modes built an engine without a fence: a grep over a cwd whose settings
 * deny `.env` asked the editor. Through the built CLI, with the ACP SDK's own client.
 */
import * as acp from "@agentclientprotocol/sdk"
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { acpScratch, choose, logOf } from "./client.js"

const scratch = acpScratch("acp-grep-fence")

describe("effect-agent acp: the grep tool's walk is fenced by the session's rules", () => {
  it("a deny of .env in the cwd's settings: the grep answers without asking, without .env", async () => {
    const { cwd, scriptFile, storage } = scratch.project({
      responses: [{ toolCalls: [{ tool: "grep", args: { pattern: "API_KEY" } }] }, { chunks: ["Searched."] }]
    })
    mkdirSync(join(cwd, ".effect-agent"))
    mkdirSync(join(cwd, "src"))
    // A deny in a project's file needs no trust: it only makes the agent more careful.
    writeFileSync(join(cwd, ".effect-agent", "settings.json"), JSON.stringify({ rules: [{ name: "no-env", decision: "deny", path: ".env" }] }))
    writeFileSync(join(cwd, ".env"), "API_KEY=hunter2\n")
    writeFileSync(join(cwd, "src", "a.ts"), "const API_KEY = process.env.API_KEY\n")
    const agent = scratch.launch(["--script", scriptFile, ...storage], { cwd, answer: choose("reject_once") })
    await agent.initialize()
    const { sessionId } = await agent.agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] })
    const done = await agent.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "search" }] })
    expect(done.stopReason).toBe("end_turn")
    expect(agent.asked).toEqual([])
    agent.child.stdin.end()
    await agent.exited
    const log = await logOf(sessionId, storage)
    expect(log.find((e) => e.type === "permission.resolved")?.payload).toMatchObject({ decision: "allow" })
    const result = String((log.find((e) => e.type === "tool.completed")?.payload as { result: unknown }).result)
    expect(result).toContain("src/a.ts:1:")
    expect(result).not.toContain("hunter2")
    expect(result).toContain("[left out 1 file or folder that your permission rules fence]")
  })
})
