/**
 * Review 43: `Arrivals` kept the id of every `session/prompt` and `session/load` request until the
 * agent's handler asked for it; a request the SDK refuses itself (before `initialize`, bad params)
 * never reaches the handler, so its id was kept for the connection's life — 1 MiB ids grew the
 * agent's heap until it died. Now an id is forgotten when its request's response goes out, and the
 * ids kept are capped (oldest first). Counted with `held`, over the SDK's own agent and client.
 */
import * as acp from "@agentclientprotocol/sdk"
import { describe, expect, it } from "vitest"
import * as Arrivals from "../../src/acp/Arrivals.js"

/** The SDK's agent on a stream `arrivals` observes (its prompt handler asks, as AcpAgent's does), and the SDK's client. */
const connected = (arrivals: Arrivals.Arrivals) => {
  const toAgent = new TransformStream<Uint8Array, Uint8Array>()
  const toClient = new TransformStream<Uint8Array, Uint8Array>()
  const agent = acp.agent({ name: "arrivals-test" })
    .onRequest(acp.methods.agent.initialize, () => ({ protocolVersion: acp.PROTOCOL_VERSION, agentCapabilities: {}, authMethods: [] }))
    .onRequest(acp.methods.agent.session.prompt, ({ requestId }) => {
      arrivals.requestAt(requestId)
      return { stopReason: "end_turn" as const }
    })
    .connect(arrivals.observe(acp.ndJsonStream(toClient.writable, toAgent.readable)))
  const client = acp.client({ name: "arrivals-test-client" }).connect(acp.ndJsonStream(toAgent.writable, toClient.readable))
  return { agent, client }
}

const refused = (promise: Promise<unknown>) => promise.then(() => "answered", () => "refused")

describe("Arrivals", () => {
  it("forgets the ids of prompts the SDK refuses before the handler (before initialize, bad params) once they are answered", async () => {
    const arrivals = Arrivals.make()
    const { agent, client } = connected(arrivals)
    const prompt = (params: unknown) => client.agent.request(acp.methods.agent.session.prompt, params as acp.PromptRequest)
    const early = await Promise.all(Array.from({ length: 20 }, () => refused(prompt({ sessionId: "s", prompt: [{ type: "text", text: "hi" }] }))))
    expect(early).toEqual(Array.from({ length: 20 }, () => "refused"))
    await client.agent.request(acp.methods.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} })
    const bad = await Promise.all(Array.from({ length: 20 }, () => refused(prompt({ sessionId: 7 }))))
    expect(bad).toEqual(Array.from({ length: 20 }, () => "refused"))
    expect((await prompt({ sessionId: "s", prompt: [{ type: "text", text: "hi" }] })).stopReason).toBe("end_turn")
    expect(arrivals.held()).toBe(0)
    client.close()
    agent.close()
  })

  it("keeps at most its cap of ids no response has forgotten, the newest", async () => {
    const arrivals = Arrivals.make()
    const many = Arrivals.maxHeld + 10
    const messages = Array.from({ length: many }, (_, i) => ({ jsonrpc: "2.0", id: `p${i}`, method: "session/prompt", params: {} }))
    const observed = arrivals.observe({ readable: ReadableStream.from(messages) as ReadableStream<acp.AnyMessage>, writable: new WritableStream() })
    for await (const _ of observed.readable as unknown as AsyncIterable<unknown>) void _
    expect(arrivals.held()).toBe(Arrivals.maxHeld)
    // The newest is still known by its arrival; the oldest, forgotten, counts as arriving now.
    expect(arrivals.requestAt(`p${many - 1}`)).toBe(many)
    expect(arrivals.requestAt("p0")).toBe(many)
    expect(arrivals.requestAt(`p${many - 2}`)).toBe(many - 1)
  })
})
