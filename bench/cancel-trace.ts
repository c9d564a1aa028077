/**
 * Row 7's memory-store cancel repeated with a marker written (synchronously, to stdout) before and
 * after each sample's window, so that what V8 prints under `--trace-gc`, `--trace-opt` and
 * `--trace-deopt` falls inside or outside a window. Usage:
 *   node --expose-gc --trace-gc --trace-opt --trace-deopt --import tsx bench/cancel-trace.ts [samples] > trace.txt
 *   node bench/cancel-trace-read.mjs trace.txt
 */
import { readFileSync, writeSync } from "node:fs"
import { Effect, Fiber } from "effect"
import { createSession, deltaTexts, engineRuntime, scripted, spiedStore, storeLayer } from "./engine.js"
import { streamingTurn } from "./rows/cancel.js"

const reps = Number(process.argv[2] ?? 400)
const gcMode = process.env.CANCEL_GC ?? "major"
const kind = process.env.CANCEL_STORE === "jsonl" ? "jsonl" : "memory"
/** The main thread's ms on a core and waiting for one (Linux's schedstat). */
const schedstat = () => {
  const [run, wait] = readFileSync("/proc/thread-self/schedstat", "utf8").split(" ")
  return { run: Number(run) / 1e6, wait: Number(wait) / 1e6 }
}

let storedAt = Number.NaN
const store = spiedStore(storeLayer(kind === "memory" ? { kind } : { kind, dataDir: (await import("./engine.js")).scratch("cancel-trace") }), (event) => {
  if (event.type === "turn.completed" && event.payload.stopReason === "cancelled") storedAt = performance.now()
})
const rt = engineRuntime(store, scripted(deltaTexts(500), reps + 4, { delay: 1 }))

for (let i = 0; i < reps + 2; i++) {
  const sessionId = await createSession(rt)
  storedAt = Number.NaN
  // The row collects fully before each sample (`interleave`); `CANCEL_GC=minor` only empties the young
  // generation, `none` collects nothing (what each leaves of the JIT's work: docs/benchmarks.md, "cancel8").
  if (global.gc && gcMode === "minor") global.gc({ type: "minor" })
  else if (global.gc && gcMode !== "none") global.gc()
  await rt.runPromise(Effect.gen(function*() {
    const { consumer, engine } = yield* streamingTurn(sessionId)
    writeSync(1, `#S ${i}\n`)
    const before = schedstat()
    const cpu = process.cpuUsage()
    const start = performance.now()
    yield* engine.cancelTurn({ sessionId })
    const returned = performance.now()
    const after = schedstat()
    const used = process.cpuUsage(cpu)
    yield* Fiber.await(consumer)
    writeSync(1, `#E ${i} ${(storedAt - start).toFixed(3)} ${(returned - start).toFixed(3)} ${(after.run - before.run).toFixed(3)} ${(after.wait - before.wait).toFixed(3)} ${((used.user + used.system) / 1000).toFixed(3)}\n`)
  }))
}
await rt.dispose()
