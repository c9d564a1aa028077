/**
 * Row 1's turn (and row 2's with `jsonl`), in CPU time per event rather than events per wall second:
 * the engine's side (memory store, `perDeltaModel`: one delta per chunk) and pi-agent-core's
 * (`perDeltaStreamFn`) alternated in one process, `process.cpuUsage` around each turn alone. On a
 * shared machine CPU time moves less than wall time; still a time, so read medians of many rounds.
 * Each turn follows a full GC (`gc()`, as `interleave` runs one before each sample): the process's CPU
 * then includes V8's helper threads (compiling, GC) that the turn sets off; on Linux the main thread's
 * own CPU (`/proc/self/task/<pid>/stat`, 10 ms ticks, summed over the rounds) is printed beside it.
 *
 *   node --expose-gc --import tsx bench/row1-cpu.ts [rounds=15] [deltas=10000] [jsonl]
 *
 * With `ROW1_MARKS=1`, a line `[row1-cpu] ours|pi|gc-after-ours|gc-after-pi <round>` is printed before each turn and each
 * `gc()`, so that V8's traces (`--trace-deopt`, `--trace-opt`) can be told apart by side and round:
 * `bench/row1-deopts.mjs` counts them.
 */
import { Agent } from "@mariozechner/pi-agent-core"
import { createSession, deltaTexts, engineRuntime, runTurn, scratch, storeLayer, touchPi } from "./engine.js"
import { mainThread, median } from "./measure.js"
import { perDeltaStreamFn, scriptedModel } from "./piScripted.js"
import { perDeltaModel } from "./rows/turn.js"

const [rounds = 15, deltas = 10_000] = process.argv.slice(2, 4).map(Number)
const jsonl = process.argv.includes("jsonl")
const chunks = deltaTexts(deltas)

/** Per side, the main thread's CPU and the events, summed over the measured rounds. */
const mains = { ours: { us: 0, events: 0 }, pi: { us: 0, events: 0 } }
let measuring = false

const cpu = async (side: "ours" | "pi", turn: () => Promise<number>): Promise<number> => {
  const main = mainThread()
  const before = process.cpuUsage()
  const events = await turn()
  const used = process.cpuUsage(before)
  if (measuring) {
    mains[side].us += mainThread() - main
    mains[side].events += events
  }
  return (used.user + used.system) / events
}

const ours = async (): Promise<number> => {
  const rt = engineRuntime(storeLayer(jsonl ? { kind: "jsonl", dataDir: scratch("row1cpu") } : { kind: "memory" }), perDeltaModel(chunks))
  try {
    const sessionId = await createSession(rt)
    return await cpu("ours", () => runTurn(rt, sessionId))
  } finally {
    await rt.dispose()
  }
}

const pi = async (): Promise<number> => {
  const agent = new Agent({ initialState: { model: scriptedModel, systemPrompt: "" }, streamFn: perDeltaStreamFn(chunks) })
  let events = 0
  agent.subscribe((event) => {
    events++
    touchPi(event)
  })
  return cpu("pi", async () => {
    await agent.prompt("hi")
    return events
  })
}

const marks = process.env.ROW1_MARKS === "1"
const mark = (what: string, round: number) => {
  if (marks) console.log(`[row1-cpu] ${what} ${round}`)
}
const a: Array<number> = []
const b: Array<number> = []
for (let i = 0; i < rounds + 2; i++) {
  measuring = i >= 2
  mark("gc-after-pi", i)
  globalThis.gc?.()
  mark("ours", i)
  const x = await ours()
  mark("gc-after-ours", i)
  globalThis.gc?.()
  mark("pi", i)
  const y = await pi()
  // The first two rounds warm both sides up.
  if (i >= 2) a.push(x), b.push(y)
}
const f = (xs: ReadonlyArray<number>) => `${median(xs).toFixed(2)} µs (${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)})`
console.log(`${deltas} deltas, ${rounds} rounds, ${jsonl ? "JSONL" : "memory"} store: ours ${f(a)} CPU an event, pi-agent-core ${f(b)}; ratio (pi / ours) ${(median(b) / median(a)).toFixed(2)}×`)
const perEvent = ({ events, us }: { readonly us: number; readonly events: number }) => events === 0 ? NaN : us / events
console.log(`main thread alone, over the rounds: ours ${perEvent(mains.ours).toFixed(2)} µs an event, pi-agent-core ${perEvent(mains.pi).toFixed(2)}; ratio ${(perEvent(mains.pi) / perEvent(mains.ours)).toFixed(2)}×`)
