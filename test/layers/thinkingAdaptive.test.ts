/**
 * Adaptive thinking (`thinking: {type: "adaptive"}`), its display and the effort, against the wire
 * server through the real SDK: what each request asks for, and the unlucky and hostile responses an
 * adaptive model gives — none at all, thinking in some steps only, omitted display (signed blocks
 * with no text), such a block cut, a redacted block.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import * as Transcript from "../../src/domain/Transcript.js"
import * as AnthropicModelProvider from "../../src/layers/AnthropicModelProvider.js"
import { expectWellFormedLog } from "../helpers.js"
import * as WireStreams from "./wireStreams.js"

const server = WireStreams.serverForTests()
const { a } = WireStreams

const adaptive = (options: Partial<AnthropicModelProvider.Options> = {}) => () =>
  AnthropicModelProvider.layer({ apiKey: Redacted.make("k"), baseURL: server.url, thinking: "adaptive", ...options })

/** A signed thinking block at `index`; `text` "" is one of omitted display (a signature, no thinking delta). */
const signedBlock = (index: number, text: string, signature: string) => [
  { type: "content_block_start", index, content_block: { type: "thinking", thinking: "", signature: "" } },
  ...(text === "" ? [] : [{ type: "content_block_delta", index, delta: { type: "thinking_delta", thinking: text } }]),
  { type: "content_block_delta", index, delta: { type: "signature_delta", signature } },
  { type: "content_block_stop", index }
]

type Block = { readonly type: string; readonly thinking?: string; readonly signature?: string; readonly data?: string; readonly id?: string }
/** The assistant messages of the request `i`, each as its blocks. */
const assistants = (i: number): ReadonlyArray<ReadonlyArray<Block>> =>
  server.received[i]!.body.messages.filter((m: { role: string }) => m.role === "assistant").map((m: { content: ReadonlyArray<Block> }) => m.content)
const ofType = (events: ReadonlyArray<AgentEvent>, type: string) => events.filter((e) => e.type === type).map((e) => e.payload)

describe("adaptive thinking: the options, checked before any request", () => {
  const check = (options: Partial<AnthropicModelProvider.Options>) =>
    Either.match(AnthropicModelProvider.checkedThinking({ apiKey: Redacted.make("k"), ...options }), { onLeft: (e) => e.message, onRight: () => "ok" })
  it("adaptive and a budget exclude each other; a display needs thinking; unknown values are named", () => {
    expect(check({ thinking: "adaptive" })).toBe("ok")
    expect(check({ thinking: "adaptive", thinkingDisplay: "omitted", effort: "low" })).toBe("ok")
    expect(check({ thinkingBudget: 2048, thinkingDisplay: "summarized" })).toBe("ok")
    expect(check({ effort: "high" })).toBe("ok")
    expect(check({ thinking: "adaptive", thinkingBudget: 2048 })).toMatch(/adaptive thinking has no budget/)
    expect(check({ thinkingDisplay: "omitted" })).toMatch(/a thinking display needs thinking asked for/)
    expect(check({ thinking: "enabled" as "adaptive" })).toMatch(/must be "adaptive"/)
    expect(check({ thinking: "adaptive", thinkingDisplay: "full" as "omitted" })).toMatch(/must be one of summarized, omitted/)
    expect(check({ effort: "extreme" as "max" })).toMatch(/must be one of low, medium, high, xhigh, max/)
  })

  it.effect("a provider made with both fails every request invalid_request, none sent", () =>
    Effect.gen(function*() {
      const { events } = yield* WireStreams.turn("hi")
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "error", errorCode: "invalid_request" })
      expect(server.received).toHaveLength(0)
    }).pipe(Effect.provide(WireStreams.engine(adaptive({ thinkingBudget: 2048 })))))

  it.effect("layerConfig refuses both from the environment as it is built", () =>
    Effect.gen(function*() {
      const { ConfigProvider } = yield* Effect.promise(() => import("effect"))
      const built = yield* Layer.build(AnthropicModelProvider.layerConfig()).pipe(
        Effect.scoped,
        Effect.withConfigProvider(ConfigProvider.fromMap(new Map([["ANTHROPIC_API_KEY", "k"], ["ANTHROPIC_THINKING", "adaptive"], ["ANTHROPIC_THINKING_BUDGET", "2048"]]))),
        Effect.either
      )
      expect(Either.isLeft(built) ? String(built.left) : "built").toMatch(/adaptive thinking has no budget/)
      const read = yield* AnthropicModelProvider.config.pipe(
        Effect.withConfigProvider(ConfigProvider.fromMap(new Map([["ANTHROPIC_API_KEY", "k"], ["ANTHROPIC_THINKING", "adaptive"], ["ANTHROPIC_THINKING_DISPLAY", "omitted"], ["ANTHROPIC_EFFORT", "low"]])))
      )
      expect(read).toMatchObject({ thinking: "adaptive", thinkingDisplay: "omitted", effort: "low" })
      expect("thinkingBudget" in read).toBe(false)
    }))
})

describe("adaptive thinking on the wire", () => {
  it.effect("every request asks for it, with the display and the effort; a response with no thinking at all is an answer like any", () =>
    Effect.gen(function*() {
      server.respond(a.response(a.tool(0, "toolu_1", { path: "a" }))("tool_use"), a.answer())
      const { events, sessionId } = yield* WireStreams.turn("read a")
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
      expect(ofType(events, "model.thinking_block")).toEqual([])
      for (const request of server.received) {
        expect(request.body.thinking).toEqual({ type: "adaptive", display: "summarized" })
        expect(request.body.output_config).toEqual({ effort: "medium" })
      }
      expect(assistants(1)[0]!.map((b) => b.type)).toEqual(["tool_use"])
      expectWellFormedLog(yield* WireStreams.replay(sessionId))
    }).pipe(Effect.provide(WireStreams.engine(adaptive({ thinkingDisplay: "summarized", effort: "medium" })))))

  it.effect("thinking in some steps only: the turn keeps asking for adaptive (never disabled mid-turn) and sends each block back in place", () =>
    Effect.gen(function*() {
      server.respond(
        a.response(a.text(0, "Looking."), a.tool(1, "toolu_1", { path: "a" }))("tool_use"),
        a.response(signedBlock(0, "hmm", "S2"), a.tool(1, "toolu_2", { path: "b" }))("tool_use"),
        a.answer()
      )
      const { events, sessionId } = yield* WireStreams.turn("read a then b")
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
      expect(server.received.map((r) => r.body.thinking)).toEqual([{ type: "adaptive" }, { type: "adaptive" }, { type: "adaptive" }])
      expect(server.received.every((r) => r.body.output_config === undefined)).toBe(true)
      const [first, second] = assistants(2)
      expect(first!.map((b) => b.type)).toEqual(["text", "tool_use"])
      expect(second).toEqual([{ type: "thinking", thinking: "hmm", signature: "S2" }, expect.objectContaining({ type: "tool_use", id: "toolu_2" })])
      expectWellFormedLog(yield* WireStreams.replay(sessionId))
    }).pipe(Effect.provide(WireStreams.engine(adaptive()))))

  it.effect("omitted display: a signed block with no text is stored, no thinking delta, and goes back unmodified (empty thinking, its signature)", () =>
    Effect.gen(function*() {
      server.respond(a.response(signedBlock(0, "", "OMITTED-SIG"), a.tool(1, "toolu_1", { path: "a" }))("tool_use"), a.answer())
      const { events, sessionId } = yield* WireStreams.turn("read a")
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
      expect(ofType(events, "model.thinking_delta")).toEqual([])
      expect(ofType(events, "model.thinking_block")).toEqual([{ provider: "anthropic", model: AnthropicModelProvider.defaultModel, signature: "OMITTED-SIG" }])
      expect(server.received[0]!.body.thinking).toEqual({ type: "adaptive", display: "omitted" })
      expect(assistants(1)[0]).toEqual([{ type: "thinking", thinking: "", signature: "OMITTED-SIG" }, expect.objectContaining({ type: "tool_use", id: "toolu_1" })])
      // A restart reads the same block from the log.
      const replayed = Transcript.messages(Transcript.replay(yield* WireStreams.replay(sessionId)))
      expect(replayed.find((m) => m.role === "assistant" && m.thinking !== undefined)).toMatchObject({ thinking: [{ text: "", signature: "OMITTED-SIG" }] })
    }).pipe(Effect.provide(WireStreams.engine(adaptive({ thinkingDisplay: "omitted" })))))

  it.effect("a fork and a rewind carry an omitted block on: their next requests ask for adaptive and send it back", () =>
    Effect.gen(function*() {
      const agent = yield* SessionEngine
      server.respond(a.response(signedBlock(0, "", "OMITTED-SIG"), a.tool(1, "toolu_1", { path: "a" }))("tool_use"), a.answer(), a.answer(), a.answer(), a.answer())
      const { events, sessionId } = yield* WireStreams.turn("read a")
      const fork = yield* agent.forkSession({ sessionId })
      yield* WireStreams.turn("in the fork", fork.sessionId)
      yield* WireStreams.turn("a turn to rewind", sessionId)
      yield* agent.rewindSession({ sessionId, toSequence: events.at(-1)!.sequence })
      yield* WireStreams.turn("after the rewind", sessionId)
      for (const i of [2, 4]) {
        expect(server.received[i]!.body.thinking).toEqual({ type: "adaptive", display: "omitted" })
        expect(assistants(i)[0]![0]).toEqual({ type: "thinking", thinking: "", signature: "OMITTED-SIG" })
      }
      expect(JSON.stringify(server.received[4]!.body)).not.toContain("a turn to rewind")
    }).pipe(Effect.provide(WireStreams.engine(adaptive({ thinkingDisplay: "omitted" })))))

  it.effect("an omitted-display block cut mid-stream (open when the next block starts, half its signature) is stored unsigned and never sent", () =>
    Effect.gen(function*() {
      server.respond(
        a.response(
          [
            { type: "content_block_start", index: 0, content_block: { type: "thinking", thinking: "", signature: "" } },
            { type: "content_block_delta", index: 0, delta: { type: "signature_delta", signature: "HALF-A-SIG" } }
          ],
          a.tool(1, "toolu_1", { path: "a" })
        )("tool_use"),
        a.answer()
      )
      const { events, sessionId } = yield* WireStreams.turn("read a")
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
      expect(ofType(events, "model.thinking_block")).toEqual([{ provider: "anthropic", model: AnthropicModelProvider.defaultModel }])
      expect(JSON.stringify(server.received[1]!.body)).not.toContain("HALF-A-SIG")
      expect(assistants(1)[0]!.map((b) => b.type)).toEqual(["tool_use"])
      expect(server.received[1]!.body.thinking).toEqual({ type: "adaptive", display: "omitted" })
      expectWellFormedLog(yield* WireStreams.replay(sessionId))
    }).pipe(Effect.provide(WireStreams.engine(adaptive({ thinkingDisplay: "omitted" })))))

  it.effect("an omitted-display block the connection cut inside (no stop, no message_stop): nothing of it is ever sent, the log well-formed", () =>
    Effect.gen(function*() {
      server.respond(
        WireStreams.sse([
          a.start,
          { type: "content_block_start", index: 0, content_block: { type: "thinking", thinking: "", signature: "" } },
          { type: "content_block_delta", index: 0, delta: { type: "signature_delta", signature: "HALF-A-SIG" } }
        ]),
        a.answer(),
        a.answer()
      )
      const { events, sessionId } = yield* WireStreams.turn("hi")
      const again = yield* WireStreams.turn("again", sessionId)
      expect(again.events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
      expect(ofType([...events, ...again.events], "model.thinking_block").every((block) => !("signature" in (block as object)))).toBe(true)
      for (const request of server.received) expect(JSON.stringify(request.body)).not.toContain("HALF-A-SIG")
      expectWellFormedLog(yield* WireStreams.replay(sessionId))
    }).pipe(Effect.provide(WireStreams.engine(adaptive({ thinkingDisplay: "omitted" })))))

  it.effect("a redacted_thinking block under adaptive goes back as received, in place, after the step's text", () =>
    Effect.gen(function*() {
      server.respond(
        a.response(
          a.text(0, "First."),
          [{ type: "content_block_start", index: 1, content_block: { type: "redacted_thinking", data: "REDACTED-DATA" } }, { type: "content_block_stop", index: 1 }],
          a.tool(2, "toolu_1", { path: "a" })
        )("tool_use"),
        a.answer()
      )
      const { events } = yield* WireStreams.turn("read a")
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
      expect(assistants(1)[0]).toEqual([
        { type: "text", text: "First." },
        { type: "redacted_thinking", data: "REDACTED-DATA" },
        expect.objectContaining({ type: "tool_use", id: "toolu_1" })
      ])
      expect(server.received[1]!.body.thinking).toEqual({ type: "adaptive" })
    }).pipe(Effect.provide(WireStreams.engine(adaptive()))))
})

describe("adaptive thinking after a compaction took the turn's first step", () => {
  const ev = (sequence: number, type: string, payload: unknown) =>
    ({ id: `evt_${sequence}`, sessionId: "sess_1", turnId: "t1", timestamp: "t", sequence, type, payload }) as unknown as AgentEvent
  const model = "claude-opus-4-7"
  const events = [
    ev(1, "user.message", { content: "refactor it" }),
    ev(2, "model.thinking_delta", { text: "plan" }),
    ev(3, "model.thinking_block", { provider: "anthropic", model, signature: "S1" }),
    ev(4, "model.tool_call_requested", { toolCallId: "c1", tool: "read_file", args: { path: "a" } }),
    ev(5, "tool.completed", { toolCallId: "c1", result: "x" }),
    ev(6, "model.delta", { text: "Now b." }),
    ev(7, "model.thinking_delta", { text: "next" }),
    ev(8, "model.thinking_block", { provider: "anthropic", model, signature: "S2" }),
    ev(9, "model.tool_call_requested", { toolCallId: "c2", tool: "read_file", args: { path: "b" } }),
    ev(10, "tool.completed", { toolCallId: "c2", result: "y" })
  ]
  const cut = Transcript.compacted(Transcript.replay(events), { compactionId: "k", summary: "s", firstKeptSequence: 6, sequence: 11, turnId: "t1" })
  const request = { system: "", messages: Transcript.messages(cut), tools: [{ name: "read_file", description: "", inputSchema: { type: "object" } }] }

  // The kept step thought after its text (interleaved): under a budget the turn no longer opens with thinking.
  it("asks for adaptive still (a change mid-turn is refused) and sends the kept step's block in place; a budget asks for none", () => {
    const body = AnthropicModelProvider.toRequest(request, model, 8192, false, { thinking: "adaptive" })
    expect(body.thinking).toEqual({ type: "adaptive" })
    expect(body.messages.find((m) => m.role === "assistant")!.content).toEqual([
      { type: "text", text: "Now b." },
      { type: "thinking", thinking: "next", signature: "S2" },
      expect.objectContaining({ type: "tool_use", id: "c2" })
    ])
    const budgeted = AnthropicModelProvider.toRequest(request, model, 8192, false, 2048)
    expect(budgeted.thinking).toBeUndefined()
    expect(JSON.stringify(budgeted.messages)).not.toContain("S2")
  })
})
