/**
 * An endpoint that turns extended thinking on by itself: its response has signed `thinking` blocks
 * before a `tool_use`, and it refuses a next request that has the call and its result but not the
 * thinking. The Anthropic adapter and the `@effect/ai` bridge store the thinking and send it back, so
 * the turn goes on; a refusal all the same (the request lost it: a summary, another model) ends the
 * turn with a typed failure whose log line says why and what to do.
 */
import * as AnthropicClient from "@effect/ai-anthropic/AnthropicClient"
import * as AnthropicLanguageModel from "@effect/ai-anthropic/AnthropicLanguageModel"
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as HashMap from "effect/HashMap"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import * as Transcript from "../../src/domain/Transcript.js"
import * as EffectAiModelProvider from "../../src/layers/EffectAiModelProvider.js"
import { ModelProvider } from "../../src/services/ModelProvider.js"
import { expectWellFormedLog } from "../helpers.js"
import * as WireStreams from "./wireStreams.js"

const server = WireStreams.serverForTests()

const { anthropic, effectAiAnthropic } = WireStreams.vendorLayers(() => server)
const { a, sse } = WireStreams

const thought = "SECRET-THOUGHT"

/** Thinking with its signature, then a call: what an endpoint with thinking on answers. */
const thinkingThenCall = () =>
  sse([
    a.start,
    { type: "content_block_start", index: 0, content_block: { type: "thinking", thinking: "", signature: "" } },
    { type: "content_block_delta", index: 0, delta: { type: "thinking_delta", thinking: thought } },
    { type: "content_block_delta", index: 0, delta: { type: "signature_delta", signature: "EqQBCkYIARgCKkD-signature" } },
    { type: "content_block_stop", index: 0 },
    { type: "content_block_start", index: 1, content_block: { type: "redacted_thinking", data: "REDACTED-DATA" } },
    { type: "content_block_stop", index: 1 },
    ...a.tool(2, "toolu_1", { path: "a" }),
    ...a.end("tool_use")
  ])

/** Anthropic's answer to a request whose last assistant message starts with `tool_use` while thinking is on. */
const thinkingRequired = {
  status: 400,
  headers: { "content-type": "application/json", "request-id": "req_1" },
  body: JSON.stringify({
    type: "error",
    error: {
      type: "invalid_request_error",
      message: "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`. When `thinking` is enabled, " +
        "a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). " +
        "We recommend you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`."
    },
    request_id: "req_1"
  })
}

describe("an endpoint that turns thinking on by itself, then wants the thinking back", () => {
  for (const vendor of [{ name: "anthropic", layer: anthropic }, { name: "effect-ai (Anthropic)", layer: effectAiAnthropic }]) {
    it.effect(`${vendor.name}: the thinking is stored and sent back, signed, before the call; the turn ends final`, () =>
      Effect.gen(function*() {
        server.respond(thinkingThenCall(), a.answer())
        const { events, sessionId } = yield* WireStreams.turn("read a")
        expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
        expect(events.filter((e) => e.type === "model.thinking_delta").map((e) => e.payload)).toEqual([{ text: thought }])
        const assistant = server.received[1]!.body.messages.find((m: { role: string }) => m.role === "assistant")
        expect(assistant.content[0]).toEqual({ type: "thinking", thinking: thought, signature: "EqQBCkYIARgCKkD-signature" })
        expect(assistant.content[1]).toEqual({ type: "redacted_thinking", data: "REDACTED-DATA" })
        expect(assistant.content[2]).toMatchObject({ type: "tool_use", id: "toolu_1" })
        expectWellFormedLog(yield* WireStreams.replay(sessionId))
      }).pipe(Effect.provide(WireStreams.engine(vendor.layer))))

    it.effect(`${vendor.name}: a request refused for want of thinking (a summary took it) ends invalid_request, the log line naming thinking`, () =>
      Effect.gen(function*() {
        const warnings: Array<string> = []
        const capture = Logger.replace(Logger.defaultLogger, Logger.make(({ annotations, message }) => {
          warnings.push(`${JSON.stringify(message)} ${HashMap.toEntries(annotations).map(([k, v]) => `${k}=${String(v)}`).join(" ")}`)
        }))
        server.respond(thinkingThenCall(), thinkingRequired)
        const { events, sessionId } = yield* WireStreams.turn("read a").pipe(Effect.provide(capture))
        expect(events.at(-1)!.payload).toMatchObject({ stopReason: "error", errorCode: "invalid_request" })
        expect(events.filter((e) => e.type === "tool.completed").map((e) => e.payload.toolCallId)).toEqual(["toolu_1"])
        expect(server.received).toHaveLength(2)
        const failed = warnings.filter((line) => line.includes("model provider failed"))
        expect(failed).toHaveLength(1)
        expect(failed[0]).toMatch(/extended thinking on/)
        expect(failed[0]).toMatch(/turn thinking off at the endpoint/)
        expect(failed[0]).not.toContain(thought)
        expectWellFormedLog(yield* WireStreams.replay(sessionId))
      }).pipe(Effect.provide(WireStreams.engine(vendor.layer))))
  }
})

/** A signed thinking block at `index`. */
const signedBlock = (index: number, text: string, signature: string) => [
  { type: "content_block_start", index, content_block: { type: "thinking", thinking: "", signature: "" } },
  { type: "content_block_delta", index, delta: { type: "thinking_delta", thinking: text } },
  { type: "content_block_delta", index, delta: { type: "signature_delta", signature } },
  { type: "content_block_stop", index }
]

describe("interleaved thinking (an endpoint with the beta header, or one that interleaves unasked)", () => {
  for (const vendor of [{ name: "anthropic", layer: anthropic }, { name: "effect-ai (Anthropic)", layer: effectAiAnthropic }]) {
    it.effect(`${vendor.name}: [thinking, text, thinking, tool_use, thinking, tool_use] goes back as received; replay folds the same places`, () =>
      Effect.gen(function*() {
        server.respond(
          a.response(
            signedBlock(0, "T1", "S1"),
            a.text(1, "Let me look."),
            signedBlock(2, "T2", "S2"),
            a.tool(3, "toolu_1", { path: "a" }),
            signedBlock(4, "T3", "S3"),
            a.tool(5, "toolu_2", { path: "b" })
          )("tool_use"),
          a.answer()
        )
        const { events, sessionId } = yield* WireStreams.turn("read a")
        expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
        const assistant = server.received[1]!.body.messages.find((m: { role: string }) => m.role === "assistant")
        expect(assistant.content.map((b: { type: string; thinking?: string }) => b.thinking ?? b.type)).toEqual(["T1", "text", "T2", "tool_use", "T3", "tool_use"])
        expect(assistant.content[2]).toEqual({ type: "thinking", thinking: "T2", signature: "S2" })
        const logged = yield* WireStreams.replay(sessionId)
        expectWellFormedLog(logged)
        const entry = Transcript.replay(logged).entries.find((e) => e.role === "assistant" && e.toolCalls.length > 0)
        expect(entry?.role === "assistant" ? entry.thinking?.map((b) => b.at) : undefined).toEqual([undefined, { text: "Let me look.".length, calls: 0 }, { text: "Let me look.".length, calls: 1 }])
      }).pipe(Effect.provide(WireStreams.engine(vendor.layer))))
  }
})

describe("the bridge turns thinking off mid-turn: the body @effect/ai-anthropic sends", () => {
  const model = "claude-sonnet-4-5"
  // A model whose own config asks for thinking, as an embedder's would.
  const provider = () =>
    EffectAiModelProvider.layer({ model }).pipe(
      Layer.provide(AnthropicLanguageModel.model(model, { max_tokens: 4096, thinking: { type: "enabled", budget_tokens: 2048 } })),
      Layer.provide(AnthropicClient.layer({ apiKey: Redacted.make("k"), apiUrl: server.url })),
      Layer.provide(FetchHttpClient.layer)
    )
  const ev = (sequence: number, type: string, payload: unknown) =>
    ({ id: `evt_${sequence}`, sessionId: "sess_1", turnId: "t1", timestamp: "t", sequence, type, payload }) as unknown as AgentEvent
  /** A turn that thought in its first step, then called again without; `summarised`: a compaction took the first step away. */
  const request = (summarised: boolean) => {
    const events = [
      ev(1, "user.message", { content: "refactor it" }),
      ev(2, "model.thinking_delta", { text: "plan" }),
      ev(3, "model.thinking_block", { provider: "anthropic", model, signature: "S1" }),
      ev(4, "model.tool_call_requested", { toolCallId: "c1", tool: "read_file", args: { path: "a" } }),
      ev(5, "tool.completed", { toolCallId: "c1", result: "x" }),
      ev(6, "model.tool_call_requested", { toolCallId: "c2", tool: "read_file", args: { path: "b" } }),
      ev(7, "tool.completed", { toolCallId: "c2", result: "y" })
    ]
    const whole = Transcript.replay(events)
    const transcript = summarised ? Transcript.compacted(whole, { compactionId: "k", summary: "s", firstKeptSequence: 6, sequence: 8, turnId: "t1" }) : whole
    return { system: "", messages: Transcript.messages(transcript), tools: [{ name: "read_file", description: "", inputSchema: { type: "object" } }] }
  }
  it.effect("a turn whose thinking step a summary took asks for thinking disabled and carries no thinking; one that opens with thinking keeps it", () =>
    Effect.gen(function*() {
      const models = yield* ModelProvider
      server.respond(a.answer(), a.answer())
      yield* Stream.runDrain(models.stream(request(true)))
      yield* Stream.runDrain(models.stream(request(false)))
      const [cut, whole] = server.received.map((r) => r.body)
      expect(cut.thinking).toEqual({ type: "disabled" })
      expect(JSON.stringify(cut.messages)).not.toMatch(/"thinking"/)
      expect(cut.messages.find((m: { role: string }) => m.role === "assistant").content[0]).toMatchObject({ type: "tool_use", id: "c2" })
      expect(whole.thinking).toEqual({ type: "enabled", budget_tokens: 2048 })
      expect(whole.messages.find((m: { role: string }) => m.role === "assistant").content[0]).toEqual({ type: "thinking", thinking: "plan", signature: "S1" })
    }).pipe(Effect.provide(provider())))
})
