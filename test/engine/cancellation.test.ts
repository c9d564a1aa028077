import { describe, expect, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import * as SessionEngineModule from "../../src/engine/SessionEngine.js"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import { EventStore } from "../../src/services/EventStore.js"
import * as IdGenerator from "../../src/services/IdGenerator.js"
import * as ModelProvider from "../../src/services/ModelProvider.js"
import { collect, expectWellFormedLog, memoryEngine, typesOf } from "../helpers.js"

const slow = { responses: [{ chunks: ["a", "b", "c", "d"], delay: 100 }] }

const withSession = Effect.gen(function*() {
  const engine = yield* SessionEngine
  const session = yield* engine.createSession({ cwd: "/work", client: "test" })
  const replay = collect(engine.replaySession({ sessionId: session.sessionId }))
  return { engine, sessionId: session.sessionId, replay }
})

/** Starts consuming a slow turn in a fiber and returns it once the first delta has arrived. */
const consumeUntilFirstDelta = (engine: SessionEngine["Type"], sessionId: string) =>
  Effect.gen(function*() {
    const seen = yield* Deferred.make<void>()
    const consumer = yield* engine.runTurn({ sessionId, userMessage: "count" }).pipe(
      Stream.tap((event) => event.type === "model.delta" ? Deferred.succeed(seen, undefined) : Effect.void),
      collect,
      Effect.fork
    )
    yield* TestClock.adjust("100 millis")
    yield* Deferred.await(seen)
    return consumer
  })

describe("cancellation", () => {
  it.effect("cancelTurn mid-stream ends the turn cancelled; the stream emits it last", () =>
    Effect.gen(function*() {
      const { engine, sessionId, replay } = yield* withSession
      const consumer = yield* engine.runTurn({ sessionId, userMessage: "count" }).pipe(
        Stream.tap((event) => event.type === "model.delta" && event.payload.text === "b" ? engine.cancelTurn({ sessionId }) : Effect.void),
        collect,
        Effect.fork
      )
      yield* TestClock.adjust("1 second")
      const emitted = yield* Fiber.join(consumer)
      expect(typesOf(emitted)).toEqual(["turn.started", "user.message", "model.delta", "model.delta", "turn.completed"])
      expect(emitted.at(-1)!.payload).toEqual({ stopReason: "cancelled" })
      const log = yield* replay
      expect(log.slice(1)).toEqual(emitted)
      expectWellFormedLog(log)
    }).pipe(Effect.provide(memoryEngine(slow))))

  it.effect("cancelling twice stores one turn.completed; cancelling after completion does nothing", () =>
    Effect.gen(function*() {
      const { engine, sessionId, replay } = yield* withSession
      const consumer = yield* consumeUntilFirstDelta(engine, sessionId)
      yield* Effect.all([engine.cancelTurn({ sessionId }), engine.cancelTurn({ sessionId })], { concurrency: 2 })
      yield* engine.cancelTurn({ sessionId })
      const emitted = yield* Fiber.join(consumer)
      expect(emitted.filter((e) => e.type === "turn.completed")).toHaveLength(1)
      // A later turn runs to the end; cancelling after it completed changes nothing.
      const second = yield* engine.runTurn({ sessionId, userMessage: "again" }).pipe(collect, Effect.fork)
      yield* TestClock.adjust("1 second")
      yield* Fiber.join(second)
      const before = yield* replay
      yield* engine.cancelTurn({ sessionId })
      yield* engine.cancelTurn({ sessionId, turnId: "turn_1" })
      expect(yield* replay).toEqual(before)
      expect(before.at(-1)!.payload).toEqual({ stopReason: "final" })
      expectWellFormedLog(before)
    }).pipe(Effect.provide(memoryEngine({ responses: [slow.responses[0]!, slow.responses[0]!] }))))

  it.effect("a cancel naming another turn leaves the running turn alone", () =>
    Effect.gen(function*() {
      const { engine, sessionId } = yield* withSession
      const consumer = yield* engine.runTurn({ sessionId, userMessage: "count" }).pipe(collect, Effect.fork)
      yield* TestClock.adjust("100 millis")
      yield* engine.cancelTurn({ sessionId, turnId: "turn_999" })
      yield* TestClock.adjust("1 second")
      const emitted = yield* Fiber.join(consumer)
      expect(emitted.at(-1)!.payload).toEqual({ stopReason: "final" })
    }).pipe(Effect.provide(memoryEngine(slow))))

  it.effect("a provider that keeps emitting after cancel gets no model.delta stored", () =>
    Effect.gen(function*() {
      const { engine, sessionId, replay } = yield* withSession
      const consumer = yield* consumeUntilFirstDelta(engine, sessionId)
      const cancel = yield* Effect.fork(engine.cancelTurn({ sessionId }))
      // The provider ignores the abort and keeps producing chunks for a while.
      yield* TestClock.adjust("1 second")
      yield* Fiber.join(cancel)
      yield* Fiber.join(consumer)
      const log = yield* replay
      expect(typesOf(log)).toEqual(["session.created", "turn.started", "user.message", "model.delta", "turn.completed"])
      expect(log.at(-1)!.payload).toEqual({ stopReason: "cancelled" })
    }).pipe(Effect.provide(memoryEngine({ responses: [{ ...slow.responses[0]!, keepEmittingAfterCancel: true }] }))))

  it.effect("interrupting the consumer cancels the turn and the log still ends cancelled", () =>
    Effect.gen(function*() {
      const { engine, sessionId, replay } = yield* withSession
      const consumer = yield* consumeUntilFirstDelta(engine, sessionId)
      yield* Fiber.interrupt(consumer)
      const log = yield* replay
      expect(typesOf(log)).toEqual(["session.created", "turn.started", "user.message", "model.delta", "turn.completed"])
      expect(log.at(-1)!.payload).toEqual({ stopReason: "cancelled" })
      // The session is free again.
      const next = yield* engine.runTurn({ sessionId, userMessage: "again" }).pipe(collect, Effect.fork)
      yield* TestClock.adjust("1 second")
      expect((yield* Fiber.join(next)).at(-1)!.payload).toEqual({ stopReason: "final" })
    }).pipe(Effect.provide(memoryEngine({ responses: [slow.responses[0]!, slow.responses[0]!] }))))

  it.effect("taking only the first events of the stream cancels the rest of the turn", () =>
    Effect.gen(function*() {
      const { engine, sessionId, replay } = yield* withSession
      const first = yield* engine.runTurn({ sessionId, userMessage: "count" }).pipe(Stream.take(3), collect, Effect.fork)
      yield* TestClock.adjust("1 second")
      expect(typesOf(yield* Fiber.join(first))).toEqual(["turn.started", "user.message", "model.delta"])
      const log = yield* replay
      expect(log.at(-1)!.payload).toEqual({ stopReason: "cancelled" })
      expectWellFormedLog(log)
    }).pipe(Effect.provide(memoryEngine(slow))))

  it.effect("the model stream is closed — its finalizers run, as a provider aborts its request — before turn.completed is stored", () =>
    Effect.gen(function*() {
      // What happened, in order: the provider stream's finalizer, each event the store appended.
      const happened: Array<string> = []
      const streaming = yield* Deferred.make<void>()
      // Nested as a vendor's stream is (a scoped request, its events mapped, an end appended), held open after a first delta.
      const model = Layer.succeed(ModelProvider.ModelProvider, ModelProvider.ModelProvider.of({
        capabilities: { provider: "fake", model: "held-open", maxContextTokens: 128_000 },
        stream: () =>
          Stream.concat(
            Stream.make(ModelProvider.textDelta("a")).pipe(
              Stream.concat(Stream.fromEffect(Effect.zipRight(Deferred.succeed(streaming, undefined), Effect.never))),
              Stream.map((chunk) => chunk as ModelProvider.ModelChunk),
              Stream.ensuring(Effect.sync(() => happened.push("provider stream closed")))
            ),
            Stream.make(ModelProvider.finish("stop"))
          )
      }))
      const store = Layer.effect(EventStore, Effect.map(EventStore, (inner) => ({
        ...inner,
        appendAll: (events: ReadonlyArray<AgentEvent>) =>
          Effect.tap(inner.appendAll(events), () => Effect.sync(() => events.forEach((e) => happened.push(e.type))))
      }))).pipe(Layer.provide(MemoryEventStore.layer))
      const layer = SessionEngineModule.layer().pipe(Layer.provideMerge(store), Layer.provide(model), Layer.provide(IdGenerator.layerSequential))
      yield* Effect.gen(function*() {
        const { engine, sessionId } = yield* withSession
        const consumer = yield* engine.runTurn({ sessionId, userMessage: "go" }).pipe(collect, Effect.fork)
        yield* Deferred.await(streaming)
        yield* engine.cancelTurn({ sessionId })
        yield* Fiber.join(consumer)
      }).pipe(Effect.provide(layer))
      expect(happened.slice(happened.indexOf("model.delta"))).toEqual(["model.delta", "provider stream closed", "turn.completed"])
    }))
})
