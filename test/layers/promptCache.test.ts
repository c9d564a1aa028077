/**
 * What a turn costs and prompt caching, end to end through the official SDKs against the local
 * replay server: recorded streams that report cache reads and writes, the cache breakpoints the
 * Anthropic request carries (and none when caching is off), each response's `model.usage`, the
 * turn's cost from an overridden price table, an unknown model, and a `cache.break` caused by an
 * edit of AGENTS.md between two turns.
 */
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import type { AgentEvent, EventOfType } from "../../src/domain/AgentEvent.js"
import * as SessionEngineModule from "../../src/engine/SessionEngine.js"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import * as AnthropicModelProvider from "../../src/layers/AnthropicModelProvider.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import * as OpenAiModelProvider from "../../src/layers/OpenAiModelProvider.js"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as PromptComposer from "../../src/layers/PromptComposer.js"
import * as IdGenerator from "../../src/services/IdGenerator.js"
import type { ModelProvider } from "../../src/services/ModelProvider.js"
import { collect, expectWellFormedLog, testTools } from "../helpers.js"
import * as WireServer from "./WireServer.js"

let server: WireServer.WireServer
beforeAll(async () => {
  server = await WireServer.start()
})
afterAll(() => server.close())
beforeEach(() => {
  server.received.length = 0
})

const made: Array<string> = []
afterEach(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true })
})

/** A workspace (real path, no repository above it) with an AGENTS.md. */
const workspace = (rules: string) => {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "effect-agent-cache-")))
  made.push(dir)
  writeFileSync(join(dir, "AGENTS.md"), rules)
  return dir
}

const tools = testTools({ read_file: { run: () => Effect.succeed({ result: "contents" }) } })

const engine = (model: Layer.Layer<ModelProvider>, options: SessionEngineModule.Options = {}) =>
  SessionEngineModule.layer(options).pipe(
    Layer.provide(MemoryEventStore.layer),
    Layer.provide(IdGenerator.layerSequential),
    Layer.provide(model),
    Layer.provide(tools),
    Layer.provide(PermissionPolicy.layer({ mode: "bypass" })),
    Layer.provide(PromptComposer.layer({})),
    Layer.provide(NodeContext.layer)
  )

const anthropic = (extra: Partial<AnthropicModelProvider.Options> = {}) =>
  Layer.suspend(() => AnthropicModelProvider.layer({ apiKey: Redacted.make("sk-ant-test"), baseURL: server.url, model: "claude-haiku-4-5", ...extra }))
const openai = (extra: Partial<OpenAiModelProvider.Options> = {}) =>
  Layer.suspend(() => OpenAiModelProvider.layer({ apiKey: Redacted.make("sk-openai-test"), baseURL: `${server.url}/v1`, ...extra }))

const replay = (vendor: "anthropic" | "openai", ...names: ReadonlyArray<string>) => server.respond(...names.map((n) => WireServer.recording(vendor, n)))

/** Runs turns in one session at `cwd`, `between` after each turn but the last; returns the whole log. */
const session = (cwd: string, messages: ReadonlyArray<string>, between: (i: number) => void = () => {}) =>
  Effect.gen(function*() {
    const agent = yield* SessionEngine
    const { sessionId } = yield* agent.createSession({ cwd, client: "test" })
    for (const [i, message] of messages.entries()) {
      yield* collect(agent.runTurn({ sessionId, userMessage: message }))
      if (i < messages.length - 1) between(i)
    }
    return yield* collect(agent.replaySession({ sessionId }))
  })

const ofType = <T extends AgentEvent["type"]>(events: ReadonlyArray<AgentEvent>, type: T) =>
  events.filter((e): e is EventOfType<T> => e.type === type)

/** Every `cache_control` in a request body, by where it sits. */
const breakpoints = (body: any): Array<string> => {
  const found: Array<string> = []
  body.tools?.forEach((t: any) => t.cache_control !== undefined && found.push(`tool:${t.name}`))
  if (Array.isArray(body.system)) body.system.forEach((b: any) => b.cache_control !== undefined && found.push("system"))
  body.messages.forEach((m: any, i: number) =>
    Array.isArray(m.content) && m.content.forEach((b: any) => b.cache_control !== undefined && found.push(`message:${i}:${b.type}`)))
  return found
}

describe("Anthropic prompt caching", () => {
  it.effect("on by default: breakpoints on the last tool, the system prompt and the last two user messages — four, as the API allows", () =>
    Effect.gen(function*() {
      const cwd = workspace("Use tabs.")
      replay("anthropic", "cache-write", "cache-read", "cache-read")
      yield* session(cwd, ["one", "two", "three"]).pipe(Effect.provide(engine(anthropic())))
      const [first, , third] = server.received.map((r) => r.body)
      expect(breakpoints(first)).toEqual(["tool:read_file", "system", "message:0:text"])
      expect(first.system[0]).toMatchObject({ type: "text", text: expect.stringContaining("Use tabs."), cache_control: { type: "ephemeral" } })
      // Turn 3 sends 5 messages: user, assistant, user, assistant, user — the last two users are marked.
      expect(third.messages).toHaveLength(5)
      expect(breakpoints(third)).toEqual(["tool:read_file", "system", "message:2:text", "message:4:text"])
    }))

  it.effect("turned off (the provider's option): the request carries no cache_control at all; cached tokens are still recorded", () =>
    Effect.gen(function*() {
      const cwd = workspace("Use tabs.")
      replay("anthropic", "cache-read")
      const log = yield* session(cwd, ["one"]).pipe(Effect.provide(engine(anthropic({ promptCaching: false }))))
      expect(JSON.stringify(server.received[0]!.body)).not.toContain("cache_control")
      expect(typeof server.received[0]!.body.system).toBe("string")
      expect(ofType(log, "model.usage")[0]!.payload.usage).toEqual({ inputTokens: 9, outputTokens: 5, cacheReadTokens: 2048, cacheWriteTokens: 37 })
    }))
})

describe("usage and cost", () => {
  it.effect("each response records its usage with cache reads and writes, the model, and its parts; turn.completed totals them and prices them with the overridden table", () =>
    Effect.gen(function*() {
      const cwd = workspace("Use tabs.")
      replay("anthropic", "cache-write", "cache-read")
      // Prices of our own (dollars per million tokens), over the built-in table.
      const prices = { "claude-haiku-4-5": { input: 10, output: 100, cacheRead: 1, cacheWrite: 20 } }
      const log = yield* session(cwd, ["one", "two"]).pipe(Effect.provide(engine(anthropic(), { prices })))
      expectWellFormedLog(log)
      const usages = ofType(log, "model.usage")
      expect(usages.map((u) => u.payload.usage)).toEqual([
        { inputTokens: 14, outputTokens: 6, cacheReadTokens: 0, cacheWriteTokens: 2048 },
        { inputTokens: 9, outputTokens: 5, cacheReadTokens: 2048, cacheWriteTokens: 37 }
      ])
      expect(usages[0]!.payload).toMatchObject({ provider: "anthropic", model: "claude-haiku-4-5" })
      expect(usages[0]!.payload.parts!.map((p) => `${p.source}:${p.part}`)).toEqual([
        "base:base",
        "workspace:workspace",
        "tools:tools",
        "project:instructions:AGENTS.md",
        "tools:tool definitions"
      ])
      // The same request parts, the same hashes.
      expect(usages[1]!.payload.parts).toEqual(usages[0]!.payload.parts)
      const completed = ofType(log, "turn.completed")
      // 14 × $10 + 6 × $100 + 2048 × $20 per million = $0.04170; 9 × 10 + 5 × 100 + 2048 × 1 + 37 × 20 = $0.003378.
      expect(completed[0]!.payload).toEqual({
        stopReason: "final",
        usage: { inputTokens: 14, outputTokens: 6, cacheReadTokens: 0, cacheWriteTokens: 2048 },
        cost: 0.0417
      })
      expect(completed[1]!.payload.cost).toBe(0.003378)
      // No break: the second response read more from the cache than the first.
      expect(ofType(log, "cache.break")).toEqual([])
    }))

  it.effect("a model without a price says so: cost null, costUnknown naming it — never a guess", () =>
    Effect.gen(function*() {
      const cwd = workspace("Use tabs.")
      replay("anthropic", "cache-read")
      const log = yield* session(cwd, ["one"]).pipe(Effect.provide(engine(anthropic({ model: "claude-unreleased-9" }))))
      expect(ofType(log, "turn.completed")[0]!.payload).toMatchObject({ cost: null, costUnknown: "claude-unreleased-9" })
    }))

  it.effect("OpenAI's automatic caching is reported (cached_tokens) and priced: its prompt_tokens include the cached ones", () =>
    Effect.gen(function*() {
      const cwd = workspace("Use tabs.")
      replay("openai", "cache-miss", "cache-read")
      const log = yield* session(cwd, ["one", "two"]).pipe(Effect.provide(engine(openai({ model: "gpt-4.1-mini" }))))
      const completed = ofType(log, "turn.completed").map((e) => e.payload)
      expect(completed[1]!.usage).toEqual({ inputTokens: 2140, outputTokens: 5, cacheReadTokens: 1920 })
      // The built-in gpt-4.1-mini: 220 uncached × $0.40 + 1920 cached × $0.10 + 5 × $1.60 per million = $0.000288.
      expect(completed[1]!.cost).toBe(0.000288)
      // 2100 × $0.40 + 6 × $1.60 per million = $0.0008496, kept to a millionth of a dollar.
      expect(completed[0]!.cost).toBe(0.00085)
    }))
})

describe("cache-break notices", () => {
  it.effect("an edit of AGENTS.md between two turns: the next response reads less from the cache, and cache.break names the instructions part", () =>
    Effect.gen(function*() {
      const cwd = workspace("Use tabs.")
      replay("anthropic", "cache-write", "cache-read", "cache-write")
      const log = yield* session(cwd, ["one", "two", "three"], (i) => {
        if (i === 1) writeFileSync(join(cwd, "AGENTS.md"), "Use spaces.")
      }).pipe(Effect.provide(engine(anthropic())))
      expectWellFormedLog(log)
      const breaks = ofType(log, "cache.break")
      expect(breaks.map((b) => b.payload)).toEqual([
        { previousCacheRead: 2048, cacheRead: 0, changed: [{ part: "instructions:AGENTS.md", source: "project" }] }
      ])
      // It sits in the third turn, right after that response's usage.
      const at = log.indexOf(breaks[0]!)
      expect(log[at - 1]!.type).toBe("model.usage")
      expect(breaks[0]!.turnId).toBe(ofType(log, "turn.started")[2]!.turnId)
    }))

  it.effect("reads dropping with no part changed (an expired cache) break with changed: []", () =>
    Effect.gen(function*() {
      const cwd = workspace("Use tabs.")
      replay("anthropic", "cache-read", "cache-write")
      const log = yield* session(cwd, ["one", "two"]).pipe(Effect.provide(engine(anthropic())))
      expect(ofType(log, "cache.break").map((b) => b.payload)).toEqual([{ previousCacheRead: 2048, cacheRead: 0, changed: [] }])
    }))
})
