/**
 * The Anthropic and OpenAI providers, each on its official SDK, against a local server replaying
 * recorded wire streams.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import type { ProviderFailureReason } from "../../src/domain/Errors.js"
import * as SessionEngineModule from "../../src/engine/SessionEngine.js"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import * as AnthropicModelProvider from "../../src/layers/AnthropicModelProvider.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import * as OpenAiModelProvider from "../../src/layers/OpenAiModelProvider.js"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as PromptComposer from "../../src/layers/PromptComposer.js"
import * as IdGenerator from "../../src/services/IdGenerator.js"
import { ModelProvider, type ModelRequest } from "../../src/services/ModelProvider.js"
import { collect, expectWellFormedLog, testTools } from "../helpers.js"
import * as ProviderTurns from "./providerTurns.js"
import * as WireServer from "./WireServer.js"

interface Vendor {
  readonly name: "anthropic" | "openai"
  readonly layer: (url: string, extra?: { readonly maxContextTokens?: number; readonly idleTimeout?: Duration.DurationInput }) => Layer.Layer<ModelProvider>
  /** What the vendor's "overloaded" recording and mid-stream error map to. */
  readonly overloaded: ProviderFailureReason
  readonly midStream: ProviderFailureReason
  readonly secret: string
}

const vendors: ReadonlyArray<Vendor> = [
  {
    name: "anthropic",
    layer: (url, extra = {}) => AnthropicModelProvider.layer({ apiKey: Redacted.make("sk-ant-secret-key"), baseURL: url, ...extra }),
    overloaded: "overloaded",
    midStream: "overloaded",
    secret: "sk-ant-secret-key"
  },
  {
    name: "openai",
    layer: (url, extra = {}) => OpenAiModelProvider.layer({ apiKey: Redacted.make("sk-openai-secret-key"), baseURL: `${url}/v1`, ...extra }),
    overloaded: "server",
    midStream: "server",
    secret: "sk-openai-secret-key"
  }
]

const hello: ModelRequest = { system: "Be brief.", messages: [{ role: "user", content: "hello" }], tools: [] }

const chunksOf = (request: ModelRequest = hello) =>
  Effect.flatMap(ModelProvider, (provider) => Effect.either(Stream.runCollect(provider.stream(request)).pipe(Effect.map(Chunk.toReadonlyArray))))

for (const vendor of vendors) {
  describe(`${vendor.name} provider`, () => {
    let server: WireServer.WireServer
    const replay = (...names: ReadonlyArray<string>) => server.respond(...names.map((n) => WireServer.recording(vendor.name, n)))
    const provider = (extra?: Parameters<Vendor["layer"]>[1]) => Layer.suspend(() => vendor.layer(server.url, extra))
    const untilClosed = (before: number) => ProviderTurns.untilClosed(server, before)
    beforeAll(async () => {
      server = await WireServer.start()
    })
    afterAll(() => server.close())
    beforeEach(() => {
      server.received.length = 0
    })

    it.effect("text only: text deltas, then a finish with usage", () =>
      Effect.gen(function*() {
        replay("text")
        const chunks = yield* chunksOf()
        expect(Either.getOrThrow(chunks)).toEqual([
          { _tag: "TextDelta", text: "Hello" },
          { _tag: "TextDelta", text: "! How can I" },
          { _tag: "TextDelta", text: " help with your code today?" },
          { _tag: "Finish", reason: "stop", usage: { inputTokens: 412, outputTokens: 15, cacheReadTokens: 128, ...(vendor.name === "anthropic" ? { cacheWriteTokens: 0 } : {}) } }
        ])
        expect(server.received).toHaveLength(1)
        expect(server.received[0]!.path).toBe(vendor.name === "anthropic" ? "/v1/messages" : "/v1/chat/completions")
        expect(server.received[0]!.body.stream).toBe(true)
      }).pipe(Effect.provide(provider())))

    it.effect("text then two tool calls in one response, assembled from their streamed pieces", () =>
      Effect.gen(function*() {
        replay("tool-calls")
        const chunks = Either.getOrThrow(yield* chunksOf())
        const ids = vendor.name === "anthropic"
          ? ["toolu_01T1x1fJ34qAmk2tNTrN7Up6", "toolu_01CfDNvYnMzmdYZVYbVdfRUa"]
          : ["call_Qm1x7bD2kF9sLz3VnH8aP4tW", "call_Zr8vK2nB5cX1mQ7dT4yG6hJe"]
        expect(chunks).toEqual([
          { _tag: "TextDelta", text: "I'll read both files" },
          { _tag: "TextDelta", text: " first." },
          { _tag: "ToolCall", toolCallId: ids[0], tool: "read_file", args: { path: "src/index.ts" } },
          { _tag: "ToolCall", toolCallId: ids[1], tool: "grep", args: { pattern: "TODO", path: "src" } },
          expect.objectContaining({ _tag: "Finish", reason: "tool_calls", usage: expect.objectContaining({ inputTokens: 1024, outputTokens: 89 }) })
        ])
      }).pipe(Effect.provide(provider())))

    it.effect("a call whose streamed arguments go past 4 Mi characters: dropped for a note the tool's schema refuses; the next call is whole", () =>
      Effect.gen(function*() {
        // The recording's first call, with five pieces of 1 MiB after its first: what an endpoint
        // could stream without end (each piece was kept until the call completed).
        const recorded = WireServer.recording(vendor.name, "tool-calls")
        const filler = "a".repeat(1024 * 1024)
        const anchor = vendor.name === "anthropic" ? String.raw`"partial_json":"{\"path\": \"src/"}}` : String.raw`"arguments":"{\"path\":"}}]}`
        const events = recorded.body.split("\n\n")
        const at = events.findIndex((event) => event.includes(anchor))
        expect(at).toBeGreaterThan(0)
        const piece = vendor.name === "anthropic"
          ? `event: content_block_delta\ndata: ${JSON.stringify({ type: "content_block_delta", index: 1, delta: { type: "input_json_delta", partial_json: filler } })}`
          : `data: ${JSON.stringify({ id: "chatcmpl-CQx2TcAlls0123456789abcdEF", object: "chat.completion.chunk", created: 1764418801, model: "gpt-4.1-mini-2025-04-14", choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: filler } }] }, logprobs: null, finish_reason: null }], usage: null })}`
        server.respond({ ...recorded, body: [...events.slice(0, at + 1), ...Array.from({ length: 5 }, () => piece), ...events.slice(at + 1)].join("\n\n") })
        const chunks = Either.getOrThrow(yield* chunksOf())
        const calls = chunks.filter((chunk) => chunk._tag === "ToolCall")
        expect(calls.map((call) => [call.tool, call.args])).toEqual([
          ["read_file", "(the call's arguments were over 4194304 characters and were not kept)"],
          ["grep", { pattern: "TODO", path: "src" }]
        ])
      }).pipe(Effect.provide(provider())))

    it.effect("an error event in the middle of the stream fails it after the text before it", () =>
      Effect.gen(function*() {
        replay("error-mid-stream")
        const seen: Array<string> = []
        const provider = yield* ModelProvider
        const result = yield* Effect.either(Stream.runForEach(provider.stream(hello), (c) => Effect.sync(() => c._tag === "TextDelta" && seen.push(c.text))))
        expect(seen).toEqual(["Let me think about"])
        expect(Either.isLeft(result) && result.left).toMatchObject({ _tag: "ProviderFailure", reason: vendor.midStream, retryable: true })
      }).pipe(Effect.provide(provider())))

    const httpFailures: ReadonlyArray<[string, ProviderFailureReason, boolean]> = [
      ["rate-limited", "rate_limited", true],
      ["overloaded", vendor.overloaded, true],
      ["unauthorized", "authentication", false],
      ["context-overflow", "context_overflow", false]
    ]
    for (const [recording, reason, retryable] of httpFailures) {
      it.effect(`${recording} → ${reason}`, () =>
        Effect.gen(function*() {
          replay(recording)
          const failure = (yield* chunksOf()).pipe(Either.flip, Either.getOrThrow)
          expect(failure).toMatchObject({ _tag: "ProviderFailure", reason, retryable })
          if (recording === "rate-limited") expect(failure.retryAfterMs).toBe(3000)
        }).pipe(Effect.provide(provider())))
    }

    it.effect("a retry-after given as an HTTP date is measured on the Clock", () =>
      Effect.gen(function*() {
        const limited = WireServer.recording(vendor.name, "rate-limited")
        const { "retry-after": _, ...headers } = limited.headers
        server.respond({ ...limited, headers: { ...headers, "retry-after": new Date(65_000).toUTCString() } })
        yield* TestClock.setTime(60_000)
        const failure = (yield* chunksOf()).pipe(Either.flip, Either.getOrThrow)
        expect(failure).toMatchObject({ reason: "rate_limited", retryAfterMs: 5000 })
      }).pipe(Effect.provide(provider())))

    it.live("a stream that stalls fails as network after the idle timeout", () =>
      Effect.gen(function*() {
        replay("stall")
        const failure = (yield* chunksOf()).pipe(Either.flip, Either.getOrThrow)
        expect(failure).toMatchObject({ reason: "network", retryable: true })
        expect(failure.detail).toContain("stalled")
      }).pipe(Effect.provide(provider({ idleTimeout: "300 millis" }))))

    it.live("interrupting the stream mid-way closes the connection: the server sees it", () =>
      Effect.gen(function*() {
        replay("stall")
        const before = server.clientClosed()
        const provider = yield* ModelProvider
        yield* provider.stream(hello).pipe(Stream.take(1), Stream.runDrain)
        yield* untilClosed(before)
        expect(server.clientClosed()).toBe(before + 1)
      }).pipe(Effect.provide(provider())))

    describe("through the engine", () => {
      const layer = (extra?: Parameters<Vendor["layer"]>[1], services: Layer.Layer<never> = Layer.empty) =>
        Layer.suspend(() =>
          SessionEngineModule.layer().pipe(
            Layer.provide(MemoryEventStore.layer),
            Layer.provide(IdGenerator.layerSequential),
            Layer.provide(vendor.layer(server.url, extra)),
            Layer.provide(services)
          )
        )

      it.effect("429 with retry-after, then success: model.retry is stored and TestClock drives the wait", () =>
        Effect.gen(function*() {
          replay("rate-limited", "text")
          const engine = yield* SessionEngine
          const events = yield* ProviderTurns.turnWithRetries("hello")
          const sessionId = events[0]!.sessionId
          expect(events.find((e) => e.type === "model.retry")?.payload).toEqual({ attempt: 1, delayMs: 3000, errorCode: "rate_limited" })
          expect(events.filter((e) => e.type === "model.delta").map((e) => e.payload.text).join("")).toBe("Hello! How can I help with your code today?")
          expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final", usage: { inputTokens: 412, outputTokens: 15 } })
          expect(server.received).toHaveLength(2)
          expectWellFormedLog(yield* collect(engine.replaySession({ sessionId })))
        }).pipe(Effect.provide(layer())))

      it.effect("401 is not retried: the turn ends authentication, and neither key nor vendor message reaches the log", () =>
        Effect.gen(function*() {
          replay("unauthorized")
          const engine = yield* SessionEngine
          const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
          const events = yield* collect(engine.runTurn({ sessionId, userMessage: "hello" }))
          expect(events.at(-1)!.payload).toEqual({ stopReason: "error", errorCode: "authentication" })
          expect(server.received).toHaveLength(1)
          const log = JSON.stringify(yield* collect(engine.replaySession({ sessionId })))
          expect(log).not.toContain(vendor.secret)
          expect(log).not.toMatch(/api[ -]key/i)
          // The key went where the vendor expects it, and nowhere else.
          expect(JSON.stringify(server.received[0]!.headers)).toContain(vendor.secret)
        }).pipe(Effect.provide(layer())))

      it.effect("overflow preflight: a context over the window is never sent", () =>
        Effect.gen(function*() {
          const engine = yield* SessionEngine
          const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
          const events = yield* collect(engine.runTurn({ sessionId, userMessage: "hello ".repeat(200) }))
          expect(events.at(-1)!.payload).toEqual({ stopReason: "error", errorCode: "context_overflow" })
          expect(server.received).toHaveLength(0)
        }).pipe(Effect.provide(layer({ maxContextTokens: 100 }))))

      it.effect("the request carries the system prompt, transcript, tool results and tool schemas in the vendor's shape", () =>
        Effect.gen(function*() {
          replay("tool-calls", "text")
          const engine = yield* SessionEngine
          const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
          const events = yield* collect(engine.runTurn({ sessionId, userMessage: "find the TODOs" }))
          expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
          expect(server.received).toHaveLength(2)
          const second = server.received[1]!.body
          const [readId, grepId] = events.filter((e) => e.type === "model.tool_call_requested").map((e) => e.payload.toolCallId)
          if (vendor.name === "anthropic") {
            // Prompt caching is on by default: the system prompt, the last tool and the last two user messages carry a breakpoint.
            const cached = { cache_control: { type: "ephemeral" } }
            expect(second.system).toEqual([{ type: "text", text: expect.stringContaining("Working directory: /work"), ...cached }])
            expect(second.max_tokens).toBe(8192)
            expect(second.tools).toEqual([
              { name: "read_file", description: "test tool read_file", input_schema: { type: "object" } },
              { name: "grep", description: "test tool grep", input_schema: { type: "object" }, ...cached }
            ])
            expect(second.messages).toEqual([
              { role: "user", content: [{ type: "text", text: "find the TODOs", ...cached }] },
              {
                role: "assistant",
                content: [
                  { type: "text", text: "I'll read both files first." },
                  { type: "tool_use", id: readId, name: "read_file", input: { path: "src/index.ts" } },
                  { type: "tool_use", id: grepId, name: "grep", input: { pattern: "TODO", path: "src" } }
                ]
              },
              {
                role: "user",
                content: [
                  { type: "tool_result", tool_use_id: readId, content: "contents of src/index.ts", is_error: false },
                  { type: "tool_result", tool_use_id: grepId, content: expect.stringContaining("Permission denied"), is_error: true, ...cached }
                ]
              }
            ])
          } else {
            expect(second.stream_options).toEqual({ include_usage: true })
            expect(second.tools).toEqual([
              { type: "function", function: { name: "read_file", description: "test tool read_file", parameters: { type: "object" } } },
              { type: "function", function: { name: "grep", description: "test tool grep", parameters: { type: "object" } } }
            ])
            expect(second.messages).toEqual([
              { role: "system", content: expect.stringContaining("Working directory: /work") },
              { role: "user", content: "find the TODOs" },
              {
                role: "assistant",
                content: "I'll read both files first.",
                tool_calls: [
                  { id: readId, type: "function", function: { name: "read_file", arguments: JSON.stringify({ path: "src/index.ts" }) } },
                  { id: grepId, type: "function", function: { name: "grep", arguments: JSON.stringify({ pattern: "TODO", path: "src" }) } }
                ]
              },
              { role: "tool", tool_call_id: readId, content: "contents of src/index.ts" },
              { role: "tool", tool_call_id: grepId, content: expect.stringMatching(/^Error: Permission denied/) }
            ])
          }
        }).pipe(Effect.provide(layer(undefined, Layer.mergeAll(
          testTools({
            read_file: { run: (args) => Effect.succeed({ result: `contents of ${(args as { path: string }).path}` }) },
            grep: { risk: "write", run: () => Effect.succeed({ result: "never" }) }
          }),
          PermissionPolicy.layer({ mode: "readOnly" }),
          PromptComposer.layer()
        )))))

      it.effect("cancel mid-stream: the server sees the connection closed, the turn ends cancelled", () =>
        Effect.gen(function*() {
          replay("stall")
          const { closed, events } = yield* ProviderTurns.cancelledAtFirstDelta(server)
          expect(events.at(-1)!.payload).toEqual({ stopReason: "cancelled" })
          expect(closed).toBe(1)
        }).pipe(Effect.provide(layer())))
    })
  })
}
