/**
 * Review 43: a cancel written together with the request it cancels, so that it can be read — and
 * handled — before the request's handler runs.
 *
 * - `$/cancel_request` of a prompt: the SDK aborts the request's signal as it reads the cancel; the
 *   agent only listened for the abort, which an already-aborted signal never fires, so the whole
 *   turn ran and the prompt answered `end_turn`. Now it answers `cancelled` and no turn starts.
 * - `$/cancel_request` of a `session/load`: ignored, so the load asked the paused turn's approval
 *   again. Now the load answers "Request cancelled" and asks nothing; the turn stays paused.
 * - `session/cancel` right behind a `session/load` of a paused session closes the paused turn (a
 *   guard: the SDK handles the two in arrival order, so this passed before too).
 *
 * Driven over raw JSON-RPC lines, so that the request and its cancel are one write (the SDK's client
 * writes them one at a time).
 */
import { describe, expect, it } from "vitest"
import type { AgentEvent } from "../../src/index.js"
import { expectWellFormedLog } from "../helpers.js"
import { start } from "../cli/subprocess.js"
import { acpScratch, logOf } from "./client.js"

const scratch = acpScratch("acp-cancel-request")

const line = (message: unknown) => JSON.stringify(message) + "\n"

/** `effect-agent acp <args>` spoken to in raw lines: `send` writes its messages as one write. */
const rawAgent = (args: ReadonlyArray<string>, cwd: string) => {
  const agent = scratch.track(start(["acp", ...args], { cwd }))
  let stdout = ""
  agent.child.stdout!.on("data", (chunk: string) => (stdout += chunk))
  /** The answer to request `id`, once it is written. */
  const answer = async (id: number): Promise<{ readonly result?: Record<string, unknown>; readonly error?: unknown }> => {
    const pattern = new RegExp(`^\\{"jsonrpc":"2\\.0","id":${id},.*$`, "m")
    await agent.waitForStdout(pattern)
    return JSON.parse(pattern.exec(stdout)![0])
  }
  const send = (...messages: ReadonlyArray<unknown>) => agent.child.stdin!.write(messages.map(line).join(""))
  const initialize = async () => {
    send({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } })
    await answer(1)
  }
  /** Closes the client's side and waits for the agent to end; what it wrote, as lines. */
  const finish = async () => {
    agent.child.stdin!.end()
    const finished = await agent.done
    expect(finished.code).toBe(0)
    return stdout.split("\n").filter((l) => l !== "").map((l) => JSON.parse(l) as { readonly method?: string })
  }
  /** Kills the agent mid-turn, as a crash or a closed terminal does. */
  const kill = async () => {
    agent.child.kill("SIGKILL")
    await agent.done
  }
  return { send, answer, initialize, finish, kill }
}

/** A session whose process was killed while its turn asked about a write: the log holds the turn paused. */
const pausedSession = async () => {
  const { cwd, scriptFile, storage } = scratch.project({
    responses: [{ chunks: ["Writing."], toolCalls: [{ tool: "write_file", args: { path: "notes.txt", content: "v1\n" } }] }]
  })
  const first = rawAgent(["--script", scriptFile, ...storage], cwd)
  await first.initialize()
  first.send({ jsonrpc: "2.0", id: 2, method: "session/new", params: { cwd, mcpServers: [] } })
  const sessionId = (await first.answer(2)).result!.sessionId as string
  first.send({ jsonrpc: "2.0", id: 3, method: "session/prompt", params: { sessionId, prompt: [{ type: "text", text: "write notes" }] } })
  await first.answer(0) // the agent's first request to the client: the approval
  await first.kill()
  return { cwd, sessionId, storage }
}

/** A new agent's `session/load` (id 2) of a paused session and `cancel` in one write: the load's answer and the questions the agent asked. */
const loadWith = async (cancel: (sessionId: string) => unknown) => {
  const { cwd, sessionId, storage } = await pausedSession()
  const agent = rawAgent(storage, cwd)
  await agent.initialize()
  agent.send({ jsonrpc: "2.0", id: 2, method: "session/load", params: { sessionId, cwd, mcpServers: [] } }, cancel(sessionId))
  const answer = await agent.answer(2)
  const asked = (await agent.finish()).filter((m) => m.method === "session/request_permission")
  return { answer, asked, cwd, sessionId, storage }
}

const lastOf = (log: ReadonlyArray<AgentEvent.AgentEvent>) => log.at(-1)

describe("effect-agent acp: a cancel written together with its request", () => {
  it("$/cancel_request in the same write as its prompt: cancelled, no turn runs, and the session goes on", async () => {
    // No script: the built-in echo model answers every prompt at once.
    const { cwd, storage } = scratch.project({ responses: [] })
    const agent = rawAgent(storage, cwd)
    await agent.initialize()
    agent.send({ jsonrpc: "2.0", id: 2, method: "session/new", params: { cwd, mcpServers: [] } })
    const sessionId = (await agent.answer(2)).result!.sessionId as string
    const prompt = (id: number) => ({ jsonrpc: "2.0", id, method: "session/prompt", params: { sessionId, prompt: [{ type: "text", text: `prompt ${id}` }] } })
    agent.send(prompt(3), { jsonrpc: "2.0", method: "$/cancel_request", params: { requestId: 3 } })
    expect(await agent.answer(3)).toEqual({ jsonrpc: "2.0", id: 3, result: { stopReason: "cancelled" } })
    agent.send(prompt(4))
    expect(await agent.answer(4)).toEqual({ jsonrpc: "2.0", id: 4, result: { stopReason: "end_turn" } })
    await agent.finish()
    // The cancelled prompt's turn never started: the log holds the second prompt's turn only.
    const stored = await logOf(sessionId, storage)
    expect(stored.filter((e) => e.type === "turn.started").length).toBe(1)
  })

  it("$/cancel_request in the same write as a session/load of a paused session: cancelled, nothing asked, the turn still paused for a later load", async () => {
    const { answer, asked, cwd, sessionId, storage } = await loadWith(() => ({ jsonrpc: "2.0", method: "$/cancel_request", params: { requestId: 2 } }))
    expect(answer).toMatchObject({ error: { code: -32800 } })
    expect(asked).toEqual([])
    // Nothing was closed: the next load asks the paused question again.
    const third = rawAgent(storage, cwd)
    await third.initialize()
    third.send({ jsonrpc: "2.0", id: 2, method: "session/load", params: { sessionId, cwd, mcpServers: [] } })
    await third.answer(0) // the agent's first request to the client: the approval, asked again
    await third.kill()
  })

  it("session/cancel in the same write as a session/load of a paused session: the paused turn is closed, its approval not asked", async () => {
    const { answer, asked, sessionId, storage } = await loadWith((sessionId) => ({ jsonrpc: "2.0", method: "session/cancel", params: { sessionId } }))
    expect(answer).toMatchObject({ result: {} })
    expect(asked).toEqual([])
    const log = await logOf(sessionId, storage)
    expectWellFormedLog(log)
    expect(lastOf(log)).toMatchObject({ type: "turn.completed", payload: { stopReason: "cancelled" } })
  })
})
