/**
 * `effect-agent acp` as a real subprocess, driven by the ACP SDK's own client over stdio: streamed
 * prompts, permission requests answered each way, cancellation, reloading a session a previous
 * process left paused, and the bad input of a real connection.
 */
import * as acp from "@agentclientprotocol/sdk"
import { existsSync, mkdirSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import type { AgentEvent } from "../../src/index.js"
import { expectWellFormedLog } from "../helpers.js"
import { run, start } from "../cli/subprocess.js"
import { acpScratch, type Agent, type Answerer, choose, chunks, logOf } from "./client.js"

const scratch = acpScratch("acp")
const { dir } = scratch

/** A fresh workspace, data dir and script for one test. */
const workspace = (script: unknown) => {
  const { root, cwd, storage, scriptFile } = scratch.project(script)
  return { root, cwd, storage, args: ["--script", scriptFile, ...storage], scriptFile }
}

const launch = (args: ReadonlyArray<string>, cwd: string, answer?: Answerer) =>
  scratch.launch(args, { cwd, ...(answer === undefined ? {} : { answer }) })

const newSession = (agent: Agent, cwd: string) => agent.agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] })

const prompt = (agent: Agent, sessionId: string, text: string) =>
  agent.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text }] })

const rejection = (promise: Promise<unknown>) => promise.then(() => undefined, (error: unknown) => error as acp.RequestError)

/** Closes the client's side; the agent then ends on its own. */
const finish = async (agent: Agent) => {
  agent.child.stdin.end()
  return agent.exited
}

const lastOf = (log: ReadonlyArray<AgentEvent.AgentEvent>) => log.at(-1)

describe("effect-agent acp, driven by the SDK's client", () => {
  it("initialize advertises loadSession, prompt capabilities and session/list; a prompt streams chunks and answers end_turn", async () => {
    const { args, cwd, storage } = workspace({ responses: [{ chunks: ["Hello", ", ", "world."] }] })
    const agent = launch(args, cwd)
    const init = await agent.initialize()
    expect(init.protocolVersion).toBe(1)
    expect(init.agentCapabilities).toMatchObject({
      loadSession: true,
      promptCapabilities: { image: true, audio: false, embeddedContext: true },
      sessionCapabilities: { list: {}, close: {} }
    })
    const session = await newSession(agent, cwd)
    expect(session.modes?.currentModeId).toBe("default")
    expect(session.modes?.availableModes.map((m) => m.id)).toEqual(["default", "acceptEdits", "readOnly", "bypass"])

    const response = await prompt(agent, session.sessionId, "say hello")
    expect(response.stopReason).toBe("end_turn")
    // Every update was written before the answer, in order; the user's own prompt is not echoed.
    expect(chunks(agent.updates)).toEqual(["Hello", ", ", "world."])
    expect(chunks(agent.updates, "user_message_chunk")).toEqual([])
    expect(agent.updates.every((n) => n.sessionId === session.sessionId)).toBe(true)

    // The first message titles the session: told as session_info_update, and listed with it.
    expect(agent.updates.map((n) => n.update).filter((u) => u.sessionUpdate === "session_info_update")).toEqual([
      { sessionUpdate: "session_info_update", title: "say hello" }
    ])
    const listed = await agent.agent.request(acp.methods.agent.session.list, { cwd })
    expect(listed.sessions.map((s) => s.sessionId)).toEqual([session.sessionId])
    expect(listed.sessions[0]).toMatchObject({ cwd, title: "say hello" })

    expect(await finish(agent)).toEqual({ code: 0, signal: null })
    const log = await logOf(session.sessionId, storage)
    expectWellFormedLog(log)
    expect(log[0]).toMatchObject({ type: "session.created", payload: { cwd, client: "acp" } })
    expect(lastOf(log)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
  })

  const writeScript = {
    responses: [
      { chunks: ["Writing."], toolCalls: [{ tool: "write_file", args: { path: "notes.txt", content: "v1\n" } }] },
      { chunks: ["Done."] }
    ]
  }

  it("a call the policy asks about becomes session/request_permission; allow_once runs it", async () => {
    const { args, cwd, storage } = workspace(writeScript)
    const agent = launch(args, cwd, choose("allow_once"))
    await agent.initialize()
    const { sessionId } = await newSession(agent, cwd)
    expect((await prompt(agent, sessionId, "write notes")).stopReason).toBe("end_turn")

    expect(agent.asked).toHaveLength(1)
    const { params } = agent.asked[0]!
    expect(params.sessionId).toBe(sessionId)
    expect(params.toolCall).toMatchObject({
      toolCallId: "call_1",
      kind: "edit",
      status: "pending",
      title: "Write notes.txt",
      rawInput: { path: "notes.txt", content: "v1\n" },
      locations: [{ path: join(cwd, "notes.txt") }],
      // The editor shows the write as a diff, in the prompt and in the call.
      content: [{ type: "diff", path: join(cwd, "notes.txt"), oldText: null, newText: "v1\n" }]
    })
    expect(params.options.map((o) => o.kind)).toEqual(["allow_once", "allow_always", "reject_once", "reject_always"])

    const forCall = agent.updates.map((n) => n.update).filter((u) => "toolCallId" in u && u.toolCallId === "call_1")
    expect(forCall.map((u) => [u.sessionUpdate, "status" in u ? u.status : undefined])).toEqual([
      ["tool_call", "pending"],
      ["tool_call_update", "in_progress"],
      ["tool_call_update", "completed"]
    ])
    expect(forCall.at(-1)).toMatchObject({ content: [{ type: "diff", path: join(cwd, "notes.txt"), newText: "v1\n" }, { type: "content" }] })
    expect(readFileSync(join(cwd, "notes.txt"), "utf8")).toBe("v1\n")
    expect(chunks(agent.updates)).toEqual(["Writing.", "Done."])
    await finish(agent)
    const log = await logOf(sessionId, storage)
    expect(log.filter((e) => e.type === "permission.resolved").map((e) => e.payload)).toEqual([
      { toolCallId: "call_1", decision: "ask", policy: "default/write", actor: "policy" },
      { toolCallId: "call_1", decision: "allow", actor: "user" }
    ])
  })

  it("reject_once denies the call: the update says failed, nothing is written, the turn goes on", async () => {
    const { args, cwd, storage } = workspace(writeScript)
    const agent = launch(args, cwd, choose("reject_once"))
    await agent.initialize()
    const { sessionId } = await newSession(agent, cwd)
    expect((await prompt(agent, sessionId, "write notes")).stopReason).toBe("end_turn")
    const last = agent.updates.map((n) => n.update).filter((u) => u.sessionUpdate === "tool_call_update").at(-1)
    expect(last).toMatchObject({ toolCallId: "call_1", status: "failed" })
    expect(existsSync(join(cwd, "notes.txt"))).toBe(false)
    await finish(agent)
    const log = await logOf(sessionId, storage)
    expect(log.find((e) => e.type === "permission.resolved" && e.payload.actor === "user")?.payload).toMatchObject({ decision: "deny" })
    expect(lastOf(log)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
  })

  it("allow_always is remembered: a later call of the same tool is not asked about", async () => {
    const { args, cwd, storage } = workspace({
      responses: [
        { toolCalls: [{ tool: "write_file", args: { path: "a.txt", content: "a" } }] },
        { toolCalls: [{ tool: "write_file", args: { path: "b.txt", content: "b" }, id: "call_2" }] },
        { chunks: ["Both written."] }
      ]
    })
    const agent = launch(args, cwd, choose("allow_always"))
    await agent.initialize()
    const { sessionId } = await newSession(agent, cwd)
    expect((await prompt(agent, sessionId, "write two files")).stopReason).toBe("end_turn")
    expect(agent.asked.map((a) => a.params.toolCall.toolCallId)).toEqual(["call_1"])
    expect(readFileSync(join(cwd, "b.txt"), "utf8")).toBe("b")
    await finish(agent)
    const log = await logOf(sessionId, storage)
    expect(log.find((e) => e.type === "permission.resolved" && e.payload.actor === "user")?.payload).toMatchObject({
      decision: "allow",
      remember: true,
      scope: "write_file"
    })
    expect(log.find((e) => e.type === "permission.resolved" && e.payload.toolCallId === "call_2")?.payload).toMatchObject({
      decision: "allow",
      policy: "remembered"
    })
  })

  it("session/cancel mid-stream: the prompt answers cancelled and the log ends cancelled", async () => {
    const { args, cwd, storage } = workspace({ responses: [{ chunks: Array.from({ length: 50 }, (_, i) => `chunk${i} `), delay: 200 }] })
    const agent = launch(args, cwd)
    await agent.initialize()
    const { sessionId } = await newSession(agent, cwd)
    const answered = prompt(agent, sessionId, "count slowly")
    await agent.waitForUpdate((u) => u.sessionUpdate === "agent_message_chunk")
    await agent.agent.notify(acp.methods.agent.session.cancel, { sessionId })
    expect((await answered).stopReason).toBe("cancelled")
    expect(chunks(agent.updates).length).toBeLessThan(50)
    await finish(agent)
    const log = await logOf(sessionId, storage)
    expectWellFormedLog(log)
    expect(lastOf(log)).toMatchObject({ type: "turn.completed", payload: { stopReason: "cancelled" } })
  })

  it("session/cancel while a permission request is open settles it; the prompt answers cancelled", async () => {
    const { args, cwd, storage } = workspace(writeScript)
    const agent = launch(args, cwd) // never answers on its own
    await agent.initialize()
    const { sessionId } = await newSession(agent, cwd)
    const answered = prompt(agent, sessionId, "write notes")
    const asked = await agent.waitForAsked(1)
    await agent.agent.notify(acp.methods.agent.session.cancel, { sessionId })
    expect((await answered).stopReason).toBe("cancelled")
    // The agent withdrew its request ($/cancel_request), so the client's handler saw it cancelled.
    expect(asked.signal.aborted).toBe(true)
    await finish(agent)
    const log = await logOf(sessionId, storage)
    expect(lastOf(log)).toMatchObject({ type: "turn.completed", payload: { stopReason: "cancelled" } })
    expect(existsSync(join(cwd, "notes.txt"))).toBe(false)
  })

  it("a cancelled permission outcome cancels the turn", async () => {
    const { args, cwd, storage } = workspace(writeScript)
    const agent = launch(args, cwd, () => Promise.resolve({ outcome: { outcome: "cancelled" } }))
    await agent.initialize()
    const { sessionId } = await newSession(agent, cwd)
    expect((await prompt(agent, sessionId, "write notes")).stopReason).toBe("cancelled")
    await finish(agent)
    expect(lastOf(await logOf(sessionId, storage))).toMatchObject({ type: "turn.completed", payload: { stopReason: "cancelled" } })
  })

  it("session/set_mode switches the session's permission mode: in bypass the write is not asked about", async () => {
    const { args, cwd } = workspace(writeScript)
    const agent = launch(args, cwd)
    await agent.initialize()
    const { sessionId } = await newSession(agent, cwd)
    const unknown = await rejection(agent.agent.request(acp.methods.agent.session.setMode, { sessionId, modeId: "yolo" }))
    expect(unknown?.code).toBe(-32602)
    await agent.agent.request(acp.methods.agent.session.setMode, { sessionId, modeId: "bypass" })
    expect((await prompt(agent, sessionId, "write notes")).stopReason).toBe("end_turn")
    expect(agent.asked).toHaveLength(0)
    expect(readFileSync(join(cwd, "notes.txt"), "utf8")).toBe("v1\n")
    await finish(agent)
  })

  it("each session follows its cwd's trusted settings file and the --deny flags, with the settings folder guarded as for run", async () => {
    const { args, cwd, scriptFile, storage } = workspace({
      responses: [
        { toolCalls: [{ tool: "write_file", args: { path: "a.txt", content: "a" } }] },
        { toolCalls: [{ tool: "write_file", args: { path: ".effect-agent/settings.json", content: "{\"mode\":\"bypass\"}" }, id: "call_2" }] },
        { toolCalls: [{ tool: "shell", args: { command: "git push" }, id: "call_3" }] },
        { chunks: ["Done."] }
      ]
    })
    mkdirSync(join(cwd, ".effect-agent"))
    writeFileSync(join(cwd, ".effect-agent/settings.json"), JSON.stringify({ mode: "acceptEdits" }))
    // Untrusted, the project's wider mode is ignored (issue 18), and stderr says so; trusted, it applies.
    const untrusted = launch(["--script", scriptFile, "--data-dir", join(cwd, "..", "data-untrusted")], cwd, choose("reject_once"))
    await untrusted.initialize()
    expect((await newSession(untrusted, cwd)).modes?.currentModeId).toBe("default")
    await finish(untrusted)
    expect(untrusted.stderr()).toContain("effect-agent acp: .effect-agent/settings.json is not trusted, so its mode acceptEdits is ignored")
    expect((await run(["trust", "--yes"], { cwd })).code).toBe(0)
    const agent = launch([...args, "--deny", "shell:git push*"], cwd, choose("reject_once"))
    await agent.initialize()
    const session = await newSession(agent, cwd)
    expect(session.modes?.currentModeId).toBe("acceptEdits")
    expect((await prompt(agent, session.sessionId, "go")).stopReason).toBe("end_turn")
    // acceptEdits allows the edit; the settings file is guarded (asked, and rejected); the flag denies the push unasked.
    expect(readFileSync(join(cwd, "a.txt"), "utf8")).toBe("a")
    expect(agent.asked.map((a) => a.params.toolCall.toolCallId)).toEqual(["call_2"])
    expect(JSON.parse(readFileSync(join(cwd, ".effect-agent/settings.json"), "utf8"))).toEqual({ mode: "acceptEdits" })
    const log = await logOf(session.sessionId, storage)
    expect(log.flatMap((e) => e.type === "permission.resolved" && e.payload.actor === "policy" ? [e.payload.policy] : [])).toEqual([
      "accept-edits/edit",
      "protected-path",
      "--deny shell:git push*"
    ])

    // A session in a directory whose settings file is broken is refused before anything is stored.
    const broken = join(cwd, "..", "broken")
    mkdirSync(join(broken, ".effect-agent"), { recursive: true })
    writeFileSync(join(broken, ".effect-agent/settings.json"), "{ not json")
    const refused = await rejection(newSession(agent, broken))
    expect(refused).toMatchObject({ code: -32602, data: { errorCode: "invalid_settings" } })
    expect(refused?.message).toContain("settings.json")
    const listed = await agent.agent.request(acp.methods.agent.session.list, {})
    expect(listed.sessions.map((s) => s.sessionId)).toEqual([session.sessionId])
    await finish(agent)
  })

  it("session/load of a session an earlier process left paused: replays it, re-asks the approval, then the turn goes on", async () => {
    const { args, cwd, root, storage } = workspace(writeScript)
    const first = launch(args, cwd)
    await first.initialize()
    const { sessionId } = await newSession(first, cwd)
    void rejection(prompt(first, sessionId, "write notes"))
    await first.waitForAsked(1)
    first.child.kill("SIGKILL")
    await first.exited

    const afterScript = join(root, "after.json")
    writeFileSync(afterScript, JSON.stringify({ responses: [{ chunks: ["Done after reload."] }] }))
    const second = launch(["--script", afterScript, ...storage], cwd, choose("allow_once"))
    await second.initialize()
    // A cancel for a session this connection has not opened changes nothing (the approval is still asked below).
    await second.agent.notify(acp.methods.agent.session.cancel, { sessionId })
    const wrongCwd = await rejection(second.agent.request(acp.methods.agent.session.load, { sessionId, cwd: dir, mcpServers: [] }))
    expect(wrongCwd?.code).toBe(-32602)
    await second.agent.request(acp.methods.agent.session.load, { sessionId, cwd, mcpServers: [] })
    // The conversation so far, the user's message included, before the answer to session/load.
    expect(chunks(second.updates, "user_message_chunk")).toEqual(["write notes"])
    expect(chunks(second.updates)).toEqual(["Writing."])
    expect(second.updates.map((n) => n.update).filter((u) => u.sessionUpdate === "tool_call")).toMatchObject([
      { toolCallId: "call_1", status: "pending", kind: "edit" }
    ])
    // The approval the first process was waiting for is asked again, and the answer resumes the turn.
    const asked = await second.waitForAsked(1)
    expect(asked.params.toolCall).toMatchObject({ toolCallId: "call_1", title: "Write notes.txt" })
    await second.waitForUpdate((u) => u.sessionUpdate === "agent_message_chunk" && u.content.type === "text" && u.content.text === "Done after reload.")
    expect(readFileSync(join(cwd, "notes.txt"), "utf8")).toBe("v1\n")
    // No prompt answers a resumed turn: its end is read from the log (each read is a CLI run).
    let log = await logOf(sessionId, storage)
    while (lastOf(log)?.type !== "turn.completed") log = await logOf(sessionId, storage)
    await finish(second)
    expectWellFormedLog(log)
    expect(log.find((e) => e.type === "permission.resolved" && e.payload.actor === "user")?.payload).toMatchObject({ decision: "allow" })
    expect(lastOf(log)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
  })
})

describe("effect-agent acp, bad input", () => {
  it("a prompt for an unknown session, a second prompt while one runs, and a turn error are JSON-RPC errors", async () => {
    const { args, cwd } = workspace({
      responses: [
        { chunks: Array.from({ length: 50 }, (_, i) => `chunk${i} `), delay: 200 },
        { failure: { reason: "authentication", detail: "bad key" } }
      ]
    })
    const agent = launch(args, cwd)
    await agent.initialize()
    const unknown = await rejection(prompt(agent, "sess_nope", "hello"))
    expect(unknown).toMatchObject({ code: -32002, data: { sessionId: "sess_nope" } })
    const relative = await rejection(agent.agent.request(acp.methods.agent.session.new, { cwd: "work", mcpServers: [] }))
    expect(relative?.code).toBe(-32602)
    // A cwd that does not exist, or is a file, is refused too: a session needs a directory to work in.
    writeFileSync(join(cwd, "a-file"), "x")
    for (const [missing, reason] of [[join(cwd, "nope"), /does not exist/], [join(cwd, "a-file"), /not a directory/]] as const) {
      const refused = await rejection(agent.agent.request(acp.methods.agent.session.new, { cwd: missing, mcpServers: [] }))
      expect(refused, missing).toMatchObject({ code: -32602, data: { errorCode: "invalid_input", field: "cwd" } })
      expect(refused?.message, missing).toMatch(reason)
    }
    // `..` and links are resolved when the session is created: it is stored (and listed) as the directory it names.
    mkdirSync(join(cwd, "sub"))
    symlinkSync(join(cwd, "sub"), join(cwd, "link"))
    const linked = await newSession(agent, join(cwd, "link"))
    const listed = await agent.agent.request(acp.methods.agent.session.list, {})
    expect(listed.sessions.find((s) => s.sessionId === linked.sessionId)?.cwd).toBe(realpathSync(join(cwd, "sub")))

    const { sessionId } = await newSession(agent, cwd)
    const first = prompt(agent, sessionId, "count slowly")
    await agent.waitForUpdate((u) => u.sessionUpdate === "agent_message_chunk")
    const second = await rejection(prompt(agent, sessionId, "and this too"))
    expect(second).toMatchObject({ code: -32600, data: { errorCode: "turn_in_progress" } })
    await agent.agent.notify(acp.methods.agent.session.cancel, { sessionId })
    expect((await first).stopReason).toBe("cancelled")

    const failed = await rejection(prompt(agent, sessionId, "now fail"))
    expect(failed).toMatchObject({ code: -32603, data: { errorCode: "authentication", sessionId } })
    await finish(agent)
  })

  it("malformed JSON and unknown methods are answered per JSON-RPC, a newer protocol version gets ours; stdout carries nothing else", async () => {
    const { args, cwd } = workspace({ responses: [] })
    const raw = start(["acp", ...args], { cwd })
    raw.child.stdin!.write("{ not json\n")
    await raw.waitForStdout(/-32700/)
    raw.child.stdin!.write(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 2 } }) + "\n")
    await raw.waitForStdout(/"id":1,"result"/)
    raw.child.stdin!.write(JSON.stringify({ jsonrpc: "2.0", id: 2, method: "no/such_method", params: {} }) + "\n")
    await raw.waitForStdout(/"id":2,"error"/)
    // Params nested 100k deep (what answered 500 with nothing over HTTP): invalid params, and the agent goes on.
    const deep = "[".repeat(100_000) + "]".repeat(100_000)
    raw.child.stdin!.write(`{"jsonrpc":"2.0","id":3,"method":"session/new","params":{"cwd":${JSON.stringify(cwd)},"mcpServers":${deep}}}\n`)
    await raw.waitForStdout(/"id":3,"error"/)
    raw.child.stdin!.write(`{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":"sess_x","prompt":${deep}}}\n`)
    await raw.waitForStdout(/"id":4,"error"/)
    raw.child.stdin!.end()
    const finished = await raw.done
    expect(finished.code).toBe(0)
    const lines = finished.stdout.trim().split("\n").map((line) => JSON.parse(line) as Record<string, unknown>)
    expect(lines).toHaveLength(5)
    expect(lines[3]).toMatchObject({ id: 3, error: { code: -32602 } })
    expect(lines[4]).toMatchObject({ id: 4, error: { code: -32602 } })
    expect(lines.every((line) => line.jsonrpc === "2.0")).toBe(true)
    expect(lines[0]).toMatchObject({ id: null, error: { code: -32700 } })
    // A client on a newer protocol gets the version we speak, and may decline it.
    expect(lines[1]).toMatchObject({ id: 1, result: { protocolVersion: 1 } })
    expect(lines[2]).toMatchObject({ id: 2, error: { code: -32601 } })
  })

  it("a line over the SDK's 32 MiB limit: exit 1 with one line on stderr saying why (it used to end silently with 0)", async () => {
    const { args, cwd } = workspace({ responses: [] })
    const raw = start(["acp", ...args], { cwd })
    raw.child.stdin!.write(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1 } }) + "\n")
    await raw.waitForStdout(/"id":1,"result"/)
    raw.child.stdin!.on("error", () => {}) // the agent may close its stdin before the whole line is written
    raw.child.stdin!.end(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"${"a".repeat(33 * 1024 * 1024)}"}}\n`)
    const finished = await raw.done
    expect(finished.code).toBe(1)
    expect(finished.stderr).toMatch(/effect-agent: acp: a message on stdin is over the 32 MiB limit of a JSON-RPC line; the connection is closed\n$/)
    // Nothing but protocol on stdout: the initialize answer.
    expect(finished.stdout.trim().split("\n")).toHaveLength(1)
  })

  it("a client that disconnects mid-turn: the turn is cancelled, the log closed, the agent exits", async () => {
    const { args, cwd, storage } = workspace({ responses: [{ chunks: Array.from({ length: 50 }, (_, i) => `chunk${i} `), delay: 200 }] })
    const agent = launch(args, cwd)
    await agent.initialize()
    const { sessionId } = await newSession(agent, cwd)
    void rejection(prompt(agent, sessionId, "count slowly"))
    await agent.waitForUpdate((u) => u.sessionUpdate === "agent_message_chunk")
    agent.child.stdin.end()
    agent.child.stdout.destroy()
    expect(await agent.exited).toEqual({ code: 0, signal: null })
    const log = await logOf(sessionId, storage)
    expectWellFormedLog(log)
    expect(lastOf(log)).toMatchObject({ type: "turn.completed", payload: { stopReason: "cancelled" } })
  })

  it("SIGTERM mid-turn (the editor closing): the turn is cancelled and the log closed before the agent exits", async () => {
    const { args, cwd, storage } = workspace({ responses: [{ chunks: Array.from({ length: 50 }, (_, i) => `chunk${i} `), delay: 200 }] })
    const agent = launch(args, cwd)
    await agent.initialize()
    const { sessionId } = await newSession(agent, cwd)
    void rejection(prompt(agent, sessionId, "count slowly"))
    await agent.waitForUpdate((u) => u.sessionUpdate === "agent_message_chunk")
    agent.child.kill("SIGTERM")
    expect((await agent.exited).signal).toBe(null)
    const log = await logOf(sessionId, storage)
    expectWellFormedLog(log)
    expect(lastOf(log)).toMatchObject({ type: "turn.completed", payload: { stopReason: "cancelled" } })
  })

  it("a client that disconnects while a permission request is open: the turn is cancelled, the log closed", async () => {
    const { args, cwd, storage } = workspace(writeScript2)
    const agent = launch(args, cwd)
    await agent.initialize()
    const { sessionId } = await newSession(agent, cwd)
    void rejection(prompt(agent, sessionId, "write notes"))
    await agent.waitForAsked(1)
    agent.child.stdin.end()
    expect(await agent.exited).toEqual({ code: 0, signal: null })
    const log = await logOf(sessionId, storage)
    expectWellFormedLog(log)
    expect(lastOf(log)).toMatchObject({ type: "turn.completed", payload: { stopReason: "cancelled" } })
  })
})

const writeScript2 = { responses: [{ toolCalls: [{ tool: "write_file", args: { path: "notes.txt", content: "v1\n" } }] }] }
