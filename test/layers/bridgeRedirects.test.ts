/**
 * The `@effect/ai` bridge's client with `layerBoundedBodies` between it and `fetch`: a redirect from
 * the base URL is followed only within its origin, as the vendor SDKs' `BoundedFetch` follows one.
 * `fetch` alone followed a 307/308 to any host with the request's body — the whole prompt.
 */
import * as AnthropicClient from "@effect/ai-anthropic/AnthropicClient"
import * as AnthropicLanguageModel from "@effect/ai-anthropic/AnthropicLanguageModel"
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import * as EffectAiModelProvider from "../../src/layers/EffectAiModelProvider.js"
import { ModelProvider } from "../../src/services/ModelProvider.js"
import * as WireServer from "./WireServer.js"
import * as WireStreams from "./wireStreams.js"

const server = WireStreams.serverForTests()
const { a } = WireStreams
const request = { system: "", messages: [{ role: "user" as const, content: "the secret plan" }], tools: [] }

const bridged = () =>
  EffectAiModelProvider.layer({ model: "claude-sonnet-4-5" }).pipe(
    Layer.provide(AnthropicLanguageModel.model("claude-sonnet-4-5")),
    Layer.provide(AnthropicClient.layer({ apiKey: Redacted.make("k"), apiUrl: server.url })),
    Layer.provide(EffectAiModelProvider.layerBoundedBodies),
    Layer.provide(FetchHttpClient.layer)
  )

const outcome = Effect.suspend(() => Effect.flatMap(ModelProvider, (p) => Effect.either(Stream.runCollect(p.stream(request)))).pipe(
  Effect.map(Either.map(Chunk.toReadonlyArray)),
  Effect.provide(bridged())
))

describe("the @effect/ai bridge over layerBoundedBodies: redirects", () => {
  let other: WireServer.WireServer
  beforeAll(async () => {
    other = await WireServer.start()
  })
  afterAll(() => other.close())

  for (const status of [307, 308]) {
    it.effect(`a ${status} to another origin is refused; the prompt goes nowhere else`, () =>
      Effect.gen(function*() {
        other.reset()
        server.respond({ status, headers: { location: `${other.url}/v1/messages` }, body: "" })
        other.respond(a.answer())
        const result = yield* outcome
        expect(other.received).toEqual([])
        const refused = Either.getLeft(result)
        expect(refused._tag).toBe("Some")
        if (refused._tag === "Some") {
          expect(refused.value.reason).toBe("invalid_request")
          expect(refused.value.detail).toContain(`redirected the request to another origin (${other.url}/v1/messages)`)
        }
      }))
  }

  it.effect("a 307 within the same origin is followed, with the body", () =>
    Effect.gen(function*() {
      server.respond({ status: 307, headers: { location: "/moved/v1/messages" }, body: "" }, a.answer())
      const chunks = yield* Effect.map(outcome, Either.getOrThrow)
      expect(chunks.length).toBeGreaterThan(0)
      expect(server.received.map((r) => r.path)).toEqual(["/v1/messages", "/moved/v1/messages"])
      expect(JSON.stringify(server.received[1]!.body)).toContain("the secret plan")
    }))

  it.effect("a 303 within the same origin is followed as a GET without the body", () =>
    Effect.gen(function*() {
      server.respond({ status: 303, headers: { location: "/elsewhere" }, body: "" }, a.answer())
      yield* outcome
      expect(server.received.map((r) => r.path)).toEqual(["/v1/messages", "/elsewhere"])
      expect(server.received[1]!.method).toBe("GET")
      expect(server.received[1]!.body).toBeUndefined()
    }))
})
