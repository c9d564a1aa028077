/**
 * review58b: `chat` stored a 1 MB paste as a user message; the model's window (128,000 tokens) could
 * never hold it, so that turn and every later one ended `context_overflow` — the session was lost.
 * A message the window could never hold (its estimate alone over `maxContextTokens`) is now refused
 * before it is stored, in plain words: by `run` and `chat` before a session is even made, and by
 * the ACP agent for `session/prompt` (invalid params) — each session as it was. The engine itself
 * stores what it is given (the contract's `context_overflow` at the request). Through the built
 * CLI (the echo model: a 128,000-token window), and the ACP SDK's own client.
 */
import * as acp from "@agentclientprotocol/sdk"
import { existsSync, readdirSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { acpScratch, chunks } from "../acp/client.js"
import { run, scratch, sessionIdIn, start } from "./subprocess.js"

const { dataDir, dir, replay } = scratch("over-window")
const acpRuns = acpScratch("acp-over-window")

/** A 1 MB paste: about 262,144 tokens, twice the echo model's window. */
const paste = "x".repeat(1024 * 1024)
const said = "the message is about 262,144 tokens (1,048,576 characters), more than the model's whole context window (128,000 tokens): it could never be sent"

const sessionsStored = () => existsSync(join(dataDir, "sessions")) ? readdirSync(join(dataDir, "sessions")).filter((f) => f.endsWith(".jsonl")) : []

const runWithStdin = async (args: ReadonlyArray<string>, stdin: string) => {
  const running = start(args, { cwd: dir })
  running.child.stdin!.end(stdin)
  return await running.done
}

describe("a message the model's window could never hold is refused before it is stored", () => {
  it("run: a new session is not made; an existing one is as it was, and its next turn runs", async () => {
    const refused = await runWithStdin(["run", "-", "--data-dir", dataDir], paste)
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain(`effect-agent: ${said}`)
    expect(refused.stderr).not.toContain("userMessage")
    expect(sessionsStored()).toEqual([])

    const first = await run(["run", "hello", "--data-dir", dataDir], { cwd: dir })
    expect(first.code).toBe(0)
    const sessionId = sessionIdIn(first.stderr)!
    const before = await replay(sessionId)
    const again = await runWithStdin(["run", "-", "--session", sessionId, "--data-dir", dataDir], paste)
    expect(again.code).toBe(1)
    expect(again.stderr).toContain(said)
    expect(await replay(sessionId)).toEqual(before)
    const next = await run(["run", "after", "--session", sessionId, "--data-dir", dataDir], { cwd: dir })
    expect(next.stdout).toBe("Echo: after\n")
  })

  it("chat: the paste is refused with a note; the chat goes on, and the session holds only the other messages", async () => {
    const chat = start(["chat", "--data-dir", join(dir, "chat-data")], { cwd: dir })
    chat.child.stdin!.write("one\n")
    await chat.waitForStdout(/Echo: one\n/)
    chat.child.stdin!.write(`${paste}\n`)
    await chat.waitForStderr(/could never be sent/)
    chat.child.stdin!.write("two\n")
    await chat.waitForStdout(/Echo: two\n/)
    chat.child.stdin!.end()
    const finished = await chat.done
    expect(finished.code).toBe(0)
    expect(finished.stderr).toContain(`effect-agent: ${said}`)
    const sessionId = sessionIdIn(finished.stderr)!
    const log = (await run(["replay", sessionId, "--json", "--data-dir", join(dir, "chat-data")])).stdout.trim().split("\n").map((line) => JSON.parse(line) as { type: string; payload: { content?: string; stopReason?: string } })
    expect(log.filter((e) => e.type === "user.message").map((e) => e.payload.content)).toEqual(["one", "two"])
    expect(log.filter((e) => e.type === "turn.completed").map((e) => e.payload.stopReason)).toEqual(["final", "final"])
  })

  it("a first chat message over the window makes no session", async () => {
    const chatData = join(dir, "chat-first")
    const finished = await runWithStdin(["chat", "--data-dir", chatData], `${paste}\n`)
    expect(finished.code).toBe(0)
    expect(finished.stderr).toContain(said)
    expect(sessionIdIn(finished.stderr)).toBeUndefined()
    expect(existsSync(join(chatData, "sessions")) ? readdirSync(join(chatData, "sessions")).filter((f) => f.endsWith(".jsonl")) : []).toEqual([])
  })

  it("ACP session/prompt: invalid params saying why; the session is as it was and its next prompt runs", async () => {
    const p = acpRuns.project({ responses: [{ chunks: ["first"] }, { chunks: ["second"] }] })
    const agent = acpRuns.launch(["--script", p.scriptFile, ...p.storage], { cwd: p.cwd })
    await agent.initialize()
    const { sessionId } = await agent.agent.request(acp.methods.agent.session.new, { cwd: p.cwd, mcpServers: [] })
    expect((await agent.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "hi" }] })).stopReason).toBe("end_turn")
    const before = (await run(["replay", sessionId, "--json", ...p.storage])).stdout
    const error = await agent.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: paste }] }).then(() => undefined, (e: unknown) => e)
    expect(error).toBeInstanceOf(acp.RequestError)
    expect(error).toMatchObject({ code: -32602, data: { errorCode: "invalid_input", field: "userMessage" } })
    expect((error as acp.RequestError).message).toContain("userMessage is about 262,144 tokens")
    expect((await run(["replay", sessionId, "--json", ...p.storage])).stdout).toBe(before)
    expect((await agent.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "again" }] })).stopReason).toBe("end_turn")
    expect(chunks(agent.updates)).toEqual(["first", "second"])
    agent.child.stdin.end()
    await agent.exited
  })
})
