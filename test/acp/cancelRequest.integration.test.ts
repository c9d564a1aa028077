/**
 * Review 43: a request the client cancels (`$/cancel_request`) in the same write as the request
 * itself. The SDK aborts the request's signal as it reads the cancel, which can be before the
 * agent's handler runs; the agent only listened for the abort, which an already-aborted signal never
 * fires, so the whole turn ran and the prompt answered `end_turn`. Now the prompt answers
 * `cancelled` and its turn never starts. Driven over raw JSON-RPC lines, so the two messages are
 * one write (the SDK's client writes them one at a time).
 */
import { describe, expect, it } from "vitest"
import { start } from "../cli/subprocess.js"
import { acpScratch, logOf } from "./client.js"

const scratch = acpScratch("acp-cancel-request")

const line = (message: unknown) => JSON.stringify(message) + "\n"

describe("effect-agent acp: $/cancel_request", () => {
  it("a prompt cancelled in the same write answers cancelled, runs no turn, and the session goes on", async () => {
    // No script: the built-in echo model answers every prompt at once.
    const { cwd, storage } = scratch.project({ responses: [] })
    const agent = scratch.track(start(["acp", ...storage], { cwd }))
    let stdout = ""
    agent.child.stdout!.on("data", (chunk: string) => (stdout += chunk))
    /** The answer to request `id`, once it is written. */
    const answer = async (id: number): Promise<{ readonly result?: Record<string, unknown> }> => {
      const pattern = new RegExp(`^\\{"jsonrpc":"2\\.0","id":${id},.*$`, "m")
      await agent.waitForStdout(pattern)
      return JSON.parse(pattern.exec(stdout)![0])
    }
    agent.child.stdin!.write(line({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } }))
    await answer(1)
    agent.child.stdin!.write(line({ jsonrpc: "2.0", id: 2, method: "session/new", params: { cwd, mcpServers: [] } }))
    const sessionId = (await answer(2)).result!.sessionId as string
    const prompt = (id: number) => ({ jsonrpc: "2.0", id, method: "session/prompt", params: { sessionId, prompt: [{ type: "text", text: `prompt ${id}` }] } })
    agent.child.stdin!.write(line(prompt(3)) + line({ jsonrpc: "2.0", method: "$/cancel_request", params: { requestId: 3 } }))
    expect(await answer(3)).toEqual({ jsonrpc: "2.0", id: 3, result: { stopReason: "cancelled" } })
    agent.child.stdin!.write(line(prompt(4)))
    expect(await answer(4)).toEqual({ jsonrpc: "2.0", id: 4, result: { stopReason: "end_turn" } })
    agent.child.stdin!.end()
    expect((await agent.done).code).toBe(0)
    // The cancelled prompt's turn never started: the log holds the second prompt's turn only.
    const stored = await logOf(sessionId, storage)
    expect(stored.filter((e) => e.type === "turn.started").length).toBe(1)
  })
})
