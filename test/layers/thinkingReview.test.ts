/**
 * Extended thinking after review (review40): a compaction inside a thinking turn (F7), a thinking
 * block restarted at its index (F2), `run`/`replay` with a block cut before its end (F1). Each case
 * failed on main before its fix.
 */
import * as LanguageModel from "@effect/ai/LanguageModel"
import type * as Response from "@effect/ai/Response"
import { describe, expect, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import * as Render from "../../src/cli/Render.js"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import * as Compaction from "../../src/domain/Compaction.js"
import * as Transcript from "../../src/domain/Transcript.js"
import * as AnthropicModelProvider from "../../src/layers/AnthropicModelProvider.js"
import * as EffectAiModelProvider from "../../src/layers/EffectAiModelProvider.js"
import type * as ModelProvider from "../../src/services/ModelProvider.js"

const ev = (turnId: string, sequence: number, type: string, payload: unknown) =>
  ({ id: "evt", sessionId: "sess_1", turnId, timestamp: "2026-11-30T00:00:00.000Z", sequence, type, payload }) as unknown as AgentEvent

/** A turn of two steps: step 1 thinks then calls, step 2 (no thinking, as a non-interleaved model answers) calls again. */
const twoSteps = (firstResult: string, secondResult: string) => {
  let t = Transcript.empty
  let seq = 1
  const add = (type: string, payload: unknown) => {
    t = Transcript.reduce(t, ev("t1", seq++, type, payload))
  }
  add("user.message", { content: "refactor it ".repeat(2_000) })
  add("model.thinking_delta", { text: "plan: read then edit" })
  add("model.thinking_block", { provider: "anthropic", model: "m", signature: "S1" })
  add("model.tool_call_requested", { toolCallId: "c1", tool: "read_file", args: { path: "a" } })
  add("tool.completed", { toolCallId: "c1", result: firstResult })
  add("model.tool_call_requested", { toolCallId: "c2", tool: "read_file", args: { path: "b" } })
  add("tool.completed", { toolCallId: "c2", result: secondResult })
  return { transcript: t, next: seq }
}

const compactedBy = (keepRecentTokens: number, firstResult: string, secondResult: string) => {
  const { next, transcript } = twoSteps(firstResult, secondResult)
  const cut = Compaction.cut(transcript, keepRecentTokens, next)!
  expect(cut).toBeDefined()
  return Transcript.compacted(transcript, { compactionId: "cmp", summary: "summary", firstKeptSequence: cut.firstKeptSequence, sequence: next, turnId: "t1" })
}

const request = (transcript: Transcript.Transcript): ModelProvider.ModelRequest => ({
  system: "",
  messages: Transcript.messages(transcript),
  tools: [{ name: "read_file", description: "", inputSchema: { type: "object" } }]
})

describe("F7: a compaction inside a thinking turn", () => {
  it("the cut keeps the turn's first thinking step when it fits, so the turn still opens with thinking", () => {
    // Step 2 alone fills the recent window; step 1 (its thinking) fits beside it.
    const t = compactedBy(2_000, "x".repeat(3_000), "y".repeat(6_000))
    const sent = AnthropicModelProvider.toMessages(Transcript.messages(t), new Map(), [{ name: "read_file" }], "m")
    const firstAssistant = sent.find((m) => m.role === "assistant")!
    expect((firstAssistant.content as Array<{ type: string }>)[0]!.type).toBe("thinking")
  })

  it("direct adapter: a request whose active assistant turn does not open with thinking asks for none (and carries none in it)", () => {
    // Step 1 is too large to keep: the kept turn opens with step 2's tool_use.
    const t = compactedBy(2_000, "x".repeat(40_000), "small")
    const body = AnthropicModelProvider.toRequest(request(t), "m", 4096, false, 2048)
    expect(body.thinking).toBeUndefined()
    const blocks = body.messages.flatMap((m) => (typeof m.content === "string" ? [] : m.content))
    expect(blocks.some((b) => b.type === "thinking" || b.type === "redacted_thinking")).toBe(false)
    // A turn that opens with thinking still asks for it.
    const whole = twoSteps("x", "y").transcript
    expect(AnthropicModelProvider.toRequest(request(whole), "m", 4096, false, 2048).thinking).toEqual({ type: "enabled", budget_tokens: 2048 })
  })

  it.effect("bridge: the same request goes with @effect/ai-anthropic's thinking turned off, and no reasoning part in the turn", () =>
    Effect.gen(function*() {
      const AnthropicConfig = Context.GenericTag<{ readonly thinking?: unknown }>("@effect/ai-anthropic/AnthropicLanguageModel/Config")
      const seen: Array<{ thinking: unknown; reasoning: boolean }> = []
      const languageModel = yield* LanguageModel.make({
        generateText: () => Effect.die("not used"),
        streamText: (options) =>
          Stream.unwrap(Effect.map(Effect.serviceOption(AnthropicConfig), (config) => {
            seen.push({
              thinking: config._tag === "Some" ? config.value.thinking : undefined,
              reasoning: options.prompt.content.some((m) => m.role === "assistant" && m.content.some((p) => p.type === "reasoning"))
            })
            return Stream.fromIterable<Response.StreamPartEncoded>([{ type: "finish", reason: "stop", usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 } }])
          }))
      })
      const provider = yield* EffectAiModelProvider.fromLanguageModel(languageModel, { provider: "anthropic", model: "m" })
      yield* Stream.runDrain(provider.stream(request(compactedBy(2_000, "x".repeat(40_000), "small"))))
      yield* Stream.runDrain(provider.stream(request(twoSteps("x", "y").transcript)))
      // A session without thinking keeps its requests as they were (a changed thinking parameter breaks the message cache).
      const plain = [
        ev("t1", 1, "user.message", { content: "go" }),
        ev("t1", 2, "model.tool_call_requested", { toolCallId: "c1", tool: "read_file", args: {} }),
        ev("t1", 3, "tool.completed", { toolCallId: "c1", result: "ok" })
      ].reduce(Transcript.reduce, Transcript.empty)
      yield* Stream.runDrain(provider.stream(request(plain)))
      expect(seen).toEqual([
        { thinking: { type: "disabled" }, reasoning: false },
        { thinking: undefined, reasoning: true },
        { thinking: undefined, reasoning: false }
      ])
    }))
})

const thinkingBlockEvents = (raw: ReadonlyArray<unknown>) =>
  Effect.map(Stream.runCollect(AnthropicModelProvider.toChunks(Stream.fromIterable(raw as never))), (chunks) => {
    let t = Transcript.empty
    let seq = 1
    for (const c of Chunk.toReadonlyArray(chunks)) {
      if (c._tag === "ThinkingDelta") t = Transcript.reduce(t, ev("t", seq++, "model.thinking_delta", { text: c.text }))
      if (c._tag === "ThinkingBlock") {
        const { _tag, ...end } = c
        t = Transcript.reduce(t, ev("t", seq++, "model.thinking_block", { provider: "anthropic", model: "m", ...end }))
      }
      if (c._tag === "TextDelta") t = Transcript.reduce(t, ev("t", seq++, "model.delta", { text: c.text }))
    }
    t = Transcript.reduce(t, ev("t", seq++, "model.delta", { text: "answer" }))
    return AnthropicModelProvider.toMessages(Transcript.messages(t), new Map(), [], "m")
      .flatMap((m) => (typeof m.content === "string" ? [] : m.content))
      .filter((b) => b.type === "thinking")
  })

const start = (index: number) => ({ type: "content_block_start", index, content_block: { type: "thinking", thinking: "", signature: "" } })
const think = (index: number, thinking: string) => ({ type: "content_block_delta", index, delta: { type: "thinking_delta", thinking } })
const sign = (index: number, signature: string) => ({ type: "content_block_delta", index, delta: { type: "signature_delta", signature } })
const messageStart = { type: "message_start", message: { usage: { input_tokens: 1, output_tokens: 1 } } }
const end = [{ type: "message_delta", delta: { stop_reason: "end_turn" }, usage: { output_tokens: 2 } }, { type: "message_stop" }]

describe("F2: a thinking block restarted at its index", () => {
  it.effect("the first block ends unsigned (shown, never sent); the second is sent back as signed", () =>
    Effect.gen(function*() {
      const blocks = yield* thinkingBlockEvents([messageStart, start(0), think(0, "AAA"), start(0), think(0, "BBB"), sign(0, "SIG-B"), { type: "content_block_stop", index: 0 }, ...end])
      expect(blocks).toEqual([{ type: "thinking", thinking: "BBB", signature: "SIG-B" }])
    }))

  it.effect("a block never stopped before the next one starts (another index) ends unsigned there: its text is not joined to the next block's", () =>
    Effect.gen(function*() {
      const blocks = yield* thinkingBlockEvents([messageStart, start(0), think(0, "AAA"), start(1), think(1, "BBB"), sign(1, "SIG-B"), { type: "content_block_stop", index: 1 }, ...end])
      expect(blocks).toEqual([{ type: "thinking", thinking: "BBB", signature: "SIG-B" }])
    }))

  it.effect("a block open at message_stop ends there, unsigned: the next response's thinking is not glued to it", () =>
    Effect.gen(function*() {
      const chunks = yield* Stream.runCollect(AnthropicModelProvider.toChunks(Stream.fromIterable([messageStart, start(0), think(0, "AAA"), sign(0, "S"), ...end] as never)))
      const tags = Chunk.toReadonlyArray(chunks).map((c) => c._tag)
      expect(tags).toEqual(["ThinkingDelta", "ThinkingBlock", "Finish"])
      expect(Chunk.toReadonlyArray(chunks)[1]).toEqual({ _tag: "ThinkingBlock" })
    }))

  it.effect("bridge: a reasoning block started again under its id ends unsigned first", () =>
    Effect.gen(function*() {
      const parts = [
        { type: "reasoning-start", id: "r" },
        { type: "reasoning-delta", id: "r", delta: "AAA" },
        { type: "reasoning-start", id: "r" },
        { type: "reasoning-delta", id: "r", delta: "BBB", metadata: { anthropic: { type: "thinking", signature: "SIG-B" } } },
        { type: "reasoning-end", id: "r" },
        { type: "reasoning-start", id: "open" },
        { type: "reasoning-delta", id: "open", delta: "CCC", metadata: { anthropic: { type: "thinking", signature: "SIG-C" } } },
        { type: "finish", reason: "stop", usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 } }
      ]
      const chunks = Chunk.toReadonlyArray(yield* Stream.runCollect(EffectAiModelProvider.toChunks(Stream.fromIterable(parts as never))))
      expect(chunks.filter((c) => c._tag !== "Finish")).toEqual([
        { _tag: "ThinkingDelta", text: "AAA" },
        { _tag: "ThinkingBlock" },
        { _tag: "ThinkingDelta", text: "BBB" },
        { _tag: "ThinkingBlock", signature: "SIG-B" },
        { _tag: "ThinkingDelta", text: "CCC" },
        { _tag: "ThinkingBlock" }
      ])
    }))
})

describe("F1: run and replay with a thinking block cut before its end", () => {
  const events = [
    ev("t1", 2, "turn.started", { promptPreview: "x" }),
    ev("t1", 3, "model.thinking_delta", { text: "OLD cut thought" }),
    ev("t1", 4, "turn.completed", { stopReason: "error", errorCode: "interrupted" }),
    ev("t2", 5, "user.message", { content: "again" }),
    ev("t2", 6, "turn.started", { promptPreview: "again" }),
    ev("t2", 7, "model.thinking_delta", { text: "NEW thought" }),
    ev("t2", 8, "model.thinking_block", { provider: "anthropic", model: "m", signature: "S" }),
    ev("t2", 9, "model.thinking_delta", { text: "before text" }),
    ev("t2", 10, "model.delta", { text: "the answer" }),
    ev("t2", 11, "turn.completed", { stopReason: "final" })
  ]
  const rendered = (transcript: boolean) => {
    const w = { out: "", err: "" }
    const r = Render.make({ out: (t) => (w.out += t), err: (t) => (w.err += t) }, { transcript })
    for (const e of events) r.event(e)
    return w
  }
  it("run: each block its own line, said when the block ends however it ends", () => {
    const err = rendered(false).err
    expect(err).toContain("  ✻ OLD cut thought\n")
    expect(err).toContain("  ✻ NEW thought\n  ✻ before text\n")
  })
  it("replay: the cut block in its own turn, before what ended it", () => {
    const out = rendered(true).out
    expect(out.startsWith("  ✻ OLD cut thought\n")).toBe(true)
    expect(out).toContain("> again\n  ✻ NEW thought\n  ✻ before text\nthe answer\n")
  })
})

describe("review42: a turn whose sent thinking does not open the response", () => {
  it("a cut first block, then text and a signed block: the request asks for no thinking (Anthropic refuses a final assistant message that does not start with thinking)", () => {
    let t = Transcript.empty
    let seq = 1
    const add = (type: string, payload: unknown) => {
      t = Transcript.reduce(t, ev("t1", seq++, type, payload))
    }
    add("user.message", { content: "go" })
    add("model.thinking_delta", { text: "first, cut" })
    add("model.thinking_block", { provider: "anthropic", model: "m" }) // ended unsigned: never sent
    add("model.delta", { text: "Let me look." })
    add("model.thinking_delta", { text: "second" })
    add("model.thinking_block", { provider: "anthropic", model: "m", signature: "S2" })
    add("model.tool_call_requested", { toolCallId: "c1", tool: "read_file", args: { path: "a" } })
    add("tool.completed", { toolCallId: "c1", result: "x" })
    const body = AnthropicModelProvider.toRequest(request(t), "m", 4096, false, 2048)
    const assistant = body.messages.find((m) => m.role === "assistant")!
    expect(body.thinking).toBeUndefined()
    expect((assistant.content as Array<{ type: string }>).map((block) => block.type)).toEqual(["text", "tool_use"])
  })
})
