/**
 * Rows 4–5, reading long logs back.
 * 4: `replaySession` of a log of R MB, and of a 100 MB one (JSONL store, a fresh engine's first read
 *    of it) against readline + JSON.parse of the same file, as throughput (baseline time / ours), each
 *    side doing the same work per event (`touch`: its kind and the text it carries); and the peak RSS
 *    of replay in child processes for a small and a large log (flat in log size: ≈ 1×; the growth over
 *    each process's start on the detail line).
 * 5: peak RSS of hydrating an H MB session (runTurn on it in a fresh engine, the turn must end
 *    `final`) against replaying it, each in its own child process. The ratio is of absolute peak RSS,
 *    as in the issue; the detail line also gives the growth over each process's starting RSS.
 * Logs are real turns repeated (see logs.ts): user message, 20 text deltas, turn.completed.
 */
import { createReadStream } from "node:fs"
import { createInterface } from "node:readline"
import { Effect, Stream } from "effect"
import { SessionEngine } from "../../src/index.js"
import { child } from "../children.js"
import { config } from "../config.js"
import { constantModel, engineRuntime, scratch, storeLayer, touch } from "../engine.js"
import { template, writeLog } from "../logs.js"
import { format, interleave, mb, median, ratioRow, ratios, type Row } from "../measure.js"

const MB = 1024 * 1024

export const run = async (): Promise<Array<Row>> => {
  const t = await template(20)
  const dataDir = scratch("replay")
  const rows: Array<Row> = []

  // 4. Throughput, in process, both sides touching every event.
  const throughput = async (sizeMb: number, sessionId: string) => {
    const log = writeLog(t, dataDir, sessionId, sizeMb * MB)
    const rt = engineRuntime(storeLayer({ kind: "jsonl", dataDir }), constantModel(["ok"]))
    const ours = async () => {
      const start = performance.now()
      await rt.runPromise(Effect.flatMap(SessionEngine.SessionEngine, (engine) =>
        // The work in the callback, as `count` does (engine.ts): no effect holding each chunk.
        Stream.runForEachChunk(engine.replaySession({ sessionId }), (chunk) => {
          for (const event of chunk) touch(event)
          return Effect.void
        })))
      return performance.now() - start
    }
    const readline = async () => {
      const start = performance.now()
      for await (const line of createInterface({ input: createReadStream(log.file), crlfDelay: Infinity })) {
        if (line === "") continue
        const parsed = JSON.parse(line)
        // The header line (format and version) is parsed too, and is not an event.
        if (parsed.type !== undefined) touch(parsed)
      }
      return performance.now() - start
    }
    const [o, b] = await interleave(config.replayReps, [ours, readline])
    await rt.dispose()
    const rate = (xs: ReadonlyArray<number>) => `${format(log.size / MB / (median(xs) / 1000), "")} MB/s`
    rows.push(ratioRow(4, `\`replaySession\` of a ${sizeMb} MB log vs readline + \`JSON.parse\` of it (throughput, every event touched)`, ratios(b!, o!), {
      text: "≥ 0.9×",
      met: (m) => m >= 0.9
    }, `replaySession ${rate(o!)}, readline + JSON.parse ${rate(b!)} (${log.turns} turns)`))
  }
  await throughput(config.replayMb, "sess_replay")
  await throughput(config.replayLargeMb, "sess_replay_large")

  // 4, memory: replay's peak RSS growth for a small and a large log, each in a fresh process.
  writeLog(t, dataDir, "sess_small", config.rssSmallMb * MB)
  writeLog(t, dataDir, "sess_large", config.rssLargeMb * MB)
  // The ratio is of peak RSS: once replay's growth over the process's start is near zero (as it is when
  // it streams), a ratio of growths is a ratio of noise. The growths are on the detail line.
  const grown: Record<string, Array<number>> = { sess_small: [], sess_large: [] }
  const peakOf = (sessionId: string) => async () => {
    const r = await child("replay", dataDir, sessionId)
    grown[sessionId]!.push(r.maxRss - r.rssStart)
    return r.maxRss
  }
  const [small, large] = await interleave(config.rssReps, [peakOf("sess_small"), peakOf("sess_large")], { warmups: 0 })
  rows.push(ratioRow(4, `replay peak RSS, ${config.rssLargeMb} MB log vs ${config.rssSmallMb} MB log`, ratios(large!, small!), {
    text: "≤ 1.25× (flat in log size)",
    met: (m) => m <= 1.25
  }, `peak RSS ${mb(median(small!))} (${config.rssSmallMb} MB log), ${mb(median(large!))} (${config.rssLargeMb} MB log); growth over the process's start ${mb(median(grown.sess_small!))}, ${mb(median(grown.sess_large!))}`))

  // 5. Hydration vs replay, peak RSS, each in a fresh process.
  const big = writeLog(t, dataDir, "sess_hydrate", config.hydrateMb * MB)
  const grew: Record<"hydrate" | "replay", Array<number>> = { hydrate: [], replay: [] }
  const peak = (mode: "hydrate" | "replay") => async () => {
    const r = await child(mode, dataDir, "sess_hydrate")
    grew[mode].push(r.maxRss - r.rssStart)
    return r.maxRss
  }
  // Hydration appends a turn to the log, so the log each reads grows by one short turn per hydration:
  // `interleave` rotates which of the two goes first each round (it does not keep replay first), so
  // both read logs one or two short turns apart — a few hundred bytes of 100 MB.
  const [replayed, hydrated] = await interleave(config.hydrateReps, [peak("replay"), peak("hydrate")], { warmups: 0 })
  rows.push(ratioRow(5, `hydrating a ${config.hydrateMb} MB session (runTurn in a fresh engine) vs replaying it, peak RSS`, ratios(hydrated!, replayed!), {
    text: "≤ 1.2×",
    met: (m) => m <= 1.2
  }, `peak RSS hydrate ${mb(median(hydrated!))}, replay ${mb(median(replayed!))}; growth over the process's start ${mb(median(grew.hydrate))} vs ${mb(median(grew.replay))} (${big.turns} turns, ${mb(big.size)})`))
  return rows
}
