/**
 * Resuming a paused turn of a long session (kernel45): before its first step the resume reads what
 * the turn spent before the pause from the log (`ResumedSpend.read`). It read the whole log for one
 * turn's events — a second pass over a 100 MB session right after hydrating it; it now reads from the
 * turn's `turn.started` (the live session saw where it is; the JSONL store's ranged read seeks there).
 * Both reads, alternated in one process on the same JSONL log, next to hydrating it (`LogFold.load`,
 * which a resume does anyway): not a row, nothing asserted.
 *
 *   node --expose-gc --import tsx bench/resumeSpend.ts [MB=100] [repetitions=5]
 */
import { Effect, ManagedRuntime } from "effect"
import * as LogFold from "../src/engine/LogFold.js"
import * as ResumedSpend from "../src/engine/ResumedSpend.js"
import { EventStore } from "../src/services/EventStore.js"
import { scratch, storeLayer } from "./engine.js"
import { template, writeLog } from "./logs.js"
import { median } from "./measure.js"

const MB = 1024 * 1024
const sizeMb = Number(process.argv[2] ?? 100)
const repetitions = Number(process.argv[3] ?? 5)

const t = await template(20)
const dataDir = scratch("resume-spend")
const sessionId = "sess_resume"
const log = writeLog(t, dataDir, sessionId, sizeMb * MB)
// The log's last turn stands for the paused one: its events are its turn.started's and after.
const turnId = `turn_bench${log.turns}`
const turnStarted = 1 + (log.turns - 1) * t.turn.length + 1

const runtime = ManagedRuntime.make(storeLayer({ kind: "jsonl", dataDir }))
const store = await runtime.runPromise(EventStore)
const timed = async <A>(effect: Effect.Effect<A, unknown>) => {
  ;(globalThis as { gc?: () => void }).gc?.()
  const start = performance.now()
  const value = await Effect.runPromise(effect)
  return { ms: performance.now() - start, value }
}

const took: Record<"whole" | "fromTurn" | "hydrate", Array<number>> = { whole: [], fromTurn: [], hydrate: [] }
for (let n = 0; n < repetitions; n++) {
  const whole = await timed(ResumedSpend.read(store, sessionId, turnId))
  const fromTurn = await timed(ResumedSpend.read(store, sessionId, turnId, turnStarted))
  if (JSON.stringify(whole.value) !== JSON.stringify(fromTurn.value)) throw new Error("the two reads disagree")
  took.whole.push(whole.ms)
  took.fromTurn.push(fromTurn.ms)
  took.hydrate.push((await timed(LogFold.load(store, sessionId))).ms)
}
const ms = (values: ReadonlyArray<number>) => `${median(values).toFixed(1)} ms`
console.log(`resume spend read, ${(log.size / MB).toFixed(0)} MB JSONL log (${log.turns} turns), median of ${repetitions}:`)
console.log(`  from the log's start (before): ${ms(took.whole)}`)
console.log(`  from the turn's turn.started:  ${ms(took.fromTurn)}`)
console.log(`  hydrating the session:         ${ms(took.hydrate)}`)
await runtime.dispose()
