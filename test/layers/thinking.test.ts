/**
 * Anthropic extended thinking end to end: the official SDK against the wire server, replaying
 * streams in Anthropic's documented thinking format (thinking and signature deltas,
 * `redacted_thinking`). The thinking is stored (`model.thinking_delta`, `model.thinking_block`) and
 * the next request of the turn — after the tool results — and the next turns carry the blocks back,
 * unmodified, in their order, before the `tool_use`, as the API requires with thinking on. Then the
 * same through the JSONL and SQLite stores and a restart, a switch to another model (which is sent
 * none), a config the API refuses, and a hostile model's thinking.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import * as Transcript from "../../src/domain/Transcript.js"
import * as SessionEngineModule from "../../src/engine/SessionEngine.js"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import * as AnthropicModelProvider from "../../src/layers/AnthropicModelProvider.js"
import * as JsonlEventStore from "../../src/layers/JsonlEventStore.js"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as SqliteEventStore from "../../src/layers/SqliteEventStore.js"
import * as IdGenerator from "../../src/services/IdGenerator.js"
import { expectWellFormedLog, testTools } from "../helpers.js"
import * as WireStreams from "./wireStreams.js"

const server = WireStreams.serverForTests()
const { a, sse } = WireStreams

const thought = "Let me read a first, then answer."
const signature = "EqQBCkYIARgCKkD-signature-of-the-block"
const secret = "EmwKAhgBEgy3va3pzix/LafPsn4a-redacted"

/** A thinking block as the API streams it: an empty start, thinking deltas, a signature delta, a stop. */
const thinkingBlock = (index: number, text: string, signed: string | undefined = signature) => [
  { type: "content_block_start", index, content_block: { type: "thinking", thinking: "", signature: "" } },
  ...(text === "" ? [] : [
    { type: "content_block_delta", index, delta: { type: "thinking_delta", thinking: text.slice(0, 9) } },
    { type: "content_block_delta", index, delta: { type: "thinking_delta", thinking: text.slice(9) } }
  ]),
  ...(signed === undefined ? [] : [{ type: "content_block_delta", index, delta: { type: "signature_delta", signature: signed } }]),
  { type: "content_block_stop", index }
]

/** A redacted thinking block: its encrypted `data` whole in the start. */
const redactedBlock = (index: number, data: string) => [
  { type: "content_block_start", index, content_block: { type: "redacted_thinking", data } },
  { type: "content_block_stop", index }
]

/** Thinking, redacted thinking, then a call: what a model with thinking on answers a task that needs a tool. */
const thinkingThenCall = () => a.response(thinkingBlock(0, thought), redactedBlock(1, secret), a.tool(2, "toolu_1", { path: "a" }))("tool_use")

const sentThinking = [
  { type: "thinking", thinking: thought, signature },
  { type: "redacted_thinking", data: secret }
]

const readFile = () => testTools({ read_file: { run: (args) => Effect.succeed({ result: `contents of ${JSON.stringify(args)}` }) } })

const anthropic = (options: Partial<AnthropicModelProvider.Options> = {}) => () =>
  AnthropicModelProvider.layer({ apiKey: Redacted.make("k"), baseURL: server.url, model: "claude-test-a", thinkingBudget: 2048, maxOutputTokens: 4096, ...options })

/** The assistant message of a request body that holds the call `toolu_1`. */
const assistantWithCall = (body: { messages: ReadonlyArray<{ role: string; content: ReadonlyArray<{ type: string; id?: string }> }> }) =>
  body.messages.find((m) => m.role === "assistant" && m.content.some((block) => block.id === "toolu_1"))

const thinkingOf = (events: ReadonlyArray<AgentEvent>) => ({
  text: events.flatMap((e) => (e.type === "model.thinking_delta" ? [e.payload.text] : [])).join(""),
  blocks: events.flatMap((e) => (e.type === "model.thinking_block" ? [e.payload] : []))
})

describe("extended thinking through the Anthropic SDK", () => {
  it.effect("asked for, stored, and sent back before the tool_use (where they came) in the turn's next request and in the next turn's", () =>
    Effect.gen(function*() {
      server.respond(thinkingThenCall(), a.answer(), a.answer())
      const { events, sessionId } = yield* WireStreams.turn("read a")
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
      expect(server.received[0]!.body).toMatchObject({ max_tokens: 4096, thinking: { type: "enabled", budget_tokens: 2048 } })
      expect(thinkingOf(events)).toEqual({
        text: thought,
        blocks: [
          { provider: "anthropic", model: "claude-test-a", signature },
          { provider: "anthropic", model: "claude-test-a", redacted: secret }
        ]
      })
      // The step after the tool result: the assistant message starts with the blocks, unmodified, in their order.
      const second = assistantWithCall(server.received[1]!.body)!
      expect(second.content.slice(0, 2)).toEqual(sentThinking)
      expect(second.content.slice(2).map((block) => block.type)).toEqual(["tool_use"])
      // A later turn sends them again.
      yield* WireStreams.turn("and again", sessionId)
      expect(assistantWithCall(server.received[2]!.body)!.content.slice(0, 2)).toEqual(sentThinking)
      // Replay folds them into the transcript the same.
      const logged = yield* WireStreams.replay(sessionId)
      expectWellFormedLog(logged)
      const entry = Transcript.replay(logged).entries.find((e) => e.role === "assistant" && e.toolCalls.length > 0)
      expect(entry?.role === "assistant" ? entry.thinking : undefined).toEqual([
        { text: thought, provider: "anthropic", model: "claude-test-a", signature },
        { text: "", provider: "anthropic", model: "claude-test-a", redacted: secret }
      ])
    }).pipe(Effect.provide(WireStreams.engine(anthropic(), {}, readFile))))

  it.effect("a fork and a rewind carry the thinking on: their next request sends the blocks back", () =>
    Effect.gen(function*() {
      const agent = yield* SessionEngine
      server.respond(thinkingThenCall(), a.answer(), a.answer(), a.answer(), a.answer())
      const { events, sessionId } = yield* WireStreams.turn("read a")
      const endOfFirst = events.at(-1)!.sequence
      const fork = yield* agent.forkSession({ sessionId })
      yield* WireStreams.turn("in the fork", fork.sessionId)
      expect(assistantWithCall(server.received.at(-1)!.body)!.content.slice(0, 2)).toEqual(sentThinking)
      yield* WireStreams.turn("a turn to rewind", sessionId)
      yield* agent.rewindSession({ sessionId, toSequence: endOfFirst })
      yield* WireStreams.turn("after the rewind", sessionId)
      const last = server.received.at(-1)!.body
      expect(assistantWithCall(last)!.content.slice(0, 2)).toEqual(sentThinking)
      expect(JSON.stringify(last)).not.toContain("a turn to rewind")
    }).pipe(Effect.provide(WireStreams.engine(anthropic(), {}, readFile))))

  it.effect("without a budget: no thinking asked for, and a response without thinking stores and sends what it did before", () =>
    Effect.gen(function*() {
      server.respond(a.response(a.tool(0, "toolu_1", { path: "a" }))("tool_use"), a.answer())
      const { events } = yield* WireStreams.turn("read a")
      expect(server.received[0]!.body).not.toHaveProperty("thinking")
      expect(events.some((e) => e.type.startsWith("model.thinking"))).toBe(false)
      expect(assistantWithCall(server.received[1]!.body)!.content.map((block) => block.type)).toEqual(["tool_use"])
    }).pipe(Effect.provide(WireStreams.engine(anthropic({ thinkingBudget: undefined }), {}, readFile))))

  it.effect("a budget the API refuses: the layer from configuration fails as it is built, one from options fails every request unsent", () =>
    Effect.gen(function*() {
      for (const [budget, said] of [["512", /at least 1024/], ["9000", /less than the output token limit \(8192/], ["1024.5", /ANTHROPIC_THINKING_BUDGET/]] as const) {
        const built = yield* Layer.build(AnthropicModelProvider.layerConfig()).pipe(
          Effect.scoped,
          Effect.withConfigProvider(ConfigProvider.fromMap(new Map([["ANTHROPIC_API_KEY", "k"], ["ANTHROPIC_THINKING_BUDGET", budget]]))),
          Effect.exit
        )
        expect(Exit.isFailure(built)).toBe(true)
        expect(String(Exit.isFailure(built) ? built.cause : "")).toMatch(said)
      }
      const ok = yield* Layer.build(AnthropicModelProvider.layerConfig()).pipe(
        Effect.scoped,
        Effect.withConfigProvider(ConfigProvider.fromMap(new Map([["ANTHROPIC_API_KEY", "k"], ["ANTHROPIC_THINKING_BUDGET", "1024"]]))),
        Effect.exit
      )
      expect(Exit.isSuccess(ok)).toBe(true)
      expect(AnthropicModelProvider.thinkingBudgetProblem(4096, 4096)).toMatch(/less than/)
      expect(AnthropicModelProvider.thinkingBudgetProblem(4095, 4096)).toBeUndefined()
    }))

  it.effect("a budget the API refuses, from options: the turn ends invalid_request and no request is sent", () =>
    Effect.gen(function*() {
      const { events } = yield* WireStreams.turn("hi")
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "error", errorCode: "invalid_request" })
      expect(server.received).toHaveLength(0)
    }).pipe(Effect.provide(WireStreams.engine(anthropic({ thinkingBudget: 8192, maxOutputTokens: undefined })))))
})

describe("a hostile model's thinking", () => {
  it.effect("a huge thinking stream ends the turn response_too_large, as huge text does", () =>
    Effect.gen(function*() {
      const deltas = Array.from({ length: 200 }, () => ({ type: "content_block_delta", index: 0, delta: { type: "thinking_delta", thinking: "x".repeat(100) } }))
      server.respond(sse([a.start, { type: "content_block_start", index: 0, content_block: { type: "thinking", thinking: "", signature: "" } }, ...deltas]))
      const { events } = yield* WireStreams.turn("hi")
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "error", errorCode: "response_too_large" })
      expect(thinkingOf(events).text.length).toBeLessThanOrEqual(5_000)
    }).pipe(Effect.provide(WireStreams.engine(anthropic(), { maxResponse: { chars: 5_000 } }))))

  it.effect("a signature outside a thinking block signs nothing; a block of a signature alone after the text does not open the response, so the next request asks for no thinking and carries none", () =>
    Effect.gen(function*() {
      server.respond(
        a.response(
          [
            { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
            { type: "content_block_delta", index: 0, delta: { type: "signature_delta", signature: "stray" } },
            { type: "content_block_delta", index: 0, delta: { type: "thinking_delta", thinking: "stray thought" } },
            { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "ok" } },
            { type: "content_block_stop", index: 0 }
          ],
          thinkingBlock(1, ""),
          a.tool(2, "toolu_1", { path: "a" })
        )("tool_use"),
        a.answer()
      )
      const { events } = yield* WireStreams.turn("hi")
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
      expect(JSON.stringify(events)).not.toContain("stray")
      expect(thinkingOf(events)).toEqual({ text: "", blocks: [{ provider: "anthropic", model: "claude-test-a", signature }] })
      // Anthropic refuses a request with thinking on whose last assistant turn does not start with a thinking block.
      expect((server.received[1]!.body as { thinking?: unknown }).thinking).toBeUndefined()
      expect(assistantWithCall(server.received[1]!.body)!.content).toEqual([
        { type: "text", text: "ok" },
        { type: "tool_use", id: "toolu_1", name: "read_file", input: { path: "a" } }
      ])
    }).pipe(Effect.provide(WireStreams.engine(anthropic(), {}, readFile))))

  it.effect("thinking after the tool_use is kept and sent back where it was, after the tool_use (the response's order)", () =>
    Effect.gen(function*() {
      server.respond(a.response(thinkingBlock(0, "first thought"), a.tool(1, "toolu_1", { path: "a" }), thinkingBlock(2, "after the call", "sig-2"))("tool_use"), a.answer())
      const { events } = yield* WireStreams.turn("hi")
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
      expect(assistantWithCall(server.received[1]!.body)!.content.map((block) => ("signature" in block ? block.signature : block.type))).toEqual([
        signature,
        "tool_use",
        "sig-2"
      ])
    }).pipe(Effect.provide(WireStreams.engine(anthropic(), {}, readFile))))

  it.effect("a stream cut inside a thinking block: the thinking so far is stored, its block ended unsigned, and never sent back", () =>
    Effect.gen(function*() {
      server.respond(sse([
        a.start,
        { type: "content_block_start", index: 0, content_block: { type: "thinking", thinking: "", signature: "" } },
        { type: "content_block_delta", index: 0, delta: { type: "thinking_delta", thinking: "half a thou" } }
      ]), a.answer())
      const first = yield* WireStreams.turn("hi")
      expect(first.events.at(-1)!.payload).toMatchObject({ stopReason: "error" })
      expect(thinkingOf(first.events)).toEqual({ text: "half a thou", blocks: [{ provider: "anthropic", model: "claude-test-a" }] })
      yield* WireStreams.turn("again", first.sessionId)
      expect(JSON.stringify(server.received.at(-1)!.body)).not.toContain("half a thou")
      expectWellFormedLog(yield* WireStreams.replay(first.sessionId))
    }).pipe(Effect.provide(WireStreams.engine(anthropic()))))
})

describe("thinking on disk: JSONL and SQLite, a restart, another model", () => {
  for (const kind of ["jsonl", "sqlite"] as const) {
    it.effect(`${kind}: the blocks survive a restart and are sent back the same; a session continued on another model is sent none`, () =>
      Effect.gen(function*() {
        const dir = mkdtempSync(join(tmpdir(), `effect-agent-thinking-${kind}-`))
        const store = () => (kind === "sqlite" ? SqliteEventStore.layer({ filename: join(dir, "events.sqlite") }) : JsonlEventStore.layer({ dataDir: dir }))
        // Each run is an engine of its own on the same files: what the next has is what the store kept.
        const engineOn = (model: string) =>
          SessionEngineModule.layer().pipe(
            Layer.provide(store()),
            Layer.provide(IdGenerator.layer),
            Layer.provide(anthropic({ model })()),
            Layer.provide(Layer.mergeAll(readFile(), PermissionPolicy.layer({ mode: "bypass" }))),
            Layer.provide(NodeContext.layer)
          )
        try {
          server.respond(thinkingThenCall(), a.answer())
          const { sessionId } = yield* WireStreams.turn("read a", undefined, dir).pipe(Effect.provide(engineOn("claude-test-a")))
          server.respond(a.answer())
          yield* WireStreams.turn("again", sessionId).pipe(Effect.provide(engineOn("claude-test-a")))
          expect(assistantWithCall(server.received[2]!.body)!.content.slice(0, 2)).toEqual(sentThinking)
          server.respond(a.answer())
          yield* WireStreams.turn("on another model", sessionId).pipe(Effect.provide(engineOn("claude-test-b")))
          // Another model's signed blocks are not its own to continue: the call and its result stay.
          expect(assistantWithCall(server.received[3]!.body)!.content.map((block) => block.type)).toEqual(["tool_use"])
          const logged = yield* WireStreams.replay(sessionId).pipe(Effect.provide(engineOn("claude-test-a")))
          expectWellFormedLog(logged)
          expect(thinkingOf(logged).blocks).toHaveLength(2)
        } finally {
          rmSync(dir, { recursive: true, force: true })
        }
      }))
  }
})
