/**
 * review51: what a model endpoint answers is bounded as it arrives, through each official SDK
 * against a local server that writes as fast as the client reads (bounded by bytes, not time). On
 * main both SDKs read a 500's body whole and one event without end whole (3 GiB in 20 s, then
 * `Invalid string length`, which read "nested too deep" and was retried). Now an error's body is
 * cut at 64 KiB (the vendor's message still read), and one event past 16 MiB is a failure of its
 * own, not retried. Failed before (the server wrote all it had, the turn ended otherwise).
 */
import * as AnthropicClient from "@effect/ai-anthropic/AnthropicClient"
import * as AnthropicLanguageModel from "@effect/ai-anthropic/AnthropicLanguageModel"
import * as OpenAiClient from "@effect/ai-openai/OpenAiClient"
import * as OpenAiLanguageModel from "@effect/ai-openai/OpenAiLanguageModel"
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll } from "vitest"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import * as AnthropicModelProvider from "../../src/layers/AnthropicModelProvider.js"
import * as EffectAiModelProvider from "../../src/layers/EffectAiModelProvider.js"
import * as OpenAiModelProvider from "../../src/layers/OpenAiModelProvider.js"
import { ModelProvider } from "../../src/services/ModelProvider.js"
import * as ProviderTurns from "./providerTurns.js"
import * as WireStreams from "./wireStreams.js"

/** What the server writes for one response at most: far past both bounds, far short of what would hurt. */
const bodyBytes = 64 * 1024 * 1024
const block = Buffer.alloc(1024 * 1024, "x")

type Mode = "event" | "error"
const openings: Record<string, Record<Mode, string>> = {
  anthropic: {
    event: "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"",
    error: "{\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\""
  },
  openai: {
    event: "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"",
    error: "{\"error\":{\"type\":\"server_error\",\"message\":\""
  },
  // The Responses API, which `@effect/ai-openai` speaks.
  "openai-responses": {
    event: "data: {\"type\":\"response.output_text.delta\",\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":\"",
    error: "{\"error\":{\"type\":\"server_error\",\"message\":\""
  }
}

/** Each response: the bytes written before the connection closed, and whether the client closed it first. */
const responses: Array<{ written: number; cut: boolean }> = []
let mode: { vendor: string; kind: Mode } = { vendor: "anthropic", kind: "event" }
let server: Server
let url = ""
beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume()
    const record = { written: 0, cut: false }
    responses.push(record)
    res.writeHead(mode.kind === "event" ? 200 : 500, { "content-type": mode.kind === "event" ? "text/event-stream" : "application/json" })
    res.write(openings[mode.vendor]![mode.kind])
    // As fast as the client reads: a write only when the one before was taken.
    const pump = () => {
      while (!res.destroyed && record.written < bodyBytes) {
        record.written += block.length
        if (!res.write(block)) return void res.once("drain", pump)
      }
      if (!res.destroyed) res.end()
    }
    res.on("close", () => {
      record.cut = !res.writableFinished
    })
    pump()
  })
  await new Promise<void>((listening) => server.listen(0, "127.0.0.1", listening))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(() => {
  server.closeAllConnections()
  return new Promise<void>((closed) => server.close(() => closed()))
})

const layers = {
  anthropic: () => AnthropicModelProvider.layer({ apiKey: Redacted.make("k"), baseURL: url }),
  openai: () => OpenAiModelProvider.layer({ apiKey: Redacted.make("k"), baseURL: `${url}/v1` })
}

/** The `@effect/ai` bridge on each vendor's `LanguageModel`, its client over fetch with `layerBoundedBodies` between. */
const bridged = {
  anthropic: () =>
    EffectAiModelProvider.layer({ model: "claude-sonnet-4-5" }).pipe(
      Layer.provide(AnthropicLanguageModel.layer({ model: "claude-sonnet-4-5" })),
      Layer.provide(AnthropicClient.layer({ apiKey: Redacted.make("k"), apiUrl: url })),
      Layer.provide(EffectAiModelProvider.layerBoundedBodies),
      Layer.provide(FetchHttpClient.layer)
    ),
  "openai-responses": () =>
    EffectAiModelProvider.layer({ model: "gpt-4.1-mini" }).pipe(
      Layer.provide(OpenAiLanguageModel.layer({ model: "gpt-4.1-mini" })),
      Layer.provide(OpenAiClient.layer({ apiKey: Redacted.make("k"), apiUrl: `${url}/v1` })),
      Layer.provide(EffectAiModelProvider.layerBoundedBodies),
      Layer.provide(FetchHttpClient.layer)
    )
}

/** Waits until every response so far has closed (the server saw each connection end). */
const allClosed = Effect.promise(async () => {
  while (responses.some((r) => !r.cut && r.written < bodyBytes)) await new Promise((done) => setImmediate(done))
})

const codes = (events: ReadonlyArray<AgentEvent>) =>
  events.flatMap((e) => (e.type === "model.retry" || e.type === "turn.completed" ? [(e.payload as { errorCode?: string }).errorCode] : []))

/**
 * Each vendor through its SDK, and (reach44) through the `@effect/ai` bridge, whose providers read
 * through the `HttpClient` they are built on: with `layerBoundedBodies` between, the same bounds and
 * the same failures. The bridge's failed before it: the endless event ended `internal_error` (V8's
 * longest string), and each 500's body was read to the server's end on all five attempts.
 */
const bounded: ReadonlyArray<{ readonly name: string; readonly vendor: keyof typeof openings; readonly layer: () => Layer.Layer<ModelProvider> }> = [
  { name: "anthropic", vendor: "anthropic", layer: layers.anthropic },
  { name: "openai", vendor: "openai", layer: layers.openai },
  { name: "the @effect/ai bridge on anthropic", vendor: "anthropic", layer: bridged.anthropic },
  { name: "the @effect/ai bridge on openai-responses", vendor: "openai-responses", layer: bridged["openai-responses"] }
]

describe("a model endpoint's body without end", () => {
  for (const { layer, name, vendor } of bounded) {
    it.effect(`${name}: one event that never ends fails once past 16 MiB, unknown, not retried; the rest is not read`, () =>
      Effect.gen(function*() {
        mode = { vendor, kind: "event" }
        responses.length = 0
        const events = yield* ProviderTurns.turnWithRetries("hi")
        expect(codes(events)).toEqual(["unknown"])
        expect(JSON.stringify(events)).not.toMatch(/RangeError|nested too deep|Invalid string length/)
        yield* allClosed
        expect(responses).toHaveLength(1)
        // The client let go: the server wrote the bound and what the sockets' buffers took, not all it had.
        expect(responses[0]!.cut).toBe(true)
        expect(responses[0]!.written).toBeLessThan(bodyBytes / 2)
      }).pipe(Effect.provide(WireStreams.engine(layer))))

    it.effect(`${name}: a 500 whose body never ends is read to 64 KiB: server, retried, each body let go`, () =>
      Effect.gen(function*() {
        mode = { vendor, kind: "error" }
        responses.length = 0
        const events = yield* ProviderTurns.turnWithRetries("hi")
        expect(codes(events)).toEqual(["server", "server", "server", "server", "server"])
        yield* allClosed
        expect(responses).toHaveLength(5)
        for (const response of responses) {
          expect(response.cut).toBe(true)
          expect(response.written).toBeLessThan(bodyBytes / 2)
        }
      }).pipe(Effect.provide(WireStreams.engine(layer))))
  }
})

describe("the vendor's message of a cut error body", () => {
  for (const vendor of ["anthropic", "openai"] as const) {
    it.effect(`${vendor}: the failure's detail holds the body's start, and no more than 64 KiB of it`, () =>
      Effect.gen(function*() {
        mode = { vendor, kind: "error" }
        responses.length = 0
        const provider = yield* ModelProvider
        const failure = yield* Effect.flip(Stream.runDrain(provider.stream({ system: "", messages: [{ role: "user", content: "hi" } as never], tools: [] })))
        expect(failure.reason).toBe("server")
        expect(failure.status).toBe(500)
        expect(failure.detail).toContain(vendor === "anthropic" ? "api_error" : "xxxx")
        expect(failure.detail.length).toBeLessThan(64 * 1024 + 200)
      }).pipe(Effect.provide(layers[vendor]())))
  }
})

