/**
 * A session another process writes is followed by one poll of the store, shared by the session's
 * watchers. A watcher that joins late reads the store itself first, and may read events the poll
 * has not read yet: those must still reach the watchers that were there before it. They did not:
 * the late watcher told the feed it had seen them, the poll read on past them, and an earlier
 * watcher never got the session's last events (found by the cluster test: an SSE client through a
 * runner that did not own its session waited for ever for a turn's end that another client's
 * `/live` had read from the store first).
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Chunk from "effect/Chunk"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import * as Watchers from "../../src/engine/Watchers.js"
import * as JsonlEventStore from "../../src/layers/JsonlEventStore.js"
import { collect, engineLayer, tempDir } from "../helpers.js"

const interval = "1 second"

/** An engine of its own on the JSONL store in `dataDir`, as another process would have. */
const engineOn = (dataDir: string, responses: number) =>
  Effect.map(
    Layer.build(engineLayer(JsonlEventStore.layer({ dataDir }), { responses: Array.from({ length: responses }, (_, i) => ({ chunks: [`answer ${i}`, "."] })) }, {
      watchPollInterval: interval
    })),
    (context) => context.unsafeMap.get(SessionEngine.key) as SessionEngine["Type"]
  )

/** Lets the other fibers and pending I/O run (the store is on disk). */
const settle = Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 10)))

/** A watch of the whole session, run in the background; `reached` is done once it has delivered `sequence`. */
const watching = (engine: SessionEngine["Type"], sessionId: string, sequence: number) =>
  Effect.gen(function*() {
    const reached = yield* Deferred.make<void>()
    const seen: Array<AgentEvent> = []
    const fiber = yield* engine.watchSession({ sessionId }).pipe(
      Stream.tap((event) => {
        seen.push(event)
        return event.sequence === sequence ? Deferred.succeed(reached, undefined) : Effect.void
      }),
      Stream.runDrain,
      Effect.fork
    )
    return { fiber, reached, seen }
  })

describe("watchSession across processes, a watcher joining late", () => {
  it.effect("does not keep the session's last events from the watchers that were there before it", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      const writer = yield* engineOn(dataDir, 2)
      const reader = yield* engineOn(dataDir, 0)
      const { sessionId } = yield* writer.createSession({ cwd: "/work", client: "test" })
      yield* collect(writer.runTurn({ sessionId, userMessage: "one" }))
      const first = (yield* collect(writer.replaySession({ sessionId }))).length

      // The first watcher has read the store and waits on the session's feed (one poll found nothing new).
      const early = yield* watching(reader, sessionId, first)
      yield* Deferred.await(early.reached)
      yield* settle
      yield* TestClock.adjust(interval)
      yield* settle

      // Another process writes a turn; before the poll reads it, a second watcher joins and reads it from the store.
      yield* collect(writer.runTurn({ sessionId, userMessage: "two" }))
      const log = yield* collect(writer.replaySession({ sessionId }))
      const late = yield* watching(reader, sessionId, log.length)
      yield* Deferred.await(late.reached)
      yield* settle

      // The next polls: the first watcher gets the second turn too, each event once.
      for (let i = 0; i < 200 && early.seen.length < log.length; i++) {
        yield* TestClock.adjust(interval)
        yield* settle
      }
      expect(early.seen.map((event) => event.sequence)).toEqual(log.map((event) => event.sequence))
      expect(late.seen).toEqual(log)
      expect(Option.isNone(yield* Fiber.poll(early.fiber))).toBe(true)
      yield* Fiber.interrupt(early.fiber)
      yield* Fiber.interrupt(late.fiber)
    }).pipe(Effect.provide(NodeContext.layer), Effect.scoped))

  it.scoped("a watcher that has not read the store yet (a client that never reads) holds no other watcher back", () =>
    Effect.gen(function*() {
      const stored: Array<AgentEvent> = []
      const reads: Array<number> = []
      const hub = Watchers.make<never>()
      const poll: Watchers.Poll<never> = {
        interval: "1 second",
        read: (fromSequence) => {
          reads.push(fromSequence)
          return Stream.fromIterable(stored.filter((event) => event.sequence >= fromSequence))
        },
        polling: () => true
      }
      const event = (sequence: number) => ({ sequence, sessionId: "s", type: "session.renamed" }) as unknown as AgentEvent
      stored.push(event(1), event(2))
      // Subscribed, never read the store, never says what it has seen.
      yield* hub.subscribe("s", poll)
      const reading = yield* hub.subscribe("s", poll)
      reading.seen(2)
      stored.push(event(3))
      yield* TestClock.adjust("1 second")
      expect(reads).toEqual([3])
      expect(Chunk.toReadonlyArray(yield* reading.take).map((e) => e.sequence)).toEqual([3])
    }))
})
