/**
 * Row 7's cancel with the store's part of it timed: for each sample, the window (`cancelTurn` →
 * `turn.completed {cancelled}` stored, as the row measures it), the store's append of that event (its
 * wall time and the process's CPU meanwhile) and, on the JSONL store, each `write(2)` it made in the
 * window (through the store's `AppendIo` seam), with the events appended in the window. A full GC
 * before each sample, as the row. What the JSONL store adds to a cancel over the memory store
 * (docs/benchmarks.md, "cancel9"); not a test.
 *
 *   node --expose-gc --import tsx bench/cancel-append.ts [samples=200]      (CANCEL_STORE=jsonl: the JSONL store)
 */
import { Effect, Fiber, Layer } from "effect"
import { type AgentEvent, EventStore } from "../src/index.js"
import * as AppendIo from "../src/layers/jsonl/AppendIo.js"
import { createSession, deltaTexts, engineRuntime, scratch, scripted, storeLayer } from "./engine.js"
import { quantile } from "./measure.js"
import { streamingTurn } from "./rows/cancel.js"

const reps = Number(process.argv[2] ?? 200)
const kind = process.env.CANCEL_STORE === "jsonl" ? "jsonl" : "memory"

let inWindow = false
const appended = new Map<string, number>()
const windowMs: Array<number> = []
const appendMs: Array<number> = []
const appendCpuMs: Array<number> = []
const writeMs: Array<number> = []
let storedAt = Number.NaN

/** The real file system, each write timed while a window is open. */
const timedIo: AppendIo.Io = {
  ...AppendIo.node,
  write: (fd, data) => {
    const start = performance.now()
    const written = AppendIo.node.write(fd, data)
    if (inWindow) writeMs.push(performance.now() - start)
    return written
  }
}

/** An append timed from its call to its success; the cancel's `turn.completed` marks the window's end. */
const timed = <E>(inner: Effect.Effect<void, E>, events: ReadonlyArray<AgentEvent.AgentEvent>) =>
  Effect.suspend(() => {
    const start = performance.now()
    const cpu = process.cpuUsage()
    return Effect.tap(inner, () =>
      Effect.sync(() => {
        if (!inWindow) return
        const end = performance.now()
        const used = process.cpuUsage(cpu)
        const name = events.map((e) => e.type).join(",")
        appended.set(name, (appended.get(name) ?? 0) + 1)
        if (events.some((e) => e.type === "turn.completed" && e.payload.stopReason === "cancelled")) {
          storedAt = end
          appendMs.push(end - start)
          appendCpuMs.push((used.user + used.system) / 1000)
        }
      }))
  })

const store = Layer.effect(
  EventStore.EventStore,
  Effect.map(EventStore.EventStore, (inner) => ({
    ...inner,
    append: (event: AgentEvent.AgentEvent) => timed(inner.append(event), [event]),
    appendAll: (events: ReadonlyArray<AgentEvent.AgentEvent>) => timed(inner.appendAll(events), events)
  }))
).pipe(Layer.provide(
  kind === "memory"
    ? storeLayer({ kind })
    : storeLayer({ kind, dataDir: scratch("cancel-append") }).pipe(Layer.provide(Layer.succeed(AppendIo.AppendIo, timedIo)))
))
const rt = engineRuntime(store, scripted(deltaTexts(500), reps + 4, { delay: 1 }))

for (let i = 0; i < reps + 2; i++) {
  const sessionId = await createSession(rt)
  global.gc?.()
  await rt.runPromise(Effect.gen(function*() {
    const { consumer, engine } = yield* streamingTurn(sessionId)
    // The first two samples warm up and are not counted.
    inWindow = i >= 2
    storedAt = Number.NaN
    const start = performance.now()
    yield* engine.cancelTurn({ sessionId })
    yield* Fiber.await(consumer)
    if (inWindow) windowMs.push(storedAt - start)
    inWindow = false
  }))
}
await rt.dispose()

const q = (xs: ReadonlyArray<number>) => [0.5, 0.9, 0.99, 1].map((p) => quantile(xs, p).toFixed(3)).join(" / ")
console.log(`${kind} store, ${reps} cancels; p50 / p90 / p99 / max in ms`)
console.log(`appended in a window: ${[...appended].map(([k, n]) => `${k} ×${(n / reps).toFixed(2)}`).join(", ")}`)
console.log(`window (cancelTurn → stored)      ${q(windowMs)}`)
console.log(`the store's append of it          ${q(appendMs)}`)
console.log(`the process's CPU in that append  ${q(appendCpuMs)}`)
if (kind === "jsonl") console.log(`its write(2)s (${(writeMs.length / reps).toFixed(2)} a cancel)     ${q(writeMs)}; over 1 ms: ${writeMs.filter((x) => x > 1).length}`)
