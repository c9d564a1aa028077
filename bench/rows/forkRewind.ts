/**
 * Rows 22–23, forking and rewinding a long session, peak RSS in child processes (as row 5).
 * 22: `forkSession` of an F MB session (JSONL store, a fresh engine; the fork writes a copy of the
 *     whole log) against `replaySession` of it. A fork that streams holds what hydration holds (the
 *     fork's state and transcript) and a batch of events; one that collects the log holds every event.
 * 23: `rewindSession` of the same session to the end of its first turn (hydration, then the plan over
 *     every event after that point; nothing to restore, the bench's turns change no file) against
 *     hydrating it (`runTurn`, row 5's child).
 * Each fork runs in a folder of its own holding a hard link to the source log, removed after the run:
 * a 100 MB fork per repetition does not pile up on the disk.
 */
import { linkSync, mkdirSync, mkdtempSync, rmSync } from "node:fs"
import { join } from "node:path"
import { child } from "../children.js"
import { config } from "../config.js"
import { scratch } from "../engine.js"
import { template, writeLog } from "../logs.js"
import { interleave, mb, median, ratioRow, ratios, type Row } from "../measure.js"

const MB = 1024 * 1024

export const run = async (): Promise<Array<Row>> => {
  const t = await template(20)
  const dataDir = scratch("fork")
  const sessionId = "sess_fork"
  const big = writeLog(t, dataDir, sessionId, config.forkMb * MB)
  const rows: Array<Row> = []

  // 22. Fork vs replay.
  const grew: Record<string, Array<number>> = { fork: [], replay: [], rewind: [], hydrate: [] }
  /** Each child's time for its operation (ms): the detail line shows what streaming costs in time. */
  const took: Record<string, Array<number>> = { fork: [], replay: [], rewind: [], hydrate: [] }
  const seconds = (mode: string) => `${(median(took[mode]!) / 1000).toFixed(1)} s`
  const forkOnce = async () => {
    const dir = mkdtempSync(join(dataDir, "forking-"))
    mkdirSync(join(dir, "sessions"))
    linkSync(big.file, join(dir, "sessions", `${sessionId}.jsonl`))
    try {
      const r = await child("fork", dir, sessionId)
      grew.fork!.push(r.maxRss - r.rssStart)
      took.fork!.push(r.ms)
      return r.maxRss
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }
  const replayOnce = async () => {
    const r = await child("replay", dataDir, sessionId)
    grew.replay!.push(r.maxRss - r.rssStart)
    took.replay!.push(r.ms)
    return r.maxRss
  }
  const [replayed, forked] = await interleave(config.forkReps, [replayOnce, forkOnce], { warmups: 0 })
  rows.push(ratioRow(22, `forking a ${config.forkMb} MB session (forkSession in a fresh engine) vs replaying it, peak RSS`, ratios(forked!, replayed!), {
    text: "≤ 1.25×",
    met: (m) => m <= 1.25
  }, `peak RSS fork ${mb(median(forked!))}, replay ${mb(median(replayed!))}; growth over the process's start ${mb(median(grew.fork!))} vs ${mb(median(grew.replay!))} (${big.turns} turns, ${mb(big.size)}); time fork ${seconds("fork")}, replay ${seconds("replay")}`))

  // 23. Rewind vs hydration; both append to the log (a session.rewound, a short turn): a few events a run.
  const firstTurnEnd = String(1 + t.turn.length)
  const peak = (mode: "rewind" | "hydrate") => async () => {
    const r = await (mode === "rewind" ? child("rewind", dataDir, sessionId, firstTurnEnd) : child("hydrate", dataDir, sessionId))
    grew[mode]!.push(r.maxRss - r.rssStart)
    took[mode]!.push(r.ms)
    return r.maxRss
  }
  const [hydrated, rewound] = await interleave(config.forkReps, [peak("hydrate"), peak("rewind")], { warmups: 0 })
  rows.push(ratioRow(23, `rewinding a ${config.forkMb} MB session to its first turn (rewindSession in a fresh engine) vs hydrating it, peak RSS`, ratios(rewound!, hydrated!), {
    text: "≤ 1.1×",
    met: (m) => m <= 1.1
  }, `peak RSS rewind ${mb(median(rewound!))}, hydrate ${mb(median(hydrated!))}; growth over the process's start ${mb(median(grew.rewind!))} vs ${mb(median(grew.hydrate!))}; time rewind ${seconds("rewind")}, hydrate ${seconds("hydrate")}`))
  return rows
}
