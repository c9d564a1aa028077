/**
 * A base URL pointing at nothing (a local Ollama not started, a typo in `--base-url`) failed with
 * the SDK's "Connection error." and no word of where. The failure's detail names the address — never
 * its userinfo, query or fragment, where a secret may ride — and the system's code.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import { createServer } from "node:net"
import * as AnthropicModelProvider from "../../src/layers/AnthropicModelProvider.js"
import * as OpenAiModelProvider from "../../src/layers/OpenAiModelProvider.js"
import { ModelProvider, type ModelRequest } from "../../src/services/ModelProvider.js"

const hello: ModelRequest = { system: "Be brief.", messages: [{ role: "user", content: "hello" }], tools: [] }

/** A loopback port nothing listens on: one the system gave a server that is closed again. */
const closedPort = () =>
  new Promise<number>((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })

const failureOf = (layer: ReturnType<typeof AnthropicModelProvider.layer>) =>
  Effect.flatMap(ModelProvider, (model) => Effect.flip(Stream.runDrain(model.stream(hello)))).pipe(Effect.provide(layer))

describe.each([
  { name: "anthropic", layer: (baseURL: string) => AnthropicModelProvider.layer({ apiKey: Redacted.make("sk-ant-test"), baseURL }), path: "" },
  { name: "openai", layer: (baseURL: string) => OpenAiModelProvider.layer({ apiKey: Redacted.make("sk-test"), baseURL }), path: "/v1" }
])("$name provider with a base URL nothing answers at", ({ layer, path }) => {
  it.effect("fails network, naming the address and the system's code", () =>
    Effect.gen(function*() {
      const port = yield* Effect.promise(closedPort)
      const failure = yield* failureOf(layer(`http://127.0.0.1:${port}${path}`))
      expect(failure.reason).toBe("network")
      expect(failure.detail).toBe(`could not reach http://127.0.0.1:${port}${path} (ECONNREFUSED): Connection error.`)
    }))

  it.effect("names no userinfo, query or fragment of the address", () =>
    Effect.gen(function*() {
      const port = yield* Effect.promise(closedPort)
      const failure = yield* failureOf(layer(`http://user:s3cret@127.0.0.1:${port}${path}?key=s3cret#s3cret`))
      expect(failure.reason).toBe("network")
      expect(failure.detail).toContain(`could not reach http://127.0.0.1:${port}${path}`)
      expect(failure.detail).not.toContain("s3cret")
      expect(failure.detail).not.toContain("user")
    }))
})
