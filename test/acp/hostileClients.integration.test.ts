/**
 * ACP against clients that do not play along (probes that held): a client that prompts, cancels or
 * sets the mode of a session another client created in the same data directory, without loading it
 * (refused: a connection drives only the sessions it created or loaded); and a client that sends ten
 * thousand requests without reading a reply (the agent waits for stdout, then answers every one, in
 * order, and goes on).
 */
import * as acp from "@agentclientprotocol/sdk"
import { describe, expect, it } from "vitest"
import { start } from "../cli/subprocess.js"
import { acpScratch } from "./client.js"

const scratch = acpScratch("acp-hostile")

describe("effect-agent acp against hostile clients", () => {
  it("a prompt or a mode for a session another client created is refused until this client loads it", async () => {
    const { cwd, scriptFile, storage } = scratch.project({ responses: [{ chunks: ["mine"] }, { chunks: ["loaded"] }] })
    const args = ["--script", scriptFile, ...storage]
    const owner = scratch.launch(args, { cwd })
    await owner.initialize()
    const { sessionId } = await owner.agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] })
    const other = scratch.launch(args, { cwd })
    await other.initialize()
    const refused = await other.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "hijack" }] })
      .then(() => undefined, (error: unknown) => error as acp.RequestError)
    expect(refused).toMatchObject({ code: -32002, data: { sessionId } })
    // The SDK's message, "Resource not found", said nothing of what to do.
    expect(refused?.message).toBe(`Resource not found: session ${sessionId} is not open on this connection; session/load opens it`)
    const mode = await other.agent.request(acp.methods.agent.session.setMode, { sessionId, modeId: "acceptEdits" })
      .then(() => undefined, (error: unknown) => error as acp.RequestError)
    expect(mode?.code).toBe(-32002)
    // The owner's session is untouched: its own prompt runs.
    expect(await owner.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "hello" }] })).toMatchObject({ stopReason: "end_turn" })
    owner.child.stdin.end()
    other.child.stdin.end()
    await Promise.all([owner.exited, other.exited])
  })

  it("session/load of a session the data dir does not hold names session/list", async () => {
    const { cwd, scriptFile, storage } = scratch.project({ responses: [] })
    const client = scratch.launch(["--script", scriptFile, ...storage], { cwd })
    await client.initialize()
    const refused = await client.agent.request(acp.methods.agent.session.load, { sessionId: "sess_nope", cwd, mcpServers: [] })
      .then(() => undefined, (error: unknown) => error as acp.RequestError)
    expect(refused).toMatchObject({ code: -32002, data: { sessionId: "sess_nope" } })
    expect(refused?.message).toBe("Resource not found: no session sess_nope here; session/list lists the stored ones (effect-agent sessions in a terminal)")
    client.child.stdin.end()
    await client.exited
  })

  it("ten thousand requests sent without reading a reply: every one answered, in order, and the agent goes on", async () => {
    const { cwd, scriptFile, storage } = scratch.project({ responses: [] })
    const raw = start(["acp", "--script", scriptFile, ...storage], { cwd })
    const count = 10_000
    const requests = Array.from({ length: count }, (_, i) => JSON.stringify({ jsonrpc: "2.0", id: i + 1, method: "no/such_method", params: { pad: "x".repeat(64) } })).join("\n") + "\n"
    // Nothing of stdout is read while they go in (~1 MB): once the agent's answers fill this side's
    // buffer, its writes wait on a full pipe.
    const stdout = raw.child.stdout!
    stdout.pause()
    const written = new Promise<void>((resolve, reject) => raw.child.stdin!.write(requests, (error) => (error ? reject(error) : resolve())))
    await new Promise<void>((resolve) => {
      const full = setInterval(() => {
        if (stdout.readableLength >= stdout.readableHighWaterMark) resolve(clearInterval(full))
      }, 20)
    })
    stdout.resume()
    await written
    raw.child.stdin!.write(JSON.stringify({ jsonrpc: "2.0", id: count + 1, method: "initialize", params: { protocolVersion: 1 } }) + "\n")
    await raw.waitForStdout(new RegExp(`"id":${count + 1},"result"`))
    raw.child.stdin!.end()
    const finished = await raw.done
    expect(finished.code).toBe(0)
    const ids = finished.stdout.trim().split("\n").map((line) => (JSON.parse(line) as { id: number }).id)
    expect(ids).toEqual(Array.from({ length: count + 1 }, (_, i) => i + 1))
  })
})
