/**
 * A takeover catches up: an engine that loaded a session (to read it) and then takes its writer lock,
 * after another process appended to it, reads only the events appended since — counted by a store
 * wrapper, for every store with a ranged read — and ends with the state and transcript a full load
 * gives, a rewind by the other process included.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as SessionState from "../../src/domain/SessionState.js"
import * as SessionEngine from "../../src/engine/SessionEngine.js"
import * as FakeModelProvider from "../../src/layers/FakeModelProvider.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import { EventStoreFailure } from "../../src/domain/Errors.js"
import { EventStore } from "../../src/services/EventStore.js"
import * as IdGenerator from "../../src/services/IdGenerator.js"
import { collect } from "../helpers.js"
import { counting, storesOf } from "./countedStores.js"

const stores = storesOf("takeover")

/** Engines on one store, as processes would be: `reader` lives through the test, others each in a scope of their own. */
const setUp = (store: EventStore.Service) =>
  Effect.gen(function*() {
    const counted = counting(store)
    const ports = yield* Layer.build(Layer.mergeAll(
      Layer.succeed(EventStore, counted.service),
      FakeModelProvider.layer({ record: true }),
      IdGenerator.layerSequential
    ))
    const engine = Effect.provide(SessionEngine.make(), ports)
    /** Runs `f` on an engine of its own, which then closes (its writer lock released), as a process that exits. */
    const elsewhere = <A, E>(f: (engine: SessionEngine.SessionEngine.Service) => Effect.Effect<A, E>) =>
      Effect.flatMap(Scope.make(), (scope) =>
        Effect.flatMap(Scope.extend(engine, scope), f).pipe(Effect.onExit(() => Scope.close(scope, Exit.void))))
    const reader = yield* engine
    const requests = Effect.map(Effect.provide(FakeModelProvider.FakeModel, ports), (fake) => fake.requests)
    return { counted, elsewhere, reader, requests: Effect.flatten(requests) }
  })

const turn = (engine: SessionEngine.SessionEngine.Service, sessionId: string, userMessage: string) =>
  collect(engine.runTurn({ sessionId, userMessage }))

/** The state a full load of the log gives. */
const replayed = (store: EventStore.Service, sessionId: string) =>
  Effect.map(collect(store.read(sessionId)), (events) => SessionState.replay(events))

describe.each(stores)("a takeover catches up (%s)", (_name, makeStore) => {
  it.scoped("after another process appended K events, the takeover reads K, not the whole log, and ends where a full load does", () =>
    Effect.gen(function*() {
      const store = yield* makeStore
      const { counted, elsewhere, reader } = yield* setUp(store)
      const sessionId = yield* elsewhere((engine) =>
        Effect.gen(function*() {
          const { sessionId } = yield* engine.createSession({ cwd: "/w", client: "test" })
          for (const text of ["one", "two", "three"]) yield* turn(engine, sessionId, text)
          return sessionId
        })
      )
      // Loaded to be read: no writer lock taken.
      const before = (yield* reader.sessionState({ sessionId })).lastSequence
      const appended = yield* elsewhere((engine) => turn(engine, sessionId, "four"))
      counted.reset()
      // The reader writes: it takes the lock, catching up with turn four, then runs its own turn.
      const own = yield* turn(reader, sessionId, "five")
      expect(appended.length).toBeGreaterThan(0)
      expect(own[0]!.sequence).toBe(before + appended.length + 1)
      expect(counted.read()).toBe(appended.length)
      expect(yield* reader.sessionState({ sessionId })).toEqual(Either.getOrThrow(yield* replayed(store, sessionId)))
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("after a rewind by another process, the takeover's state and transcript are the rewound ones", () =>
    Effect.gen(function*() {
      const store = yield* makeStore
      const { elsewhere, reader, requests } = yield* setUp(store)
      const sessionId = yield* elsewhere((engine) =>
        Effect.gen(function*() {
          const { sessionId } = yield* engine.createSession({ cwd: "/w", client: "test" })
          yield* turn(engine, sessionId, "kept")
          return sessionId
        })
      )
      const end = (yield* reader.sessionState({ sessionId })).lastSequence
      yield* elsewhere((engine) =>
        Effect.gen(function*() {
          yield* turn(engine, sessionId, "to be rewound")
          // Nothing changed files: a rewind to the end of the first turn needs no checkpoints.
          yield* engine.rewindSession({ sessionId, toSequence: end })
        })
      )
      yield* turn(reader, sessionId, "after the rewind")
      const last = (yield* requests).at(-1)!
      expect(last.messages.filter((m) => m.role === "user").map((m) => m.content)).toEqual(["kept", "after the rewind"])
      expect(yield* reader.sessionState({ sessionId })).toEqual(Either.getOrThrow(yield* replayed(store, sessionId)))
    }).pipe(Effect.provide(NodeContext.layer)))
})

describe("a takeover that cannot catch up", () => {
  it.scoped("a catch-up whose read fails loads the whole log instead: the turn runs on the right state", () =>
    Effect.gen(function*() {
      const memory = yield* MemoryEventStore.make
      let failedCatchUps = 0
      // The first ranged read after the log's start (the catch-up) fails; every other read is the store's.
      const store: EventStore.Service = {
        ...memory,
        read: (sessionId, options) =>
          (options?.fromSequence ?? 1) > 1 && failedCatchUps === 0
            ? Stream.suspend(() => {
              failedCatchUps++
              return Stream.fail(new EventStoreFailure({ reason: "unavailable", operation: "read", sessionId, detail: "injected" }))
            })
            : memory.read(sessionId, options)
      }
      const { counted, elsewhere, reader } = yield* setUp(store)
      const sessionId = yield* elsewhere((engine) =>
        Effect.gen(function*() {
          const { sessionId } = yield* engine.createSession({ cwd: "/w", client: "test" })
          yield* turn(engine, sessionId, "one")
          return sessionId
        })
      )
      const before = (yield* reader.sessionState({ sessionId })).lastSequence
      const appended = yield* elsewhere((engine) => turn(engine, sessionId, "two"))
      counted.reset()
      const own = yield* turn(reader, sessionId, "three")
      expect(failedCatchUps).toBe(1)
      // The whole log, read again.
      expect(counted.read()).toBe(before + appended.length)
      expect(own.at(-1)!.type).toBe("turn.completed")
      expect(yield* reader.sessionState({ sessionId })).toEqual(Either.getOrThrow(yield* replayed(store, sessionId)))
    }))
})
