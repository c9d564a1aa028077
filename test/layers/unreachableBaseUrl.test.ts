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

  it.effect("names no query or fragment of the address", () =>
    Effect.gen(function*() {
      const port = yield* Effect.promise(closedPort)
      const failure = yield* failureOf(layer(`http://127.0.0.1:${port}${path}?key=s3cret#s3cret`))
      expect(failure.reason).toBe("network")
      expect(failure.detail).toContain(`could not reach http://127.0.0.1:${port}${path}`)
      expect(failure.detail).not.toContain("s3cret")
    }))

  // leftovers40: a gateway's key in the path (`/k/<key>/…`) was named whole.
  it.effect("names no token-like segment of the address's path", () =>
    Effect.gen(function*() {
      const port = yield* Effect.promise(closedPort)
      const failure = yield* failureOf(layer(`http://127.0.0.1:${port}/k/sk-live-abc123def456${path}`))
      expect(failure.detail).toContain(`could not reach http://127.0.0.1:${port}/k/[redacted]${path} (ECONNREFUSED)`)
      expect(failure.detail).not.toContain("abc123def456")
    }))

  // leftovers37: fetch refuses a URL with credentials in it, with no system code: it read "could
  // not reach …" (network, retried) though nothing was tried.
  it.scoped("with a user name or password in it (user:password@): invalid_request before any request, saying so, the userinfo never named", () =>
    Effect.gen(function*() {
      const server = yield* Effect.acquireRelease(Effect.promise(listening), ({ close }) => Effect.promise(close))
      for (const userinfo of ["user:s3cret@", "s3cret@", ":s3cret@"]) {
        const failure = yield* failureOf(layer(`http://${userinfo}127.0.0.1:${server.port}${path}`))
        expect(failure.reason).toBe("invalid_request")
        expect(failure.detail).toBe(`the base URL http://127.0.0.1:${server.port}${path} holds a user name or password (user:password@), which no request carries: give the key as the API key, or a gateway's address without it`)
        expect(failure.detail).not.toContain("s3cret")
      }
      expect(server.connections()).toBe(0)
    }))
})

/** A loopback server that counts the connections made to it. */
const listening = () =>
  new Promise<{ readonly port: number; readonly connections: () => number; readonly close: () => Promise<void> }>((resolve, reject) => {
    let connections = 0
    const server = createServer((socket) => {
      connections++
      socket.destroy()
    })
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () =>
      resolve({
        port: (server.address() as { port: number }).port,
        connections: () => connections,
        close: () => new Promise((done) => server.close(() => done()))
      }))
  })
