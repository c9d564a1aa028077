/**
 * A subagent's session shares its parent's configuration over ACP: the mode the editor chose
 * (`session/set_mode`) and the agent's `--allow` rules. A subagent's session is never configured
 * itself (only `session/new` and `session/load` configure a session), so it decided in the default
 * mode with no rules: an editor user in acceptEdits was asked about every edit a subagent made, and
 * an `--allow` rule never covered a subagent's command. Through the built CLI, with the ACP SDK's
 * own client.
 */
import * as acp from "@agentclientprotocol/sdk"
import { readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { expectWellFormedLog } from "../helpers.js"
import { acpScratch, type Agent, choose, logOf } from "./client.js"

const scratch = acpScratch("acp-subagent-policy")

/** A project folder, its store, and a script file of `script`. */
const project = (name: string, script: unknown) => {
  const { root, cwd, storage, scriptFile } = scratch.project(script, name)
  return { root, cwd, storage, args: ["--subagents", "--script", scriptFile, ...storage] }
}

/** A parent that delegates once to a subagent whose model makes `calls`, one response each, then answers. */
const delegating = (calls: ReadonlyArray<{ readonly tool: string; readonly args: unknown }>) => ({
  responses: [{ toolCalls: [{ tool: "task", args: { description: "do it", prompt: "child: do it" }, id: "task_1" }] }, { chunks: ["Delegated."] }],
  subagents: { "child: do it": [...calls.map((call) => ({ toolCalls: [call] })), { chunks: ["Done."] }] }
})

/** The decisions of the subagent's session's log, by the sessions' store. */
const childDecisions = async (sessionId: string, storage: ReadonlyArray<string>) => {
  const parent = await logOf(sessionId, storage)
  expectWellFormedLog(parent)
  const started = parent.find((e) => e.type === "subagent.started")!.payload as { childSessionId: string }
  const child = await logOf(started.childSessionId, storage)
  expectWellFormedLog(child)
  return child.filter((e) => e.type === "permission.resolved").map((e) => e.payload)
}

const prompt = (agent: Agent, sessionId: string) =>
  agent.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "delegate it" }] })

/** Switches the session to acceptEdits, prompts it, and expects its subagent's edit of notes.txt made unasked; then closes the agent. */
const editUnasked = async (agent: Agent, sessionId: string, cwd: string) => {
  await agent.agent.request(acp.methods.agent.session.setMode, { sessionId, modeId: "acceptEdits" })
  expect((await prompt(agent, sessionId)).stopReason).toBe("end_turn")
  expect(agent.asked).toEqual([])
  expect(readFileSync(join(cwd, "notes.txt"), "utf8")).toBe("from the child\n")
  agent.child.stdin.end()
  await agent.exited
}

describe("effect-agent acp --subagents: a subagent's session shares its parent's policy", () => {
  it("a parent in acceptEdits (session/set_mode): its subagent's edit is not asked", async () => {
    const p = project("accept-edits", delegating([{ tool: "write_file", args: { path: "notes.txt", content: "from the child\n" } }]))
    const agent = scratch.launch(p.args, { cwd: p.cwd, answer: choose("reject_once") })
    await agent.initialize()
    const { sessionId } = await agent.agent.request(acp.methods.agent.session.new, { cwd: p.cwd, mcpServers: [] })
    await editUnasked(agent, sessionId, p.cwd)
    expect(await childDecisions(sessionId, p.storage)).toEqual([{ toolCallId: "call_1", decision: "allow", policy: "accept-edits/edit", actor: "policy" }])
  })

  it("an --allow rule covers a subagent's command", async () => {
    const p = project("allow", delegating([{ tool: "shell", args: { command: "touch made.txt" } }]))
    const agent = scratch.launch([...p.args, "--allow", "shell:touch made.txt"], { cwd: p.cwd, answer: choose("reject_once") })
    await agent.initialize()
    const { sessionId } = await agent.agent.request(acp.methods.agent.session.new, { cwd: p.cwd, mcpServers: [] })
    expect((await prompt(agent, sessionId)).stopReason).toBe("end_turn")
    expect(agent.asked).toEqual([])
    expect(readFileSync(join(p.cwd, "made.txt"), "utf8")).toBe("")
    agent.child.stdin.end()
    await agent.exited
    expect(await childDecisions(sessionId, p.storage)).toEqual([
      { toolCallId: "call_1", decision: "allow", policy: "--allow shell:touch made.txt", actor: "policy" }
    ])
  })

  it("after session/load of the parent: the subagent it resumes follows the mode the editor chose after the load", async () => {
    // The first agent is killed while the subagent's command asks; the second loads the parent, is
    // switched to acceptEdits, and only then answers: the subagent's next call, an edit, is not asked.
    const p = project("load", {
      responses: [{ toolCalls: [{ tool: "task", args: { description: "do it", prompt: "child: do it" }, id: "task_1" }] }],
      subagents: { "child: do it": [{ toolCalls: [{ tool: "shell", args: { command: "touch made.txt" }, id: "run_1" }] }] }
    })
    const first = scratch.launch(p.args, { cwd: p.cwd })
    await first.initialize()
    const { sessionId } = await first.agent.request(acp.methods.agent.session.new, { cwd: p.cwd, mcpServers: [] })
    void prompt(first, sessionId).catch(() => undefined)
    await first.waitForAsked(1)
    first.child.kill("SIGKILL")
    await first.exited

    const after = join(p.root, "after.json")
    writeFileSync(after, JSON.stringify({
      responses: [{ chunks: ["Delegated after the restart."] }],
      subagents: { "child: do it": [{ toolCalls: [{ tool: "write_file", args: { path: "notes.txt", content: "after the load\n" }, id: "edit_1" }] }, { chunks: ["Done."] }] }
    }))
    let modeSet: () => void = () => undefined
    const switched = new Promise<void>((resolve) => (modeSet = resolve))
    let asked = 0
    const second = scratch.launch(["--subagents", "--script", after, ...p.storage], {
      cwd: p.cwd,
      // The question asked again (the command) is allowed once the mode is switched; any other is rejected.
      answer: () => (asked++ === 0 ? switched.then(() => ({ outcome: { outcome: "selected", optionId: "allow_once" } })) : Promise.resolve({ outcome: { outcome: "selected", optionId: "reject_once" } }))
    })
    await second.initialize()
    await second.agent.request(acp.methods.agent.session.load, { sessionId, cwd: p.cwd, mcpServers: [] })
    await second.agent.request(acp.methods.agent.session.setMode, { sessionId, modeId: "acceptEdits" })
    modeSet()
    await second.waitForUpdate((u) => u.sessionUpdate === "agent_message_chunk" && u.content.type === "text" && u.content.text === "Delegated after the restart.")
    expect(second.asked).toHaveLength(1)
    expect(readFileSync(join(p.cwd, "made.txt"), "utf8")).toBe("")
    expect(readFileSync(join(p.cwd, "notes.txt"), "utf8")).toBe("after the load\n")
    let parent = await logOf(sessionId, p.storage)
    while (parent.at(-1)?.type !== "turn.completed") parent = await logOf(sessionId, p.storage)
    second.child.stdin.end()
    await second.exited
    expect((await childDecisions(sessionId, p.storage)).map((d) => d.decision)).toEqual(["ask", "allow", "allow"])
  })

  it("a parent loaded, then prompted: its new subagent follows the mode chosen after the load", async () => {
    const p = project("load-then-prompt", delegating([{ tool: "write_file", args: { path: "notes.txt", content: "from the child\n" } }]))
    const first = scratch.launch(p.args, { cwd: p.cwd })
    await first.initialize()
    const { sessionId } = await first.agent.request(acp.methods.agent.session.new, { cwd: p.cwd, mcpServers: [] })
    first.child.stdin.end()
    await first.exited

    const second = scratch.launch(p.args, { cwd: p.cwd, answer: choose("reject_once") })
    await second.initialize()
    await second.agent.request(acp.methods.agent.session.load, { sessionId, cwd: p.cwd, mcpServers: [] })
    await editUnasked(second, sessionId, p.cwd)
  })
})
