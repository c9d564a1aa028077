import { describe, expect, it } from "@effect/vitest"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as LogLevel from "effect/LogLevel"
import * as Logger from "effect/Logger"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import * as JsonlEventStore from "../../src/layers/JsonlEventStore.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import { engineLayer, expectWellFormedLog, tempDir } from "../helpers.js"
import { failedCompaction, isSummaryRequest, replay, requests, run } from "./compactionCases.js"

const quiet = Logger.withMinimumLogLevel(LogLevel.None)
const usage = { inputTokens: 300, outputTokens: 40 }

describe("a summary the engine refuses", () => {
  for (const finishReason of ["length", "content_filter"] as const) {
    it.effect(`cut short (finish ${finishReason}): compaction.failed summary_cut_short with its usage, the context unchanged`, () =>
      failedCompaction("summary_cut_short", usage).pipe(
        Effect.provide(engineLayer(MemoryEventStore.layer, {
          responses: [{ chunks: ["answer 1"] }, { chunks: ["answer 2"] }, { chunks: ["The user asked for one; constraints: "], finishReason, usage }, { chunks: ["answer 3"] }]
        })),
        quiet
      ))
  }

  it.effect("larger than the store takes as one event (a JSONL line): compaction.failed summary_too_large with its usage, the context unchanged", () =>
    failedCompaction("summary_too_large", usage).pipe(
      Effect.provide(
        Layer.unwrapScoped(Effect.map(tempDir, (dataDir) =>
          engineLayer(JsonlEventStore.layer({ dataDir, maxLineBytes: 64 * 1024 }), {
            // The summary's text is whole and its request spent; its session.compacted would be a line of 100 KB.
            responses: [{ chunks: ["answer 1"] }, { chunks: ["answer 2"] }, { chunks: ["S".repeat(100_000)], usage }, { chunks: ["answer 3"] }]
          }).pipe(Layer.provideMerge(NodeContext.layer)))).pipe(Layer.provide(NodeContext.layer))
      ),
      quiet
    ))

  it.effect("a threshold compaction that leaves the context past the threshold is not asked for again at every step of the turn", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      yield* run(sessionId, "x".repeat(9000))
      const before = (yield* requests).length
      yield* run(sessionId, "go")
      expectWellFormedLog(yield* replay(sessionId))
      // Before: 4 steps, 4 summary requests of 9,000 characters, each stored as the context; now the first only.
      expect((yield* requests).slice(before).filter(isSummaryRequest).length).toBe(1)
    }).pipe(Effect.provide(engineLayer(MemoryEventStore.layer, {
      maxContextTokens: 4000,
      responses: [
        { chunks: ["a1"] },
        { chunks: ["S".repeat(9000)] },
        { chunks: ["T".repeat(800)], toolCalls: [{ tool: "nope", args: {} }] },
        { chunks: ["S".repeat(9000)] },
        { chunks: ["T".repeat(800)], toolCalls: [{ tool: "nope", args: {} }] },
        { chunks: ["S".repeat(9000)] },
        { chunks: ["T".repeat(800)], toolCalls: [{ tool: "nope", args: {} }] },
        { chunks: ["S".repeat(9000)] },
        { chunks: ["done"] }
      ]
    }, { compaction: { threshold: 0.5, keepRecentTokens: 100 } })), quiet))
})
