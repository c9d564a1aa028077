/**
 * Testing your agent deterministically: TestClock, sequential ids and the scripted model make every
 * event log reproducible byte for byte. This file is itself run by the test suite.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Stream, TestClock } from "effect"
import { FakeModelProvider, IdGenerator, MemoryEventStore, SessionEngine } from "effect-agent"

const TestAgent = SessionEngine.layer().pipe(
  Layer.provide(MemoryEventStore.layer),
  Layer.provide(FakeModelProvider.layer({ responses: [{ chunks: ["one", " two", " three"], delay: "1 second" }] })),
  Layer.provide(IdGenerator.layerSequential)
)

describe("my agent", () => {
  it.effect("streams the scripted answer, paced by TestClock", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine.SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/repo", client: "test" })
      const turn = yield* engine.runTurn({ sessionId, userMessage: "count" }).pipe(Stream.runCollect, Effect.fork)
      yield* TestClock.adjust("1 minute") // past every scripted delay, without waiting in real time
      const events = [...(yield* Fiber.join(turn))]
      expect(events.map((e) => e.type)).toEqual([
        "turn.started", "user.message", "model.delta", "model.delta", "model.delta", "turn.completed"
      ])
      expect(events[0]).toMatchObject({ id: "evt_2", turnId: "turn_1", sequence: 2, timestamp: "1970-01-01T00:00:00.000Z" })
    }).pipe(Effect.provide(TestAgent)))
})
