/**
 * A response cut by the model's output limit (Anthropic `max_tokens`, OpenAI `length`) in the middle
 * of a tool call's arguments — a model writing a long file through `write_file` — must not run that
 * call, must tell the model why in words it can act on, and must not break the session: Anthropic
 * takes a `tool_use` block's `input` only as an object, so sending the cut arguments back as they
 * came (a string) made every later request of the session fail `invalid_request`. Through each
 * official SDK against a local server replaying the vendor's stream, and through the `@effect/ai`
 * bridge (`@effect/ai-anthropic` on the same Messages streams, `@effect/ai-openai` on a Responses
 * stream); the bodies the client sent next are what is asserted.
 */
import { existsSync } from "node:fs"
import { join } from "node:path"
import { beforeEach, describe, expect, it } from "@effect/vitest"
import type { RawMessageStreamEvent } from "@anthropic-ai/sdk/resources/messages"
import * as AnthropicClient from "@effect/ai-anthropic/AnthropicClient"
import * as AnthropicLanguageModel from "@effect/ai-anthropic/AnthropicLanguageModel"
import * as OpenAiClient from "@effect/ai-openai/OpenAiClient"
import * as OpenAiLanguageModel from "@effect/ai-openai/OpenAiLanguageModel"
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import * as ToolPhase from "../../src/engine/ToolPhase.js"
import * as AnthropicModelProvider from "../../src/layers/AnthropicModelProvider.js"
import * as EffectAiModelProvider from "../../src/layers/EffectAiModelProvider.js"
import * as ModelProvider from "../../src/services/ModelProvider.js"
import { collect } from "../helpers.js"
import { engine, setup, vendorLayers } from "./imageWorkspace.js"
import * as WireServer from "./WireServer.js"

const { cwd, server } = setup("cut-tool-call")
beforeEach(() => {
  server().reset()
})

const layers = vendorLayers(server)
/**
 * `@effect/ai-anthropic`'s `AnthropicLanguageModel` through the bridge, on the same Messages
 * streams: it parses a closed block's arguments itself, and failed the whole stream on cut ones.
 */
const effectAiAnthropic = () =>
  EffectAiModelProvider.layer({ model: "claude-sonnet-4-5" }).pipe(
    Layer.provide(AnthropicLanguageModel.model("claude-sonnet-4-5")),
    Layer.provide(AnthropicClient.layer({ apiKey: Redacted.make("sk-ant-effect-ai-test"), apiUrl: server().url })),
    Layer.provide(FetchHttpClient.layer)
  )
const vendors = [
  { name: "anthropic", wire: "anthropic" as const, layer: layers.anthropic, cut: "tool-use-cut" },
  { name: "openai", wire: "openai" as const, layer: layers.openai, cut: "tool-call-cut" },
  { name: "effect-ai (Anthropic)", wire: "anthropic" as const, layer: effectAiAnthropic, cut: "tool-use-cut" }
]

/** The arguments the next request sends back for the cut call (Anthropic `input`, OpenAI `arguments` parsed). */
const sentBack = (body: any): unknown => {
  for (const message of body.messages) {
    if (message.role !== "assistant") continue
    for (const block of Array.isArray(message.content) ? message.content : []) if (block.type === "tool_use") return block.input
    for (const call of message.tool_calls ?? []) return JSON.parse(call.function.arguments)
  }
  return undefined
}

for (const vendor of vendors) {
  describe(`${vendor.name}: a tool call cut by the output limit`, () => {
    it.effect("is not run; the model is told it was cut and how to go on; the next request is valid and the turn answers", () =>
      Effect.gen(function*() {
        server().respond(WireServer.recording(vendor.wire, vendor.cut), WireServer.recording(vendor.wire, "text"), WireServer.recording(vendor.wire, "text"))
        const agent = yield* SessionEngine
        const { sessionId } = yield* agent.createSession({ cwd, client: "test" })
        const events = yield* collect(agent.runTurn({ sessionId, userMessage: "write the report" }))

        const failed = events.find((e) => e.type === "tool.failed")
        expect(failed?.payload).toMatchObject({ errorCode: "invalid_arguments" })
        expect((failed!.payload as { message: string }).message).toMatch(/output limit/)
        expect((failed!.payload as { message: string }).message).toMatch(/smaller/)
        expect(events.some((e) => e.type === "tool.started")).toBe(false)
        expect(existsSync(join(cwd, "REPORT.md"))).toBe(false)
        expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })

        // The call goes back as an object (what both APIs take), with the reason as its result.
        const next = server().received[1]!.body
        const args = sentBack(next)
        expect(typeof args === "object" && args !== null && !Array.isArray(args)).toBe(true)
        expect(JSON.stringify(next)).toContain("output limit")

        // The session goes on: a later turn is sent and answered.
        const later = yield* collect(agent.runTurn({ sessionId, userMessage: "and now?" }))
        expect(later.at(-1)!.payload).toMatchObject({ stopReason: "final" })
        expect(typeof sentBack(server().received[2]!.body)).toBe("object")
      }).pipe(Effect.provide(engine(vendor.layer()))))
  })
}

/**
 * A call the limit cut before any of its arguments came: the adapters read a finished call with no
 * argument text as `{}`, which a tool with no required argument (list_dir) would run. The response
 * has a finished no-argument call first (OpenAI `{}`; an Anthropic block closed with no
 * `input_json_delta`), which runs as before, then the cut one (OpenAI: `""` when `length` came;
 * Anthropic: a block never stopped, or one closed with no `input_json_delta` — Anthropic closes the
 * block `max_tokens` cut, and `@effect/ai-anthropic` parsed it to `{}`, so the bridge ran it).
 * Hand-written after the recordings above.
 */
const cutEmpty = [
  { name: "anthropic", wire: "anthropic" as const, layer: layers.anthropic, cut: "tool-use-cut-empty", finished: "toolu_01Wc7oRf3Mx0AyU5lSk9Qn4T", cutId: "toolu_01Xd8pSg4Ny1BzV6mTl0Ro5U" },
  { name: "openai", wire: "openai" as const, layer: layers.openai, cut: "tool-call-cut-empty", finished: "call_Ew3nR7tY1uI5oP9aS2dF6gH0", cutId: "call_Jk4lZ8xC2vB6nM0qW3eR7tY1" },
  { name: "effect-ai (Anthropic)", wire: "anthropic" as const, layer: effectAiAnthropic, cut: "tool-use-cut-empty", finished: "toolu_01Wc7oRf3Mx0AyU5lSk9Qn4T", cutId: "toolu_01Xd8pSg4Ny1BzV6mTl0Ro5U" },
  { name: "anthropic, the cut block closed", wire: "anthropic" as const, layer: layers.anthropic, cut: "tool-use-cut-closed", finished: "toolu_01Wc7oRf3Mx0AyU5lSk9Qn4T", cutId: "toolu_01Xd8pSg4Ny1BzV6mTl0Ro5U" },
  { name: "effect-ai (Anthropic), the cut block closed", wire: "anthropic" as const, layer: effectAiAnthropic, cut: "tool-use-cut-closed", finished: "toolu_01Wc7oRf3Mx0AyU5lSk9Qn4T", cutId: "toolu_01Xd8pSg4Ny1BzV6mTl0Ro5U" }
]

for (const vendor of cutEmpty) {
  describe(`${vendor.name}: a tool call cut by the output limit before any argument came`, () => {
    it.effect("is not run as {}: it ends cut; the finished no-argument call before it runs", () =>
      Effect.gen(function*() {
        server().respond(WireServer.recording(vendor.wire, vendor.cut), WireServer.recording(vendor.wire, "text"))
        const agent = yield* SessionEngine
        const { sessionId } = yield* agent.createSession({ cwd, client: "test" })
        const events = yield* collect(agent.runTurn({ sessionId, userMessage: "what is here?" }))

        const of = (id: string, type: string) => events.filter((e) => e.type === type && (e.payload as { toolCallId?: string }).toolCallId === id)
        expect(of(vendor.finished, "tool.started")).toHaveLength(1)
        expect(of(vendor.finished, "tool.completed")).toHaveLength(1)
        expect(of(vendor.cutId, "tool.started")).toHaveLength(0)
        expect(of(vendor.cutId, "tool.failed").map((e) => e.payload)).toEqual([
          expect.objectContaining({ errorCode: "invalid_arguments", message: ToolPhase.cutMessage })
        ])
        expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
        // Both calls go back as objects.
        const body = JSON.stringify(server().received[1]!.body)
        expect(body).toContain("output limit")
        expect(typeof sentBack(server().received[1]!.body)).toBe("object")
      }).pipe(Effect.provide(engine(vendor.layer()))))
  })
}

/**
 * The Responses API through `@effect/ai` (`@effect/ai-openai`'s `OpenAiLanguageModel` and the
 * bridge): a cut call's item is closed `incomplete` with the arguments that came, then the response
 * ends `response.incomplete` (`incomplete_details.reason: "max_output_tokens"`). Hand-written after
 * OpenAI's documented stream events; a finished `list_dir` call comes before the cut one.
 */
describe("effect-ai (OpenAI Responses): a tool call cut by the output limit", () => {
  const bridge = () =>
    EffectAiModelProvider.layer({ model: "gpt-4.1-mini", provider: "openai" }).pipe(
      Layer.provide(OpenAiLanguageModel.layer({ model: "gpt-4.1-mini", config: { strict: false } })),
      Layer.provide(OpenAiClient.layer({ apiKey: Redacted.make("sk-effect-ai-test"), apiUrl: `${server().url}/v1` })),
      Layer.provide(FetchHttpClient.layer)
    )
  /** The arguments the next request sends back for a call (a Responses `function_call` input item). */
  const sentBackFor = (body: any, callId: string): unknown => {
    const item = (body.input as Array<any>).find((i) => i.type === "function_call" && i.call_id === callId)
    return item === undefined ? undefined : JSON.parse(item.arguments)
  }

  it.effect("is not run; the call before it runs; the model is told; the next request is valid and the turn answers", () =>
    Effect.gen(function*() {
      server().respond(WireServer.recording("openai-responses", "tool-call-cut"), WireServer.recording("openai-responses", "text"))
      const agent = yield* SessionEngine
      const { sessionId } = yield* agent.createSession({ cwd, client: "test" })
      const events = yield* collect(agent.runTurn({ sessionId, userMessage: "write the report" }))

      const of = (id: string, type: string) => events.filter((e) => e.type === type && (e.payload as { toolCallId?: string }).toolCallId === id)
      const finished = "call_Lp2oK9iJ4uH7yG1tF6rD3eS8"
      const cut = "call_Vb5nM1qW8eR3tY6uI0oP2aS4"
      expect(of(finished, "tool.completed")).toHaveLength(1)
      expect(of(cut, "tool.started")).toHaveLength(0)
      expect(of(cut, "tool.failed").map((e) => e.payload)).toEqual([
        expect.objectContaining({ errorCode: "invalid_arguments", message: ToolPhase.cutMessage })
      ])
      expect(existsSync(join(cwd, "REPORT.md"))).toBe(false)
      expect(events.some((e) => e.type === "model.retry")).toBe(false)
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
      expect(server().received).toHaveLength(2)
      const next = server().received[1]!.body
      expect(sentBackFor(next, finished)).toEqual({})
      expect(sentBackFor(next, cut)).toEqual({})
      expect(JSON.stringify(next)).toContain("output limit")
    }).pipe(Effect.provide(engine(bridge()))))
})

describe("anthropic: a tool block closed with no argument text", () => {
  const start = (index: number, id: string) => ({ type: "content_block_start", index, content_block: { type: "tool_use", id, name: "list_dir", input: {} } })
  const stop = (index: number) => ({ type: "content_block_stop", index })
  const end = (reason: string) => [{ type: "message_delta", delta: { stop_reason: reason, stop_sequence: null }, usage: { output_tokens: 10 } }, { type: "message_stop" }]
  const chunksOf = (events: ReadonlyArray<unknown>) =>
    Effect.map(Stream.runCollect(AnthropicModelProvider.toChunks(Stream.fromIterable(events as ReadonlyArray<RawMessageStreamEvent>))), Chunk.toReadonlyArray)

  it.effect("is cut when it is the last block of a response the output limit ended (Anthropic closes the block it cuts), and a finished call with none otherwise", () =>
    Effect.gen(function*() {
      // The last block, max_tokens: the limit cut it before its first byte.
      expect(yield* chunksOf([start(0, "toolu_a"), stop(0), start(1, "toolu_b"), stop(1), ...end("max_tokens")])).toEqual([
        ModelProvider.toolCall("toolu_a", "list_dir", {}),
        ModelProvider.toolCall("toolu_b", "list_dir", ""),
        ModelProvider.finish("length", { inputTokens: 0, outputTokens: 10 })
      ])
      // The model finished it: the response ended for its tool calls.
      expect(yield* chunksOf([start(0, "toolu_a"), stop(0), ...end("tool_use")])).toEqual([
        ModelProvider.toolCall("toolu_a", "list_dir", {}),
        ModelProvider.finish("tool_calls", { inputTokens: 0, outputTokens: 10 })
      ])
      // Text after it: not the last block, so finished, and handed on before the text.
      expect(yield* chunksOf([
        start(0, "toolu_a"),
        stop(0),
        { type: "content_block_start", index: 1, content_block: { type: "text", text: "" } },
        { type: "content_block_delta", index: 1, delta: { type: "text_delta", text: "and" } },
        ...end("max_tokens")
      ])).toEqual([
        ModelProvider.toolCall("toolu_a", "list_dir", {}),
        ModelProvider.textDelta("and"),
        ModelProvider.finish("length", { inputTokens: 0, outputTokens: 10 })
      ])
    }))
})

describe("effect-ai: a call closed with no argument text", () => {
  type Part = Parameters<typeof EffectAiModelProvider.toChunks>[0] extends Stream.Stream<infer A, any, any> ? A : never
  /** A call as `@effect/ai-anthropic` gives a block closed with no `input_json_delta`: started, ended, parsed to `{}`. */
  const closedEmpty = (id: string) => [
    { type: "tool-params-start", id, name: "list_dir", providerExecuted: false },
    { type: "tool-params-end", id },
    { type: "tool-call", id, name: "list_dir", params: {}, providerExecuted: false }
  ]
  const usage = { inputTokens: 1, outputTokens: 10, totalTokens: 11 }
  const finish = (reason: string) => ({ type: "finish", reason, usage })
  const chunksOf = (parts: ReadonlyArray<unknown>) =>
    Effect.map(Stream.runCollect(EffectAiModelProvider.toChunks(Stream.fromIterable(parts as ReadonlyArray<Part>))), Chunk.toReadonlyArray)
  const ended = (reason: ModelProvider.FinishReason) => ModelProvider.finish(reason, { inputTokens: 1, outputTokens: 10 })

  it.effect("is cut when it is the response's last and the response finished length; a finished call with none otherwise", () =>
    Effect.gen(function*() {
      expect(yield* chunksOf([...closedEmpty("toolu_a"), ...closedEmpty("toolu_b"), finish("length")])).toEqual([
        ModelProvider.toolCall("toolu_a", "list_dir", {}),
        ModelProvider.toolCall("toolu_b", "list_dir", ""),
        ended("length")
      ])
      expect(yield* chunksOf([...closedEmpty("toolu_a"), finish("tool-calls")])).toEqual([
        ModelProvider.toolCall("toolu_a", "list_dir", {}),
        ended("tool_calls")
      ])
      // Text after it: not the last, so finished, and handed on before the text.
      expect(yield* chunksOf([...closedEmpty("toolu_a"), { type: "text-start", id: "1" }, { type: "text-delta", id: "1", delta: "and" }, finish("length")])).toEqual([
        ModelProvider.toolCall("toolu_a", "list_dir", {}),
        ModelProvider.textDelta("and"),
        ended("length")
      ])
      // Arguments that came in deltas, or in the call alone (no tool-params-start): a finished call, as before.
      expect(yield* chunksOf([
        { type: "tool-params-start", id: "toolu_a", name: "list_dir", providerExecuted: false },
        { type: "tool-params-delta", id: "toolu_a", delta: "{}" },
        { type: "tool-call", id: "toolu_a", name: "list_dir", params: {}, providerExecuted: false },
        { type: "tool-call", id: "toolu_b", name: "list_dir", params: {}, providerExecuted: false },
        finish("length")
      ])).toEqual([ModelProvider.toolCall("toolu_a", "list_dir", {}), ModelProvider.toolCall("toolu_b", "list_dir", {}), ended("length")])
    }))
})

describe("anthropic: a tool block the stream never stopped", () => {
  it.effect("becomes a call whose arguments are what came, as a string (even none), never an empty object", () =>
    Effect.gen(function*() {
      const start = (index: number, id: string) => ({ type: "content_block_start", index, content_block: { type: "tool_use", id, name: "bash", input: {} } })
      const events = [
        start(0, "toolu_a"),
        { type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: "{\"command\": \"rm -rf bu" } },
        start(1, "toolu_b"),
        { type: "message_delta", delta: { stop_reason: "max_tokens", stop_sequence: null }, usage: { output_tokens: 10 } },
        { type: "message_stop" }
      ] as unknown as ReadonlyArray<RawMessageStreamEvent>
      const chunks = Chunk.toReadonlyArray(yield* Stream.runCollect(AnthropicModelProvider.toChunks(Stream.fromIterable(events))))
      expect(chunks).toEqual([
        ModelProvider.toolCall("toolu_a", "bash", "{\"command\": \"rm -rf bu"),
        ModelProvider.toolCall("toolu_b", "bash", ""),
        ModelProvider.finish("length", { inputTokens: 0, outputTokens: 10 })
      ])
    }))
})
