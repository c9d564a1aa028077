/**
 * ACP `image` content blocks in `session/prompt`, through the SDK's own client against
 * `effect-agent acp` as a subprocess: the prompt capability is advertised, an image goes with the
 * message (named by `user.message`, its bytes in the data dir's blob area and in the model's request),
 * and a refused image is an invalid-params error that stores nothing. An image a tool returns
 * (`read_file` of a PNG) reaches the client as the call's content, and `session/load` in another
 * process shows both again, their bytes read back from the blob area.
 */
import * as acp from "@agentclientprotocol/sdk"
import { mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join, resolve } from "node:path"
import { describe, expect, it } from "vitest"
import { acpScratch, chunks, logOf } from "./client.js"

const fixtures = resolve(import.meta.dirname, "../../fixtures/images")
const png = readFileSync(join(fixtures, "photo.png"))
const svg = readFileSync(join(fixtures, "evil.svg"))
const scratch = acpScratch("acp-images")
const { dir } = scratch

describe("effect-agent acp: image content blocks", () => {
  it("advertises images; an image block goes with the message to the model; a refused one stores nothing", async () => {
    const cwd = join(dir, "work")
    mkdirSync(cwd, { recursive: true })
    const requests = join(dir, "requests.jsonl")
    const script = join(dir, "script.json")
    writeFileSync(script, JSON.stringify({ images: true, responses: [
      { chunks: ["A gradient."] },
      { chunks: ["Reading it."], toolCalls: [{ tool: "read_file", args: { path: "photo.png" } }] },
      { chunks: ["The same gradient."] }
    ] }))
    writeFileSync(join(cwd, "photo.png"), png)
    const storage = ["--data-dir", join(dir, "data")]
    const agent = scratch.launch(["--script", script, "--record-requests", requests, ...storage], { cwd })
    const init = await agent.initialize()
    expect(init.agentCapabilities?.promptCapabilities).toMatchObject({ image: true })
    const { sessionId } = await agent.agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] })

    const refused = await agent.agent.request(acp.methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: "what is this?" }, { type: "image", mimeType: "image/png", data: svg.toString("base64") }]
    }).then(() => undefined, (error: unknown) => error as acp.RequestError)
    expect(refused?.code).toBe(-32602)
    expect(refused?.message).toMatch(/unsupported_type/)

    const answer = await agent.agent.request(acp.methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: "what is this?" }, { type: "image", mimeType: "image/png", data: png.toString("base64") }]
    })
    expect(answer.stopReason).toBe("end_turn")
    expect(chunks(agent.updates)).toEqual(["A gradient."])

    // A tool's image goes to the client with the call's result.
    const read = await agent.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "read photo.png" }] })
    expect(read.stopReason).toBe("end_turn")
    const imagesOf = (updates: ReadonlyArray<acp.SessionNotification>) =>
      updates.flatMap(({ update }) =>
        update.sessionUpdate === "tool_call_update"
          ? (update.content ?? []).flatMap((c) => c.type === "content" && c.content.type === "image" ? [{ from: "tool", content: c.content }] : [])
          : update.sessionUpdate === "user_message_chunk" && update.content.type === "image" ? [{ from: "user", content: update.content }] : [])
    const asImage = { type: "image", mimeType: "image/png", data: png.toString("base64") }
    expect(imagesOf(agent.updates)).toEqual([{ from: "tool", content: asImage }])
    agent.child.stdin.end()
    await agent.exited

    const log = await logOf(sessionId, storage)
    // The refused prompt left nothing: two turns (the image's and the read's); the first message names the image.
    expect(log.filter((e) => e.type === "turn.started")).toHaveLength(2)
    const message = log.find((e) => e.type === "user.message")!.payload as { content: string; images: ReadonlyArray<{ blob: string; mediaType: string; bytes: number }> }
    expect(message.content).toBe("what is this?")
    expect(message.images).toEqual([{ blob: expect.stringMatching(/^[0-9a-f]{64}$/), mediaType: "image/png", bytes: png.byteLength }])
    expect(readFileSync(join(dir, "data", "blobs", message.images[0]!.blob.slice(0, 2), message.images[0]!.blob))).toEqual(png)
    const [request] = readFileSync(requests, "utf8").trim().split("\n").map((line) => JSON.parse(line))
    expect(request.messages[0]).toEqual({ role: "user", content: "what is this?", images: message.images })
    expect(request.images).toEqual({ [message.images[0]!.blob]: png.toString("base64") })

    // Loaded in another process: the user's image and the tool's, in log order, read back from the blob area.
    const second = scratch.launch(["--script", script, ...storage], { cwd })
    await second.initialize()
    await second.agent.request(acp.methods.agent.session.load, { sessionId, cwd, mcpServers: [] })
    expect(imagesOf(second.updates)).toEqual([{ from: "user", content: asImage }, { from: "tool", content: asImage }])
    second.child.stdin.end()
    await second.exited
  })
})
