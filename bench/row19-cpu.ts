/**
 * Row 19's turn as the row runs it — a fresh engine (workspace tools, default policy, memory store)
 * per run, one turn of <steps> `read_file` steps of a real 4 KB file — in CPU time a step, with a full
 * GC before each run as `interleave` makes one (`nogc`: without it). The process's CPU includes V8's
 * helper threads (compiling, GC) the run sets off; the main thread's own (`/proc/self/task/<pid>/stat`,
 * 10 ms ticks, summed over the measured runs) is printed beside it. The first two runs warm up.
 *
 *   node --expose-gc --import tsx bench/row19-cpu.ts [runs=12] [steps=50] [nogc]
 *
 * With `ROW1_MARKS=1`, a line `[row1-cpu] ours <run>` is printed before each run and
 * `[row1-cpu] gc-after-ours <run>` before each `gc()`, so that `bench/row1-deopts.mjs` counts V8's
 * traces (`--trace-deopt --trace-opt`) by run: code thrown away at a GC, deoptimizations, compiles.
 */
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { Effect, Layer, ManagedRuntime } from "effect"
import { FakeModelProvider, IdGenerator, MemoryEventStore, PermissionPolicy, SessionEngine, WorkspaceTools } from "../src/index.js"
import { count, scratch } from "./engine.js"
import { mainThread, median } from "./measure.js"

const [runs = 12, steps = 50] = process.argv.slice(2, 4).map(Number)
const gc = !process.argv.includes("nogc")
const marks = process.env.ROW1_MARKS === "1"
const mark = (what: string, run: number) => {
  if (marks) console.log(`[row1-cpu] ${what} ${run}`)
}

const cwd = join(scratch("row19cpu"), "work")
mkdirSync(cwd, { recursive: true })
writeFileSync(join(cwd, "a.txt"), "x".repeat(4095) + "\n")

/** One run as row 19's `oursSteps`: answers the process's CPU µs a step and the main thread's µs. */
const run = async (): Promise<{ cpu: number; main: number }> => {
  const responses = [
    ...Array.from({ length: steps }, () => ({ toolCalls: [{ tool: "read_file", args: { path: "a.txt" } }] })),
    { chunks: ["done"] }
  ]
  const rt = ManagedRuntime.make(SessionEngine.layer({ maxSteps: steps + 1 }).pipe(Layer.provide(Layer.mergeAll(
    MemoryEventStore.layer,
    FakeModelProvider.layer({ responses }),
    IdGenerator.layer,
    WorkspaceTools.layer().pipe(Layer.provide(NodeContext.layer)),
    PermissionPolicy.layer()
  ))))
  try {
    const engine = await rt.runPromise(SessionEngine.SessionEngine)
    const { sessionId } = await rt.runPromise(engine.createSession({ cwd, client: "test" }))
    const main = mainThread()
    const before = process.cpuUsage()
    const events = await rt.runPromise(count(engine.runTurn({ sessionId, userMessage: "read it" })))
    const used = process.cpuUsage(before)
    if (events < steps * 5) throw new Error(`a turn of ${steps} calls streamed ${events} events`)
    return { cpu: (used.user + used.system) / steps, main: mainThread() - main }
  } finally {
    await rt.dispose()
  }
}

const cpus: Array<number> = []
let mainUs = 0
for (let r = 0; r < runs; r++) {
  mark("gc-after-ours", r)
  if (gc) (globalThis as { gc?: () => void }).gc?.()
  mark("ours", r)
  const { cpu, main } = await run()
  if (r >= 2) {
    cpus.push(cpu)
    mainUs += main
  }
}
console.log(
  `row 19's run (${gc ? "gc() before each" : "no gc()"}), ${cpus.length} runs of ${steps} steps: CPU a step median ${(median(cpus) / 1000).toFixed(3)} ms ` +
    `(${(Math.min(...cpus) / 1000).toFixed(3)}–${(Math.max(...cpus) / 1000).toFixed(3)}), main thread ${(mainUs / cpus.length / steps / 1000).toFixed(3)} ms a step`
)
await Effect.runPromise(Effect.void)
