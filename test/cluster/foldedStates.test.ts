/**
 * The states a runner's reads keep (`FoldedStates`): a state read before is read on from its last
 * sequence, whoever appended; at most `maxSessions` are kept, the least recently read let go first.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as Stream from "effect/Stream"
import * as FoldedStates from "../../src/cluster/FoldedStates.js"
import { type AgentEvent, EventStore, SessionEngine, SessionState } from "../../src/index.js"
import { memoryEngine } from "../helpers.js"

/** The engine's store, counting the events its reads take and its reads of a whole log. */
const countedStore = Effect.map(EventStore.EventStore, (store) => {
  const counted = { events: 0, wholeReads: 0 }
  const read: EventStore.EventStore.Service["read"] = (sessionId, options) =>
    Stream.tap(
      Stream.unwrap(Effect.sync(() => {
        if (options?.fromSequence === undefined) counted.wholeReads++
        return store.read(sessionId, options)
      })),
      () => Effect.sync(() => void counted.events++)
    )
  return { store: { ...store, read }, counted }
})

const replayed = (sessionId: string) =>
  Effect.flatMap(SessionEngine.SessionEngine, (engine) =>
    Effect.map(Stream.runCollect(engine.replaySession({ sessionId })), (log) => Either.getOrThrow(SessionState.replay(Chunk.toReadonlyArray(log)))!))

describe("FoldedStates", () => {
  it.effect("reads a kept state on from its last event: what the engine appended since, and only that event when nothing was", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine.SessionEngine
      const { counted, store } = yield* countedStore
      const states = FoldedStates.make(store)
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      yield* Stream.runDrain(engine.runTurn({ sessionId, userMessage: "hello" }))
      const whole = (yield* replayed(sessionId)).lastSequence

      counted.events = 0
      expect(yield* states.get(sessionId)).toEqual(yield* replayed(sessionId))
      expect(counted.events).toBe(whole)
      // Each read reads the kept state's own last event again (to know the log is still the one it
      // was folded from), and what follows it: nothing here.
      counted.events = 0
      yield* states.get(sessionId)
      yield* states.get(sessionId)
      expect(counted.events).toBe(2)

      yield* engine.renameSession({ sessionId, title: "Renamed" })
      counted.events = 0
      const renamed = yield* states.get(sessionId)
      expect(renamed.title).toBe("Renamed")
      expect(renamed).toEqual(yield* replayed(sessionId))
      expect(counted.events).toBe(2)
      expect(counted.wholeReads).toBe(1)

      // Unknown and malformed ids are not found, and nothing is kept for them.
      expect(yield* Effect.flip(states.get("sess_unknown"))).toMatchObject({ _tag: "SessionNotFound" })
      expect(yield* Effect.flip(states.get("../etc"))).toMatchObject({ _tag: "SessionNotFound" })
      expect(states.size()).toBe(1)
    }).pipe(Effect.provide(memoryEngine({ responses: [{ chunks: ["hi"] }] }))))

  it.effect("keeps at most maxSessions states, the least recently read let go first and folded whole again", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine.SessionEngine
      const { counted, store } = yield* countedStore
      const states = FoldedStates.make(store, 2)
      const [a, b, c] = yield* Effect.forEach([1, 2, 3], () => Effect.map(engine.createSession({ cwd: "/work", client: "test" }), (s) => s.sessionId))
      yield* states.get(a!)
      yield* states.get(b!)
      yield* states.get(a!)
      yield* states.get(c!)
      expect(states.size()).toBe(2)
      // a was read after b: b was let go, a was kept.
      counted.wholeReads = 0
      yield* states.get(a!)
      expect(counted.wholeReads).toBe(0)
      yield* states.get(b!)
      expect(counted.wholeReads).toBe(1)
      expect(states.size()).toBe(2)
    }).pipe(Effect.provide(memoryEngine())))

  it.effect("a kept state the log does not follow is let go and the whole log folded again", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine.SessionEngine
      const { store } = yield* countedStore
      let gap = false
      // Once `gap` is set, a read from a sequence skips its first event, as a lost row would.
      const read: EventStore.EventStore.Service["read"] = (sessionId, options) =>
        gap && options?.fromSequence !== undefined ? store.read(sessionId, { fromSequence: options.fromSequence + 1 }) : store.read(sessionId, options)
      const states = FoldedStates.make({ ...store, read })
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      yield* states.get(sessionId)
      yield* engine.renameSession({ sessionId, title: "One" })
      yield* engine.renameSession({ sessionId, title: "Two" })
      gap = true
      const state = yield* states.get(sessionId)
      expect(state.title).toBe("Two")
      expect(state).toEqual(yield* replayed(sessionId))
    }).pipe(Effect.provide(memoryEngine())))
})

/** A log by hand: a session created, a turn started and one call requested with `argBytes` of arguments (its turn left open). */
const openTurnLog = (sessionId: string, argBytes: number): ReadonlyArray<AgentEvent.AgentEvent> => {
  const at = (sequence: number) => ({ id: `${sessionId}-${sequence}`, sessionId, sequence, timestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, sequence)).toISOString() })
  return [
    { ...at(1), type: "session.created", payload: { cwd: "/work", client: "test" } },
    { ...at(2), turnId: "turn-1", type: "turn.started", payload: { promptPreview: "go" } },
    { ...at(3), turnId: "turn-1", type: "model.tool_call_requested", payload: { toolCallId: "call-1", tool: "save", args: { text: "x".repeat(argBytes) } } }
  ] as ReadonlyArray<AgentEvent.AgentEvent>
}

const wholeFold = (store: EventStore.EventStore.Service, sessionId: string) =>
  Effect.map(Stream.runCollect(store.read(sessionId)), (log) => Either.getOrThrow(SessionState.replay(Chunk.toReadonlyArray(log)))!)

describe("FoldedStates' bounds and shared folds", () => {
  it.effect("keeps at most maxBytes of states as estimated: states with big open turns are let go, and one let go is folded again whole", () =>
    Effect.gen(function*() {
      const { counted, store } = yield* countedStore
      const ids = Array.from({ length: 10 }, (_, i) => `sess_bigturn${i}`)
      for (const id of ids) yield* store.appendAll(openTurnLog(id, 300_000))
      const budget = 2 * 1024 * 1024
      const states = FoldedStates.make(store, { maxBytes: budget })
      for (const id of ids) {
        expect((yield* states.get(id)).openTurn?.toolCalls).toHaveLength(1)
        expect(states.bytes()).toBeLessThanOrEqual(budget)
      }
      // Each state holds 300,000 characters of arguments (600 KB): three fit in 2 MiB.
      expect(states.size()).toBe(3)
      counted.wholeReads = 0
      const again = yield* states.get(ids[0]!)
      expect(counted.wholeReads).toBe(1)
      expect(again).toEqual(yield* wholeFold(store, ids[0]!))
      expect(states.bytes()).toBeLessThanOrEqual(budget)
      // A turn that ends lets its weight go.
      const small = FoldedStates.make(store, { maxBytes: budget })
      yield* small.get(ids[1]!)
      expect(small.bytes()).toBeGreaterThan(600_000)
      yield* store.appendAll([
        { id: "end-4", sessionId: ids[1]!, turnId: "turn-1", sequence: 4, timestamp: "2026-01-01T00:01:00.000Z", type: "tool.failed", payload: { toolCallId: "call-1", errorCode: "cancelled", message: "cancelled" } },
        { id: "end-5", sessionId: ids[1]!, turnId: "turn-1", sequence: 5, timestamp: "2026-01-01T00:01:01.000Z", type: "turn.completed", payload: { stopReason: "cancelled" } }
      ] as ReadonlyArray<AgentEvent.AgentEvent>)
      expect((yield* small.get(ids[1]!)).openTurn).toBeUndefined()
      expect(small.bytes()).toBeLessThan(10_000)
    }).pipe(Effect.provide(memoryEngine())))

  it.effect("reads of a session not kept yet that come together share one fold of its log", () =>
    Effect.gen(function*() {
      const { counted, store } = yield* countedStore
      yield* store.appendAll(openTurnLog("sess_together", 10))
      const gate = yield* Deferred.make<void>()
      // Every read waits at the gate: the reads started below all get there (or to the fold they wait for) before it opens.
      const read: EventStore.EventStore.Service["read"] = (sessionId, options) =>
        Stream.unwrap(Effect.as(Deferred.await(gate), store.read(sessionId, options)))
      const states = FoldedStates.make({ ...store, read })
      const reads = yield* Effect.forEach(Array.from({ length: 5 }), () => Effect.fork(states.get("sess_together")))
      for (let i = 0; i < 20; i++) yield* Effect.yieldNow()
      yield* Deferred.succeed(gate, undefined)
      const got = yield* Effect.forEach(reads, Fiber.join)
      // One fold of the whole log; the reads that waited read on from it (its last event only).
      expect(counted.wholeReads).toBe(1)
      for (const state of got) expect(state).toEqual(yield* wholeFold(store, "sess_together"))
      expect(states.size()).toBe(1)
    }).pipe(Effect.provide(memoryEngine())))
})
