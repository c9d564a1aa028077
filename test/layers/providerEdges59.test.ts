/**
 * What review59d found in the vendor adapters, each against the official SDK on a local wire server:
 * the key an endpoint echoes in its error body kept out of a failure's detail (which is logged), a
 * compatible server's parallel calls at one index (or none) kept apart, an idle timeout past
 * `setTimeout`'s longest wait, the SDKs' own logging kept off stdout, a base URL from the
 * environment checked, `retry-after-ms` read only when it is a number, and a redirect to another
 * origin refused.
 */
import * as AnthropicClient from "@effect/ai-anthropic/AnthropicClient"
import * as AnthropicLanguageModel from "@effect/ai-anthropic/AnthropicLanguageModel"
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import { afterAll, beforeAll, describe, expect, it, vi } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import { ProviderFailure } from "../../src/domain/Errors.js"
import * as AnthropicModelProvider from "../../src/layers/AnthropicModelProvider.js"
import * as EffectAiModelProvider from "../../src/layers/EffectAiModelProvider.js"
import * as OpenAiModelProvider from "../../src/layers/OpenAiModelProvider.js"
import * as Support from "../../src/layers/providers/Support.js"
import { ModelProvider } from "../../src/services/ModelProvider.js"
import * as WireServer from "./WireServer.js"
import * as WireStreams from "./wireStreams.js"

const server = WireStreams.serverForTests()
const { a, o, sse } = WireStreams

const key = "sk-ant-api03-ECHOEDSECRET0123456789"
const request = { system: "", messages: [{ role: "user" as const, content: "hi" }], tools: [{ name: "read_file", description: "d", inputSchema: { type: "object" } }] }

const vendors = {
  anthropic: (baseURL?: string) => AnthropicModelProvider.make({ apiKey: Redacted.make(key), baseURL: baseURL ?? server.url }),
  openai: (baseURL?: string) => OpenAiModelProvider.make({ apiKey: Redacted.make(key), baseURL: baseURL ?? `${server.url}/v1` })
}

/** What one request through `provider` streamed, or how it failed. */
const outcome = (provider: Effect.Effect<ModelProvider.Service>) =>
  Effect.flatMap(provider, (p) => Effect.either(Stream.runCollect(p.stream(request)))).pipe(
    Effect.map(Either.map(Chunk.toReadonlyArray))
  )

const failure = (provider: Effect.Effect<ModelProvider.Service>) =>
  Effect.flatMap(outcome(provider), Either.match({ onLeft: Effect.succeed, onRight: (chunks) => Effect.dieMessage(`no failure: ${JSON.stringify(chunks)}`) }))

const json = (status: number, body: unknown, headers: Record<string, string> = {}) => ({
  status,
  headers: { "content-type": "application/json", ...headers },
  body: JSON.stringify(body)
})

describe("a failure's detail (logged) never holds the key an endpoint echoed", () => {
  for (const vendor of ["anthropic", "openai"] as const) {
    it.effect(`${vendor}: a 401 echoing the key, a 400 with control characters, a stream error echoing it`, () =>
      Effect.gen(function*() {
        server.respond(json(401, { type: "error", error: { type: "authentication_error", message: `invalid x-api-key ${key}` } }))
        const denied = yield* failure(vendors[vendor]())
        expect(denied.reason).toBe("authentication")
        expect(denied.detail).not.toContain(key)
        expect(denied.detail).toContain("invalid x-api-key [redacted]")

        server.respond(json(400, { type: "error", error: { type: "invalid_request_error", message: `boom\u001b[2J\nat /srv/app/handler.js:12:3 ${"x".repeat(10_000)}` } }))
        const refused = yield* failure(vendors[vendor]())
        expect(refused.reason).toBe("invalid_request")
        expect(refused.detail).not.toMatch(/[\u0000-\u001f]/)
        expect(refused.detail).toContain("/srv/app/handler.js:12:3")
        expect(refused.detail.length).toBeLessThan(Support.maxDetailChars + 100)

        server.respond(vendor === "anthropic"
          ? sse([a.start, { type: "error", error: { type: "api_error", message: `failed for ${key}` } }])
          : { status: 200, headers: { "content-type": "text/event-stream" }, body: `data: ${JSON.stringify({ error: { type: "server_error", message: `failed for ${key}` } })}\n\n` })
        const broken = yield* failure(vendors[vendor]())
        expect(broken.reason).toBe("server")
        expect(broken.detail).not.toContain(key)
        expect(broken.detail).toContain("failed for [redacted]")
      }))
  }

  it("a key's start where an error body was cut is redacted too", () => {
    expect(Support.loggableDetail(`401 invalid key ${key.slice(0, 20)}`, [key])).toBe("401 invalid key [redacted]")
    expect(Support.loggableDetail("a short key k is left alone", ["k"])).toBe("a short key k is left alone")
  })

  it.effect("the @effect/ai bridge: the request's URL shown as every address is, the key echoed in the body redacted", () =>
    Effect.gen(function*() {
      server.respond(json(401, { type: "error", error: { type: "authentication_error", message: `invalid x-api-key ${key}` } }))
      const bridged = EffectAiModelProvider.layer({ model: "claude-sonnet-4-5" }).pipe(
        Layer.provide(AnthropicLanguageModel.model("claude-sonnet-4-5")),
        Layer.provide(AnthropicClient.layer({ apiKey: Redacted.make(key), apiUrl: `${server.url}/k/${key}` })),
        Layer.provide(FetchHttpClient.layer)
      )
      const denied = yield* failure(Effect.provide(ModelProvider, bridged))
      expect(server.received[0]!.path).toContain(key)
      expect(denied.reason).toBe("authentication")
      expect(denied.detail).not.toContain(key)
      expect(denied.detail).toContain(`${server.url}/k/[redacted]/v1/messages`)
      expect(denied.detail).not.toMatch(/[\u0000-\u001f]/)
    }))
})

describe("openai: a compatible server's parallel calls", () => {
  const calls = (...pieces: ReadonlyArray<Record<string, unknown>>) =>
    sse([o.chunk({ role: "assistant", content: "" }), ...pieces.map((piece) => o.chunk({ tool_calls: [piece] })), o.chunk({}, "tool_calls"), o.usage], true)
  const call = (id: string, name: string, args: unknown, index?: unknown) => ({
    ...(index === undefined ? {} : { index }),
    id,
    type: "function",
    function: { name, arguments: JSON.stringify(args) }
  })
  const toolCalls = (chunks: ReadonlyArray<unknown>) => chunks.filter((c) => (c as { _tag: string })._tag === "ToolCall")

  it.effect("every call at index 0, each whole with its own id (Ollama): three calls, not one", () =>
    Effect.gen(function*() {
      server.respond(calls(call("call_a", "read_file", { path: "a.txt" }, 0), call("call_b", "read_file", { path: "b.txt" }, 0), call("call_c", "list_dir", { path: "." }, 0)))
      const chunks = yield* Effect.map(outcome(vendors.openai()), Either.getOrThrow)
      expect(toolCalls(chunks)).toEqual([
        { _tag: "ToolCall", toolCallId: "call_a", tool: "read_file", args: { path: "a.txt" } },
        { _tag: "ToolCall", toolCallId: "call_b", tool: "read_file", args: { path: "b.txt" } },
        { _tag: "ToolCall", toolCallId: "call_c", tool: "list_dir", args: { path: "." } }
      ])
    }))

  it.effect("no index at all: a piece with an id starts a call, one without continues the last", () =>
    Effect.gen(function*() {
      server.respond(calls(
        call("call_a", "read_file", { path: "a.txt" }),
        { id: "call_b", type: "function", function: { name: "list_dir", arguments: "{\"pa" } },
        { function: { arguments: "th\":\".\"}" } }
      ))
      const chunks = yield* Effect.map(outcome(vendors.openai()), Either.getOrThrow)
      expect(toolCalls(chunks)).toEqual([
        { _tag: "ToolCall", toolCallId: "call_a", tool: "read_file", args: { path: "a.txt" } },
        { _tag: "ToolCall", toolCallId: "call_b", tool: "list_dir", args: { path: "." } }
      ])
    }))

  it.effect("an index \"0\" then 0: the same call", () =>
    Effect.gen(function*() {
      server.respond(calls(
        { index: "0", id: "call_a", type: "function", function: { name: "read_file", arguments: "{\"pa" } },
        { index: 0, function: { arguments: "th\":\"a\"}" } }
      ))
      const chunks = yield* Effect.map(outcome(vendors.openai()), Either.getOrThrow)
      expect(toolCalls(chunks)).toEqual([{ _tag: "ToolCall", toolCallId: "call_a", tool: "read_file", args: { path: "a" } }])
    }))
})

describe("an idle timeout past setTimeout's longest wait", () => {
  /** An SDK stream of one event. */
  const one = async (): Promise<AsyncIterable<number>> => ({
    async *[Symbol.asyncIterator]() {
      yield 1
    }
  })
  for (const idleTimeout of [Duration.days(30), Duration.infinity]) {
    it.live(`${Duration.format(idleTimeout)}: no timer is armed past 2^31 - 1 ms (Node runs one after 1 ms)`, () =>
      Effect.gen(function*() {
        const timers = vi.spyOn(globalThis, "setTimeout")
        try {
          const events = yield* Stream.runCollect(Support.fromSdk({ open: one, toFailure: (error) => ProviderFailure.of("network", String(error)), idleTimeout }))
          expect(Chunk.toReadonlyArray(events)).toEqual([1])
          expect(timers.mock.calls.map(([, ms]) => ms ?? 0).filter((ms) => !(ms <= Support.maxTimerMs))).toEqual([])
        } finally {
          timers.mockRestore()
        }
      }))
  }
})

describe("the SDKs' own logging", () => {
  it("goes through a logger of the adapter's: one line each, the key redacted, never console", () => {
    const lines: Array<string> = []
    const logger = Support.sdkLogger("anthropic", [key], (line) => lines.push(line))
    logger.debug("[log_1] sending request", { headers: { "x-api-key": key }, body: "a\nb" })
    expect(lines).toHaveLength(1)
    expect(lines[0]).not.toContain(key)
    expect(lines[0]!.split("\n")).toEqual([expect.stringContaining("anthropic sdk debug: [log_1] sending request"), ""])
  })

  it("writes a warning the SDK repeats (a deprecation notice per request and retry) once (review65b)", () => {
    const lines: Array<string> = []
    const logger = Support.sdkLogger("anthropic", [key], (line) => lines.push(line))
    for (let i = 0; i < 3; i++) logger.warn("The model 'claude-x' is deprecated")
    logger.warn("another warning")
    expect(lines).toEqual(["anthropic sdk warn: The model 'claude-x' is deprecated\n", "anthropic sdk warn: another warning\n"])
  })

  for (const vendor of ["anthropic", "openai"] as const) {
    it.effect(`${vendor}: at ${vendor.toUpperCase()}_LOG=debug nothing reaches console (stdout)`, () =>
      Effect.gen(function*() {
        const variable = `${vendor.toUpperCase()}_LOG`
        const was = process.env[variable]
        process.env[variable] = "debug"
        const printed = vi.spyOn(console, "log")
        const debugged = vi.spyOn(console, "debug")
        const written = vi.spyOn(process.stderr, "write").mockImplementation(() => true)
        try {
          server.respond(vendor === "anthropic" ? a.answer() : o.answer())
          yield* Effect.map(outcome(vendors[vendor]()), Either.getOrThrow)
          expect(printed).not.toHaveBeenCalled()
          expect(debugged).not.toHaveBeenCalled()
          const lines = written.mock.calls.map(([line]) => String(line))
          expect(lines.some((line) => line.startsWith(`${vendor} sdk debug:`))).toBe(true)
          expect(lines.join("")).not.toContain(key)
        } finally {
          printed.mockRestore()
          debugged.mockRestore()
          written.mockRestore()
          if (was === undefined) delete process.env[variable]
          else process.env[variable] = was
        }
      }))
  }
})

describe("a base URL from the environment", () => {
  for (const vendor of ["anthropic", "openai"] as const) {
    it.effect(`${vendor}: ${vendor.toUpperCase()}_BASE_URL with a password in it is refused as baseURL's is, before any request`, () =>
      Effect.gen(function*() {
        const variable = `${vendor.toUpperCase()}_BASE_URL`
        const was = process.env[variable]
        process.env[variable] = `http://user:hunter2@127.0.0.1:9/v1`
        try {
          const made = vendor === "anthropic"
            ? AnthropicModelProvider.make({ apiKey: Redacted.make(key) })
            : OpenAiModelProvider.make({ apiKey: Redacted.make(key) })
          const refused = yield* failure(made)
          expect(refused.reason).toBe("invalid_request")
          expect(refused.detail).toContain("user name or password")
          expect(refused.detail).not.toContain("hunter2")
        } finally {
          if (was === undefined) delete process.env[variable]
          else process.env[variable] = was
        }
      }))
  }
})

describe("retry-after", () => {
  const headers = (values: Record<string, string>) => ({ get: (name: string) => values[name] ?? null })
  it("retry-after-ms only when a non-negative number; retry-after in decimal seconds, Infinity the longest wait", () => {
    expect(Support.retryAfterMs(headers({ "retry-after-ms": "", "retry-after": "30" }), 0)).toBe(30_000)
    expect(Support.retryAfterMs(headers({ "retry-after-ms": "-1", "retry-after": "30" }), 0)).toBe(30_000)
    expect(Support.retryAfterMs(headers({ "retry-after-ms": "250", "retry-after": "30" }), 0)).toBe(250)
    expect(Support.retryAfterMs(headers({ "retry-after": "Infinity" }), 0)).toBe(Number.MAX_SAFE_INTEGER)
    expect(Support.retryAfterMs(headers({ "retry-after": "0x10" }), 0)).toBeUndefined()
    expect(Support.retryAfterMs(headers({ "retry-after": " 3 " }), 0)).toBe(3000)
  })
})

describe("a redirect from the base URL", () => {
  let other: WireServer.WireServer
  beforeAll(async () => {
    other = await WireServer.start()
  })
  afterAll(() => other.close())

  for (const vendor of ["anthropic", "openai"] as const) {
    for (const status of [307, 308]) {
      it.effect(`${vendor}: a ${status} to another origin is refused; the prompt goes nowhere else`, () =>
        Effect.gen(function*() {
          other.reset()
          const path = vendor === "anthropic" ? "/v1/messages" : "/v1/chat/completions"
          server.respond({ status, headers: { location: `${other.url}${path}` }, body: "" })
          other.respond(vendor === "anthropic" ? a.answer() : o.answer())
          const refused = yield* failure(vendors[vendor]())
          expect(other.received).toEqual([])
          expect(refused.reason).toBe("invalid_request")
          expect(refused.detail).toContain(`redirected the request to another origin (${other.url}${path})`)
        }))
    }

    it.effect(`${vendor}: a 307 within the same origin is followed, with the body`, () =>
      Effect.gen(function*() {
        const path = vendor === "anthropic" ? "/v1/messages" : "/v1/chat/completions"
        server.respond({ status: 307, headers: { location: `/moved${path}` }, body: "" }, vendor === "anthropic" ? a.answer() : o.answer())
        const chunks = yield* Effect.map(outcome(vendors[vendor]()), Either.getOrThrow)
        expect(chunks.length).toBeGreaterThan(0)
        expect(server.received.map((r) => r.path)).toEqual([path, `/moved${path}`])
        expect(JSON.stringify(server.received[1]!.body)).toContain("hi")
      }))
  }
})
