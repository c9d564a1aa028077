/**
 * The `@effect/ai` bridge: `@effect/ai-openai`'s `OpenAiLanguageModel` against a local server
 * replaying Responses-API wire streams (fixtures/providers/openai-responses/, and the Chat
 * Completions error bodies of fixtures/providers/openai/, which the Responses API shares; the
 * Responses streams were written from OpenAI's documented stream events, not captured from the live
 * API: @effect/ai-openai skips an event its schema does not decode, so a wrong one shows here as a
 * missing part), alone and through the engine; `@effect/ai-anthropic`'s `AnthropicLanguageModel` against the recorded
 * Messages streams of fixtures/providers/anthropic/; and `@effect/ai`'s own `LanguageModel.make`
 * with a scripted stream, to show that no tool ever runs inside `@effect/ai`.
 */
import * as LanguageModel from "@effect/ai/LanguageModel"
import type * as Prompt from "@effect/ai/Prompt"
import type * as Response from "@effect/ai/Response"
import * as Tool from "@effect/ai/Tool"
import * as AnthropicClient from "@effect/ai-anthropic/AnthropicClient"
import * as AnthropicLanguageModel from "@effect/ai-anthropic/AnthropicLanguageModel"
import * as OpenAiClient from "@effect/ai-openai/OpenAiClient"
import * as OpenAiLanguageModel from "@effect/ai-openai/OpenAiLanguageModel"
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import type { ProviderFailureReason } from "../../src/domain/Errors.js"
import * as SessionEngineModule from "../../src/engine/SessionEngine.js"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import * as EffectAiModelProvider from "../../src/layers/EffectAiModelProvider.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as PromptComposer from "../../src/layers/PromptComposer.js"
import * as IdGenerator from "../../src/services/IdGenerator.js"
import { ModelProvider, type ModelRequest } from "../../src/services/ModelProvider.js"
import { collect, expectWellFormedLog, testTools } from "../helpers.js"
import * as ProviderTurns from "./providerTurns.js"
import * as WireServer from "./WireServer.js"

const secret = "sk-effect-ai-secret-key"
const hello: ModelRequest = { system: "Be brief.", messages: [{ role: "user", content: "hello" }], tools: [] }
const readFileSpec = {
  name: "read_file",
  description: "Read a file",
  inputSchema: { type: "object", properties: { path: { type: "string" } }, required: ["path"] }
}

const chunksOf = (request: ModelRequest = hello) =>
  Effect.flatMap(ModelProvider, (provider) => Effect.either(Stream.runCollect(provider.stream(request)).pipe(Effect.map(Chunk.toReadonlyArray))))

describe("the @effect/ai bridge on OpenAiLanguageModel, against recorded wire streams", () => {
  let server: WireServer.WireServer
  const replay = (...names: ReadonlyArray<string>) => server.respond(...names.map((n) => WireServer.recording("openai-responses", n)))
  const replayError = (name: string) => server.respond(WireServer.recording("openai", name))
  /** `@effect/ai-openai`'s own client and model over fetch, then the bridge. */
  const languageModel = () =>
    OpenAiLanguageModel.layer({ model: "gpt-4.1-mini", config: { strict: false } }).pipe(
      Layer.provide(OpenAiClient.layer({ apiKey: Redacted.make(secret), apiUrl: `${server.url}/v1` })),
      Layer.provide(FetchHttpClient.layer)
    )
  const provider = (options: Partial<EffectAiModelProvider.Options> = {}) =>
    Layer.suspend(() => EffectAiModelProvider.layer({ model: "gpt-4.1-mini", provider: "openai", ...options }).pipe(Layer.provide(languageModel())))
  beforeAll(async () => {
    server = await WireServer.start()
  })
  afterAll(() => server.close())
  beforeEach(() => {
    server.received.length = 0
  })

  it.effect("text: one chunk per delta as the parts arrive, then a finish with usage", () =>
    Effect.gen(function*() {
      replay("text")
      const provider = yield* ModelProvider
      expect(provider.capabilities).toEqual({ provider: "openai", model: "gpt-4.1-mini", maxContextTokens: 128_000, images: false })
      // Each pull of the stream is one chunk of ours: every text delta is a chunk of its own.
      const pulls = yield* Stream.runCollect(Stream.chunks(provider.stream(hello)))
      expect(Chunk.toReadonlyArray(pulls).map((c) => c.length)).toEqual([1, 1, 1, 1])
      const deltas = Chunk.toReadonlyArray(pulls).flatMap((c) => Chunk.toReadonlyArray(c)).filter((c) => c._tag === "TextDelta")
      expect(deltas.map((d) => d.text)).toEqual(["Hello", "! How can I", " help with your code today?"])
      expect(Chunk.toReadonlyArray(pulls).flatMap((c) => Chunk.toReadonlyArray(c)).at(-1)).toEqual({
        _tag: "Finish",
        reason: "stop",
        usage: { inputTokens: 412, outputTokens: 15, cacheReadTokens: 128 }
      })
      expect(server.received).toHaveLength(1)
      expect(server.received[0]!.path).toBe("/v1/responses")
      expect(server.received[0]!.body).toMatchObject({
        model: "gpt-4.1-mini",
        stream: true,
        input: [{ role: "system", content: "Be brief." }, { role: "user", content: [{ type: "input_text", text: "hello" }] }]
      })
      // No tools: none sent.
      expect(server.received[0]!.body.tools).toBeUndefined()
    }).pipe(Effect.provide(provider())))

  it.effect("text then two tool calls: tool calls come back to us, with our JSON Schemas sent as their parameters", () =>
    Effect.gen(function*() {
      replay("tool-calls")
      const chunks = Either.getOrThrow(yield* chunksOf({ ...hello, tools: [readFileSpec, { name: "grep", description: "Search", inputSchema: { type: "object" } }] }))
      expect(chunks).toEqual([
        { _tag: "TextDelta", text: "I'll read both files" },
        { _tag: "TextDelta", text: " first." },
        { _tag: "ToolCall", toolCallId: "call_Qm1x7bD2kF9sLz3VnH8aP4tW", tool: "read_file", args: { path: "src/index.ts" } },
        { _tag: "ToolCall", toolCallId: "call_Zr8vK2nB5cX1mQ7dT4yG6hJe", tool: "grep", args: { pattern: "TODO", path: "src" } },
        { _tag: "Finish", reason: "tool_calls", usage: { inputTokens: 1024, outputTokens: 89, cacheReadTokens: 0 } }
      ])
      expect(server.received[0]!.body.tools).toEqual([
        { type: "function", name: "read_file", description: "Read a file", parameters: readFileSpec.inputSchema, strict: false },
        { type: "function", name: "grep", description: "Search", parameters: { type: "object" }, strict: false }
      ])
      expect(server.received[0]!.body.tool_choice).toBe("auto")
    }).pipe(Effect.provide(provider())))

  it.effect("an error event in the middle of the stream fails it, after the text before it", () =>
    Effect.gen(function*() {
      replay("error-mid-stream")
      const seen: Array<string> = []
      const provider = yield* ModelProvider
      const result = yield* Effect.either(Stream.runForEach(provider.stream(hello), (c) => Effect.sync(() => c._tag === "TextDelta" && seen.push(c.text))))
      expect(seen).toEqual(["Hello"])
      expect(Either.isLeft(result) && result.left).toMatchObject({ _tag: "ProviderFailure", reason: "server", retryable: true })
    }).pipe(Effect.provide(provider())))

  const httpFailures: ReadonlyArray<[string, ProviderFailureReason, boolean, number]> = [
    ["rate-limited", "rate_limited", true, 429],
    ["overloaded", "server", true, 503],
    ["unauthorized", "authentication", false, 401],
    ["context-overflow", "context_overflow", false, 400]
  ]
  for (const [recording, reason, retryable, status] of httpFailures) {
    it.effect(`${recording} (HTTP ${status}) → ${reason}`, () =>
      Effect.gen(function*() {
        replayError(recording)
        const failure = (yield* chunksOf()).pipe(Either.flip, Either.getOrThrow)
        expect(failure).toMatchObject({ _tag: "ProviderFailure", reason, retryable, status })
        if (recording === "rate-limited") expect(failure.retryAfterMs).toBe(3000)
        else expect(failure.retryAfterMs).toBeUndefined()
      }).pipe(Effect.provide(provider())))
  }

  it.effect("500 → server, retryable", () =>
    Effect.gen(function*() {
      server.respond({ status: 500, headers: { "content-type": "application/json" }, body: JSON.stringify({ error: { message: "The server had an error while processing your request.", type: "server_error", param: null, code: null } }) })
      const failure = (yield* chunksOf()).pipe(Either.flip, Either.getOrThrow)
      expect(failure).toMatchObject({ reason: "server", retryable: true, status: 500 })
    }).pipe(Effect.provide(provider())))

  it.effect("a retry-after given as an HTTP date is measured on the Clock", () =>
    Effect.gen(function*() {
      const limited = WireServer.recording("openai", "rate-limited")
      const { "retry-after": _, ...headers } = limited.headers
      server.respond({ ...limited, headers: { ...headers, "retry-after": new Date(65_000).toUTCString() } })
      yield* TestClock.setTime(60_000)
      const failure = (yield* chunksOf()).pipe(Either.flip, Either.getOrThrow)
      expect(failure).toMatchObject({ reason: "rate_limited", retryAfterMs: 5000 })
    }).pipe(Effect.provide(provider())))

  it.live("a connection refused is network, retryable", () =>
    Effect.gen(function*() {
      const failure = (yield* chunksOf()).pipe(Either.flip, Either.getOrThrow)
      expect(failure).toMatchObject({ reason: "network", retryable: true })
    }).pipe(Effect.provide(Layer.unwrapEffect(Effect.promise(async () => {
      // A port that was just free and is closed again: nothing listens there.
      const closed = await WireServer.start()
      await closed.close()
      return EffectAiModelProvider.layer({ model: "m" }).pipe(
        Layer.provide(OpenAiLanguageModel.layer({ model: "m" })),
        Layer.provide(OpenAiClient.layer({ apiKey: Redacted.make(secret), apiUrl: closed.url })),
        Layer.provide(FetchHttpClient.layer)
      )
    })))))

  it.live("a stream that stalls fails as network after the idle timeout", () =>
    Effect.gen(function*() {
      replay("stall")
      const failure = (yield* chunksOf()).pipe(Either.flip, Either.getOrThrow)
      expect(failure).toMatchObject({ reason: "network", retryable: true })
      expect(failure.detail).toContain("stalled")
    }).pipe(Effect.provide(provider({ idleTimeout: "300 millis" }))))

  it.effect("images: a user message's image goes as an input_image data URL when the model takes images", () =>
    Effect.gen(function*() {
      replay("text")
      const png = Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3])
      const blob = "a".repeat(64)
      const result = yield* chunksOf({
        system: "",
        messages: [{ role: "user", content: "what is this?", images: [{ blob, mediaType: "image/png", bytes: png.length }] }],
        tools: [],
        images: new Map([[blob, png]])
      })
      expect(Either.isRight(result)).toBe(true)
      expect(server.received[0]!.body.input).toEqual([{
        role: "user",
        content: [
          { type: "input_text", text: "what is this?" },
          { type: "input_image", image_url: `data:image/png;base64,${Buffer.from(png).toString("base64")}`, detail: "auto" }
        ]
      }])
      expect((yield* ModelProvider).capabilities.images).toBe(true)
    }).pipe(Effect.provide(provider({ images: true }))))

  describe("through the engine", () => {
    const layer = (services: Layer.Layer<never> = Layer.empty) =>
      Layer.suspend(() =>
        SessionEngineModule.layer().pipe(
          Layer.provide(MemoryEventStore.layer),
          Layer.provide(IdGenerator.layerSequential),
          Layer.provide(provider()),
          Layer.provide(services)
        )
      )

    it.effect("a tool call round trip: our permission engine asks, our engine runs the tool once, the result is recorded and sent back", () => {
      const ran: Array<unknown> = []
      return Effect.gen(function*() {
        replay("tool-calls", "text")
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
        const events = yield* engine.runTurn({ sessionId, userMessage: "find the TODOs" }).pipe(
          Stream.tap((e) =>
            e.type === "permission.resolved" && e.payload.decision === "ask"
              ? engine.resolvePermission({ sessionId, toolCallId: e.payload.toolCallId, decision: e.payload.toolCallId.startsWith("call_Qm") ? "allow" : "deny" })
              : Effect.void
          ),
          collect
        )
        expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
        const asked = events.filter((e) => e.type === "permission.resolved" && e.payload.actor === "policy").map((e) => e.payload)
        expect(asked).toEqual([
          expect.objectContaining({ toolCallId: "call_Qm1x7bD2kF9sLz3VnH8aP4tW", decision: "ask" }),
          expect.objectContaining({ toolCallId: "call_Zr8vK2nB5cX1mQ7dT4yG6hJe", decision: "ask" })
        ])
        // Our engine ran the allowed call, once; @effect/ai ran nothing.
        expect(ran).toEqual([{ path: "src/index.ts" }])
        const completed = events.filter((e) => e.type === "tool.completed").map((e) => e.payload)
        expect(completed).toEqual([expect.objectContaining({ toolCallId: "call_Qm1x7bD2kF9sLz3VnH8aP4tW" })])
        expect(events.filter((e) => e.type === "model.delta").map((e) => e.payload.text).join("")).toBe("I'll read both files first.Hello! How can I help with your code today?")
        // The second request carries the transcript in the Responses shape: the calls and both results.
        expect(server.received).toHaveLength(2)
        const input = server.received[1]!.body.input as Array<Record<string, unknown>>
        expect(input[0]).toMatchObject({ role: "system", content: expect.stringContaining("Working directory: /work") })
        expect(input.slice(1)).toEqual([
          { role: "user", content: [{ type: "input_text", text: "find the TODOs" }] },
          { role: "assistant", content: [{ type: "output_text", text: "I'll read both files first." }] },
          { type: "function_call", call_id: "call_Qm1x7bD2kF9sLz3VnH8aP4tW", name: "read_file", arguments: JSON.stringify({ path: "src/index.ts" }) },
          { type: "function_call", call_id: "call_Zr8vK2nB5cX1mQ7dT4yG6hJe", name: "grep", arguments: JSON.stringify({ pattern: "TODO", path: "src" }) },
          { type: "function_call_output", call_id: "call_Qm1x7bD2kF9sLz3VnH8aP4tW", output: JSON.stringify("contents of src/index.ts") },
          { type: "function_call_output", call_id: "call_Zr8vK2nB5cX1mQ7dT4yG6hJe", output: expect.stringContaining("denied") }
        ])
        const log = yield* collect(engine.replaySession({ sessionId }))
        expectWellFormedLog(log)
        expect(JSON.stringify(log)).not.toContain(secret)
      }).pipe(Effect.provide(layer(Layer.mergeAll(
        testTools({
          read_file: { risk: "write", run: (args) => Effect.sync(() => ran.push(args)).pipe(Effect.as({ result: `contents of ${(args as { path: string }).path}` })) },
          grep: { risk: "write", run: (args) => Effect.sync(() => ran.push(args)).pipe(Effect.as({ result: "never" })) }
        }),
        PermissionPolicy.layer({ mode: "default" }),
        PromptComposer.layer()
      ))))
    })

    it.effect("429 with retry-after, then success: the engine retries after the vendor's wait", () =>
      Effect.gen(function*() {
        replayError("rate-limited")
        replay("text")
        const events = yield* ProviderTurns.turnWithRetries("hello")
        expect(events.find((e) => e.type === "model.retry")?.payload).toEqual({ attempt: 1, delayMs: 3000, errorCode: "rate_limited" })
        expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final", usage: { inputTokens: 412, outputTokens: 15 } })
      }).pipe(Effect.provide(layer())))

    it.effect("401: the turn ends authentication, and the key reaches neither the log nor anything but the vendor", () =>
      Effect.gen(function*() {
        replayError("unauthorized")
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
        const events = yield* collect(engine.runTurn({ sessionId, userMessage: "hello" }))
        expect(events.at(-1)!.payload).toEqual({ stopReason: "error", errorCode: "authentication" })
        expect(JSON.stringify(yield* collect(engine.replaySession({ sessionId })))).not.toContain(secret)
        expect(server.received[0]!.headers.authorization).toBe(`Bearer ${secret}`)
      }).pipe(Effect.provide(layer())))

    it.effect("cancel mid-stream: interrupting the turn aborts the HTTP request (the server sees the connection close)", () =>
      Effect.gen(function*() {
        replay("stall")
        const { closed, events } = yield* ProviderTurns.cancelledAtFirstDelta(server)
        expect(events.at(-1)!.payload).toEqual({ stopReason: "cancelled" })
        expect(closed).toBe(1)
      }).pipe(Effect.provide(layer())))
  })
})

describe("the @effect/ai bridge on AnthropicLanguageModel, against the recorded Messages streams", () => {
  let server: WireServer.WireServer
  const replay = (...names: ReadonlyArray<string>) => server.respond(...names.map((n) => WireServer.recording("anthropic", n)))
  const provider = Layer.suspend(() =>
    EffectAiModelProvider.layer({ model: "claude-sonnet-4-5" }).pipe(
      Layer.provide(AnthropicLanguageModel.model("claude-sonnet-4-5")),
      Layer.provide(AnthropicClient.layer({ apiKey: Redacted.make(secret), apiUrl: server.url })),
      Layer.provide(FetchHttpClient.layer)
    ))
  beforeAll(async () => {
    server = await WireServer.start()
  })
  afterAll(() => server.close())

  it.effect("text, and text then two tool calls handed back to us; the provider's name comes from the @effect/ai Model", () =>
    Effect.gen(function*() {
      replay("text", "tool-calls")
      expect((yield* ModelProvider).capabilities.provider).toBe("anthropic")
      const text = Either.getOrThrow(yield* chunksOf())
      expect(text.filter((c) => c._tag === "TextDelta").map((c) => c._tag === "TextDelta" && c.text).join("")).toBe("Hello! How can I help with your code today?")
      expect(text.at(-1)).toMatchObject({ _tag: "Finish", reason: "stop", usage: { inputTokens: 412, outputTokens: 15 } })
      const calls = Either.getOrThrow(yield* chunksOf({ ...hello, tools: [readFileSpec, { name: "grep", description: "Search", inputSchema: { type: "object" } }] }))
      expect(calls.filter((c) => c._tag === "ToolCall")).toEqual([
        { _tag: "ToolCall", toolCallId: "toolu_01T1x1fJ34qAmk2tNTrN7Up6", tool: "read_file", args: { path: "src/index.ts" } },
        { _tag: "ToolCall", toolCallId: "toolu_01CfDNvYnMzmdYZVYbVdfRUa", tool: "grep", args: { pattern: "TODO", path: "src" } }
      ])
      expect(calls.at(-1)).toMatchObject({ _tag: "Finish", reason: "tool_calls" })
      expect(server.received[1]!.path).toBe("/v1/messages")
      expect(server.received[1]!.body.tools).toEqual([
        expect.objectContaining({ name: "read_file", description: "Read a file", input_schema: readFileSpec.inputSchema }),
        expect.objectContaining({ name: "grep", description: "Search", input_schema: { type: "object" } })
      ])
    }).pipe(Effect.provide(provider)))

  const failures: ReadonlyArray<[string, ProviderFailureReason]> = [
    ["rate-limited", "rate_limited"],
    ["overloaded", "overloaded"],
    ["unauthorized", "authentication"],
    ["context-overflow", "context_overflow"],
    ["error-mid-stream", "overloaded"]
  ]
  for (const [recording, reason] of failures) {
    it.effect(`${recording} → ${reason}`, () =>
      Effect.gen(function*() {
        replay(recording)
        const failure = (yield* chunksOf()).pipe(Either.flip, Either.getOrThrow)
        expect(failure).toMatchObject({ _tag: "ProviderFailure", reason })
        if (recording === "rate-limited") expect(failure.retryAfterMs).toBeGreaterThan(0)
      }).pipe(Effect.provide(provider)))
  }
})

describe("the @effect/ai bridge never lets @effect/ai run a tool", () => {
  /** `@effect/ai`'s own `LanguageModel.make` with a scripted response: a tool call of ours, then a finish. */
  const scripted = (seen: Array<{ prompt: Prompt.Prompt; tools: ReadonlyArray<unknown> }>) =>
    Layer.effect(
      LanguageModel.LanguageModel,
      LanguageModel.make({
        generateText: () => Effect.die("not used"),
        streamText: (options) => {
          seen.push({ prompt: options.prompt, tools: options.tools.map((t) => ({ name: t.name, schema: Tool.getJsonSchema(t as Parameters<typeof Tool.getJsonSchema>[0]) })) })
          return Stream.fromIterable<Response.StreamPartEncoded>([
            { type: "text-delta", id: "t1", delta: "Reading." },
            { type: "tool-call", id: "call_1", name: "read_file", params: { path: "a.txt" } },
            { type: "finish", reason: "tool-calls", usage: { inputTokens: 10, outputTokens: 5, totalTokens: 15 } }
          ])
        }
      })
    )

  it.effect("a tool call is handed back as our chunk; the toolkit's handle (which dies) is never called", () => {
    const seen: Array<{ prompt: Prompt.Prompt; tools: ReadonlyArray<unknown> }> = []
    return Effect.gen(function*() {
      const chunks = Either.getOrThrow(yield* chunksOf({
        system: "sys",
        messages: [
          { role: "user", content: "read it" },
          { role: "assistant", content: "", toolCalls: [{ toolCallId: "call_0", tool: "read_file", args: { path: "b.txt" } }] },
          { role: "tool", toolCallId: "call_0", tool: "read_file", content: "no such file", isError: true },
          { role: "user", content: "again" }
        ],
        tools: [readFileSpec]
      }))
      expect(chunks).toEqual([
        { _tag: "TextDelta", text: "Reading." },
        { _tag: "ToolCall", toolCallId: "call_1", tool: "read_file", args: { path: "a.txt" } },
        { _tag: "Finish", reason: "tool_calls", usage: { inputTokens: 10, outputTokens: 5 } }
      ])
      expect(seen[0]!.tools).toEqual([{ name: "read_file", schema: readFileSpec.inputSchema }])
      expect(seen[0]!.prompt.content.map((m) => [m.role, m.content])).toEqual([
        ["system", "sys"],
        ["user", [expect.objectContaining({ type: "text", text: "read it" })]],
        ["assistant", [expect.objectContaining({ type: "tool-call", id: "call_0", name: "read_file", params: { path: "b.txt" }, providerExecuted: false })]],
        ["tool", [expect.objectContaining({ type: "tool-result", id: "call_0", name: "read_file", result: "no such file", isFailure: true })]],
        ["user", [expect.objectContaining({ type: "text", text: "again" })]]
      ])
    }).pipe(Effect.provide(EffectAiModelProvider.layer({ model: "scripted" }).pipe(Layer.provide(scripted(seen)))))
  })

  it.effect("a tool result's images follow the run of tool results as a user message, each introduced by its call", () => {
    const seen: Array<{ prompt: Prompt.Prompt; tools: ReadonlyArray<unknown> }> = []
    const png = Uint8Array.from([0x89, 0x50, 0x4e, 0x47])
    const blob = "b".repeat(64)
    return Effect.gen(function*() {
      yield* chunksOf({
        system: "",
        messages: [
          { role: "user", content: "look" },
          { role: "assistant", content: "", toolCalls: [{ toolCallId: "call_0", tool: "read_file", args: { path: "a.png" } }] },
          { role: "tool", toolCallId: "call_0", tool: "read_file", content: "an image", isError: false, images: [{ blob, mediaType: "image/png", bytes: 4 }] }
        ],
        tools: [readFileSpec],
        images: new Map([[blob, png]])
      })
      expect(seen[0]!.prompt.content.slice(2).map((m) => [m.role, m.content])).toEqual([
        ["tool", [expect.objectContaining({ type: "tool-result", id: "call_0", result: "an image" })]],
        ["user", [
          expect.objectContaining({ type: "text", text: "Images from the read_file call call_0:" }),
          expect.objectContaining({ type: "file", mediaType: "image/png", data: png })
        ]]
      ])
    }).pipe(Effect.provide(EffectAiModelProvider.layer({ model: "scripted", images: true }).pipe(Layer.provide(scripted(seen)))))
  })

  it.effect("a call of a tool the request did not offer fails the response as server (@effect/ai decodes calls against the toolkit)", () =>
    Effect.gen(function*() {
      const failure = (yield* chunksOf({ ...hello, tools: [{ ...readFileSpec, name: "write_file" }] })).pipe(Either.flip, Either.getOrThrow)
      expect(failure).toMatchObject({ _tag: "ProviderFailure", reason: "server" })
    }).pipe(Effect.provide(EffectAiModelProvider.layer({ model: "scripted" }).pipe(Layer.provide(scripted([]))))))

  it.effect("the toolkit the bridge passes has no handler that runs anything: calling it dies", () =>
    Effect.gen(function*() {
      const toolkit = EffectAiModelProvider.toolkitOf([readFileSpec])
      const exit = yield* Effect.exit(toolkit.handle("read_file", { path: "a.txt" } as never))
      expect(exit._tag === "Failure" && String(exit.cause)).toContain("ToolRunInsideEffectAi")
    }))

  it.effect("an error part fails the stream with the reason its words give", () =>
    Effect.gen(function*() {
      expect(EffectAiModelProvider.errorPartFailure({ type: "error", error: { type: "overloaded_error", message: "Overloaded" } }).reason).toBe("overloaded")
      expect(EffectAiModelProvider.errorPartFailure({ code: "rate_limit_exceeded", message: "slow down" }).reason).toBe("rate_limited")
      expect(EffectAiModelProvider.errorPartFailure({ code: "context_length_exceeded" }).reason).toBe("context_overflow")
      expect(EffectAiModelProvider.errorPartFailure("???").reason).toBe("unknown")
    }))
})
