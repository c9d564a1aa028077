/**
 * review61c: an Effect embedder's calls still running (on its own fibers) when the engine's layer is
 * released — a watch waiting for events, a write after the locks were released.
 */
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { describe, expect, it } from "vitest"
import * as SessionEngine from "../../src/engine/SessionEngine.js"
import * as FakeModelProvider from "../../src/layers/FakeModelProvider.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import * as IdGenerator from "../../src/services/IdGenerator.js"

const engineLayer = SessionEngine.layer().pipe(
  Layer.provide(MemoryEventStore.layer),
  Layer.provide(FakeModelProvider.layer()),
  Layer.provide(IdGenerator.layerSequential)
)

describe("the engine's scope closing under calls of an Effect embedder", () => {
  it("a watch waiting for events is interrupted, and a later write is interrupted, not stored", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const engine = Context.get(yield* Layer.buildWithScope(engineLayer, scope), SessionEngine.SessionEngine)
      const { sessionId } = yield* engine.createSession({ cwd: "/tmp", client: "test" })
      const seen = yield* Deferred.make<void>()
      const watch = yield* engine.watchSession({ sessionId }).pipe(
        Stream.tap(() => Deferred.succeed(seen, undefined)),
        Stream.runDrain,
        Effect.fork
      )
      yield* Deferred.await(seen)
      yield* Scope.close(scope, Exit.void)
      expect(Exit.isInterrupted(yield* Fiber.await(watch))).toBe(true)
      const late = yield* Effect.exit(engine.renameSession({ sessionId, title: "late" }))
      expect(Exit.isInterrupted(late)).toBe(true)
    }).pipe(Effect.runPromise), 20000)
})
