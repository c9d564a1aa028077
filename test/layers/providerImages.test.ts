/**
 * Images sent with a user message reach the model: through the engine (checked, put in the memory
 * store's blob area, referenced by `user.message`, read back for each request), each official SDK
 * against a local server replaying a recorded stream. The request body the SDK sent is what is
 * asserted: Anthropic `image` blocks with a base64 source, OpenAI Chat Completions `image_url` data URLs.
 */
import { readFileSync } from "node:fs"
import { resolve } from "node:path"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as SessionEngineModule from "../../src/engine/SessionEngine.js"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import * as AnthropicModelProvider from "../../src/layers/AnthropicModelProvider.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import * as OpenAiModelProvider from "../../src/layers/OpenAiModelProvider.js"
import * as IdGenerator from "../../src/services/IdGenerator.js"
import type { ModelProvider } from "../../src/services/ModelProvider.js"
import { collect } from "../helpers.js"
import * as WireServer from "./WireServer.js"

const image = (name: string) => new Uint8Array(readFileSync(resolve(import.meta.dirname, "../../fixtures/images", name)))
const png = image("photo.png")
const jpeg = image("pixel.jpg")
const base64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64")

interface Vendor {
  readonly name: "anthropic" | "openai"
  readonly layer: (url: string) => Layer.Layer<ModelProvider>
  /** The images of the request's user message number `index`, as (media type, base64) pairs, and its text. */
  readonly userMessage: (body: any, index: number) => { readonly images: ReadonlyArray<[string, string]>; readonly text: ReadonlyArray<string> }
}

const vendors: ReadonlyArray<Vendor> = [
  {
    name: "anthropic",
    layer: (url) => AnthropicModelProvider.layer({ apiKey: Redacted.make("sk-ant-secret-key"), baseURL: url }),
    userMessage: (body, index) => {
      const message = body.messages.filter((m: any) => m.role === "user")[index]
      return {
        images: message.content.filter((b: any) => b.type === "image").map((b: any) => {
          expect(b.source.type).toBe("base64")
          return [b.source.media_type, b.source.data]
        }),
        text: message.content.filter((b: any) => b.type === "text").map((b: any) => b.text)
      }
    }
  },
  {
    name: "openai",
    layer: (url) => OpenAiModelProvider.layer({ apiKey: Redacted.make("sk-openai-secret-key"), baseURL: `${url}/v1` }),
    userMessage: (body, index) => {
      const message = body.messages.filter((m: any) => m.role === "user")[index]
      if (typeof message.content === "string") return { images: [], text: [message.content] }
      return {
        images: message.content.filter((p: any) => p.type === "image_url").map((p: any) => {
          const match = /^data:([^;]+);base64,(.*)$/.exec(p.image_url.url)!
          return [match[1], match[2]]
        }),
        text: message.content.filter((p: any) => p.type === "text").map((p: any) => p.text)
      }
    }
  }
]

for (const vendor of vendors) {
  describe(`${vendor.name}: images of a user message`, () => {
    let server: WireServer.WireServer
    beforeAll(async () => {
      server = await WireServer.start()
    })
    afterAll(() => server.close())
    beforeEach(() => {
      server.received.length = 0
    })
    const engine = Layer.suspend(() =>
      SessionEngineModule.layer().pipe(
        Layer.provide(MemoryEventStore.layer),
        Layer.provide(IdGenerator.layerSequential),
        Layer.provide(vendor.layer(server.url))
      )
    )

    it.effect("the SDK sends each image's bytes with the message, and again with the history in the next turn", () =>
      Effect.gen(function*() {
        server.respond(WireServer.recording(vendor.name, "text"), WireServer.recording(vendor.name, "text"))
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
        const events = yield* collect(engine.runTurn({ sessionId, userMessage: "What is in these?", images: [{ data: png }, { data: jpeg, mediaType: "image/jpeg" }] }))
        expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
        const message = events.find((e) => e.type === "user.message")!
        expect(message.payload).toEqual({
          content: "What is in these?",
          images: [
            { blob: Buffer.from(yield* Effect.promise(() => crypto.subtle.digest("SHA-256", png))).toString("hex"), mediaType: "image/png", bytes: png.byteLength },
            { blob: expect.stringMatching(/^[0-9a-f]{64}$/), mediaType: "image/jpeg", bytes: jpeg.byteLength }
          ]
        })
        // The log names the images; it never holds their bytes.
        expect(JSON.stringify(events)).not.toContain(base64(png).slice(0, 40))
        const first = vendor.userMessage(server.received[0]!.body, 0)
        expect(first.images).toEqual([["image/png", base64(png)], ["image/jpeg", base64(jpeg)]])
        expect(first.text).toEqual(["What is in these?"])

        yield* collect(engine.runTurn({ sessionId, userMessage: "And now?" }))
        expect(vendor.userMessage(server.received[1]!.body, 0).images).toEqual([["image/png", base64(png)], ["image/jpeg", base64(jpeg)]])
        expect(vendor.userMessage(server.received[1]!.body, 1)).toEqual({ images: [], text: ["And now?"] })
      }).pipe(Effect.provide(engine)))

    it.effect("a message of images alone sends no empty text", () =>
      Effect.gen(function*() {
        server.respond(WireServer.recording(vendor.name, "text"))
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
        yield* collect(engine.runTurn({ sessionId, userMessage: "", images: [{ data: png }] }))
        expect(vendor.userMessage(server.received[0]!.body, 0)).toEqual({ images: [["image/png", base64(png)]], text: [] })
      }).pipe(Effect.provide(engine)))
  })
}
