/**
 * How a turn opens, in batches: a new turn's `turn.started` and `user.message` are one append (one
 * commit: nothing can refuse them); a queued follow-up's `turn.started` is its own, guarded by the
 * follow-up still being queued, and its `user.message` follows.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import * as SessionEngine from "../../src/engine/SessionEngine.js"
import * as FakeModelProvider from "../../src/layers/FakeModelProvider.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import { EventStore } from "../../src/services/EventStore.js"
import * as IdGenerator from "../../src/services/IdGenerator.js"
import { collect } from "../helpers.js"

/** A memory store recording the types of each batch appended. */
const recordingStore = (batches: Array<ReadonlyArray<string>>) =>
  Layer.effect(
    EventStore,
    Effect.map(EventStore, (store) => ({
      ...store,
      appendAll: (events: ReadonlyArray<AgentEvent>) =>
        Effect.tap(store.appendAll(events), () => Effect.sync(() => batches.push(events.map((e) => e.type))))
    }))
  ).pipe(Layer.provide(MemoryEventStore.layer))

const engineWith = (batches: Array<ReadonlyArray<string>>) =>
  SessionEngine.layer().pipe(
    Layer.provide(recordingStore(batches)),
    Layer.provide(FakeModelProvider.layer({ responses: [{ chunks: ["one"] }, { chunks: ["two"] }] })),
    Layer.provide(IdGenerator.layerSequential)
  )

describe("a turn's opening batches", () => {
  it.effect("a new turn stores turn.started and user.message in one append", () => {
    const batches: Array<ReadonlyArray<string>> = []
    return Effect.gen(function*() {
      const engine = yield* SessionEngine.SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      const events = yield* collect(engine.runTurn({ sessionId, userMessage: "hi" }))
      expect(events.map((e) => e.type).slice(0, 2)).toEqual(["turn.started", "user.message"])
      expect(batches[0]).toEqual(["turn.started", "user.message"])
      expect(batches.flat()).toEqual(events.map((e) => e.type))
    }).pipe(Effect.provide(engineWith(batches)))
  })

  it.effect("a queued follow-up's turn stores turn.started on its own, then user.message", () => {
    const batches: Array<ReadonlyArray<string>> = []
    return Effect.gen(function*() {
      const engine = yield* SessionEngine.SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      yield* collect(engine.runTurn({ sessionId, userMessage: "hi" }))
      const before = batches.length
      yield* engine.followUp({ sessionId, message: "and then" })
      // The follow-up runs in the session's own run: the watch ends once its turn has completed.
      let completed = 0
      yield* collect(engine.watchSession({ sessionId }).pipe(Stream.takeUntil((e) => e.type === "turn.completed" && ++completed === 2)))
      const after = batches.slice(before)
      expect(after[0]).toEqual(["followup.queued"])
      expect(after[1]).toEqual(["turn.started"])
      expect(after[2]).toEqual(["user.message"])
    }).pipe(Effect.provide(engineWith(batches)))
  })
})
