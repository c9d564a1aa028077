/**
 * Cache-break notices in the engine, with the scripted model reporting cache reads: no notice while
 * reads grow, one when they drop — naming the history after a compaction — and the session's last
 * response is read from the log, so a new engine on the same store still compares with it.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import * as SessionEngineModule from "../../src/engine/SessionEngine.js"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import * as IdGenerator from "../../src/services/IdGenerator.js"
import * as ModelProvider from "../../src/services/ModelProvider.js"
import { collect, engineLayer } from "../helpers.js"

const read = (cacheReadTokens: number, chunks: ReadonlyArray<string> = ["ok"]) => ({ chunks, usage: { inputTokens: 10, outputTokens: 1, cacheReadTokens } })

const breaks = (log: ReadonlyArray<AgentEvent>) => log.flatMap((e) => (e.type === "cache.break" ? [e.payload] : []))

describe("cache.break", () => {
  it.effect("reads that grow break nothing; a compaction between two turns shows as the history that changed", () =>
    Effect.gen(function*() {
      const agent = yield* SessionEngine
      const { sessionId } = yield* agent.createSession({ cwd: "/work", client: "test" })
      yield* collect(agent.runTurn({ sessionId, userMessage: "one" }))
      yield* collect(agent.runTurn({ sessionId, userMessage: "two" }))
      expect(breaks(yield* collect(agent.replaySession({ sessionId })))).toEqual([])
      yield* agent.compactSession({ sessionId })
      yield* collect(agent.runTurn({ sessionId, userMessage: "three" }))
      expect(breaks(yield* collect(agent.replaySession({ sessionId })))).toEqual([
        { previousCacheRead: 500, cacheRead: 0, changed: [{ part: "history", source: "compaction" }] }
      ])
    }).pipe(Effect.provide(engineLayer(MemoryEventStore.layer, { responses: [read(100), read(500), read(0, ["the summary"]), read(0)] }))))

  it.effect("a response without usage leaves the comparison to the next one that has some", () =>
    Effect.gen(function*() {
      const agent = yield* SessionEngine
      const { sessionId } = yield* agent.createSession({ cwd: "/work", client: "test" })
      for (const message of ["one", "two", "three"]) yield* collect(agent.runTurn({ sessionId, userMessage: message }))
      const log = yield* collect(agent.replaySession({ sessionId }))
      expect(log.filter((e) => e.type === "model.usage")).toHaveLength(2)
      expect(breaks(log)).toEqual([{ previousCacheRead: 800, cacheRead: 200, changed: [] }])
    }).pipe(Effect.provide(engineLayer(MemoryEventStore.layer, { responses: [read(800), { chunks: ["no usage"] }, read(200)] }))))
})

describe("a turn's cost", () => {
  // A provider whose usage report is odd (NaN, negative): the schema of a script would refuse it, a real SDK may not.
  const odd = Layer.succeed(ModelProvider.ModelProvider, {
    capabilities: { provider: "anthropic", model: "claude-haiku-4-5", maxContextTokens: 100_000 },
    stream: () => Stream.make(ModelProvider.textDelta("ok"), ModelProvider.finish("stop", { inputTokens: Number.NaN, outputTokens: -5, cacheReadTokens: 1_000_000 }))
  })

  it.effect("is computed from the counts as stored: a provider's NaN or negative count costs nothing, never NaN", () =>
    Effect.gen(function*() {
      const agent = yield* SessionEngine
      const { sessionId } = yield* agent.createSession({ cwd: "/work", client: "test" })
      const log = yield* collect(agent.runTurn({ sessionId, userMessage: "one" }))
      // 1 000 000 cache reads × $0.10 per million.
      expect(log.at(-1)!.payload).toEqual({ stopReason: "final", usage: { inputTokens: 0, outputTokens: 0, cacheReadTokens: 1_000_000 }, cost: 0.1 })
    }).pipe(Effect.provide(SessionEngineModule.layer().pipe(
      Layer.provide(MemoryEventStore.layer),
      Layer.provide(IdGenerator.layerSequential),
      Layer.provide(odd)
    ))))

  // An embedder's `prices` option is typed, not decoded: a rate read from its own config can be
  // Infinity (`1e400`), overflow a cost (`1e300`), or be negative. Each leaves the turn's cost unknown
  // (named), as a model missing from the table would, never an infinite cost JSON writes as `null`.
  for (const [name, rate] of [["infinite", Number.POSITIVE_INFINITY], ["overflowing", 1e300], ["negative", -1], ["NaN", Number.NaN]] as const) {
    it.effect(`an engine option's ${name} rate leaves the cost unknown, and the log reads back`, () =>
      Effect.gen(function*() {
        const agent = yield* SessionEngine
        const { sessionId } = yield* agent.createSession({ cwd: "/work", client: "test" })
        yield* collect(agent.runTurn({ sessionId, userMessage: "one" }))
        const log = yield* collect(agent.replaySession({ sessionId }))
        expect(log.at(-1)!.payload).toMatchObject({ stopReason: "final", cost: null, costUnknown: "claude-haiku-4-5" })
        expect((yield* agent.sessionState({ sessionId })).totals).toMatchObject({ costUnknown: ["claude-haiku-4-5"] })
      }).pipe(Effect.provide(SessionEngineModule.layer({ prices: { "claude-haiku-4-5": { input: rate, output: 1 } } }).pipe(
        Layer.provide(MemoryEventStore.layer),
        Layer.provide(IdGenerator.layerSequential),
        Layer.provide(odd)
      ))))
  }
})

describe("a compaction's cost", () => {
  it.effect("the summary request's usage and cost are on session.compacted and in the session's totals, not in a turn's", () =>
    Effect.gen(function*() {
      const agent = yield* SessionEngine
      const { sessionId } = yield* agent.createSession({ cwd: "/work", client: "test" })
      yield* collect(agent.runTurn({ sessionId, userMessage: "one" }))
      yield* collect(agent.runTurn({ sessionId, userMessage: "two" }))
      yield* agent.compactSession({ sessionId })
      const log = yield* collect(agent.replaySession({ sessionId }))
      // 2 000 input × $1 + 500 output × $10 per million.
      expect(log.find((e) => e.type === "session.compacted")!.payload).toMatchObject({ usage: { inputTokens: 2_000, outputTokens: 500 }, cost: 0.007 })
      const turns = log.flatMap((e) => e.type === "turn.completed" ? [e.payload.cost] : [])
      expect(turns).toEqual([0.00002, 0.00002])
      const [summary] = (yield* agent.listSessions).filter((s) => s.sessionId === sessionId)
      expect(summary).toMatchObject({ usage: { inputTokens: 2_020, outputTokens: 502 }, cost: 0.00704 })
      expect((yield* agent.sessionState({ sessionId })).totals).toMatchObject({ cost: 0.00704 })
    }).pipe(Effect.provide(engineLayer(MemoryEventStore.layer, {
      responses: [
        { chunks: ["a"], usage: { inputTokens: 10, outputTokens: 1 } },
        { chunks: ["b"], usage: { inputTokens: 10, outputTokens: 1 } },
        { chunks: ["The summary."], usage: { inputTokens: 2_000, outputTokens: 500 } }
      ]
    }, { prices: { scripted: { input: 1, output: 10 } } }))))
})
