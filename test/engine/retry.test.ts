import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import { FakeModel } from "../../src/layers/FakeModelProvider.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import { collect, engineLayer, expectWellFormedLog, typesOf } from "../helpers.js"

/** Runs a turn, moving the test clock past each retry's wait as soon as it is stored. */
const runTurn = Effect.gen(function*() {
  const engine = yield* SessionEngine
  const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
  const events = yield* engine.runTurn({ sessionId, userMessage: "hi" }).pipe(
    Stream.tap((e) => (e.type === "model.retry" ? TestClock.adjust(e.payload.delayMs) : Effect.void)),
    collect
  )
  expectWellFormedLog(yield* collect(engine.replaySession({ sessionId })))
  return { events, requests: (yield* (yield* FakeModel).requests).length }
})

describe("retries", () => {
  it.effect("retryable failures before any chunk are retried with growing waits, up to the policy's limit", () =>
    Effect.gen(function*() {
      const { events, requests } = yield* runTurn
      const retries = events.filter((e) => e.type === "model.retry").map((e) => e.payload)
      expect(retries.map((r) => [r.attempt, r.errorCode])).toEqual([[1, "overloaded"], [2, "server"], [3, "overloaded"], [4, "network"]])
      // Exponential from 1 s with ±20% jitter.
      retries.forEach((r, i) => {
        expect(r.delayMs).toBeGreaterThanOrEqual(800 * 2 ** i)
        expect(r.delayMs).toBeLessThanOrEqual(1200 * 2 ** i)
      })
      expect(events.at(-1)!.payload).toEqual({ stopReason: "error", errorCode: "overloaded" })
      expect(requests).toBe(5)
    }).pipe(Effect.provide(engineLayer(MemoryEventStore.layer, {
      responses: (["overloaded", "server", "overloaded", "network", "overloaded"] as const).map((reason) => ({ failure: { reason } }))
    }))))

  it.effect("a retry-after longer than the backoff is honoured; the retry then succeeds", () =>
    Effect.gen(function*() {
      const { events, requests } = yield* runTurn
      expect(events.find((e) => e.type === "model.retry")!.payload).toEqual({ attempt: 1, delayMs: 7000, errorCode: "rate_limited" })
      expect(events.at(-1)!.payload).toEqual({ stopReason: "final" })
      expect(requests).toBe(2)
    }).pipe(Effect.provide(engineLayer(MemoryEventStore.layer, {
      responses: [{ failure: { reason: "rate_limited", retryAfterMs: 7000 } }, { chunks: ["ok"] }]
    }))))

  it.effect("no retry once part of the response is stored, nor for a failure that is not retryable", () =>
    Effect.gen(function*() {
      const first = yield* runTurn
      expect(typesOf(first.events)).not.toContain("model.retry")
      expect(first.events.at(-1)!.payload).toEqual({ stopReason: "error", errorCode: "server" })
      const second = yield* runTurn
      expect(typesOf(second.events)).not.toContain("model.retry")
      expect(second.events.at(-1)!.payload).toEqual({ stopReason: "error", errorCode: "invalid_request" })
    }).pipe(Effect.provide(engineLayer(MemoryEventStore.layer, {
      responses: [{ chunks: ["half"], failure: { reason: "server", afterChunks: 1 } }, { failure: { reason: "invalid_request" } }]
    }))))

  it.effect("the policy is a Schedule the engine takes as an option", () =>
    Effect.gen(function*() {
      const { events, requests } = yield* runTurn
      expect(events.filter((e) => e.type === "model.retry").map((e) => e.payload)).toEqual([{ attempt: 1, delayMs: 250, errorCode: "network" }])
      expect(requests).toBe(2)
    }).pipe(Effect.provide(engineLayer(
      MemoryEventStore.layer,
      { responses: [{ failure: { reason: "network" } }, { failure: { reason: "network" } }] },
      { retry: Schedule.spaced("250 millis").pipe(Schedule.intersect(Schedule.recurs(1))) }
    ))))
})
