/**
 * Issue 19, item 1: a cancel as a turn starts. Fork `runTurn`, yield once, cancel: the cancel either
 * stops the turn (stored `turn.completed {cancelled}`) or finds nothing to stop — the turn's stream
 * always ends, the log stays well formed, and the next `runTurn` on the session works. On memory
 * and JSONL stores, with the TestClock and with the live clock.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import { collect, expectWellFormedLog, jsonlEngine, memoryEngine, tempDir } from "../helpers.js"

const model = { responses: [{ chunks: ["first"] }, { chunks: ["second"] }] }

/** The engine on a memory store, or on a JSONL store in a temporary folder of the test's scope. */
const engines = {
  memory: () => memoryEngine(model),
  jsonl: () => Layer.unwrapScoped(Effect.map(tempDir, (dir) => jsonlEngine(dir, model))).pipe(Layer.provide(NodeContext.layer))
} as const

/** Fork the turn, yield `yields` times, cancel, then check that the session is not wedged. */
const cancelAsItStarts = (yields: number) =>
  Effect.gen(function*() {
    const engine = yield* SessionEngine
    const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
    const turn = yield* collect(engine.runTurn({ sessionId, userMessage: "hello" })).pipe(Effect.fork)
    for (let i = 0; i < yields; i++) yield* Effect.yieldNow()
    yield* engine.cancelTurn({ sessionId })
    // The stream ends: with the cancelled turn, or the whole turn when the cancel found nothing to stop.
    // (A wedged stream fails at vitest's timeout: a deadline of the test's own, 10 s on the live
    // clock, could pass on a busy machine before a JSONL turn had ended.)
    const emitted = yield* Fiber.join(turn)
    const log = yield* collect(engine.replaySession({ sessionId }))
    expectWellFormedLog(log)
    expect(log.slice(1)).toEqual(emitted)
    if (emitted.length > 0) expect(emitted.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: expect.stringMatching(/^(cancelled|final)$/) } })
    expect((yield* engine.sessionState({ sessionId })).openTurn).toBeUndefined()
    // The session is free: the next turn runs to its end.
    const next = yield* collect(engine.runTurn({ sessionId, userMessage: "again" }))
    expect(next.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
    expectWellFormedLog(yield* collect(engine.replaySession({ sessionId })))
  })

describe("a cancel as a turn starts never wedges the session", () => {
  for (const store of ["memory", "jsonl"] as const) {
    for (const yields of [0, 1, 2, 3, 4, 6]) {
      it.scoped(`${store}, TestClock, cancel after ${yields} yield(s)`, () => cancelAsItStarts(yields).pipe(Effect.provide(engines[store]())))
      it.live(`${store}, live clock, cancel after ${yields} yield(s)`, () =>
        Effect.scoped(cancelAsItStarts(yields).pipe(Effect.provide(engines[store]()))))
    }
  }
})
