/**
 * review58b: a second editor loading a session whose turn another live process drives — paused on a
 * question that process asked its own editor — was asked the question again, and its answer was
 * dropped with a line on stderr ("could not store the user's answer"): the user answered for
 * nothing. Now the second editor is not asked: the paused call's card says the question waits in
 * another process, naming it, and the first editor's answer still runs the turn. Two `effect-agent
 * acp` subprocesses on one data dir, with the ACP SDK's own client.
 */
import * as acp from "@agentclientprotocol/sdk"
import { readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { acpScratch, type Answerer, chunks } from "./client.js"

const scratch = acpScratch("acp-asked-elsewhere")

const texts = (update: acp.SessionUpdate) =>
  "content" in update && Array.isArray(update.content)
    ? update.content.flatMap((c) => (c.type === "content" && c.content.type === "text" ? [c.content.text] : []))
    : []

describe("session/load of a session another process drives, paused on its question", () => {
  it("asks nothing; the call's card says the question waits in that process; the first editor's answer runs the turn", async () => {
    const p = scratch.project({ responses: [{ chunks: ["Writing."], toolCalls: [{ tool: "write_file", args: { path: "f.txt", content: "first\n" } }] }, { chunks: ["done"] }] })
    // The first editor answers once the test says so.
    let release: (response: acp.RequestPermissionResponse) => void = () => {}
    const later: Answerer = () => new Promise((resolve) => (release = resolve))
    const first = scratch.launch(["--script", p.scriptFile, ...p.storage], { cwd: p.cwd, answer: later })
    await first.initialize()
    const { sessionId } = await first.agent.request(acp.methods.agent.session.new, { cwd: p.cwd, mcpServers: [] })
    const prompted = first.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "write it" }] })
    await first.waitForAsked(1)

    const after = join(p.root, "second.json")
    writeFileSync(after, JSON.stringify({ responses: [{ chunks: ["not me"] }] }))
    const second = scratch.launch(["--script", after, ...p.storage], { cwd: p.cwd, answer: () => Promise.resolve({ outcome: { outcome: "selected", optionId: "allow_once" } }) })
    await second.initialize()
    await second.agent.request(acp.methods.agent.session.load, { sessionId, cwd: p.cwd, mcpServers: [] })
    // Said before the load's answer, in place of the question.
    expect(second.asked).toEqual([])
    const card = second.updates.map((n) => n.update).find((u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === "call_1" && texts(u).length > 0)
    expect(card).toMatchObject({ sessionUpdate: "tool_call_update", toolCallId: "call_1", status: "pending" })
    expect(texts(card!).at(-1)).toMatch(
      new RegExp(`^Waiting for an answer in another process: this session is driven by pid ${first.child.pid} on host .*, and the question was asked there`)
    )
    // A prompt here is refused: the session is that process's.
    const refused = await second.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "me?" }] }).then(() => undefined, (e: unknown) => e)
    expect(refused).toMatchObject({ data: { errorCode: "session_busy" } })

    // The first editor's answer still runs the turn.
    release({ outcome: { outcome: "selected", optionId: "allow_once" } })
    expect((await prompted).stopReason).toBe("end_turn")
    expect(readFileSync(join(p.cwd, "f.txt"), "utf8")).toBe("first\n")
    expect(chunks(first.updates)).toEqual(["Writing.", "done"])
    for (const agent of [first, second]) agent.child.stdin.end()
    await Promise.all([first.exited, second.exited])
    expect(second.stderr()).not.toContain("could not store the user's answer")
  })
})
