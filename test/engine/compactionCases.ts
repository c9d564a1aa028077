/**
 * What the compaction tests share: a session's log and requests, and the one case of a manual
 * compaction that fails (compaction.test.ts: a provider's failure; compactionRefusals.test.ts: a
 * summary refused with its usage kept).
 */
import { expect } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type { AgentEvent, Usage } from "../../src/domain/AgentEvent.js"
import { summaryInstruction } from "../../src/domain/Compaction.js"
import * as Transcript from "../../src/domain/Transcript.js"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import { FakeModel } from "../../src/layers/FakeModelProvider.js"
import type { ModelRequest } from "../../src/services/ModelProvider.js"
import { collect, expectWellFormedLog } from "../helpers.js"

export const replay = (sessionId: string) => Effect.flatMap(SessionEngine, (engine) => collect(engine.replaySession({ sessionId })))
export const run = (sessionId: string, userMessage: string) => Effect.flatMap(SessionEngine, (engine) => collect(engine.runTurn({ sessionId, userMessage })))
export const requests = Effect.flatMap(FakeModel, (model) => model.requests)
export const isSummaryRequest = (request: ModelRequest) => request.system === summaryInstruction
export const messagesOf = (log: ReadonlyArray<AgentEvent>) => Transcript.messages(Transcript.replay(log))

/** A new session after two turns ("one", "two"): the engine, its id and its log then (`before`). */
export const twoTurns = Effect.gen(function*() {
  const engine = yield* SessionEngine
  const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
  yield* run(sessionId, "one")
  yield* run(sessionId, "two")
  return { engine, sessionId, before: yield* replay(sessionId) }
})

/** The log after `before` and a manual compaction that failed: started, then failed (`failed`: its payload as expected); the context as `before`'s. */
export const expectFailed = (before: ReadonlyArray<AgentEvent>, log: ReadonlyArray<AgentEvent>, failed: unknown) => {
  expectWellFormedLog(log)
  expect(log.slice(before.length).map((e) => [e.type, e.payload])).toEqual([
    ["compaction.started", expect.objectContaining({ reason: "manual" })],
    ["compaction.failed", failed]
  ])
  expect(messagesOf(log)).toEqual(messagesOf(before))
}

/**
 * Two turns, then a manual compaction that fails `errorCode`: stored as compaction.failed — with
 * `usage` when its summary request returned and was spent, else with nothing but its id and code —,
 * the context unchanged, the next turn as before. The model's script: "answer 1", "answer 2", the
 * summary's response, "answer 3".
 */
export const failedCompaction = (errorCode: string, usage?: Usage) =>
  Effect.gen(function*() {
    const { before, engine, sessionId } = yield* twoTurns
    const error = yield* Effect.flip(engine.compactSession({ sessionId, keepRecentTokens: 0 }))
    expect(error).toMatchObject({ _tag: "CompactionFailed", errorCode })
    const compactionId = (error as { compactionId: string }).compactionId
    expectFailed(before, yield* replay(sessionId), usage === undefined ? { compactionId, errorCode } : expect.objectContaining({ compactionId, errorCode, usage }))
    yield* run(sessionId, "three")
    expect((yield* requests).at(-1)!.messages.map((m) => m.content)).toEqual(["one", "answer 1", "two", "answer 2", "three"])
  })
