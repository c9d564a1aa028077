/**
 * Issue 19, item 5: `followUp` answers as soon as `followup.queued` is stored — not once a manual
 * compaction that is running ends. The follow-up's turn starts when the compaction has ended.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import * as TestServices from "effect/TestServices"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import { collect, expectWellFormedLog, memoryEngine, typesOf } from "../helpers.js"

/** A wedge fails the test with a clear message (a safety net on the live clock, never a timing assumption). */
const within = <A, E, R>(effect: Effect.Effect<A, E, R>, what: string) =>
  Effect.raceFirst(effect, TestServices.provideLive(Effect.sleep("10 seconds")).pipe(Effect.zipRight(Effect.dieMessage(what))))

describe("a follow-up queued while a manual compaction runs", () => {
  it.effect("is answered once stored; its turn runs after the compaction", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      yield* collect(engine.runTurn({ sessionId, userMessage: "one" }))
      yield* collect(engine.runTurn({ sessionId, userMessage: "two" }))
      const { lastSequence } = yield* engine.sessionState({ sessionId })
      // The summary takes a minute of (test) time: the compaction runs until the clock moves.
      const compaction = yield* Effect.fork(engine.compactSession({ sessionId, keepRecentTokens: 0 }))
      yield* engine.watchSession({ sessionId, fromSequence: lastSequence + 1 }).pipe(Stream.takeUntil((e) => e.type === "compaction.started"), Stream.runDrain)
      const { queueId } = yield* within(engine.followUp({ sessionId, message: "three" }), "followUp waited for the compaction to end")
      const state = yield* engine.sessionState({ sessionId })
      expect(state.followUps).toEqual([{ queueId, content: "three" }])
      expect(state.compaction).toBeDefined()
      // The compaction ends once the summary has streamed (a minute per chunk); then the follow-up's turn runs.
      for (let minutes = 0; minutes < 10 && Option.isNone(yield* Fiber.poll(compaction)); minutes++) {
        yield* TestClock.adjust("1 minute")
        yield* Effect.yieldNow()
      }
      expect((yield* Fiber.join(compaction)).summary).toBe("The summary.")
      const log = yield* engine.watchSession({ sessionId }).pipe(Stream.takeUntil((e) => e.type === "turn.completed" && e.payload.stopReason === "final" && e.sequence > lastSequence), collect)
      expect(typesOf(log.slice(lastSequence))).toEqual([
        "compaction.started",
        "followup.queued",
        "session.compacted",
        "turn.started",
        "user.message",
        "model.delta",
        "turn.completed"
      ])
      expectWellFormedLog(log)
    }).pipe(Effect.provide(memoryEngine({
      responses: [{ chunks: ["answer one"] }, { chunks: ["answer two"] }, { chunks: ["The summary."], delay: "1 minute" }, { chunks: ["answer three"] }]
    }))))
})
