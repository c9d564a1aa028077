import { describe, expect, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import * as Layer from "effect/Layer"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import { EventStore } from "../../src/services/EventStore.js"
import { collect, engineLayer, expectWellFormedLog, memoryEngine } from "../helpers.js"

/**
 * A memory store whose reads from a sequence (the watcher's stored part) wait for `gate` while it
 * is set: events committed meanwhile reach the watcher's live queue AND its store read.
 */
class Gate extends Effect.Tag("test/Gate")<Gate, {
  current: { readonly reached: Deferred.Deferred<void>; readonly open: Deferred.Deferred<void> } | undefined
}>() {}
const gatedStore = Layer.effect(EventStore, Effect.gen(function*() {
  const store = yield* MemoryEventStore.make
  const gate = yield* Gate
  return {
    ...store,
    read: (sessionId, options) =>
      options?.fromSequence === undefined || gate.current === undefined
        ? store.read(sessionId, options)
        : Stream.unwrap(Deferred.succeed(gate.current.reached, undefined).pipe(
          Effect.zipRight(Deferred.await(gate.current.open)),
          Effect.as(store.read(sessionId, options))
        ))
  } satisfies EventStore["Type"]
}))
const gateLayer = Layer.sync(Gate, () => ({ current: undefined }))

/** A memory store counting its reads from a sequence (a watcher's stored part, a gap's read). */
class Reads extends Effect.Tag("test/Reads")<Reads, { fromSequence: Array<number> }>() {}
const countedStore = Layer.effect(EventStore, Effect.gen(function*() {
  const store = yield* MemoryEventStore.make
  const reads = yield* Reads
  return {
    ...store,
    read: (sessionId, options) => {
      if (options?.fromSequence !== undefined) reads.fromSequence.push(options.fromSequence)
      return store.read(sessionId, options)
    }
  } satisfies EventStore["Type"]
}))
const readsLayer = Layer.sync(Reads, () => ({ fromSequence: [] }))

const turn = { chunks: ["a", "b", "c"], delay: 10 }

/** A watcher that stops after the session's `turns`-th turn.completed. */
const watchTurns = (engine: SessionEngine["Type"], sessionId: string, turns: number, fromSequence?: number) => {
  let completed = 0
  return engine.watchSession({ sessionId, ...(fromSequence === undefined ? {} : { fromSequence }) }).pipe(
    Stream.takeUntil((event) => event.type === "turn.completed" && ++completed === turns),
    Stream.runCollect,
    Effect.map(Chunk.toReadonlyArray)
  )
}

const sequences = (events: ReadonlyArray<AgentEvent>) => events.map((e) => e.sequence)

describe("watchSession", () => {
  it.scoped("50 watchers, one joining mid-turn, see every event of three turns exactly once, in order", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      const early = yield* Effect.forEach(Array.from({ length: 49 }), () => Effect.fork(watchTurns(engine, sessionId, 3)))
      // Turn 1 runs; once its first delta is stored, the 50th watcher joins while the turn still streams.
      const firstDelta = yield* Deferred.make<void>()
      const turn1 = yield* engine.runTurn({ sessionId, userMessage: "one" }).pipe(
        Stream.tap((event) => event.type === "model.delta" ? Deferred.succeed(firstDelta, undefined) : Effect.void),
        collect,
        Effect.fork
      )
      yield* TestClock.adjust("10 millis")
      yield* Deferred.await(firstDelta)
      const late = yield* Effect.fork(watchTurns(engine, sessionId, 3))
      yield* TestClock.adjust("1 second")
      yield* Fiber.join(turn1)
      for (const message of ["two", "three"]) {
        const running = yield* Effect.fork(collect(engine.runTurn({ sessionId, userMessage: message })))
        yield* TestClock.adjust("1 second")
        yield* Fiber.join(running)
      }
      const log = yield* collect(engine.replaySession({ sessionId }))
      expectWellFormedLog(log)
      expect(log.filter((e) => e.type === "turn.completed")).toHaveLength(3)
      for (const watcher of [...early, late]) {
        const seen = yield* Fiber.join(watcher)
        expect(sequences(seen)).toEqual(sequences(log))
        expect(seen).toEqual(log)
      }
    }).pipe(Effect.provide(memoryEngine({ responses: [turn, turn, turn] }))))

  it.scoped("events stored while watchers switch from the store to live are neither lost nor repeated", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      // No delays: the turns commit while the watchers are still starting and reading the store.
      const watchers = yield* Effect.forEach(Array.from({ length: 20 }), () => Effect.fork(watchTurns(engine, sessionId, 3)))
      for (const message of ["one", "two", "three"]) yield* collect(engine.runTurn({ sessionId, userMessage: message }))
      const log = yield* collect(engine.replaySession({ sessionId }))
      for (const watcher of watchers) expect(sequences(yield* Fiber.join(watcher))).toEqual(sequences(log))
    }).pipe(Effect.provide(memoryEngine({ responses: Array.from({ length: 3 }, () => ({ chunks: Array.from({ length: 30 }, (_, i) => `${i}`) })) }))))

  it.scoped("an event stored between the subscription and the store read is seen once", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const gate = yield* Gate
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      const reached = yield* Deferred.make<void>()
      const open = yield* Deferred.make<void>()
      gate.current = { reached, open }
      const watcher = yield* Effect.fork(watchTurns(engine, sessionId, 2))
      // The watcher has subscribed once its store read waits on the gate.
      yield* Deferred.await(reached)
      yield* collect(engine.runTurn({ sessionId, userMessage: "one" }))
      yield* Deferred.succeed(open, undefined)
      yield* collect(engine.runTurn({ sessionId, userMessage: "two" }))
      const log = yield* collect(engine.replaySession({ sessionId }))
      expect(sequences(yield* Fiber.join(watcher))).toEqual(sequences(log))
    }).pipe(Effect.provide(engineLayer(gatedStore, { responses: [{ chunks: ["a", "b"] }, { chunks: ["c"] }] }).pipe(Layer.provideMerge(gateLayer)))))

  it.scoped("fromSequence starts the stored part there; the stream goes on into the next turn", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      yield* collect(engine.runTurn({ sessionId, userMessage: "one" }))
      const watcher = yield* Effect.fork(watchTurns(engine, sessionId, 1, 4))
      yield* collect(engine.runTurn({ sessionId, userMessage: "two" }))
      const log = yield* collect(engine.replaySession({ sessionId }))
      const seen = yield* Fiber.join(watcher)
      // From sequence 4 up to the first turn.completed it sees: the rest of turn one.
      expect(sequences(seen)).toEqual(sequences(log.filter((e) => e.sequence >= 4 && e.sequence <= 5)))
      const whole = yield* Effect.fork(watchTurns(engine, sessionId, 2, 2))
      expect(sequences(yield* Fiber.join(whole))).toEqual(sequences(log.slice(1)))
    }).pipe(Effect.provide(memoryEngine({ responses: [{ chunks: ["a"] }, { chunks: ["b"] }] }))))

  it.scoped("a watcher from past the end of a session this engine writes reads nothing from the store, and sees the next turn", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const reads = yield* Reads
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      yield* collect(engine.runTurn({ sessionId, userMessage: "one" }))
      const end = (yield* engine.sessionState({ sessionId })).lastSequence
      reads.fromSequence.length = 0
      // An EventSource reconnecting with the last id it read: the session's end.
      const watcher = yield* Effect.fork(watchTurns(engine, sessionId, 1, end + 1))
      // Subscribed before the next turn commits (its events then reach it through the feed only).
      yield* Effect.repeatN(Effect.yieldNow(), 20)
      yield* collect(engine.runTurn({ sessionId, userMessage: "two" }))
      const log = yield* collect(engine.replaySession({ sessionId }))
      expect(sequences(yield* Fiber.join(watcher))).toEqual(sequences(log.filter((e) => e.sequence > end)))
      expect(reads.fromSequence).toEqual([])
      // From within the log, the store is read as before.
      const within = yield* Effect.fork(watchTurns(engine, sessionId, 1, end))
      expect(sequences(yield* Fiber.join(within))).toEqual(sequences(log.filter((e) => e.sequence >= end && e.sequence <= end)))
      expect(reads.fromSequence).toEqual([end])
    }).pipe(Effect.provide(engineLayer(countedStore, { responses: [{ chunks: ["a"] }, { chunks: ["b"] }] }).pipe(Layer.provideMerge(readsLayer)))))

  it.scoped("a watcher is interrupted, not ended, and an unknown session fails SessionNotFound", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      const seen = yield* Deferred.make<void>()
      const watcher = yield* engine.watchSession({ sessionId }).pipe(
        Stream.runForEach(() => Deferred.succeed(seen, undefined)),
        Effect.fork
      )
      yield* Deferred.await(seen)
      yield* collect(engine.runTurn({ sessionId, userMessage: "one" }))
      expect(watcher.unsafePoll()).toBeNull()
      yield* Fiber.interrupt(watcher)
      const missing = yield* Effect.either(collect(engine.watchSession({ sessionId: "sess_nope" })))
      expect(Either.isLeft(missing) && missing.left._tag).toBe("SessionNotFound")
    }).pipe(Effect.provide(memoryEngine({ responses: [{ chunks: ["a"] }] }))))
})
