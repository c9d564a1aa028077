/**
 * An editor's permission request names where a call really goes when that is outside the session's
 * cwd, as the CLI's question does ("(outside the working directory: <real target>)"): a write to
 * `docs/authorized_keys`, `docs` a link to a folder outside, was asked as `Write docs/authorized_keys`
 * with the link's path as its location — nothing named the real target (review58b). A paused call
 * asked again after `session/load` says it too. And a call's locations outside cwd reach the editor
 * (whose "follow the agent" opens them) only once the call is allowed. Through the built CLI, with the
 * ACP SDK's own client.
 */
import * as acp from "@agentclientprotocol/sdk"
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { acpScratch, choose } from "./client.js"

const scratch = acpScratch("acp-outside")
const { dir } = scratch

const texts = (toolCall: acp.ToolCallUpdate) =>
  (toolCall.content ?? []).flatMap((c) => (c.type === "content" && c.content.type === "text" ? [c.content.text] : []))

/** One prompt's turn in a fresh agent, every question answered `optionId`; the agent has exited. */
const turn = async (args: ReadonlyArray<string>, cwd: string, optionId: string) => {
  const agent = scratch.launch(args, { cwd, answer: choose(optionId) })
  await agent.initialize()
  const { sessionId } = await agent.agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] })
  await agent.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "x" }] })
  agent.child.stdin.end()
  await agent.exited
  return agent
}

/** A project whose `docs` is a link to `home_ssh` beside it, and whose model writes `docs/authorized_keys`. */
const linked = (name: string) => {
  const p = scratch.project({ responses: [{ toolCalls: [{ tool: "write_file", args: { path: "docs/authorized_keys", content: "ssh-ed25519 AAAA attacker\n" } }] }, { chunks: ["done"] }] }, name)
  const outside = join(p.root, "home_ssh")
  mkdirSync(outside)
  symlinkSync(outside, join(p.cwd, "docs"))
  return { ...p, outside, args: ["--script", p.scriptFile, ...p.storage, "--mode", "acceptEdits"] }
}

describe("effect-agent acp: a permission request names a real target outside the working directory", () => {
  it("a write through a link to a folder outside: the title, a content line and the locations name the real target", async () => {
    const p = linked("link")
    const agent = await turn(p.args, p.cwd, "reject_once")
    expect(agent.asked).toHaveLength(1)
    const { toolCall } = agent.asked[0]!.params
    const target = join(p.outside, "authorized_keys")
    expect(toolCall.title).toBe(`Write docs/authorized_keys (outside the working directory: ${target})`)
    expect(texts(toolCall)).toContain(`Outside the working directory: ${target}`)
    expect(toolCall.locations).toEqual([{ path: target }])
  })

  it("a paused call asked again after session/load names the real target too", async () => {
    const p = linked("reload")
    const first = scratch.launch(p.args, { cwd: p.cwd })
    await first.initialize()
    const { sessionId } = await first.agent.request(acp.methods.agent.session.new, { cwd: p.cwd, mcpServers: [] })
    void first.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "x" }] }).catch(() => undefined)
    await first.waitForAsked(1)
    first.child.kill("SIGKILL")
    await first.exited

    const after = join(dir, "reload-after.json")
    writeFileSync(after, JSON.stringify({ responses: [{ chunks: ["done"] }] }))
    const second = scratch.launch(["--script", after, ...p.storage, "--mode", "acceptEdits"], { cwd: p.cwd, answer: choose("reject_once") })
    await second.initialize()
    await second.agent.request(acp.methods.agent.session.load, { sessionId, cwd: p.cwd, mcpServers: [] })
    const asked = await second.waitForAsked(1)
    const target = join(p.outside, "authorized_keys")
    expect(asked.params.toolCall.title).toBe(`Write docs/authorized_keys (outside the working directory: ${target})`)
    expect(asked.params.toolCall.locations).toEqual([{ path: target }])
    await second.waitForUpdate((u) => u.sessionUpdate === "agent_message_chunk" && u.content.type === "text" && u.content.text === "done")
    second.child.stdin.end()
    await second.exited
  })

  it("a read outside cwd the user rejects: its tool_call never carried the location; an allowed one gets it when it starts", async () => {
    const p = scratch.project({
      responses: [{ toolCalls: [{ tool: "read_file", args: { path: "../../../../../../../../etc/hostname" } }] }, { chunks: ["done"] }]
    }, "read")
    const agent = await turn(["--script", p.scriptFile, ...p.storage], p.cwd, "reject_once")
    expect(agent.asked).toHaveLength(1)
    const sent = agent.updates.map((n) => n.update).filter((u) => u.sessionUpdate === "tool_call" || u.sessionUpdate === "tool_call_update")
    expect(sent.flatMap((u) => u.locations ?? [])).toEqual([])

    const q = scratch.project({
      responses: [{ toolCalls: [{ tool: "read_file", args: { path: "../../../../../../../../etc/hostname" } }] }, { chunks: ["done"] }]
    }, "read-allowed")
    const allowing = await turn(["--script", q.scriptFile, ...q.storage], q.cwd, "allow_once")
    const updates = allowing.updates.map((n) => n.update)
    expect(updates.find((u) => u.sessionUpdate === "tool_call")?.locations).toEqual([])
    const started = updates.find((u): u is Extract<acp.SessionUpdate, { sessionUpdate: "tool_call_update" }> => u.sessionUpdate === "tool_call_update" && u.status === "in_progress")
    expect(started?.locations).toEqual([{ path: "/etc/hostname" }])
  })
})
