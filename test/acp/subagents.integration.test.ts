/**
 * Subagents over ACP: `effect-agent acp --subagents` as a real subprocess, driven by the ACP SDK's
 * client. A subagent's ask becomes `session/request_permission` labelled with the subagent; the answer
 * is recorded in the subagent's log; the tree's progress reaches the client as the task call's
 * `tool_call_update` content.
 */
import * as acp from "@agentclientprotocol/sdk"
import { mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { expectWellFormedLog } from "../helpers.js"
import { acpScratch, choose, logOf } from "./client.js"

const scratch = acpScratch("acp-subagents")
const { dir } = scratch

describe("effect-agent acp --subagents", () => {
  it("a subagent's ask is a session/request_permission labelled with it; allow_once runs the call in the subagent, whose log records it", async () => {
    const cwd = join(dir, "work")
    mkdirSync(cwd, { recursive: true })
    const script = join(dir, "script.json")
    writeFileSync(script, JSON.stringify({
      responses: [
        { toolCalls: [{ tool: "task", args: { description: "write the notes", prompt: "child: write" }, id: "task_1" }] },
        { chunks: ["Delegated."] }
      ],
      subagents: {
        "child: write": [
          { toolCalls: [{ tool: "write_file", args: { path: "notes.txt", content: "from the child\n" } }], usage: { inputTokens: 40, outputTokens: 5 } },
          { chunks: ["Written."] }
        ]
      }
    }))
    const storage = ["--data-dir", join(dir, "data")]
    const agent = scratch.launch(["--subagents", "--script", script, ...storage], { cwd, answer: choose("allow_once") })
    await agent.initialize()
    const { sessionId } = await agent.agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] })
    const answer = await agent.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "delegate it" }] })
    expect(answer.stopReason).toBe("end_turn")

    expect(agent.asked).toHaveLength(1)
    const { params } = agent.asked[0]!
    expect(params.sessionId).toBe(sessionId)
    expect(params.toolCall.title).toMatch(/^Subagent "write the notes" \(sess_[^)]+\): Write notes\.txt$/)
    expect(params.toolCall.rawInput).toEqual({ path: "notes.txt", content: "from the child\n" })
    expect(readFileSync(join(cwd, "notes.txt"), "utf8")).toBe("from the child\n")

    // The task call's progress: what the subagent's tree used, as tool_call_update content.
    const texts = agent.updates.map((n) => n.update).flatMap((u) =>
      u.sessionUpdate === "tool_call_update" && u.toolCallId === "task_1" ? (u.content ?? []).flatMap((c) => c.type === "content" && c.content.type === "text" ? [c.content.text] : []) : []
    )
    expect(texts.some((t) => /subagent sess_\S+: 1 step · tokens in 40 · out 5/.test(t))).toBe(true)

    agent.child.stdin.end()
    await agent.exited
    const parent = await logOf(sessionId, storage)
    expectWellFormedLog(parent)
    const started = parent.find((e) => e.type === "subagent.started")!.payload as { childSessionId: string }
    const child = await logOf(started.childSessionId, storage)
    expectWellFormedLog(child)
    expect(child.filter((e) => e.type === "permission.resolved").map((e) => (e.payload as { actor: string; decision: string }).decision)).toEqual(["ask", "allow"])
  })

  it("the agent killed while a subagent asks: session/load of the parent asks the subagent's question again, labelled, and the answer resumes the whole tree", async () => {
    const cwd = join(dir, "work-restart")
    mkdirSync(cwd, { recursive: true })
    const storage = ["--data-dir", join(dir, "data-restart")]
    const before = join(dir, "before.json")
    writeFileSync(before, JSON.stringify({
      responses: [{ toolCalls: [{ tool: "task", args: { description: "write the notes", prompt: "child: write" }, id: "task_1" }] }],
      subagents: { "child: write": [{ toolCalls: [{ tool: "write_file", args: { path: "notes.txt", content: "after the restart\n" } }] }] }
    }))
    const first = scratch.launch(["--subagents", "--script", before, ...storage], { cwd, answer: () => new Promise(() => undefined) })
    await first.initialize()
    const { sessionId } = await first.agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] })
    void first.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "delegate it" }] }).catch(() => undefined)
    await first.waitForAsked(1)
    first.child.kill("SIGKILL")
    await first.exited

    // What the models say after the restart: the subagent's answer, then the parent's.
    const after = join(dir, "after.json")
    writeFileSync(after, JSON.stringify({ responses: [{ chunks: ["Delegated after the restart."] }], subagents: { "child: write": [{ chunks: ["Written."] }] } }))
    const second = scratch.launch(["--subagents", "--script", after, ...storage], { cwd, answer: choose("allow_once") })
    await second.initialize()
    await second.agent.request(acp.methods.agent.session.load, { sessionId, cwd, mcpServers: [] })
    const asked = await second.waitForAsked(1)
    expect(asked.params.sessionId).toBe(sessionId)
    expect(asked.params.toolCall.title).toMatch(/^Subagent "write the notes" \(sess_[^)]+\): Write notes\.txt$/)
    await second.waitForUpdate((u) => u.sessionUpdate === "agent_message_chunk" && u.content.type === "text" && u.content.text === "Delegated after the restart.")
    expect(readFileSync(join(cwd, "notes.txt"), "utf8")).toBe("after the restart\n")
    // No prompt answers a resumed turn: its end is read from the log (each read is a CLI run).
    let parent = await logOf(sessionId, storage)
    while (parent.at(-1)?.type !== "turn.completed") parent = await logOf(sessionId, storage)
    second.child.stdin.end()
    await second.exited
    expectWellFormedLog(parent)
    expect(parent.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
    const completed = parent.find((e) => e.type === "subagent.completed")!.payload as { childSessionId: string; outcome: string }
    expect(completed.outcome).toBe("final")
    const child = await logOf(completed.childSessionId, storage)
    expectWellFormedLog(child)
    expect(child.filter((e) => e.type === "permission.resolved").map((e) => (e.payload as { decision: string }).decision)).toEqual(["ask", "allow"])
  })
  it("--max-steps and --max-subagents bound each prompt's tree: past the steps the prompt fails budget_exceeded; past the subagents the task call fails", async () => {
    const cwd = join(dir, "work-limits")
    mkdirSync(cwd, { recursive: true })
    const script = join(dir, "limits.json")
    writeFileSync(script, JSON.stringify({
      responses: [
        { toolCalls: [{ tool: "task", args: { description: "first", prompt: "child: first" }, id: "task_1" }] },
        { toolCalls: [{ tool: "task", args: { description: "second", prompt: "child: second" }, id: "task_2" }] },
        { toolCalls: [{ tool: "list_dir", args: { path: "." } }] },
        { chunks: ["never"] }
      ],
      subagents: { "child: first": [{ chunks: ["first done"] }], "child: second": [{ chunks: ["second done"] }] }
    }))
    const storage = ["--data-dir", join(dir, "data-limits")]
    // Requests: parent, child, parent (second task refused), parent (list_dir): the fifth is past --max-steps 4.
    const agent = scratch.launch(["--subagents", "--max-subagents", "1", "--max-steps", "4", "--script", script, ...storage], { cwd, answer: choose("allow_once") })
    await agent.initialize()
    const { sessionId } = await agent.agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] })
    const failed = await agent.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "fan out" }] })
      .then(() => undefined, (error: unknown) => error as acp.RequestError)
    expect(failed).toMatchObject({ code: -32603, data: { errorCode: "budget_exceeded", sessionId } })
    const second = agent.updates.map((n) => n.update).filter((u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === "task_2")
    expect(second.at(-1)).toMatchObject({ status: "failed" })
    agent.child.stdin.end()
    await agent.exited
    const parent = await logOf(sessionId, storage)
    expect(parent.filter((e) => e.type === "subagent.started")).toHaveLength(1)
    expect(parent.find((e) => e.type === "tool.failed" && (e.payload as { errorCode: string }).errorCode === "subagents_exceeded")).toBeDefined()
  })
})
