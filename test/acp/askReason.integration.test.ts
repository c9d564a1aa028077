/**
 * An editor's permission request says why the user's own rule did not cover the call, as the CLI's
 * question does (test/cli/askReason.integration): `effect-agent acp --allow 'shell:sed *'` asked
 * about `sed -i …` with nothing but the command, so a Zed user could not tell why their rule did not
 * apply nor what to write instead. The reason travels in the request's tool call content, never in
 * the log. Through the built CLI, with the ACP SDK's own client.
 */
import * as acp from "@agentclientprotocol/sdk"
import { readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { expectWellFormedLog } from "../helpers.js"
import { acpScratch, choose, logOf } from "./client.js"

const scratch = acpScratch("acp-askreason")
const { dir } = scratch

/** A project whose model runs `command` once, then answers "done". */
const project = (name: string, command: string) => {
  const { cwd, storage, scriptFile } = scratch.project({ responses: [{ chunks: ["Working."], toolCalls: [{ tool: "shell", args: { command } }] }, { chunks: ["done"] }] }, name)
  writeFileSync(join(cwd, "f.txt"), "a\n")
  return { cwd, storage, args: ["--script", scriptFile, ...storage] }
}

const texts = (toolCall: acp.ToolCallUpdate) =>
  (toolCall.content ?? []).flatMap((c) => (c.type === "content" && c.content.type === "text" ? [c.content.text] : []))

const turn = async (args: ReadonlyArray<string>, cwd: string) => {
  const agent = scratch.launch(args, { cwd, answer: choose("allow_once") })
  await agent.initialize()
  const { sessionId } = await agent.agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] })
  const response = await agent.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "edit it" }] })
  agent.child.stdin.end()
  await agent.exited
  return { agent, sessionId, response }
}

describe("effect-agent acp: a permission request names the rule that did not cover the call", () => {
  it("--allow 'shell:sed *' and sed -i: the request's content says why, and which rule would allow it", async () => {
    const p = project("sed", "sed -i s/a/b/ f.txt")
    const { agent, response, sessionId } = await turn([...p.args, "--allow", "shell:sed *"], p.cwd)
    expect(response.stopReason).toBe("end_turn")
    expect(agent.asked).toHaveLength(1)
    const { toolCall } = agent.asked[0]!.params
    expect(toolCall.title).toBe("Run `sed -i s/a/b/ f.txt`")
    expect(texts(toolCall)).toEqual([
      "Asked because your rule --allow shell:sed * does not cover it: a rule's wildcard never stands for a command " +
        "that could write or run another program, or whose options are not all known reads (here sed -i s/a/b/ f.txt). " +
        "To allow it without asking, add the rule shell:sed -i s/a/b/ f.txt (--allow, or an allow rule in your settings); or answer here."
    ])
    expect(readFileSync(join(p.cwd, "f.txt"), "utf8")).toBe("b\n")
    // The events are what they were: the reason is the editor's, not the log's.
    const log = await logOf(sessionId, p.storage)
    expectWellFormedLog(log)
    expect(log.filter((e) => e.type === "permission.resolved").map((e) => e.payload)).toEqual([
      { toolCallId: "call_1", decision: "ask", policy: "default/command", actor: "policy" },
      { toolCallId: "call_1", decision: "allow", actor: "user" }
    ])
    const requested = log.find((e) => e.type === "permission.requested")!.payload
    expect(Object.keys(requested).sort()).toEqual(["risk", "tool", "toolCallId"])
  })

  // The reason is that of the policy whose ask stood (PermissionPolicy.subagentAskReason). A subagent's
  // session shares its parent's rules (the request names the top session of its tree), so its own
  // policy asks with the same reason, and on that tie its ask stands: the request says why, as the
  // parent's own would. (Before, a subagent's session had no rules: its ask stood with no reason.)
  it("a subagent's request carries the reason of the policy that asked: its own, which shares the agent's --allow rules", async () => {
    const p = project("subagent", "sed -i s/a/b/ f.txt")
    const script = p.args[1]!
    writeFileSync(script, JSON.stringify({
      responses: [{ toolCalls: [{ tool: "task", args: { description: "edit f", prompt: "child: edit" } }] }, { chunks: ["Delegated."] }],
      subagents: { "child: edit": [{ toolCalls: [{ tool: "shell", args: { command: "sed -i s/a/b/ f.txt" } }] }, { chunks: ["Edited."] }] }
    }))
    const { agent, response } = await turn([...p.args, "--subagents", "--allow", "shell:sed *"], p.cwd)
    expect(response.stopReason).toBe("end_turn")
    expect(agent.asked).toHaveLength(1)
    const { toolCall } = agent.asked[0]!.params
    expect(toolCall.title).toMatch(/^Subagent "edit f" \(sess_[^)]+\): Run `sed -i s\/a\/b\/ f\.txt`$/)
    expect(texts(toolCall).filter((text) => text.startsWith("Asked because"))).toEqual([
      expect.stringMatching(/^Asked because your rule --allow shell:sed \* does not cover it: .*To allow it without asking, add the rule shell:sed -i s\/a\/b\/ f\.txt /)
    ])
    expect(readFileSync(join(p.cwd, "f.txt"), "utf8")).toBe("b\n")
  })

  it("a paused call asked again after session/load says why too (it carried no reason before)", async () => {
    const p = project("reload", "sed -i s/a/b/ f.txt")
    const first = scratch.launch([...p.args, "--allow", "shell:sed *"], { cwd: p.cwd })
    await first.initialize()
    const { sessionId } = await first.agent.request(acp.methods.agent.session.new, { cwd: p.cwd, mcpServers: [] })
    void first.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "edit it" }] }).catch(() => undefined)
    await first.waitForAsked(1)
    first.child.kill("SIGKILL")
    await first.exited

    const after = join(dir, "reload-after.json")
    writeFileSync(after, JSON.stringify({ responses: [{ chunks: ["done"] }] }))
    const second = scratch.launch(["--script", after, ...p.storage, "--allow", "shell:sed *"], { cwd: p.cwd, answer: choose("allow_once") })
    await second.initialize()
    await second.agent.request(acp.methods.agent.session.load, { sessionId, cwd: p.cwd, mcpServers: [] })
    const asked = await second.waitForAsked(1)
    expect(asked.params.toolCall.toolCallId).toBe("call_1")
    expect(texts(asked.params.toolCall).at(-1)).toMatch(
      /^Asked because your rule --allow shell:sed \* does not cover it: .*To allow it without asking, add the rule shell:sed -i s\/a\/b\/ f\.txt /
    )
    await second.waitForUpdate((u) => u.sessionUpdate === "agent_message_chunk" && u.content.type === "text" && u.content.text === "done")
    expect(readFileSync(join(p.cwd, "f.txt"), "utf8")).toBe("b\n")
    second.child.stdin.end()
    await second.exited
  })

  it("an ask no rule of the user's touched carries no reason: the request is as before", async () => {
    const p = project("plain", "sed -i s/a/b/ f.txt")
    const { agent } = await turn(p.args, p.cwd)
    expect(agent.asked).toHaveLength(1)
    expect(agent.asked[0]!.params.toolCall.content ?? []).toEqual([])
  })
})
