/**
 * `read_file` of an image: for a model that takes images, an image part — stored in the blob area,
 * named by `tool.completed.images`, and sent by each official SDK in the next request (Anthropic: an
 * `image` block inside the `tool_result`; OpenAI Chat Completions: a user message after the tool
 * messages, as a `tool` message carries text only); for one that does not, a line of text. Told by
 * the file's magic bytes, whatever its name.
 */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { join, resolve } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import * as FakeModelProvider from "../../src/layers/FakeModelProvider.js"
import { BlobStore } from "../../src/services/BlobStore.js"
import { collect } from "../helpers.js"
import { engine, png, setup, vendorLayers } from "./imageWorkspace.js"
import * as WireServer from "./WireServer.js"

// The recorded tool-calls stream reads src/index.ts: here it is a PNG (told by its bytes, not its name).
const { cwd, root, server } = setup("read-image")

const readImage = Effect.gen(function*() {
  const agent = yield* SessionEngine
  const { sessionId } = yield* agent.createSession({ cwd, client: "test" })
  return yield* collect(agent.runTurn({ sessionId, userMessage: "look at src/index.ts" }))
})

const completedRead = (events: ReadonlyArray<AgentEvent>) =>
  events.find((e) => e.type === "tool.completed" && e.payload.result.includes("src/index.ts"))!.payload as {
    result: string
    images?: ReadonlyArray<{ blob: string; mediaType: string; bytes: number }>
  }

const vendors = [
  {
    name: "anthropic" as const,
    layer: vendorLayers(server).anthropic,
    sentImages: (body: any) =>
      body.messages.flatMap((m: any) => Array.isArray(m.content) ? m.content : [])
        .filter((b: any) => b.type === "tool_result" && Array.isArray(b.content))
        .flatMap((b: any) => b.content.filter((c: any) => c.type === "image").map((c: any) => [c.source.media_type, c.source.data]))
  },
  {
    name: "openai" as const,
    layer: vendorLayers(server).openai,
    sentImages: (body: any) => {
      const roles = body.messages.map((m: any) => m.role)
      // The images follow the run of tool messages, as a user message.
      expect(roles.slice(-4)).toEqual(["assistant", "tool", "tool", "user"])
      return body.messages.at(-1).content.filter((p: any) => p.type === "image_url").map((p: any) => {
        const match = /^data:([^;]+);base64,(.*)$/.exec(p.image_url.url)!
        return [match[1], match[2]]
      })
    }
  }
]

describe("read_file of an image", () => {
  for (const vendor of vendors) {
    it.effect(`${vendor.name}: an image part, stored as a blob, named by tool.completed, sent by the SDK with the next request`, () =>
      Effect.gen(function*() {
        server().respond(WireServer.recording(vendor.name, "tool-calls"), WireServer.recording(vendor.name, "text"))
        const before = server().received.length
        const events = yield* readImage
        expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
        const completed = completedRead(events)
        expect(completed.result).toBe(`[src/index.ts: image/png image, ${png.byteLength} bytes]`)
        expect(completed.images).toEqual([{ blob: expect.stringMatching(/^[0-9a-f]{64}$/), mediaType: "image/png", bytes: png.byteLength }])
        expect(Buffer.from(yield* Effect.flatMap(BlobStore, (blobs) => blobs.get(completed.images![0]!.blob))).equals(png)).toBe(true)
        const second = server().received[before + 1]!.body
        expect(vendor.sentImages(second)).toEqual([["image/png", png.toString("base64")]])
      }).pipe(Effect.provide(engine(vendor.layer()))))
  }

  it.effect("a model that takes no images gets a line of text, and nothing is stored as a blob", () =>
    Effect.gen(function*() {
      const events = yield* readImage
      const completed = completedRead(events)
      expect(completed).toEqual({
        toolCallId: "call_1",
        result: `[src/index.ts: image/png image, ${png.byteLength} bytes; this model does not take images, so its content cannot be shown]`
      })
    }).pipe(Effect.provide(engine(FakeModelProvider.layer({ responses: [{ toolCalls: [{ tool: "read_file", args: { path: "src/index.ts" } }] }, { chunks: ["ok"] }] })))))

  // A repository's PNG of a few bytes that says it is 100,000 pixels wide: kept, it was sent again with
  // every later request of the session, which the provider refused (over 8000 pixels a side).
  it.effect("an image whose header says it is over 8000 pixels a side is left out of the result with a note; nothing is stored", () =>
    Effect.gen(function*() {
      const huge = Uint8Array.from(png)
      new DataView(huge.buffer).setUint32(16, 100_000)
      writeFileSync(join(cwd, "src/huge.png"), huge)
      const agent = yield* SessionEngine
      const { sessionId } = yield* agent.createSession({ cwd, client: "test" })
      const events = yield* collect(agent.runTurn({ sessionId, userMessage: "look" }))
      const completed = events.find((e) => e.type === "tool.completed")!.payload as { result: string; images?: ReadonlyArray<unknown> }
      expect(completed.images ?? []).toEqual([])
      expect(completed.result).toContain("[the tool's images were left out:")
      expect(completed.result).toContain("100000×32 pixels")
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
    }).pipe(Effect.provide(engine(FakeModelProvider.layer({ images: true, responses: [{ toolCalls: [{ tool: "read_file", args: { path: "src/huge.png" } }] }, { chunks: ["ok"] }] })))))

  // A repository of many images, each within an image's cap, read in one turn: together they made
  // gigabytes of pixels (a PNG's inflated here, every one decoded by the provider).
  it.effect("a turn's tool images past what they may decode to together are left out, the result saying so", () =>
    Effect.gen(function*() {
      // A GIF whose screen is 8000 × 8000 (one pixel drawn): 256 MB decoded, four of them the turn's cap.
      const screen = Uint8Array.from(readFileSync(resolve(import.meta.dirname, "../../fixtures/images/pixel.gif")))
      new DataView(screen.buffer).setUint16(6, 8000, true)
      new DataView(screen.buffer).setUint16(8, 8000, true)
      writeFileSync(join(cwd, "src/screen.gif"), screen)
      const agent = yield* SessionEngine
      const { sessionId } = yield* agent.createSession({ cwd, client: "test" })
      const events = yield* collect(agent.runTurn({ sessionId, userMessage: "look" }))
      const completed = events.filter((e) => e.type === "tool.completed").map((e) => e.payload as { result: string; images?: ReadonlyArray<unknown> })
      expect(completed.map((c) => c.images?.length ?? 0)).toEqual([1, 1, 1, 1, 0])
      expect(completed[4]!.result).toBe(
        `[src/screen.gif: image/gif image, ${screen.byteLength} bytes]\n[the tool's images were left out: Image refused [too_large]: the image decodes to 256000000 bytes, and the images this turn's tools returned already decode to 1024000000 of the 1024000000 bytes a turn's may]`
      )
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
    }).pipe(Effect.provide(engine(FakeModelProvider.layer({
      images: true,
      responses: [{ toolCalls: Array.from({ length: 5 }, () => ({ tool: "read_file", args: { path: "src/screen.gif" } })) }, { chunks: ["ok"] }]
    })))))

  // A WebP file of 30 bytes whose header names an extended (VP8X) chunk: its size is read past the
  // file's end. That threw a RangeError out of the image check, and the turn ended as a defect.
  it.effect("a WebP file cut short inside its header is still judged by its bytes: the turn goes on", () =>
    Effect.gen(function*() {
      const cut = new Uint8Array(30)
      cut.set(Buffer.from("RIFF"), 0)
      cut.set(Buffer.from("WEBPVP8X"), 8)
      writeFileSync(join(cwd, "src/cut.webp"), cut)
      const agent = yield* SessionEngine
      const { sessionId } = yield* agent.createSession({ cwd, client: "test" })
      const events = yield* collect(agent.runTurn({ sessionId, userMessage: "look" }))
      expect(events.some((e) => e.type === "tool.completed")).toBe(true)
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
    }).pipe(Effect.provide(engine(FakeModelProvider.layer({ images: true, responses: [{ toolCalls: [{ tool: "read_file", args: { path: "src/cut.webp" } }] }, { chunks: ["ok"] }] })))))

  // A repository's PNG cut short (a truncated download) or a JPEG of garbage after its header: its
  // header was all that was checked, so it was stored, and sent again with every later request of the
  // session, which the provider refused ("Could not process image"): the session was dead.
  it.effect("anthropic: a cut PNG read by read_file is left out with a note, and no later request carries it", () =>
    Effect.gen(function*() {
      const dir = mkdtempSync(join(root, "cut-"))
      mkdirSync(join(dir, "src"))
      writeFileSync(join(dir, "src/index.ts"), png.subarray(0, Math.floor(png.byteLength / 2)))
      server().respond(WireServer.recording("anthropic", "tool-calls"), WireServer.recording("anthropic", "text"), WireServer.recording("anthropic", "text"))
      const before = server().received.length
      const agent = yield* SessionEngine
      const { sessionId } = yield* agent.createSession({ cwd: dir, client: "test" })
      const events = yield* collect(agent.runTurn({ sessionId, userMessage: "look at src/index.ts" }))
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
      const completed = completedRead(events)
      expect(completed.images ?? []).toEqual([])
      expect(completed.result).toMatch(/\[the tool's images were left out: Image #1 refused \[unreadable\]: the PNG is cut short/)
      const next = yield* collect(agent.runTurn({ sessionId, userMessage: "and now?" }))
      expect(next.at(-1)!.payload).toMatchObject({ stopReason: "final" })
      const bodies = server().received.slice(before).map((r) => r.body)
      expect(bodies).toHaveLength(3)
      for (const body of bodies) expect(JSON.stringify(body)).not.toContain(`"type":"image"`)
    }).pipe(Effect.provide(engine(vendors[0]!.layer()))))

  it.effect("a message's JPEG with garbage after its header is refused, nothing stored or sent", () =>
    Effect.gen(function*() {
      const jpeg = readFileSync(resolve(import.meta.dirname, "../../fixtures/images/pixel.jpg"))
      const garbage = Buffer.concat([jpeg.subarray(0, 20), Buffer.from(Array.from({ length: 200 }, (_, i) => (i * 37 + 11) & 0xff))])
      const agent = yield* SessionEngine
      const { sessionId } = yield* agent.createSession({ cwd, client: "test" })
      const failure = yield* Effect.flip(collect(agent.runTurn({ sessionId, userMessage: "look", images: [{ data: garbage }] })))
      expect(failure).toMatchObject({ _tag: "InvalidInput", field: "images" })
      expect(failure.message).toContain("[unreadable]")
      expect((yield* collect(agent.replaySession({ sessionId }))).map((e) => e.type)).toEqual(["session.created"])
    }).pipe(Effect.provide(engine(FakeModelProvider.layer({ images: true, responses: [{ chunks: ["ok"] }] })))))

  it.effect("the scripted model takes them when its script says so", () =>
    Effect.gen(function*() {
      const events = yield* readImage
      expect(completedRead(events).images).toHaveLength(1)
    }).pipe(Effect.provide(engine(FakeModelProvider.layer({ images: true, responses: [{ toolCalls: [{ tool: "read_file", args: { path: "src/index.ts" } }] }, { chunks: ["ok"] }] })))))
})
