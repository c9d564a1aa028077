/**
 * The client going away while `session/request_permission` is outstanding (timing4): the editor
 * process dies — its end of stdin closes, and with it the pipe the agent writes to — or only closes
 * its side of stdin. The agent must not hang on the question nobody will answer: the turn is
 * cancelled and its log closed (docs/acp.md: a question that cannot be answered is dismissed), the
 * process exits, and a new client can load the session and run the next turn on it.
 */
import { describe, expect, it } from "vitest"
import { expectWellFormedLog } from "../helpers.js"
import { start } from "../cli/subprocess.js"
import { acpScratch, logOf } from "./client.js"

const scratch = acpScratch("acp-gone")

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
