/**
 * Property (issue 11): for random sessions with random compactions — manual ones between turns,
 * threshold and overflow ones inside turns — the transcript the model was sent at every request is
 * the one replayed from the log up to that point (live equals replay), the state replayed equals the
 * live state, and no cut ever separates a tool call from its result.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as FastCheck from "effect/FastCheck"
import * as Layer from "effect/Layer"
import * as LogLevel from "effect/LogLevel"
import * as Logger from "effect/Logger"
import * as Stream from "effect/Stream"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import { summaryInstruction } from "../../src/domain/Compaction.js"
import * as SessionState from "../../src/domain/SessionState.js"
import * as Transcript from "../../src/domain/Transcript.js"
import * as Engine from "../../src/engine/SessionEngine.js"
const { SessionEngine } = Engine
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import * as IdGenerator from "../../src/services/IdGenerator.js"
import * as ModelProvider from "../../src/services/ModelProvider.js"
import { PermissionEngine } from "../../src/services/PermissionEngine.js"
import { collect, expectWellFormedLog, testTools } from "../helpers.js"

const allowAll = Layer.succeed(PermissionEngine, { decide: () => Effect.succeed({ decision: "allow" as const, policy: "test" }) })
const tools = testTools({ fetch: { run: (args) => Effect.succeed({ result: "r".repeat(Number((args as { n?: number }).n ?? 1)) }) } })

/**
 * A model driven by the user's message `calls:<k>:<size>`: its first response asks for k calls
 * (results of `size` characters), then it answers `size` characters. Summary requests get a short
 * summary. Every request is recorded.
 */
const modelLayer = (window: number, requests: Array<ModelProvider.ModelRequest>) => {
  let callId = 0
  return Layer.succeed(ModelProvider.ModelProvider, {
    capabilities: { provider: "fake", model: "property", maxContextTokens: window },
    stream: (request) =>
      Stream.suspend(() => {
        requests.push(request)
        if (request.system === summaryInstruction) {
          return Stream.make(ModelProvider.textDelta(`summary of ${request.messages[0]!.content.length} characters`), ModelProvider.finish("stop"))
        }
        const lastUser = request.messages.findLast((m) => m.role === "user")?.content ?? ""
        const [, k, size] = /calls:(\d+):(\d+)/.exec(lastUser) ?? ["", "0", "5"]
        const last = request.messages.at(-1)!
        if (last.role === "user" && Number(k) > 0) {
          return Stream.fromIterable([
            ...Array.from({ length: Number(k) }, () => ModelProvider.toolCall(`call_${++callId}`, "fetch", { n: Number(size) })),
            ModelProvider.finish("tool_calls")
          ])
        }
        return Stream.make(ModelProvider.textDelta("a".repeat(Number(size) + 1)), ModelProvider.finish("stop"))
      })
  })
}

const step = FastCheck.oneof(
  FastCheck.record({ kind: FastCheck.constant("turn" as const), calls: FastCheck.nat(3), size: FastCheck.nat(700) }),
  FastCheck.record({ kind: FastCheck.constant("compact" as const), keep: FastCheck.nat(400) })
)

const scenario = FastCheck.record({
  window: FastCheck.integer({ min: 700, max: 3000 }),
  threshold: FastCheck.option(FastCheck.double({ min: 0.3, max: 0.95, noNaN: true }), { nil: undefined }),
  keepRecentTokens: FastCheck.option(FastCheck.nat(500), { nil: undefined }),
  steps: FastCheck.array(step, { minLength: 1, maxLength: 10 })
})

/** Every tool call requested before a cut has its result before the cut too. */
const expectNoCallCutFromItsResult = (log: ReadonlyArray<AgentEvent>) => {
  const requested = new Map<string, number>()
  const ended = new Map<string, number>()
  for (const event of log) {
    if (event.type === "model.tool_call_requested") requested.set(event.payload.toolCallId, event.sequence)
    if (event.type === "tool.completed" || event.type === "tool.failed") ended.set(event.payload.toolCallId, event.sequence)
  }
  for (const event of log) {
    if (event.type !== "session.compacted") continue
    const cut = event.payload.firstKeptSequence
    expect(cut).toBeLessThan(event.sequence)
    for (const [id, at] of requested) {
      const end = ended.get(id)
      if (end !== undefined && end < event.sequence) expect(at < cut, `call ${id} (#${at}, result #${end}) cut at #${cut}`).toBe(end < cut)
    }
  }
}

/** A request's messages are well-formed: each tool result follows its call, and each call has its result. */
const expectWellFormedRequest = (messages: ReadonlyArray<Transcript.Message>) => {
  const open = new Set<string>()
  for (const message of messages) {
    if (message.role === "assistant") {
      expect([...open]).toEqual([])
      for (const call of message.toolCalls) open.add(call.toolCallId)
    } else if (message.role === "tool") {
      expect(open.delete(message.toolCallId), `result of ${message.toolCallId} without its call`).toBe(true)
    }
  }
  expect([...open]).toEqual([])
}

describe("compaction property", () => {
  it.effect("random sessions with random compactions: live equals replay at every request; no cut separates a call from its result", () =>
    Effect.promise(() =>
      FastCheck.assert(
        FastCheck.asyncProperty(scenario, async ({ keepRecentTokens, steps, threshold, window }) => {
          const requests: Array<ModelProvider.ModelRequest> = []
          const compaction = {
            ...(threshold === undefined ? {} : { threshold }),
            ...(keepRecentTokens === undefined ? {} : { keepRecentTokens })
          }
          const layer = Engine.layer({ compaction, maxSteps: 4 }).pipe(
            Layer.provideMerge(MemoryEventStore.layer),
            Layer.provideMerge(modelLayer(window, requests)),
            Layer.provideMerge(IdGenerator.layerSequential),
            Layer.provideMerge(tools),
            Layer.provideMerge(allowAll)
          )
          await Effect.runPromise(Effect.gen(function*() {
            const engine = yield* SessionEngine
            const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
            for (const s of steps) {
              if (s.kind === "turn") yield* collect(engine.runTurn({ sessionId, userMessage: `calls:${s.calls}:${s.size}` }))
              else yield* Effect.ignore(engine.compactSession({ sessionId, keepRecentTokens: s.keep }))
            }
            const log = yield* collect(engine.replaySession({ sessionId }))
            expectWellFormedLog(log)
            expect(Either.getOrThrow(SessionState.replay(log))).toEqual(yield* engine.sessionState({ sessionId }))
            expectNoCallCutFromItsResult(log)
            // Each transcript the log passed through, replayed: every turn request was one of them.
            const replayed = new Set<string>()
            let transcript = Transcript.empty
            for (const event of log) {
              transcript = Transcript.reduce(transcript, event)
              replayed.add(JSON.stringify(Transcript.messages(transcript)))
            }
            for (const request of requests) {
              if (request.system === summaryInstruction) continue
              expect(replayed.has(JSON.stringify(request.messages)), "a request's transcript is a replayed one").toBe(true)
              expectWellFormedRequest(request.messages)
            }
          }).pipe(Effect.provide(layer), Logger.withMinimumLogLevel(LogLevel.None)))
        }),
        { numRuns: 80 }
      )
    ))
})
