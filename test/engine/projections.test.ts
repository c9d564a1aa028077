/**
 * Property: for random event logs produced by random scripted turns, the state the engine keeps
 * live equals the state replayed from the log, the transcript the model was sent equals the
 * transcript replayed from the log, and replay is deterministic.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as FastCheck from "effect/FastCheck"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Stream from "effect/Stream"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import * as SessionState from "../../src/domain/SessionState.js"
import * as Transcript from "../../src/domain/Transcript.js"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import { FakeModel } from "../../src/layers/FakeModelProvider.js"
import type * as FakeModelProvider from "../../src/layers/FakeModelProvider.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import { ToolFailure } from "../../src/services/ToolRouter.js"
import { collect, engineLayer, expectWellFormedLog, testTools } from "../helpers.js"

const tools = testTools({
  look: { run: (args) => Effect.succeed({ result: `looked at ${JSON.stringify(args)}` }) },
  broken: { run: () => Effect.fail(new ToolFailure({ errorCode: "tool_error", message: "it broke" })) },
  save: { risk: "write", run: () => Effect.succeed({ result: "saved" }) }
})

const response: FastCheck.Arbitrary<FakeModelProvider.ScriptedResponse> = FastCheck.record({
  chunks: FastCheck.array(FastCheck.string({ minLength: 1, maxLength: 6 }), { maxLength: 3 }),
  toolCalls: FastCheck.array(
    FastCheck.record({ tool: FastCheck.constantFrom("look", "broken", "save", "missing"), args: FastCheck.dictionary(FastCheck.string({ maxLength: 3 }), FastCheck.integer()) }),
    { maxLength: 2 }
  ),
  failure: FastCheck.option(FastCheck.record({ reason: FastCheck.constantFrom("invalid_request", "authentication") as FastCheck.Arbitrary<"invalid_request" | "authentication">, afterChunks: FastCheck.nat(2) }), { nil: undefined })
}).map(({ failure, ...rest }) => (failure === undefined ? rest : { ...rest, failure }))

const scenario = FastCheck.record({
  turns: FastCheck.array(FastCheck.string({ minLength: 1, maxLength: 10 }).filter((s) => s.trim() !== ""), { minLength: 1, maxLength: 4 }),
  responses: FastCheck.array(response, { maxLength: 8 }),
  answers: FastCheck.array(FastCheck.constantFrom("allow", "deny", "always") as FastCheck.Arbitrary<"allow" | "deny" | "always">, { maxLength: 8 })
})

describe("projections", () => {
  it.effect("property: live state and transcript equal their replay from the log; replay is deterministic", () =>
    Effect.promise(() =>
      FastCheck.assert(
        FastCheck.asyncProperty(scenario, async ({ answers, responses, turns }) => {
          const layer = engineLayer(MemoryEventStore.layer, { responses }, { maxSteps: 4 }).pipe(
            Layer.provideMerge(tools),
            Layer.provideMerge(PermissionPolicy.layer())
          )
          await Effect.runPromise(Effect.gen(function*() {
            const engine = yield* SessionEngine
            const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
            let asked = 0
            /** The log up to each user message: what the transcript was when that turn's first request was built. */
            const atUserMessage: Array<ReadonlyArray<AgentEvent>> = []
            for (const userMessage of turns) {
              yield* engine.runTurn({ sessionId, userMessage }).pipe(
                Stream.tap((event) => {
                  if (event.type !== "permission.resolved" || event.payload.decision !== "ask") return Effect.void
                  const answer = answers[asked++ % Math.max(1, answers.length)] ?? "allow"
                  return engine.resolvePermission({
                    sessionId,
                    toolCallId: event.payload.toolCallId,
                    decision: answer === "deny" ? "deny" : "allow",
                    remember: answer === "always"
                  })
                }),
                Stream.runDrain
              )
              const log = yield* collect(engine.replaySession({ sessionId }))
              atUserMessage.push(log.slice(0, log.findLastIndex((e) => e.type === "user.message") + 1))
              expectWellFormedLog(log)
              // The state kept live equals the state replayed from the log, and replay is deterministic.
              const live = yield* engine.sessionState({ sessionId })
              const replayed = Either.getOrThrow(SessionState.replay(log))
              expect(replayed).toEqual(live)
              expect(Either.getOrThrow(SessionState.replay(log))).toEqual(replayed)
              expect(Transcript.replay(log)).toEqual(Transcript.replay(log))
            }
            // The transcript the model was sent at the start of each turn is the one replayed from the log.
            const requests = yield* (yield* FakeModel).requests
            const firstRequests = atUserMessage.map((prefix) =>
              requests.find((r) => JSON.stringify(r.messages) === JSON.stringify(Transcript.messages(Transcript.replay(prefix)))))
            firstRequests.forEach((request, i) => expect(request, `turn ${i + 1}'s first request`).toBeDefined())
          }).pipe(Effect.provide(layer), Logger.withMinimumLogLevel(LogLevel.None)))
        }),
        { numRuns: 60 }
      )
    ))
})
