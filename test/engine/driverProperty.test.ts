/**
 * Issue 19, item 1 (the property that found it): random interleavings of turns, steers, follow-ups,
 * drops, cancels and manual compactions on one session, with yields and clock ticks between them.
 * Whatever the order: every `runTurn` stream ends, the log is well formed, the live state equals the
 * replayed one, and the next `runTurn` always runs to its end.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as FastCheck from "effect/FastCheck"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as LogLevel from "effect/LogLevel"
import * as Logger from "effect/Logger"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import * as TestContext from "effect/TestContext"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import { summaryInstruction } from "../../src/domain/Compaction.js"
import * as SessionState from "../../src/domain/SessionState.js"
import * as Engine from "../../src/engine/SessionEngine.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import * as IdGenerator from "../../src/services/IdGenerator.js"
import * as ModelProvider from "../../src/services/ModelProvider.js"
import { PermissionEngine } from "../../src/services/PermissionEngine.js"
import { collect, expectWellFormedLog, testTools } from "../helpers.js"

const { SessionEngine } = Engine

const allowAll = Layer.succeed(PermissionEngine, { decide: () => Effect.succeed({ decision: "allow" as const, policy: "test" }) })
const tools = testTools({ nap: { run: () => Effect.as(Effect.sleep("10 millis"), { result: "rested" }) } })

/**
 * A model that takes 10 ms per chunk: a user message beginning with "tool" gets a tool call first,
 * anything else two text chunks; summary requests a short summary.
 */
const modelLayer = Layer.sync(ModelProvider.ModelProvider, () => {
  let callId = 0
  const paced = (chunks: ReadonlyArray<ModelProvider.ModelChunk>) => Stream.mapEffect(Stream.fromIterable(chunks), (c) => Effect.as(Effect.sleep("10 millis"), c))
  return {
    capabilities: { provider: "fake", model: "property", maxContextTokens: 100_000 },
    stream: (request) =>
      Stream.suspend(() => {
        if (request.system === summaryInstruction) return paced([ModelProvider.textDelta("a summary"), ModelProvider.finish("stop")])
        const last = request.messages.at(-1)
        if (last?.role === "user" && last.content.startsWith("tool")) {
          return paced([ModelProvider.toolCall(`call_${++callId}`, "nap", {}), ModelProvider.finish("tool_calls")])
        }
        return paced([ModelProvider.textDelta("fine"), ModelProvider.textDelta(" thanks"), ModelProvider.finish("stop")])
      })
  }
})

const op = FastCheck.oneof(
  FastCheck.record({ kind: FastCheck.constant("turn" as const), tool: FastCheck.boolean() }),
  FastCheck.constant({ kind: "steer" as const }),
  FastCheck.constant({ kind: "followUp" as const }),
  FastCheck.constant({ kind: "drop" as const }),
  FastCheck.constant({ kind: "cancel" as const }),
  FastCheck.constant({ kind: "compact" as const }),
  FastCheck.record({ kind: FastCheck.constant("tick" as const), millis: FastCheck.integer({ min: 1, max: 25 }) })
)

const scenario = FastCheck.array(FastCheck.record({ op, yields: FastCheck.nat(4) }), { minLength: 1, maxLength: 14 })

/** Moves the clock on until the fiber is done: a fiber still running after 2,000 ticks is wedged. */
const settle = <A, E>(fiber: Fiber.Fiber<A, E>, what: string) =>
  Effect.gen(function*() {
    for (let i = 0; i < 2000; i++) {
      const done = yield* Fiber.poll(fiber)
      if (done._tag === "Some") return yield* done.value
      yield* TestClock.adjust("5 millis")
      yield* Effect.yieldNow()
    }
    return yield* Effect.dieMessage(`${what} never ended: the session is wedged`)
  })

describe("the session driver, property", () => {
  it.effect("random turns, steers, follow-ups, drops, cancels and compactions: streams end, logs are well formed, the next turn runs", () =>
    Effect.promise(() =>
      FastCheck.assert(
        FastCheck.asyncProperty(scenario, async (steps) => {
          const layer = Engine.layer({ maxSteps: 4 }).pipe(
            Layer.provideMerge(MemoryEventStore.layer),
            Layer.provideMerge(modelLayer),
            Layer.provideMerge(IdGenerator.layerSequential),
            Layer.provideMerge(tools),
            Layer.provideMerge(allowAll)
          )
          await Effect.runPromise(Effect.gen(function*() {
            const engine = yield* SessionEngine
            const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
            const forks: Array<readonly [string, Fiber.Fiber<unknown, unknown>]> = []
            const streams: Array<Fiber.Fiber<Either.Either<ReadonlyArray<AgentEvent>, unknown>>> = []
            let n = 0
            for (const { op, yields } of steps) {
              n++
              switch (op.kind) {
                case "turn": {
                  const stream = yield* Effect.fork(Effect.either(collect(engine.runTurn({ sessionId, userMessage: `${op.tool ? "tool" : "talk"} ${n}` }))))
                  streams.push(stream)
                  forks.push([`turn ${n}`, stream])
                  break
                }
                case "steer":
                  yield* Effect.ignore(engine.steer({ sessionId, message: `steer ${n}` }))
                  break
                case "followUp":
                  forks.push([`follow-up ${n}`, yield* Effect.fork(engine.followUp({ sessionId, message: `${n % 2 === 0 ? "tool" : "talk"} follow-up ${n}` }))])
                  break
                case "drop":
                  forks.push([`drop ${n}`, yield* Effect.fork(engine.dropFollowUps({ sessionId }))])
                  break
                case "cancel":
                  forks.push([`cancel ${n}`, yield* Effect.fork(engine.cancelTurn({ sessionId }))])
                  break
                case "compact":
                  forks.push([`compaction ${n}`, yield* Effect.fork(Effect.either(engine.compactSession({ sessionId, keepRecentTokens: 0 })))])
                  break
                case "tick":
                  yield* TestClock.adjust(`${op.millis} millis`)
              }
              for (let i = 0; i < yields; i++) yield* Effect.yieldNow()
            }
            // Every operation ends, every stream with it.
            for (const [what, fiber] of forks) yield* settle(fiber, what)
            // Follow-ups still queued run to their end.
            for (let i = 0; i < 2000; i++) {
              const state = yield* engine.sessionState({ sessionId })
              if (state.openTurn === undefined && state.followUps.length === 0 && state.compaction === undefined) break
              yield* TestClock.adjust("5 millis")
              yield* Effect.yieldNow()
            }
            const next = yield* settle(yield* Effect.fork(collect(engine.runTurn({ sessionId, userMessage: "last" }))), "the last turn")
            expect(next.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
            const log: ReadonlyArray<AgentEvent> = yield* collect(engine.replaySession({ sessionId }))
            expectWellFormedLog(log)
            expect(Either.getOrThrow(SessionState.replay(log))).toEqual(yield* engine.sessionState({ sessionId }))
            // Each turn's stream carried exactly its turn's stored events, in order: none lost to a cancel.
            for (const stream of streams) {
              const emitted = yield* Fiber.join(stream)
              if (Either.isLeft(emitted) || emitted.right.length === 0) continue
              const turnId = (emitted.right[0] as { readonly turnId: string }).turnId
              expect(emitted.right).toEqual(log.filter((e) => "turnId" in e && e.turnId === turnId))
            }
          }).pipe(Effect.scoped, Effect.provide(layer), Effect.provide(TestContext.TestContext), Logger.withMinimumLogLevel(LogLevel.None)))
        }),
        { numRuns: 80, seed: 1905 }
      )
    ), 120_000)
})
