/**
 * Issue 19, item 4: a cassette reproduces the recorded waits. A session whose model request was
 * retried (`model.retry {delayMs}`) replays from `Cassette.fromEvents(log)` waiting exactly the
 * recorded `delayMs` — whatever the replaying engine's jitter draws or its retry policy says — so the
 * replayed log is byte for byte the recorded one (sequential ids, TestClock, a JSONL store).
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as FileSystem from "@effect/platform/FileSystem"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Random from "effect/Random"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import * as TestContext from "effect/TestContext"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import * as SessionEngineModule from "../../src/engine/SessionEngine.js"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import * as Cassette from "../../src/layers/Cassette.js"
import * as FakeModelProvider from "../../src/layers/FakeModelProvider.js"
import * as JsonlEventStore from "../../src/layers/JsonlEventStore.js"
import * as IdGenerator from "../../src/services/IdGenerator.js"
import { collect, tempDir } from "../helpers.js"

/** The first turn's model request is refused twice (rate limited, overloaded), then answered. */
const recording: FakeModelProvider.Script = {
  responses: [{ failure: { reason: "rate_limited" } }, { failure: { reason: "overloaded" } }, { chunks: ["here", " it is"] }, { chunks: ["again"] }]
}

/** Runs two turns on a fresh JSONL store; returns the log file's bytes and its events. */
const session = (script: FakeModelProvider.Script, options: SessionEngineModule.Options, seed: number) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const dataDir = yield* tempDir
    return yield* Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      for (const userMessage of ["fetch it", "and again"]) {
        yield* engine.runTurn({ sessionId, userMessage }).pipe(
          // The clock moves on by the wait the engine stored, as soon as it is stored.
          Stream.tap((e) => (e.type === "model.retry" ? TestClock.adjust(e.payload.delayMs) : Effect.void)),
          collect
        )
      }
      const events: ReadonlyArray<AgentEvent> = yield* collect(engine.replaySession({ sessionId }))
      return { bytes: yield* fs.readFileString(`${dataDir}/sessions/${sessionId}.jsonl`), events }
    }).pipe(
      Effect.provide(
        SessionEngineModule.layer(options).pipe(
          Layer.provideMerge(JsonlEventStore.layer({ dataDir })),
          Layer.provideMerge(FakeModelProvider.layer(script)),
          Layer.provideMerge(IdGenerator.layerSequential)
        )
      ),
      // The jitter of the retry schedule draws from Random: each run its own seed. Each run has its
      // own test clock, starting at 0.
      Effect.withRandom(Random.make(seed)),
      Effect.provide(TestContext.TestContext)
    )
  })

const delays = (events: ReadonlyArray<AgentEvent>) => events.flatMap((e) => (e.type === "model.retry" ? [e.payload.delayMs] : []))

describe("Cassette: recorded retry waits", () => {
  it.scoped("a replay waits exactly the recorded model.retry delays: the log is byte for byte the recorded one, whatever the jitter draws", () =>
    Effect.gen(function*() {
      const recorded = yield* session(recording, {}, 0)
      expect(delays(recorded.events)).toHaveLength(2)
      const cassette = JSON.parse(JSON.stringify(Cassette.fromEvents(recorded.events))) as FakeModelProvider.Script
      for (const seed of [1, 2, 3, 4, 5, 6, 7, 8]) {
        const replayed = yield* session(cassette, {}, seed)
        expect(delays(replayed.events), `seed ${seed}`).toEqual(delays(recorded.events))
        expect(replayed.bytes, `seed ${seed}`).toBe(recorded.bytes)
      }
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("waits recorded under another retry policy are replayed as recorded, not as the replaying engine's policy would wait", () =>
    Effect.gen(function*() {
      // An embedder's policy: 300 ms between attempts, shorter than the default's first wait (800–1200 ms).
      const recorded = yield* session(recording, { retry: Schedule.spaced("300 millis") }, 0)
      expect(delays(recorded.events)).toEqual([300, 300])
      const cassette = JSON.parse(JSON.stringify(Cassette.fromEvents(recorded.events))) as FakeModelProvider.Script
      const replayed = yield* session(cassette, {}, 1)
      expect(delays(replayed.events)).toEqual([300, 300])
      expect(replayed.bytes).toBe(recorded.bytes)
    }).pipe(Effect.provide(NodeContext.layer)))
})
