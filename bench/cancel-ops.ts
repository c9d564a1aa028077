/**
 * Row 7's cancel counted, not timed: the Effect operations every fiber runs between `cancelTurn` and
 * `turn.completed {cancelled}` stored (the memory store's cancel, as `rows/cancel.ts` makes it), by
 * fiber and by kind, with the fibers started and the heap allocated in that window (`heapUsed` at
 * `cancelTurn` and when the store is handed `turn.completed`: the median of the samples, a window a
 * scavenge fell in left out). Deterministic where row 7's p99 on a shared machine is not; not a test.
 *
 *   node --import tsx bench/cancel-ops.ts [samples=50]      (OPS_KINDS=sites: Sync/Commit/… by function;
 *                                                           CANCEL_STORE=jsonl: the JSONL store's cancel)
 */
import { Effect, type Fiber, RuntimeFlags, RuntimeFlagsPatch, Supervisor } from "effect"
import { createSession, deltaTexts, engineRuntime, scratch, scripted, spiedStore, storeLayer } from "./engine.js"
import { streamingTurn } from "./rows/cancel.js"

const reps = Number(process.argv[2] ?? 50)

/** Counts ops by fiber label and by kind, only while `on`. */
class Window extends Supervisor.AbstractSupervisor<void> {
  on = false
  ops = 0
  fibers = 0
  readonly kinds = new Map<string, number>()
  readonly value = Effect.void
  override onStart() {
    if (this.on) this.fibers++
  }
  override onEffect(_fiber: Fiber.RuntimeFiber<unknown, unknown>, effect: unknown) {
    if (!this.on) return
    this.ops++
    const e = effect as { _op?: string; effect_instruction_i0?: unknown; effect_instruction_i1?: unknown; commit?: unknown }
    let op = e._op ?? "?"
    if (process.env.OPS_KINDS === "sites" && (op === "UpdateRuntimeFlags" || op === "WithRuntime" || op === "Commit" || op === "Sync" || op === "OnFailure" || op === "OnSuccess" || op === "OnSuccessAndFailure")) {
      const f = op === "UpdateRuntimeFlags" ? e.effect_instruction_i1 : op === "Commit" ? e.commit : op.startsWith("On") ? e.effect_instruction_i1 : e.effect_instruction_i0
      op += " " + String(f).replace(/\s+/g, " ").slice(0, 100)
    }
    this.kinds.set(op, (this.kinds.get(op) ?? 0) + 1)
  }
}

const window = new Window()
/** `heapUsed` as the window opened, and what each window allocated (none when a scavenge fell in it). */
let heapAtStart = 0
const allocated: Array<number> = []
const store = spiedStore(storeLayer(process.env.CANCEL_STORE === "jsonl" ? { kind: "jsonl", dataDir: scratch("cancel-ops") } : { kind: "memory" }), (event) => {
  if (event.type === "turn.completed" && event.payload.stopReason === "cancelled" && window.on) {
    window.on = false
    const moved = process.memoryUsage().heapUsed - heapAtStart
    if (moved >= 0) allocated.push(moved)
  }
})
const rt = engineRuntime(store, scripted(deltaTexts(500), reps + 4, { delay: 1 }))

const once = async () => {
  const sessionId = await createSession(rt)
  await rt.runPromise(Effect.withRuntimeFlagsPatch(Effect.supervised(Effect.gen(function*() {
    const { consumer, engine } = yield* streamingTurn(sessionId)
    heapAtStart = process.memoryUsage().heapUsed
    window.on = true
    yield* engine.cancelTurn({ sessionId })
    window.on = false
    yield* consumer.await
  }), window), RuntimeFlagsPatch.enable(RuntimeFlags.OpSupervision)))
}

for (let i = 0; i < 3; i++) await once()
window.ops = 0
window.fibers = 0
window.kinds.clear()
allocated.length = 0
const heap = process.memoryUsage().heapUsed
for (let i = 0; i < reps; i++) await once()
await rt.dispose()
for (const [k, n] of [...window.kinds].sort((a, b) => b[1] - a[1])) if (n / reps >= 0.5) console.log(`${(n / reps).toFixed(1).padStart(7)}  ${k}`)
const inWindow = allocated.sort((a, b) => a - b)[Math.floor(allocated.length / 2)] ?? Number.NaN
console.log(`a cancel (cancelTurn → turn.completed {cancelled} stored): ${(window.ops / reps).toFixed(0)} Effect ops, ${(window.fibers / reps).toFixed(2)} fibers started, ${(inWindow / 1024).toFixed(1)} KiB allocated in the window (median of ${allocated.length}; heap moved ${((process.memoryUsage().heapUsed - heap) / 1024 / reps).toFixed(0)} KiB a sample over the whole sample)`)
process.exit(0)
