/**
 * The states a runner's reads keep (`FoldedStates`): a state read before is read on from its last
 * sequence, whoever appended; at most `maxSessions` are kept, the least recently read let go first.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Stream from "effect/Stream"
import * as FoldedStates from "../../src/cluster/FoldedStates.js"
import { EventStore, SessionEngine, SessionState } from "../../src/index.js"
import { memoryEngine } from "../helpers.js"

/** The engine's store, counting the events its reads take. */
const countedStore = Effect.map(EventStore.EventStore, (store) => {
  const counted = { events: 0 }
  const read: EventStore.EventStore.Service["read"] = (sessionId, options) => Stream.tap(store.read(sessionId, options), () => Effect.sync(() => void counted.events++))
  return { store: { ...store, read }, counted }
})

const replayed = (sessionId: string) =>
  Effect.flatMap(SessionEngine.SessionEngine, (engine) =>
    Effect.map(Stream.runCollect(engine.replaySession({ sessionId })), (log) => Either.getOrThrow(SessionState.replay(Chunk.toReadonlyArray(log)))!))

describe("FoldedStates", () => {
  it.effect("reads a kept state on from its last sequence: what the engine appended since, and nothing when nothing was", () =>
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
      counted.events = 0
      yield* states.get(sessionId)
      yield* states.get(sessionId)
      expect(counted.events).toBe(0)

      yield* engine.renameSession({ sessionId, title: "Renamed" })
      counted.events = 0
      const renamed = yield* states.get(sessionId)
      expect(renamed.title).toBe("Renamed")
      expect(renamed).toEqual(yield* replayed(sessionId))
      expect(counted.events).toBe(1)

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
      counted.events = 0
      yield* states.get(a!)
      expect(counted.events).toBe(0)
      yield* states.get(b!)
      expect(counted.events).toBe(1)
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
