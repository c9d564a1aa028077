/**
 * Usage over ACP, with `effect-agent acp` as a real subprocess driven by the SDK's client: after a
 * turn whose model reported usage, a `usage_update` says how many tokens the context holds, the
 * model's window, and what the session has cost so far in USD.
 */
import * as acp from "@agentclientprotocol/sdk"
import { mkdirSync, realpathSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { acpScratch } from "./client.js"

const scratch = acpScratch("acp-usage")
const dir = realpathSync(scratch.dir)

describe("effect-agent acp: usage", () => {
  it("sends usage_update {used, size, cost} after each turn that reported usage; the session's cost adds up", async () => {
    const cwd = join(dir, "work")
    mkdirSync(cwd, { recursive: true })
    const script = join(dir, "script.json")
    // The built-in claude-haiku-4-5 prices: $1 in, $5 out, $0.10 cache read per million.
    writeFileSync(script, JSON.stringify({
      provider: "anthropic",
      model: "claude-haiku-4-5",
      maxContextTokens: 50_000,
      responses: [
        { chunks: ["one"], usage: { inputTokens: 100, outputTokens: 10, cacheReadTokens: 500 } },
        { chunks: ["two"], usage: { inputTokens: 100, outputTokens: 10, cacheReadTokens: 500 } }
      ]
    }))
    const agent = scratch.launch(["--script", script, "--data-dir", join(dir, "data")], { cwd })
    await agent.initialize()
    const { sessionId } = await agent.agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] })
    for (const text of ["first", "second"]) {
      const response = await agent.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text }] })
      expect(response.stopReason).toBe("end_turn")
    }
    const usage = agent.updates.map((n) => n.update).filter((u) => u.sessionUpdate === "usage_update")
    // 100 + 50 + 50 per million a turn: $0.0002, then $0.0004 for the session.
    expect(usage).toEqual([
      { sessionUpdate: "usage_update", used: 600, size: 50_000, cost: { amount: 0.0002, currency: "USD" } },
      { sessionUpdate: "usage_update", used: 600, size: 50_000, cost: { amount: 0.0004, currency: "USD" } }
    ])
    agent.child.stdin.end()
    await agent.exited
  }, 60_000)

  // Until December 2026 it said `cost: {amount: 0}` for a model with no price.
  it("leaves the cost out of usage_update while no turn could be priced", async () => {
    const cwd = join(dir, "unpriced")
    mkdirSync(cwd, { recursive: true })
    const script = join(dir, "unpriced.json")
    writeFileSync(script, JSON.stringify({
      provider: "anthropic",
      model: "claude-unreleased-9",
      maxContextTokens: 50_000,
      responses: [{ chunks: ["one"], usage: { inputTokens: 100000, outputTokens: 1000 } }]
    }))
    const agent = scratch.launch(["--script", script, "--data-dir", join(dir, "data-unpriced")], { cwd })
    await agent.initialize()
    const { sessionId } = await agent.agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] })
    await agent.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "first" }] })
    const usage = agent.updates.map((n) => n.update).filter((u) => u.sessionUpdate === "usage_update")
    agent.child.stdin.end()
    await agent.exited
    expect(usage).toEqual([{ sessionUpdate: "usage_update", used: 100000, size: 50_000 }])
  }, 60_000)
})
