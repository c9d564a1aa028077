/**
 * A caller's turn starts in the caller's step (`SessionDriver`'s run, started by `StartedNow`): by the
 * time `runTurn`'s stream is first pulled, its run has stored what it could store without waiting.
 * And `StartedNow.owner` itself: fibers started at once, owned by one finalizer of their scope as `Effect.forkIn` owns each.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Channel from "effect/Channel"
import * as Chunk from "effect/Chunk"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Scheduler from "effect/Scheduler"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import { ProviderFailure } from "../../src/domain/Errors.js"
import * as SessionEngine from "../../src/engine/SessionEngine.js"
import * as StartedNow from "../../src/engine/StartedNow.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import * as IdGenerator from "../../src/services/IdGenerator.js"
import * as ModelProvider from "../../src/services/ModelProvider.js"
import { collect, expectWellFormedLog, typesOf } from "../helpers.js"

/**
 * A scheduler that holds every other fiber's tasks until `release`, then hands them and every later
 * one to the default scheduler; the tasks of `own`, the fiber under test, run at once (its own
 * resumption after an async step that answered at once, such as a free semaphore's take). While it
 * holds, no other fiber runs but in the step that started it.
 */
class HeldScheduler implements Scheduler.Scheduler {
  own: Fiber.RuntimeFiber<unknown, unknown> | undefined
  private held: Array<Scheduler.Task> | undefined = []
  scheduleTask(task: Scheduler.Task, priority: number, fiber?: Fiber.RuntimeFiber<unknown, unknown>): void {
    if (this.held === undefined) Scheduler.defaultScheduler.scheduleTask(task, priority)
    else if (fiber !== undefined && fiber === this.own) task()
    else this.held.push(task)
  }
  shouldYield(fiber: Fiber.RuntimeFiber<unknown, unknown>): number | false {
    return Scheduler.defaultScheduler.shouldYield(fiber)
  }
  release(): void {
    const held = this.held ?? []
    this.held = undefined
    for (const task of held) Scheduler.defaultScheduler.scheduleTask(task, 0)
  }
}

/** A model handing over its whole response at once, one delta per chunk (a scripted or cached response). */
const wholeModel = (texts: ReadonlyArray<string>) =>
  Layer.succeed(ModelProvider.ModelProvider, ModelProvider.ModelProvider.of({
    capabilities: { provider: "fake", model: "whole", maxContextTokens: 128_000 },
    stream: () => Stream.concat(Stream.fromIterable(texts.map(ModelProvider.textDelta)).pipe(Stream.rechunk(1)), Stream.make(ModelProvider.finish("stop")))
  }))

describe("a caller's turn starts in the caller's step", () => {
  it("the first pull of runTurn's stream finds the turn's start and its whole response stored, without waiting", async () => {
    const texts = ["a", "b", "c"]
    const rt = ManagedRuntime.make(SessionEngine.layer().pipe(Layer.provide(Layer.mergeAll(MemoryEventStore.layer, wholeModel(texts), IdGenerator.layerSequential))))
    try {
      const engine = await rt.runPromise(SessionEngine.SessionEngine)
      const { sessionId } = await rt.runPromise(engine.createSession({ cwd: "/work", client: "test" }))
      const scope = rt.runSync(Scope.make())
      // Nothing scheduled runs until the first pull is over, and `runSync` fails if anything in it waits:
      // had the run started on the scheduler's next turn, the first pull would wait for it (an AsyncFiberException).
      const held = new HeldScheduler()
      let taken
      try {
        taken = rt.runSync(
          Effect.withFiberRuntime((fiber) => Effect.sync(() => held.own = fiber)).pipe(Effect.zipRight(Effect.flatMap(Scope.extend(Channel.toPull(Stream.toChannel(engine.runTurn({ sessionId, userMessage: "hi" }))), scope), (pull) =>
            Effect.map(pull, (pulled) => [pull, Either.getOrThrow(pulled)] as const))), Effect.withScheduler(held))
        )
      } finally {
        held.release()
      }
      const [pull, first] = taken
      expect(typesOf(Chunk.toReadonlyArray(first))).toEqual(["turn.started", "user.message", "model.delta", "model.delta", "model.delta"])
      // The rest comes once the event loop has run (the end of a response read whole waits one turn of it).
      const rest: Array<AgentEvent> = []
      await rt.runPromise(Effect.iterate(true, {
        while: (more) => more,
        body: () => Effect.map(pull, Either.match({ onLeft: () => false, onRight: (chunk) => (rest.push(...chunk), true) }))
      }))
      await rt.runPromise(Scope.close(scope, Exit.void))
      expect(typesOf(rest)).toEqual(["turn.completed"])
      const stored = await rt.runPromise(collect(engine.replaySession({ sessionId })))
      expect(stored.slice(1)).toEqual([...first, ...rest])
      expectWellFormedLog(stored)
    } finally {
      await rt.dispose()
    }
  })

  it.effect("a turn that ends in the caller's step (its model refused at once) ends its caller's stream, and the session takes the next turn", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine.SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      // The first request fails as it starts, not retryable: the whole turn — its start, the failure, its
      // end — runs before its caller takes anything, and its run ends there, holding the session's lock.
      const first = yield* collect(engine.runTurn({ sessionId, userMessage: "one" }))
      expect(typesOf(first)).toEqual(["turn.started", "user.message", "turn.completed"])
      expect(first.at(-1)).toMatchObject({ payload: { stopReason: "error", errorCode: "invalid_request" } })
      const second = yield* collect(engine.runTurn({ sessionId, userMessage: "two" }))
      expect(typesOf(second)).toEqual(["turn.started", "user.message", "model.delta", "turn.completed"])
      expectWellFormedLog(yield* collect(engine.replaySession({ sessionId })))
    }).pipe(Effect.provide(SessionEngine.layer().pipe(Layer.provide(Layer.mergeAll(
      MemoryEventStore.layer,
      Layer.sync(ModelProvider.ModelProvider, () => {
        let requests = 0
        return ModelProvider.ModelProvider.of({
          capabilities: { provider: "fake", model: "refusing once", maxContextTokens: 128_000 },
          stream: () =>
            requests++ === 0
              ? Stream.fail(ProviderFailure.of("invalid_request", "refused"))
              : Stream.make(ModelProvider.textDelta("x"), ModelProvider.finish("stop"))
        })
      }),
      IdGenerator.layerSequential
    ))))))
})

describe("StartedNow.owner", () => {
  it.effect("runs the fiber in the caller's step, up to its first wait", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const owner = yield* StartedNow.owner(scope)
      const steps: Array<string> = []
      const gate = yield* Deferred.make<void>()
      yield* owner.forkIn(Effect.zipRight(Effect.sync(() => steps.push("before the wait")), Effect.zipRight(Deferred.await(gate), Effect.sync(() => steps.push("after")))))
      // No yield since: `Effect.forkIn` would have left `steps` empty here.
      expect(steps).toEqual(["before the wait"])
      yield* Deferred.succeed(gate, undefined)
      yield* Effect.repeat(Effect.yieldNow(), { until: () => steps.length === 2 })
      yield* Scope.close(scope, Exit.void)
      expect(steps).toEqual(["before the wait", "after"])
    }))

  it.effect("closing the scope interrupts the fiber and waits for its end", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const owner = yield* StartedNow.owner(scope)
      const ended = yield* Deferred.make<Exit.Exit<void>>()
      yield* owner.forkIn(Effect.onExit(Effect.never, (exit) => Deferred.succeed(ended, Exit.asVoid(exit))))
      expect(yield* Deferred.isDone(ended)).toBe(false)
      yield* Scope.close(scope, Exit.void)
      // Done before `close` returned: the scope waited for the fiber's end.
      expect(yield* Deferred.isDone(ended)).toBe(true)
      expect(Exit.isInterrupted(yield* Deferred.await(ended))).toBe(true)
    }))

  it.effect("a fiber that has ended is let go; the scope holds one finalizer for all; closing it interrupts the others, the last started first", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const finalizers = () => (scope as unknown as { state: { finalizers: Map<unknown, unknown> } }).state.finalizers.size
      const owner = yield* StartedNow.owner(scope)
      for (let i = 0; i < 100; i++) yield* owner.forkIn(Effect.void)
      // Every one ended in its start: none is kept.
      expect(owner.size()).toBe(0)
      expect(finalizers()).toBe(1)
      const gate = yield* Deferred.make<void>()
      yield* owner.forkIn(Deferred.await(gate))
      expect(owner.size()).toBe(1)
      // One that ends after a wait is let go too.
      yield* Deferred.succeed(gate, undefined)
      yield* Effect.repeat(Effect.yieldNow(), { until: () => owner.size() === 0 })
      const interrupted: Array<number> = []
      for (const n of [1, 2]) yield* owner.forkIn(Effect.onInterrupt(Effect.never, () => Effect.sync(() => interrupted.push(n))))
      expect(owner.size()).toBe(2)
      expect(finalizers()).toBe(1)
      yield* Scope.close(scope, Exit.void)
      expect(interrupted).toEqual([2, 1])
      expect(owner.size()).toBe(0)
    }))

  it.effect("a scope already closed gets a fiber interrupted before it starts, as Effect.forkIn gives", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const owner = yield* StartedNow.owner(scope)
      yield* Scope.close(scope, Exit.void)
      let ran = false
      yield* owner.forkIn(Effect.sync(() => {
        ran = true
      }))
      yield* Effect.yieldNow()
      yield* Effect.yieldNow()
      expect(ran).toBe(false)
    }))
})
