/**
 * perf62many (bench row 21: 1,000 sessions, one turn each): what a turn costs per session, counted,
 * and the order a shutdown keeps now that the runs a caller's turn starts are owned by one finalizer
 * of the engine's scope (`StartedNow.owner`) rather than a scope each.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as FiberId from "effect/FiberId"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { DriverLock } from "../../src/engine/DriverLock.js"
import * as SessionEngine from "../../src/engine/SessionEngine.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import { EventStore } from "../../src/services/EventStore.js"
import * as IdGenerator from "../../src/services/IdGenerator.js"
import * as ModelProvider from "../../src/services/ModelProvider.js"
import { opsOf } from "./opsOf.js"

const capabilities = { provider: "fake", model: "bench", maxContextTokens: 128_000 }

/** Row 21's model: 100 deltas handed over one per chunk, then the finish. */
const rowModel = (deltas: number) => {
  const chunks = Array.from({ length: deltas }, (_, i) => ModelProvider.textDelta(`d${i} `))
  return Layer.succeed(ModelProvider.ModelProvider, ModelProvider.ModelProvider.of({
    capabilities,
    stream: () => Stream.concat(Stream.fromIterable(chunks).pipe(Stream.rechunk(1)), Stream.make(ModelProvider.finish("stop")))
  }))
}

describe("a session's turn, counted", () => {
  it("a held session's turn of 100 deltas one per chunk, read to its end, costs at most 1,497 Effect operations", async () => {
    const rt = ManagedRuntime.make(SessionEngine.layer().pipe(Layer.provide(Layer.mergeAll(MemoryEventStore.layer, rowModel(100), IdGenerator.layerSequential))))
    try {
      const engine = await rt.runPromise(SessionEngine.SessionEngine)
      const turn = (sessionId: string) => Stream.runDrain(engine.runTurn({ sessionId, userMessage: "hi" }))
      // Warm: the engine's first turns make what later ones reuse.
      for (let i = 0; i < 3; i++) await rt.runPromise(Effect.flatMap(engine.createSession({ cwd: "/bench", client: "test" }), ({ sessionId }) => turn(sessionId)))
      const { sessionId } = await rt.runPromise(engine.createSession({ cwd: "/bench", client: "test" }))
      const ops = await rt.runPromise(opsOf(Effect.orDie(turn(sessionId))))
      // main before perf62many: 1,647 (the driver's lock an effect `Semaphore`, a scope forked and
      // closed for each run, the turn's end and the check for a dangling turn a generator each);
      // before perf63many: 1,592 (the ask a channel step of its own before the first take, the end
      // one after the last events, and the stream's finalizer waiting for a turn that had ended); before
      // perf65steps: 1,561 (the model's stream's channel executor closed after the stream had ended).
      expect(ops).toBeLessThanOrEqual(1497)
    } finally {
      await rt.dispose()
    }
  })
})

describe("the engine's scope closing while a turn runs", () => {
  it("the run is stopped, its turn closed and stored, before the session's writer lock is let go", async () => {
    const log: Array<string> = []
    const spied = Layer.effect(EventStore, Effect.map(EventStore, (store) => ({
      ...store,
      appendAll: (events: Parameters<typeof store.appendAll>[0]) => Effect.tap(store.appendAll(events), () => Effect.sync(() => log.push(...events.map((e) => e.type)))),
      acquireWriter: (sessionId: string) =>
        Effect.zipRight(store.acquireWriter(sessionId), Effect.addFinalizer(() => Effect.sync(() => log.push(`released ${sessionId}`))))
    }))).pipe(Layer.provideMerge(MemoryEventStore.layer))
    // A response that never ends after its first delta.
    const model = Layer.succeed(ModelProvider.ModelProvider, ModelProvider.ModelProvider.of({
      capabilities,
      stream: () => Stream.concat(Stream.make(ModelProvider.textDelta("a")), Stream.never)
    }))
    await Effect.runPromise(Effect.gen(function*() {
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(SessionEngine.layer().pipe(Layer.provide(Layer.mergeAll(spied, model, IdGenerator.layerSequential))), scope)
      const engine = Context.get(context, SessionEngine.SessionEngine)
      const sessions = yield* Effect.forEach([1, 2], () => engine.createSession({ cwd: "/tmp", client: "test" }))
      const delta = yield* Deferred.make<void>()
      let deltas = 0
      const callers = yield* Effect.forEach(sessions, ({ sessionId }) =>
        engine.runTurn({ sessionId, userMessage: "hi" }).pipe(
          Stream.runForEach((event) => event.type === "model.delta" && ++deltas === 2 ? Deferred.succeed(delta, undefined) : Effect.void),
          Effect.fork
        ))
      yield* Deferred.await(delta)
      yield* Scope.close(scope, Exit.void)
      for (const caller of callers) yield* Fiber.await(caller)
      // Each turn closed (cancelled by the shutdown) and stored while its lock was held; every lock let go after both runs stopped.
      const released = log.flatMap((entry, i) => entry.startsWith("released") ? [i] : [])
      const completed = log.flatMap((entry, i) => entry === "turn.completed" ? [i] : [])
      expect(released).toHaveLength(2)
      expect(completed).toHaveLength(2)
      expect(Math.max(...completed)).toBeLessThan(Math.min(...released))
    }))
  })
})

describe("DriverLock", () => {
  it.effect("a free lock is taken at once; a held one is waited for, and handed on when let go", () =>
    Effect.gen(function*() {
      const lock = new DriverLock()
      expect(lock.tryTake()).toBe(true)
      expect(lock.tryTake()).toBe(false)
      const waiter = yield* Effect.fork(Effect.as(lock.take(), "taken"))
      yield* Effect.yieldNow()
      expect(waiter.unsafePoll()).toBeNull()
      lock.release()
      expect(yield* Fiber.join(waiter)).toBe("taken")
      expect(lock.isHeld).toBe(true)
      lock.release()
      expect(lock.isHeld).toBe(false)
    }))

  it.effect("a waiter interrupted takes nothing, and the next waiter still gets the lock", () =>
    Effect.gen(function*() {
      const lock = new DriverLock()
      lock.tryTake()
      const first = yield* Effect.fork(lock.take())
      const second = yield* Effect.fork(Effect.as(lock.take(), "second"))
      yield* Effect.yieldNow()
      yield* Fiber.interrupt(first)
      lock.release()
      expect(yield* Fiber.join(second)).toBe("second")
      expect(lock.isHeld).toBe(true)
    }))

  it.effect("woken together, one waiter takes the lock and the others wait on", () =>
    Effect.gen(function*() {
      const lock = new DriverLock()
      lock.tryTake()
      const order: Array<number> = []
      const waiters = yield* Effect.forEach([1, 2, 3], (n) => Effect.fork(Effect.zipRight(lock.take(), Effect.sync(() => order.push(n)))))
      yield* Effect.yieldNow()
      lock.release()
      yield* Effect.repeat(Effect.yieldNow(), { until: () => order.length === 1 })
      yield* Effect.yieldNow()
      expect(order).toHaveLength(1)
      lock.release()
      yield* Effect.repeat(Effect.yieldNow(), { until: () => order.length === 2 })
      lock.release()
      for (const waiter of waiters) yield* Fiber.join(waiter)
      expect([...order].sort()).toEqual([1, 2, 3])
    }))

  it.effect("a release wakes one waiter, first come first served: N waiters, N takes", () =>
    Effect.gen(function*() {
      // Every release woke every waiter to look again: 500 waiters made 125,249 `take()` calls.
      const lock = new DriverLock()
      let takes = 0
      const take = lock.take.bind(lock)
      lock.take = () => {
        takes++
        return take()
      }
      lock.tryTake()
      const order: Array<number> = []
      const n = 200
      const waiters = yield* Effect.forEach(Array.from({ length: n }, (_, i) => i), (i) =>
        Effect.fork(Effect.zipRight(lock.take(), Effect.zipRight(Effect.sync(() => void order.push(i)), Effect.zipRight(Effect.yieldNow(), Effect.sync(() => lock.release()))))))
      yield* Effect.yieldNow()
      lock.release()
      for (const waiter of waiters) yield* Fiber.join(waiter)
      expect(takes).toBe(n)
      expect(order).toEqual(Array.from({ length: n }, (_, i) => i))
      expect(lock.isHeld).toBe(false)
    }))

  it.effect("a waiter handed the lock but interrupted before it runs passes it on", () =>
    Effect.gen(function*() {
      const lock = new DriverLock()
      lock.tryTake()
      const first = yield* Effect.fork(lock.take())
      const second = yield* Effect.fork(Effect.as(lock.take(), "second"))
      yield* Effect.yieldNow()
      // The interrupt is told first, the hand-over right after, before the first fiber runs again.
      yield* Effect.sync(() => {
        first.unsafeInterruptAsFork(FiberId.none)
        lock.release()
      })
      expect(Exit.isInterrupted(yield* Fiber.await(first))).toBe(true)
      expect(yield* Fiber.join(second)).toBe("second")
      expect(lock.isHeld).toBe(true)
    }))
})
