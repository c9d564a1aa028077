/**
 * Row 6: the cost of one event in turn 2,000 of a session against turn 1 of a fresh session, same
 * engine (memory store, a model answering D text deltas). The long session's 1,999 earlier turns are
 * real turns repeated (logs.ts), appended through the store's public `append`; the engine hydrates
 * it on its first turn, which is part of the warm-up and is not measured. Each round then runs the next B turns of the
 * long session (2,000, 2,001, …) and turn 1 of B new sessions; the ratio is of CPU time per event
 * (the process's, user + system, GC threads included), wall time per event beside it. Samples of 5
 * turns (~10 ms) by wall time read 1.12–1.29× over runs of 25 rounds on a quiet machine, while 3,000
 * turns in a row of each kind differed by 2–4% of CPU time per event: a sample of a few milliseconds
 * moves with every descheduling and forced GC on 2 shared cores. Samples are now 20 turns, timed by CPU.
 */
import { Effect } from "effect"
import { EventStore } from "../../src/index.js"
import { config } from "../config.js"
import { constantModel, createSession, deltaTexts, engineRuntime, runTurn, storeLayer } from "../engine.js"
import { sessionEvents, template } from "../logs.js"
import { format, interleave, median, ratioRow, ratios, type Row } from "../measure.js"

export const run = async (): Promise<Array<Row>> => {
  const t = await template(config.growthStoredDeltas)
  const rt = engineRuntime(storeLayer({ kind: "memory" }), constantModel(deltaTexts(config.growthDeltas).map((d) => `${d} `), 1e9))
  const longId = "sess_growth"
  await rt.runPromise(Effect.flatMap(EventStore.EventStore, (store) =>
    Effect.forEach(sessionEvents(t, longId, config.growthTurns - 1), (event) => store.append(event), { discard: true })))
  // One sample is `growthBatch` turns in a row (fresh: each in a new session), so one descheduled turn
  // on a busy machine moves a sample less.
  const wall: Record<"long" | "fresh", Array<number>> = { long: [], fresh: [] }
  const perEvent = async (side: "long" | "fresh", sessionIds: () => Promise<ReadonlyArray<string>>) => {
    const ids = await sessionIds()
    let events = 0
    const cpu = process.cpuUsage()
    const start = performance.now()
    for (const sessionId of ids) events += await runTurn(rt, sessionId, "please explain what this function does and why it is slow")
    const elapsed = performance.now() - start
    const used = process.cpuUsage(cpu)
    wall[side].push(elapsed / events)
    return (used.user + used.system) / 1000 / events
  }
  const batch = config.growthBatch
  const long = async () => Array.from({ length: batch }, () => longId)
  const fresh = () => Promise.all(Array.from({ length: batch }, () => createSession(rt)))
  const [longs, freshs] = await interleave(config.growthReps, [() => perEvent("long", long), () => perEvent("fresh", fresh)], { warmups: 2 })
  await rt.dispose()
  const us = (xs: ReadonlyArray<number>) => `${format(median(xs) * 1000, "")} µs/event`
  return [
    ratioRow(6, `per-event CPU time in turn ${config.growthTurns.toLocaleString("en")} of one session vs a fresh session`, ratios(longs!, freshs!), {
      text: "≤ 1.2×",
      met: (m) => m <= 1.2
    }, `CPU: turn ${config.growthTurns.toLocaleString("en")}+ ${us(longs!)}, fresh turn ${us(freshs!)}; wall: ${us(wall.long)} vs ${us(wall.fresh)}, ${format(median(ratios(wall.long, wall.fresh)), "×")} (turns of ${config.growthDeltas} deltas, ${batch} per sample; stored turns of ${config.growthStoredDeltas})`)
  ]
}
