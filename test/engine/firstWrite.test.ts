/**
 * Issue 19 (the design): a session's first write in an engine reads its log once — the store is
 * asked whether the session exists (its first event), the writer lock is taken, then the log is
 * folded — not folded, thrown away once the lock is taken, and folded again.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import * as SessionEngineModule from "../../src/engine/SessionEngine.js"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import * as FakeModelProvider from "../../src/layers/FakeModelProvider.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import { EventStore } from "../../src/services/EventStore.js"
import * as IdGenerator from "../../src/services/IdGenerator.js"
import { collect } from "../helpers.js"

describe("a session's first write", () => {
  it.effect("reads the stored log once (and its first event to find it), not twice", () =>
    Effect.gen(function*() {
      const store = yield* MemoryEventStore.make
      let eventsRead = 0
      const counting = Layer.succeed(EventStore, {
        ...store,
        read: (sessionId, options) => store.read(sessionId, options).pipe(Stream.tap(() => Effect.sync(() => eventsRead++)))
      })
      const engine = (responses: ReadonlyArray<FakeModelProvider.ScriptedResponse>) =>
        SessionEngineModule.layer().pipe(
          Layer.provide(counting),
          Layer.provide(FakeModelProvider.layer({ responses })),
          Layer.provide(IdGenerator.layerSequential)
        )
      // One engine writes a session of a few turns, then stops (releasing its hold).
      const sessionId = yield* Effect.gen(function*() {
        const agent = yield* SessionEngine
        const { sessionId } = yield* agent.createSession({ cwd: "/work", client: "test" })
        for (const message of ["one", "two", "three"]) yield* collect(agent.runTurn({ sessionId, userMessage: message }))
        return sessionId
      }).pipe(Effect.provide(engine([])), Effect.scoped)
      const stored = (yield* collect(store.read(sessionId))).length
      // Another engine's first write to it: a turn.
      eventsRead = 0
      yield* Effect.gen(function*() {
        const agent = yield* SessionEngine
        yield* collect(agent.runTurn({ sessionId, userMessage: "four" }))
      }).pipe(Effect.provide(engine([])), Effect.scoped)
      expect(eventsRead).toBeGreaterThanOrEqual(stored)
      expect(eventsRead).toBeLessThanOrEqual(stored + 1)
    }))
})
