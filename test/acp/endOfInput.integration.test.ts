/**
 * A scripted client — a shell pipe, a script that writes its requests and closes its side — still
 * gets its answers: `effect-agent acp` ends on stdin's end only once the requests it read are answered
 * and no turn runs. It used to end at once, the requests in flight unanswered (a prompt's turn
 * cancelled). A turn that would ask the client a question after its input ended cannot be answered:
 * the question is dismissed, the turn cancelled and its log closed. Real subprocesses, raw JSON-RPC
 * lines on stdin.
 */
import { describe, expect, it } from "vitest"
import { expectWellFormedLog } from "../helpers.js"
import { start } from "../cli/subprocess.js"
import { acpScratch, logOf } from "./client.js"

const scratch = acpScratch("acp-eof")

const workspace = (script: unknown) => {
  const { cwd, storage, scriptFile } = scratch.project(script)
  return { cwd, storage, args: ["acp", "--script", scriptFile, ...storage] }
}

const line = (id: number, method: string, params: unknown) => JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n"
const initialize = line(1, "initialize", { protocolVersion: 1, clientCapabilities: {} })

type Message = { readonly id?: number; readonly method?: string; readonly result?: Record<string, unknown>; readonly error?: unknown; readonly params?: any }
const messagesOf = (stdout: string): Array<Message> => stdout.trim().split("\n").filter((l) => l !== "").map((l) => JSON.parse(l) as Message)
const answerTo = (messages: ReadonlyArray<Message>, id: number) => messages.find((m) => m.id === id && m.method === undefined)

const launch = (args: ReadonlyArray<string>, cwd: string) => {
  const agent = scratch.track(start(args, { cwd }))
  agent.child.stdin!.on("error", () => {})
  let stdout = ""
  agent.child.stdout!.on("data", (chunk: string) => (stdout += chunk))
  return { ...agent, stdout: () => stdout }
}

describe("effect-agent acp: stdin closed with requests in flight", () => {
  it("a shell pipe (initialize, two session/new, then EOF) gets every answer and exits 0", async () => {
    const { args, cwd } = workspace({ responses: [] })
    const agent = launch(args, cwd)
    agent.child.stdin!.end(initialize + line(2, "session/new", { cwd, mcpServers: [] }) + line(3, "session/new", { cwd, mcpServers: [] }))
    const finished = await agent.done
    expect(finished.code).toBe(0)
    const messages = messagesOf(finished.stdout)
    expect(answerTo(messages, 1)?.result).toMatchObject({ protocolVersion: 1 })
    expect(answerTo(messages, 2)?.result?.sessionId).toMatch(/^sess_/)
    expect(answerTo(messages, 3)?.result?.sessionId).toMatch(/^sess_/)
  })

  it("prompts of two sessions, then EOF: both turns finish, both prompts answer end_turn, the logs end final, exit 0", async () => {
    // Slow enough that the turns still run when the agent reads the end of its input.
    const { args, cwd, storage } = workspace({
      responses: [
        { chunks: Array.from({ length: 10 }, (_, i) => `a${i} `), delay: 30 },
        { chunks: Array.from({ length: 10 }, (_, i) => `b${i} `), delay: 30 }
      ]
    })
    const agent = launch(args, cwd)
    agent.child.stdin!.write(initialize + line(2, "session/new", { cwd, mcpServers: [] }) + line(3, "session/new", { cwd, mcpServers: [] }))
    await agent.waitForStdout(/"id":2,"result"[^\n]*\n[^]*"id":3,"result"|"id":3,"result"[^\n]*\n[^]*"id":2,"result"/)
    const opened = messagesOf(agent.stdout())
    const first = String(answerTo(opened, 2)?.result?.sessionId)
    const second = String(answerTo(opened, 3)?.result?.sessionId)
    agent.child.stdin!.end(
      line(4, "session/prompt", { sessionId: first, prompt: [{ type: "text", text: "count" }] }) +
        line(5, "session/prompt", { sessionId: second, prompt: [{ type: "text", text: "count" }] })
    )
    const finished = await agent.done
    expect(finished.code).toBe(0)
    const messages = messagesOf(finished.stdout)
    expect(answerTo(messages, 4)).toMatchObject({ result: { stopReason: "end_turn" } })
    expect(answerTo(messages, 5)).toMatchObject({ result: { stopReason: "end_turn" } })
    const text = (sessionId: string) =>
      messages.filter((m) => m.method === "session/update" && m.params?.sessionId === sessionId && m.params?.update?.sessionUpdate === "agent_message_chunk")
        .map((m) => m.params.update.content.text).join("")
    expect([text(first), text(second)].sort()).toEqual([
      Array.from({ length: 10 }, (_, i) => `a${i} `).join(""),
      Array.from({ length: 10 }, (_, i) => `b${i} `).join("")
    ])
    for (const sessionId of [first, second]) {
      const log = await logOf(sessionId, storage)
      expectWellFormedLog(log)
      expect(log.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
    }
  })

  it("a prompt whose turn must ask the client, then EOF: the question is dismissed, the prompt answers cancelled, the log is closed, exit 0", async () => {
    const { args, cwd, storage } = workspace({ responses: [{ toolCalls: [{ tool: "write_file", args: { path: "notes.txt", content: "v1\n" } }] }] })
    const agent = launch(args, cwd)
    agent.child.stdin!.write(initialize + line(2, "session/new", { cwd, mcpServers: [] }))
    await agent.waitForStdout(/"id":2,"result"/)
    const sessionId = String(answerTo(messagesOf(agent.stdout()), 2)?.result?.sessionId)
    agent.child.stdin!.end(line(3, "session/prompt", { sessionId, prompt: [{ type: "text", text: "write notes" }] }))
    const finished = await agent.done
    expect(finished.code).toBe(0)
    expect(answerTo(messagesOf(finished.stdout), 3)).toMatchObject({ result: { stopReason: "cancelled" } })
    const log = await logOf(sessionId, storage)
    expectWellFormedLog(log)
    expect(log.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "cancelled" } })
  })
})

/**
 * The client going away while `session/request_permission` is outstanding (timing4): the editor
 * process dies — its end of stdin closes, and with it the pipe the agent writes to — or only closes
 * its side of stdin. The agent must not hang on the question nobody will answer: the turn is
 * cancelled and its log closed (docs/acp.md: a question that cannot be answered is dismissed), the
 * process exits, and a new client can load the session and run the next turn on it.
 */
describe("effect-agent acp: the client goes away while a permission request is outstanding", () => {
  for (const [folder, how] of [["closed", "stdin closed"], ["died", "client died (stdin and stdout gone)"]] as const) {
    it(`${how}: the turn is cancelled and closed, the agent exits, a new client loads the session and runs a turn`, async () => {
      const { cwd, storage, scriptFile } = scratch.project({
        responses: [{ toolCalls: [{ tool: "write_file", args: { path: "notes.txt", content: "v1\n" } }] }]
      }, folder)
      const args = ["acp", "--script", scriptFile, ...storage]
      const agent = launch(args, cwd)
      agent.child.stdin!.write(initialize + line(2, "session/new", { cwd, mcpServers: [] }))
      await agent.waitForStdout(/"id":2,"result"/)
      const sessionId = String(answerTo(messagesOf(agent.stdout()), 2)?.result?.sessionId)
      agent.child.stdin!.write(line(3, "session/prompt", { sessionId, prompt: [{ type: "text", text: "write notes" }] }))
      await agent.waitForStdout(/"method":"session\/request_permission"/)
      agent.child.stdin!.end()
      if (how !== "stdin closed") agent.child.stdout!.destroy()
      const finished = await agent.done
      expect(finished.signal).toBeNull()
      expect(finished.code).toBe(0)
      if (how === "stdin closed") expect(answerTo(messagesOf(finished.stdout), 3)).toMatchObject({ result: { stopReason: "cancelled" } })
      const log = await logOf(sessionId, storage)
      expectWellFormedLog(log)
      expect(log.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "cancelled" } })
      expect(log.some((e) => e.type === "tool.started")).toBe(false)

      // The next client's agent has a script of its own (a process reads its script from the start).
      scratch.project({ responses: [{ chunks: ["next turn"] }] }, folder)
      const next = launch(args, cwd)
      next.child.stdin!.write(initialize + line(2, "session/load", { sessionId, cwd, mcpServers: [] }))
      await next.waitForStdout(/"id":2,"result"/)
      next.child.stdin!.end(line(3, "session/prompt", { sessionId, prompt: [{ type: "text", text: "again" }] }))
      const after = await next.done
      expect(after.code).toBe(0)
      const messages = messagesOf(after.stdout)
      expect(messages.some((m) => m.method === "session/request_permission")).toBe(false)
      expect(answerTo(messages, 3)).toMatchObject({ result: { stopReason: "end_turn" } })
      const resumed = await logOf(sessionId, storage)
      expectWellFormedLog(resumed)
      expect(resumed.slice(0, log.length)).toEqual(log)
      expect(resumed.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
    })
  }
})
