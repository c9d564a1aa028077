import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Stream from "effect/Stream"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import { collect, engineLayer, expectWellFormedLog, failingStore, memoryEngine, typesOf } from "../helpers.js"

describe("provider failure", () => {
  it.effect("a failure mid-stream ends the turn with stopReason error and its reason; the next turn completes", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      const first = yield* collect(engine.runTurn({ sessionId, userMessage: "go" }))
      expect(typesOf(first)).toEqual(["turn.started", "user.message", "model.delta", "model.delta", "turn.completed"])
      expect(first.at(-1)!.payload).toEqual({ stopReason: "error", errorCode: "overloaded" })
      const second = yield* collect(engine.runTurn({ sessionId, userMessage: "again" }))
      expect(second.at(-1)!.payload).toEqual({ stopReason: "final" })
      const log = yield* collect(engine.replaySession({ sessionId }))
      expectWellFormedLog(log)
      // Nothing of the failure's detail, a stack or a path reaches the log.
      const text = JSON.stringify(log)
      expect(text).not.toContain("/home")
      expect(text).not.toMatch(/\bat .+:\d+:\d+/)
      expect(text).not.toContain("secret detail")
    }).pipe(Effect.provide(memoryEngine({
      responses: [{ chunks: ["par", "tial", "never"], failure: { reason: "overloaded", afterChunks: 2, detail: "secret detail at /home/x/y.ts:1:2" } }]
    }))))

  it.effect("a failure before any chunk still ends the turn cleanly", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      const events = yield* collect(engine.runTurn({ sessionId, userMessage: "go" }))
      expect(typesOf(events)).toEqual(["turn.started", "user.message", "turn.completed"])
      expect(events.at(-1)!.payload).toEqual({ stopReason: "error", errorCode: "authentication" })
    }).pipe(Effect.provide(memoryEngine({ responses: [{ failure: { reason: "authentication" } }] }))))
})

describe("store failure", () => {
  // Appends: 1 session.created, 2 turn.started, 3 user.message, 4 first delta (fails).
  const layer = engineLayer(failingStore(MemoryEventStore.layer, [4]), { responses: [{ chunks: ["a", "b"] }] })

  it.effect("fails the stream with EventStoreFailure, leaves no gap, and closes the dangling turn before the next", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      const emitted: Array<string> = []
      const result = yield* engine.runTurn({ sessionId, userMessage: "go" }).pipe(
        Stream.tap((e) => Effect.sync(() => emitted.push(e.type))),
        Stream.runDrain,
        Effect.either
      )
      expect(Either.isLeft(result) && result.left._tag).toBe("EventStoreFailure")
      expect(emitted).toEqual(["turn.started", "user.message"])
      const state = yield* engine.sessionState({ sessionId })
      expect(state.openTurn?.turnId).toBe("turn_1")

      const next = yield* collect(engine.runTurn({ sessionId, userMessage: "again" }))
      expect(next.at(-1)!.payload).toEqual({ stopReason: "final" })
      const log = yield* collect(engine.replaySession({ sessionId }))
      expectWellFormedLog(log)
      // The failed delta's sequence (4) was not consumed: the repair reuses it.
      expect(log.slice(0, 6).map((e) => [e.sequence, e.type, "turnId" in e ? e.turnId : undefined])).toEqual([
        [1, "session.created", undefined],
        [2, "turn.started", "turn_1"],
        [3, "user.message", "turn_1"],
        [4, "turn.completed", "turn_1"],
        [5, "turn.started", "turn_2"],
        [6, "user.message", "turn_2"]
      ])
      expect(log[3]!.payload).toEqual({ stopReason: "error", errorCode: "event_store_failure" })
      // The repair belongs to the old turn: it is stored, not emitted in the new turn's stream.
      expect(log.slice(4)).toEqual(next)
    }).pipe(Effect.provide(layer)))
})
