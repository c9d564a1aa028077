/**
 * Row 7's tail taken apart: the memory store's cancel (as `rows/cancel.ts` times it) repeated, and
 * each sample's window — `cancelTurn` to `turn.completed {cancelled}` stored — split by what the
 * main thread did in it, read from Linux's `/proc/thread-self/schedstat` (nanoseconds on a core and
 * waiting for one), with the GCs that overlapped it (`PerformanceObserver`) and the process's
 * involuntary context switches. Each sample gets one cause: "gc" when a GC overlapped it, else
 * "runqueue" when the thread waited for a core longer than it ran, "idle" when it slept longer than
 * it ran (a timer, I/O), else "on-cpu" (our own work). Linux only. Usage:
 *   node --expose-gc --import tsx bench/cancel-causes.ts [samples=400]
 */
import { readFileSync } from "node:fs"
import { PerformanceObserver } from "node:perf_hooks"
import { Effect, Fiber } from "effect"
import { createSession, deltaTexts, engineRuntime, scripted, spiedStore, storeLayer } from "./engine.js"
import { quantile } from "./measure.js"
import { streamingTurn } from "./rows/cancel.js"

const reps = Number(process.argv[2] ?? 400)

/** The main thread's ms on a core and ms runnable but waiting for one, since it started. */
const schedstat = () => {
  const [run, wait] = readFileSync("/proc/thread-self/schedstat", "utf8").split(" ")
  return { run: Number(run) / 1e6, wait: Number(wait) / 1e6 }
}

const gcs: Array<{ readonly start: number; readonly end: number }> = []
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) gcs.push({ start: entry.startTime, end: entry.startTime + entry.duration })
}).observe({ entryTypes: ["gc"] })

let storedAt = Number.NaN
const store = spiedStore(storeLayer({ kind: "memory" }), (event) => {
  if (event.type === "turn.completed" && event.payload.stopReason === "cancelled") storedAt = performance.now()
})
const rt = engineRuntime(store, scripted(deltaTexts(500), reps + 4, { delay: 1 }))

interface Sample {
  readonly ms: number
  readonly start: number
  readonly run: number
  readonly wait: number
  readonly switches: number
}

const once = async (): Promise<Sample> => {
  const sessionId = await createSession(rt)
  storedAt = Number.NaN
  if (global.gc) global.gc()
  return rt.runPromise(Effect.gen(function*() {
    const { consumer, engine } = yield* streamingTurn(sessionId)
    const switches = process.resourceUsage().involuntaryContextSwitches
    const before = schedstat()
    const start = performance.now()
    yield* engine.cancelTurn({ sessionId })
    yield* Fiber.await(consumer)
    const after = schedstat()
    return {
      ms: storedAt - start,
      start,
      run: after.run - before.run,
      wait: after.wait - before.wait,
      switches: process.resourceUsage().involuntaryContextSwitches - switches
    }
  }))
}

const samples: Array<Sample> = []
for (let i = 0; i < reps + 2; i++) {
  const sample = await once()
  if (i >= 2) samples.push(sample)
}
await rt.dispose()
// Let the observer deliver the last GCs.
await new Promise((resolve) => setTimeout(resolve, 50))

const cause = (s: Sample) => {
  if (gcs.some((gc) => gc.end > s.start && gc.start < s.start + s.ms)) return "gc"
  const idle = s.ms - s.run - s.wait
  return s.wait > s.run ? "runqueue" : idle > s.run ? "idle" : "on-cpu"
}
const fmt = (x: number) => x.toFixed(2)
const summary = (xs: ReadonlyArray<number>) => xs.length === 0 ? "none" : `n=${xs.length} p50 ${fmt(quantile(xs, 0.5))} max ${fmt(Math.max(...xs))} ms, over 5 ms: ${xs.filter((x) => x > 5).length}`
const all = samples.map((s) => s.ms)
console.log(`load ${fmt((await import("node:os")).loadavg()[0]!)}; n=${all.length} p50 ${fmt(quantile(all, 0.5))} p90 ${fmt(quantile(all, 0.9))} p99 ${fmt(quantile(all, 0.99))} max ${fmt(Math.max(...all))} ms`)
console.log(`main thread on a core: p50 ${fmt(quantile(samples.map((s) => s.run), 0.5))} max ${fmt(Math.max(...samples.map((s) => s.run)))} ms; waiting for one: p50 ${fmt(quantile(samples.map((s) => s.wait), 0.5))} max ${fmt(Math.max(...samples.map((s) => s.wait)))} ms`)
for (const name of ["on-cpu", "runqueue", "idle", "gc"]) console.log(`  cause ${name}: ${summary(samples.filter((s) => cause(s) === name).map((s) => s.ms))}`)
console.log("worst 5:")
for (const s of [...samples].sort((a, b) => a.ms - b.ms).slice(-5)) {
  console.log(`  ${fmt(s.ms)} ms: on a core ${fmt(s.run)}, waiting for one ${fmt(s.wait)}, preempted ${s.switches}× (${cause(s)})`)
}
