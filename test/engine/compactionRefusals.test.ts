import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as LogLevel from "effect/LogLevel"
import * as Logger from "effect/Logger"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import { summaryInstruction } from "../../src/domain/Compaction.js"
import * as Transcript from "../../src/domain/Transcript.js"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import { FakeModel } from "../../src/layers/FakeModelProvider.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import type { ModelRequest } from "../../src/services/ModelProvider.js"
import { collect, engineLayer, expectWellFormedLog } from "../helpers.js"

const quiet = Logger.withMinimumLogLevel(LogLevel.None)
const replay = (sessionId: string) => Effect.flatMap(SessionEngine, (engine) => collect(engine.replaySession({ sessionId })))
const run = (sessionId: string, userMessage: string) => Effect.flatMap(SessionEngine, (engine) => collect(engine.runTurn({ sessionId, userMessage })))
const requests = Effect.flatMap(FakeModel, (model) => model.requests)
const isSummary = (r: ModelRequest) => r.system === summaryInstruction
const messagesOf = (log: ReadonlyArray<AgentEvent>) => Transcript.messages(Transcript.replay(log))
const usage = { inputTokens: 300, outputTokens: 40 }

/** Two turns, then a manual compaction whose summary is refused `errorCode`, its usage kept; the context and the next turn as before. */
const refused = (errorCode: string) =>
  Effect.gen(function*() {
    const engine = yield* SessionEngine
    const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
    yield* run(sessionId, "one")
    yield* run(sessionId, "two")
    const before = yield* replay(sessionId)
    const error = yield* Effect.flip(engine.compactSession({ sessionId, keepRecentTokens: 0 }))
    expect(error).toMatchObject({ _tag: "CompactionFailed", errorCode })
    const log = yield* replay(sessionId)
    expectWellFormedLog(log)
    expect(log.slice(before.length).map((e) => [e.type, e.payload])).toEqual([
      ["compaction.started", expect.objectContaining({ reason: "manual" })],
      ["compaction.failed", expect.objectContaining({ errorCode, usage })]
    ])
    expect(messagesOf(log)).toEqual(messagesOf(before))
    yield* run(sessionId, "three")
    expect((yield* requests).at(-1)!.messages.map((m) => m.content)).toEqual(["one", "answer 1", "two", "answer 2", "three"])
  })

describe("a summary the engine refuses", () => {
  for (const finishReason of ["length", "content_filter"] as const) {
    it.effect(`cut short (finish ${finishReason}): compaction.failed summary_cut_short with its usage, the context unchanged`, () =>
      refused("summary_cut_short").pipe(
        Effect.provide(engineLayer(MemoryEventStore.layer, {
          responses: [{ chunks: ["answer 1"] }, { chunks: ["answer 2"] }, { chunks: ["The user asked for one; constraints: "], finishReason, usage }, { chunks: ["answer 3"] }]
        })),
        quiet
      ))
  }

  it.effect("a threshold compaction that leaves the context past the threshold is not asked for again at every step of the turn", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      yield* run(sessionId, "x".repeat(9000))
      const before = (yield* requests).length
      yield* run(sessionId, "go")
      expectWellFormedLog(yield* replay(sessionId))
      // Before: 4 steps, 4 summary requests of 9,000 characters, each stored as the context; now the first only.
      expect((yield* requests).slice(before).filter(isSummary).length).toBe(1)
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
