/**
 * Group commit of a model's response (ModelResponse): each commit takes what the provider has
 * produced since the last one, so the cost of a response does not depend on how the provider
 * chunks it — and the contract holds: the first delta is stored without waiting on any clock, every
 * delta is stored once and in order, chunking does not change the log, and nothing is stored after
 * a cancel was asked for. A later batch of a response gathers for the commit window
 * (`TurnOptions.commitWindow`): a response paced one delta per turn of the event loop is a few
 * commits, not one a delta, and the window neither delays the response's end nor holds up a cancel.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import { ProviderFailure } from "../../src/domain/Errors.js"
import * as SessionEngine from "../../src/engine/SessionEngine.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import { EventStore } from "../../src/services/EventStore.js"
import * as IdGenerator from "../../src/services/IdGenerator.js"
import * as ModelProvider from "../../src/services/ModelProvider.js"
import { collect, expectWellFormedLog, typesOf } from "../helpers.js"

/** A provider answering its n-th request (from 0) with `stream(n)`. */
const provider = (stream: (n: number) => Stream.Stream<ModelProvider.ModelChunk, ProviderFailure>) =>
  Layer.sync(ModelProvider.ModelProvider, () => {
    let requests = 0
    return ModelProvider.ModelProvider.of({
      capabilities: { provider: "fake", model: "group-commit", maxContextTokens: 128_000 },
      stream: () => stream(requests++)
    })
  })

/**
 * A memory store that reports each batch of model deltas it is asked to append, and holds the first
 * such batch until `release` is done (a slow store), when `hold` is set.
 */
const watchedStore = (hold: boolean) =>
  Effect.gen(function*() {
    const release = yield* Deferred.make<void>()
    const firstHeld = yield* Deferred.make<void>()
    const deltaBatches: Array<ReadonlyArray<string>> = []
    const stored = yield* Deferred.make<void>()
    const layer = Layer.effect(
      EventStore,
      Effect.map(EventStore, (store) => ({
        ...store,
        appendAll: (events: ReadonlyArray<AgentEvent>) =>
          Effect.suspend(() => {
            const deltas = events.flatMap((e) => e.type === "model.delta" ? [e.payload.text] : [])
            if (deltas.length === 0) return store.appendAll(events)
            deltaBatches.push(deltas)
            const wait = hold && deltaBatches.length === 1
              ? Effect.zipRight(Deferred.succeed(firstHeld, undefined), Deferred.await(release))
              : Effect.void
            return wait.pipe(Effect.zipRight(store.appendAll(events)), Effect.zipRight(Deferred.succeed(stored, undefined)))
          })
      }))
    ).pipe(Layer.provide(MemoryEventStore.layer))
    return { layer, release, firstHeld, deltaBatches, stored }
  })

const engineOn = (store: Layer.Layer<EventStore>, model: Layer.Layer<ModelProvider.ModelProvider>, options?: SessionEngine.Options) =>
  SessionEngine.layer(options).pipe(Layer.provideMerge(store), Layer.provide(model), Layer.provide(IdGenerator.layerSequential))

const deltas = (n: number) => Array.from({ length: n }, (_, i) => `d${i} `)

/**
 * One delta per chunk, as the SDK adapters hand them over: the first, then the rest once the first
 * is held in the store, then `produced` is done, then `end`.
 */
const runningAhead = (
  texts: ReadonlyArray<string>,
  firstHeld: Deferred.Deferred<void>,
  produced: Deferred.Deferred<void>,
  end: Stream.Stream<ModelProvider.ModelChunk>
) =>
  provider(() =>
    Stream.make(ModelProvider.textDelta(texts[0]!)).pipe(
      Stream.concat(Stream.fromEffect(Deferred.await(firstHeld)).pipe(Stream.drain)),
      Stream.concat(Stream.fromIterable(texts.slice(1).map(ModelProvider.textDelta)).pipe(Stream.rechunk(1))),
      Stream.concat(Stream.fromEffect(Deferred.succeed(produced, undefined)).pipe(Stream.drain)),
      Stream.concat(end)
    )
  )

/** A session, and its first turn consumed in a fiber once the store holds the first delta and the provider has run ahead. */
const turnHeldAfterFirst = (watched: { readonly firstHeld: Deferred.Deferred<void> }, produced: Deferred.Deferred<void>) =>
  Effect.gen(function*() {
    const engine = yield* SessionEngine.SessionEngine
    const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
    const turn = yield* engine.runTurn({ sessionId, userMessage: "hi" }).pipe(collect, Effect.fork)
    yield* Deferred.await(watched.firstHeld)
    yield* Deferred.await(produced)
    return { engine, sessionId, turn }
  })

/** `texts` as text deltas, each in a turn of the event loop of its own (a paced vendor: one delta per socket read). */
const paced = (texts: ReadonlyArray<string>) =>
  Stream.fromIterable(texts).pipe(Stream.mapEffect((text) => Effect.as(ModelProvider.nextMacrotask, ModelProvider.textDelta(text))))

/** A response of `texts`: the first delta, the rest paced once the first is stored, then `end`. */
const pacedAfterFirst = (
  texts: ReadonlyArray<string>,
  stored: Deferred.Deferred<void>,
  end: Stream.Stream<ModelProvider.ModelChunk, ProviderFailure>
) =>
  provider(() =>
    Stream.make(ModelProvider.textDelta(texts[0]!)).pipe(
      Stream.concat(Stream.fromEffect(Deferred.await(stored)).pipe(Stream.drain)),
      Stream.concat(paced(texts.slice(1))),
      Stream.concat(end)
    )
  )

/** A window nothing in these tests waits out: whatever ends a later batch's gathering is something else. */
const longWindow: SessionEngine.Options = { commitWindow: "1 hour" }

/**
 * One turn of `n` deltas, the first alone and the rest paced once it is stored, then `end`, with a
 * window nothing waits out: its events, the log, and the deltas of each append.
 */
const pacedTurn = (n: number, end: Stream.Stream<ModelProvider.ModelChunk, ProviderFailure>) =>
  Effect.gen(function*() {
    const watched = yield* watchedStore(false)
    const texts = deltas(n)
    return yield* Effect.gen(function*() {
      const engine = yield* SessionEngine.SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      const events = yield* collect(engine.runTurn({ sessionId, userMessage: "hi" }))
      const stored = yield* collect(engine.replaySession({ sessionId }))
      return { batches: watched.deltaBatches, events, stored, texts }
    }).pipe(Effect.provide(engineOn(watched.layer, pacedAfterFirst(texts, watched.stored, end), longWindow)))
  })

describe("group commit of a response", () => {
  it.effect("the first delta of a response is stored without the clock moving, and a later one once it arrives, the commit window on no clock", () =>
    Effect.gen(function*() {
      const watched = yield* watchedStore(false)
      const later = yield* Deferred.make<void>()
      const model = provider(() =>
        Stream.make(ModelProvider.textDelta("first")).pipe(
          Stream.concat(Stream.fromEffect(Effect.as(Effect.sleep("1 second"), ModelProvider.textDelta("later")))),
          Stream.concat(Stream.fromEffect(Effect.as(Deferred.await(later), ModelProvider.finish("stop"))))
        )
      )
      yield* Effect.gen(function*() {
        const engine = yield* SessionEngine.SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
        const turn = yield* engine.runTurn({ sessionId, userMessage: "hi" }).pipe(collect, Effect.fork)
        // No TestClock.adjust: a first delta waiting on a timer (a batching window) would never be stored.
        yield* Deferred.await(watched.stored)
        expect(watched.deltaBatches).toEqual([["first"]])
        yield* TestClock.adjust("1 second")
        yield* Effect.repeat(Effect.yieldNow(), { until: () => watched.deltaBatches.length === 2 })
        expect(watched.deltaBatches).toEqual([["first"], ["later"]])
        yield* Deferred.succeed(later, undefined)
        const events = yield* Fiber.join(turn)
        expect(typesOf(events)).toEqual(["turn.started", "user.message", "model.delta", "model.delta", "turn.completed"])
      }).pipe(Effect.provide(engineOn(watched.layer, model)))
    }))

  it.effect("a slow store coalesces what arrives meanwhile into one append; every delta is stored once, in order", () =>
    Effect.gen(function*() {
      const watched = yield* watchedStore(true)
      const produced = yield* Deferred.make<void>()
      const texts = deltas(100)
      const model = runningAhead(texts, watched.firstHeld, produced, Stream.make(ModelProvider.finish("stop")))
      yield* Effect.gen(function*() {
        // The provider runs ahead of the held commit.
        const { engine, sessionId, turn } = yield* turnHeldAfterFirst(watched, produced)
        yield* Deferred.succeed(watched.release, undefined)
        const events = yield* Fiber.join(turn)
        expect(watched.deltaBatches).toEqual([texts.slice(0, 1), texts.slice(1)])
        const stored = yield* collect(engine.replaySession({ sessionId }))
        expect(stored.flatMap((e) => e.type === "model.delta" ? [e.payload.text] : [])).toEqual(texts)
        expect(stored.slice(1)).toEqual(events)
        expectWellFormedLog(stored)
      }).pipe(Effect.provide(engineOn(watched.layer, model)))
    }))

  it.effect("nothing buffered is stored once a cancel is asked for, though the provider ran ahead", () =>
    Effect.gen(function*() {
      const watched = yield* watchedStore(true)
      const produced = yield* Deferred.make<void>()
      const texts = deltas(50)
      const model = runningAhead(texts, watched.firstHeld, produced, Stream.never)
      yield* Effect.gen(function*() {
        const { engine, sessionId, turn } = yield* turnHeldAfterFirst(watched, produced)
        const cancel = yield* Effect.fork(engine.cancelTurn({ sessionId }))
        yield* Effect.repeat(Effect.yieldNow(), { until: () => watched.deltaBatches.length > 0 })
        yield* Deferred.succeed(watched.release, undefined)
        yield* Fiber.join(cancel)
        const events = yield* Fiber.join(turn)
        expect(typesOf(events)).toEqual(["turn.started", "user.message", "model.delta", "turn.completed"])
        expect(events.at(-1)!.payload).toEqual({ stopReason: "cancelled" })
        expect(watched.deltaBatches).toEqual([["d0 "]])
        const stored = yield* collect(engine.replaySession({ sessionId }))
        expect(stored.slice(1)).toEqual(events)
      }).pipe(Effect.provide(engineOn(watched.layer, model)))
    }))

  it.effect("a response that hands over some at once and then waits: what came is stored, and a cancel interrupts the wait", () =>
    Effect.gen(function*() {
      const watched = yield* watchedStore(false)
      const interrupted = yield* Deferred.make<void>()
      // Read at once as the response starts, then a wait nothing ends: the read goes on ahead of the step.
      const model = provider(() =>
        Stream.fromIterable(deltas(3).map(ModelProvider.textDelta)).pipe(
          Stream.rechunk(1),
          Stream.concat(Stream.fromEffect(Effect.onInterrupt(Effect.never, () => Deferred.succeed(interrupted, undefined))))
        )
      )
      yield* Effect.gen(function*() {
        const engine = yield* SessionEngine.SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
        const turn = yield* engine.runTurn({ sessionId, userMessage: "hi" }).pipe(collect, Effect.fork)
        yield* Deferred.await(watched.stored)
        expect(watched.deltaBatches).toEqual([deltas(3)])
        yield* engine.cancelTurn({ sessionId })
        yield* Deferred.await(interrupted)
        const events = yield* Fiber.join(turn)
        expect(typesOf(events)).toEqual(["turn.started", "user.message", "model.delta", "model.delta", "model.delta", "turn.completed"])
        expect(events.at(-1)!.payload).toEqual({ stopReason: "cancelled" })
      }).pipe(Effect.provide(engineOn(watched.layer, model)))
    }))

  it.effect("how the provider chunks its stream does not change the stored log", () =>
    Effect.gen(function*() {
      const texts = deltas(300)
      const pieces: Array<ModelProvider.ModelChunk> = [
        ...texts.slice(0, 150).map(ModelProvider.textDelta),
        ModelProvider.toolCall("call-1", "missing_tool", { path: "a.txt" }),
        ...texts.slice(150).map(ModelProvider.textDelta),
        ModelProvider.finish("stop", { inputTokens: 10, outputTokens: 300 })
      ]
      const logOf = (chunkSize: number) =>
        Effect.gen(function*() {
          const engine = yield* SessionEngine.SessionEngine
          const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
          yield* engine.runTurn({ sessionId, userMessage: "hi" }).pipe(Stream.runDrain)
          return yield* collect(engine.replaySession({ sessionId }))
        }).pipe(
          Effect.provide(engineOn(MemoryEventStore.layer, provider((n) =>
            n === 0
              ? Stream.fromIterable(pieces).pipe(Stream.rechunk(chunkSize))
              : Stream.make(ModelProvider.textDelta("done"), ModelProvider.finish("stop"))
          )))
        )
      const whole = yield* logOf(pieces.length)
      expect(whole.filter((e) => e.type === "model.delta")).toHaveLength(301)
      expect(whole.filter((e) => e.type === "tool.failed" || e.type === "tool.completed")).toHaveLength(1)
      for (const size of [1, 7, 64]) expect(JSON.stringify(yield* logOf(size))).toBe(JSON.stringify(whole))
    }))

  it.effect("a paced response is a few commits, not one a delta: the first at once, the rest when the stream ends, not when the window does", () =>
    Effect.gen(function*() {
      // The second delta is produced only once the first is stored: a first delta held for the window never would be.
      const { batches, events, stored, texts } = yield* pacedTurn(100, Stream.make(ModelProvider.finish("stop")))
      expect(batches).toEqual([texts.slice(0, 1), texts.slice(1)])
      expect(events.filter((e) => e.type === "model.delta")).toHaveLength(100)
      expect(stored.slice(1)).toEqual(events)
      expectWellFormedLog(stored)
    }))

  it.effect("a later batch is committed once enough pieces wait, well before the response's buffer is full", () =>
    Effect.gen(function*() {
      const { batches, texts } = yield* pacedTurn(3000, Stream.make(ModelProvider.finish("stop")))
      expect(batches.flat()).toEqual(texts)
      expect(batches.length).toBeGreaterThanOrEqual(3)
      expect(batches.length).toBeLessThanOrEqual(6)
      expect(Math.max(...batches.map((b) => b.length))).toBeLessThanOrEqual(2048)
    }))

  it.effect("a stream that fails during the window ends the response at once, what came before it stored", () =>
    Effect.gen(function*() {
      const { batches, events, texts } = yield* pacedTurn(20, Stream.fail(ProviderFailure.of("server", "the vendor went away")))
      expect(batches).toEqual([texts.slice(0, 1), texts.slice(1)])
      expect(events.at(-1)!.type).toBe("turn.completed")
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "error", errorCode: "server" })
    }))

  it.effect("a cancel during the window ends the turn at once, and what waited for the window is not stored", () =>
    Effect.gen(function*() {
      const watched = yield* watchedStore(false)
      const produced = yield* Deferred.make<void>()
      const texts = deltas(2)
      const model = pacedAfterFirst(texts, watched.stored, Stream.fromEffect(Deferred.succeed(produced, undefined)).pipe(
        Stream.drain,
        Stream.concat(Stream.never)
      ))
      yield* Effect.gen(function*() {
        const engine = yield* SessionEngine.SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
        const turn = yield* engine.runTurn({ sessionId, userMessage: "hi" }).pipe(collect, Effect.fork)
        yield* Deferred.await(produced)
        yield* engine.cancelTurn({ sessionId })
        const events = yield* Fiber.join(turn)
        expect(typesOf(events)).toEqual(["turn.started", "user.message", "model.delta", "turn.completed"])
        expect(events.at(-1)!.payload).toEqual({ stopReason: "cancelled" })
        expect(watched.deltaBatches).toEqual([texts.slice(0, 1)])
      }).pipe(Effect.provide(engineOn(watched.layer, model, longWindow)))
    }))

  it.effect("a steer sent on seeing the last delta of a paced response, gathered with the response's end, makes one more step", () =>
    Effect.gen(function*() {
      const texts = ["a", "b", "last"]
      const model = provider((n) =>
        n === 0
          ? Stream.concat(paced(texts), Stream.make(ModelProvider.finish("stop")))
          : Stream.make(ModelProvider.textDelta("second"), ModelProvider.finish("stop"))
      )
      yield* Effect.gen(function*() {
        const engine = yield* SessionEngine.SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
        const events = yield* collect(engine.runTurn({ sessionId, userMessage: "go" }).pipe(
          Stream.tap((e) => e.type === "model.delta" && e.payload.text === "last" ? engine.steer({ sessionId, message: "more" }) : Effect.void)
        ))
        expect(typesOf(events)).toEqual(["turn.started", "user.message", "model.delta", "model.delta", "model.delta", "turn.steered", "model.delta", "turn.completed"])
        expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
      }).pipe(Effect.provide(engineOn(MemoryEventStore.layer, model, longWindow)))
    }))
})
