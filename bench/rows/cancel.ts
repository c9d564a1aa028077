/**
 * Row 7: latency from `cancelTurn` to `turn.completed {stopReason: "cancelled"}` being stored (the
 * store's append of it has returned), while the scripted model streams a delta every millisecond.
 * Measured with the memory store and the JSONL store, interleaved; p99 in ms against the goal.
 */
import { Deferred, Effect, Fiber, Stream } from "effect"
import { SessionEngine } from "../../src/index.js"
import { config } from "../config.js"
import { createSession, deltaTexts, engineRuntime, scratch, scripted, spiedStore, storeLayer } from "../engine.js"
import { format, interleave, median, quantile, type Row } from "../measure.js"

/**
 * Starts a turn of the session and waits until its consumer has read 5 deltas: the moment row 7
 * cancels at. Answers the engine and the consumer's fiber.
 */
export const streamingTurn = (sessionId: string) =>
  Effect.gen(function*() {
    const engine = yield* SessionEngine.SessionEngine
    const streaming = yield* Deferred.make<void>()
    let deltas = 0
    const consumer = yield* engine.runTurn({ sessionId, userMessage: "hi" }).pipe(
      Stream.runForEach((event) => event.type === "model.delta" && ++deltas === 5 ? Deferred.succeed(streaming, undefined) : Effect.void),
      Effect.fork
    )
    yield* Deferred.await(streaming)
    return { engine, consumer }
  })

const canceller = (kind: "memory" | "jsonl") => {
  let storedAt = Number.NaN
  const store = spiedStore(storeLayer(kind === "memory" ? { kind } : { kind, dataDir: scratch("cancel") }), (event) => {
    if (event.type === "turn.completed" && event.payload.stopReason === "cancelled") storedAt = performance.now()
  })
  const rt = engineRuntime(store, scripted(deltaTexts(500), config.cancelReps + 2, { delay: 1 }))
  const once = async () => {
    const sessionId = await createSession(rt)
    storedAt = Number.NaN
    return rt.runPromise(Effect.gen(function*() {
      const { consumer, engine } = yield* streamingTurn(sessionId)
      const start = performance.now()
      yield* engine.cancelTurn({ sessionId })
      yield* Fiber.await(consumer)
      if (Number.isNaN(storedAt)) return yield* Effect.die(new Error("the cancelled turn stored no turn.completed {cancelled}"))
      return storedAt - start
    }))
  }
  return { once, dispose: () => rt.dispose() }
}

export const run = async (): Promise<Array<Row>> => {
  const memory = canceller("memory")
  const jsonl = canceller("jsonl")
  const [m, j] = await interleave(config.cancelReps, [memory.once, jsonl.once])
  await memory.dispose()
  await jsonl.dispose()
  const row = (store: string, xs: ReadonlyArray<number>): Row => {
    const p99 = quantile(xs, 0.99)
    return {
      id: 7,
      measure: `cancel → \`turn.completed {cancelled}\` stored, p99, ${store} store`,
      value: p99,
      spread: `p50 ${format(median(xs), "")}, max ${format(Math.max(...xs), " ms")} (n=${xs.length})`,
      unit: "ms",
      goal: "≤ 5 ms",
      met: p99 <= 5,
      detail: `p50 ${format(median(xs), " ms")}, p90 ${format(quantile(xs, 0.9), " ms")}, p99 ${format(p99, " ms")}`
    }
  }
  return [row("memory", m!), row("JSONL", j!)]
}
