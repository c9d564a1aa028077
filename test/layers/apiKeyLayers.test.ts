/**
 * A key no HTTP header can carry (the docs' placeholder `…`, a control character copied with the
 * key), given to the library's provider layers: it failed only at the first request, as reason
 * `unknown` ("Cannot convert argument to a ByteString"). Built from configuration, the layer now
 * refuses it with a `ConfigError` naming the variable; built from options, every request fails
 * `authentication` saying why. Neither ever prints the key.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Config from "effect/Config"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import * as AnthropicModelProvider from "../../src/layers/AnthropicModelProvider.js"
import * as OpenAiModelProvider from "../../src/layers/OpenAiModelProvider.js"
import { ModelProvider, type ModelRequest } from "../../src/services/ModelProvider.js"

const hello: ModelRequest = { system: "Be brief.", messages: [{ role: "user", content: "hello" }], tools: [] }

// Nothing listens on port 9 of the loopback (discard): no request may get that far anyway.
const nowhere = "http://127.0.0.1:9"

const vendors = [
  { name: "ANTHROPIC", provider: AnthropicModelProvider },
  { name: "OPENAI", provider: OpenAiModelProvider }
] as const

/** Builds `layer` with `env` as its configuration: what it failed with, as text, or `undefined` when it was built. */
const refusal = (layer: Layer.Layer<ModelProvider, unknown>, env: Record<string, string>) =>
  Effect.scoped(Layer.build(layer)).pipe(
    Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))),
    Effect.match({ onFailure: String, onSuccess: () => undefined })
  )

describe.each(vendors)("$name provider with a key no header carries", ({ name, provider }) => {
  it.effect.each([
    ["…", "U+2026 at character 1"],
    ["sk-bad\u0007key", "U+0007 at character 7"]
  ])("layerConfig() refuses %j when the layer is built, naming the variable, the code point and the place", ([key, where]) =>
    Effect.gen(function*() {
      const message = yield* refusal(provider.layerConfig(), { [`${name}_API_KEY`]: key, [`${name}_BASE_URL`]: nowhere })
      expect(message).toContain(`${name}_API_KEY`)
      expect(message).toContain(`holds ${where}, which no API key has (a key is printable ASCII)`)
      expect(message).not.toContain(key)
    }))

  it.effect("layerConfig() with the caller's own Config checks its key too", () =>
    Effect.gen(function*() {
      const message = yield* refusal(
        provider.layerConfig({ apiKey: Config.redacted("MY_KEY"), baseURL: Config.succeed(nowhere) }),
        { MY_KEY: "sk-\r\nrest" }
      )
      expect(message).toContain("apiKey")
      expect(message).toContain("holds U+000D at character 4")
    }))

  it.effect("a key with only whitespace around it is fine (fetch trims a header's value)", () =>
    Effect.gen(function*() {
      expect(yield* refusal(provider.layerConfig(), { [`${name}_API_KEY`]: " sk-good\n", [`${name}_BASE_URL`]: nowhere })).toBeUndefined()
    }))

  it.effect("layer(options) fails each request as authentication, saying why, never the key", () =>
    Effect.gen(function*() {
      const model = yield* ModelProvider
      const failure = yield* Effect.flip(Stream.runDrain(model.stream(hello)))
      expect(failure.reason).toBe("authentication")
      expect(failure.detail).toBe("the API key holds U+2026 at character 4, which no API key has (a key is printable ASCII): set it to the key itself")
    }).pipe(Effect.provide(provider.layer({ apiKey: Redacted.make("sk-…"), baseURL: nowhere }))))
})

// leftovers37: a base URL with credentials in it failed inside fetch ("could not reach …").
describe.each(vendors)("$name provider with a base URL no request can go to", ({ name, provider }) => {
  it.effect.each([
    ["http://user:s3cret@127.0.0.1:9", "holds a user name or password"],
    ["ftp://127.0.0.1:9", "is not an http: or https: URL"],
    ["not a url s3cret", "is not a URL"]
  ])("layerConfig() refuses %j when the layer is built, naming the variable, never the secret", ([url, why]) =>
    Effect.gen(function*() {
      const refused = yield* refusal(provider.layerConfig(), { [`${name}_API_KEY`]: "sk-test", [`${name}_BASE_URL`]: url })
      expect(refused).toContain(`${name}_BASE_URL`)
      expect(refused).toContain(why)
      expect(refused).not.toContain("s3cret")
      // The caller's own Config is checked alike.
      const own = yield* refusal(provider.layerConfig({ apiKey: Config.redacted("MY_KEY"), baseURL: Config.succeed(url) }), { MY_KEY: "sk-test" })
      expect(own).toContain("baseURL")
      expect(own).toContain(why)
      expect(own).not.toContain("s3cret")
    }))
})
