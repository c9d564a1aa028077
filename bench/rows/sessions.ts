/**
 * Row 9: memory a long-running engine holds for the sessions it has touched. One engine (JSONL store,
 * so the events live on disk, and a model that records nothing) creates N sessions and runs one short
 * turn in each; the heap's data (code spaces left out) is measured after a full GC before, at N/2
 * and at N. The ratio is the heap growth of the second half over that of the first: ≈ 1× when every
 * session stays in memory, ≈ 0× when the engine keeps a bounded cache (N must exceed twice the
 * cache's capacity for this to show; what is left is noise of about ±0.3 KiB per session).
 */
import { getHeapSpaceStatistics } from "node:v8"
import { config } from "../config.js"
import { constantModel, createSession, engineRuntime, runTurn, scratch, storeLayer } from "../engine.js"
import { format, ratioRow, type Row } from "../measure.js"

/**
 * The heap's data after a full GC: every space but the code spaces. Compiled code is not held for
 * sessions, yet the JIT keeps optimizing as the sessions go by (about 150 KiB of code over sessions
 * 1001–2000), which alone would read as growth of the second half.
 */
const heap = () => {
  global.gc?.()
  global.gc?.()
  return getHeapSpaceStatistics().reduce((sum, space) => (space.space_name.startsWith("code_") ? sum : sum + space.space_used_size), 0)
}

export const run = async (): Promise<Array<Row>> => {
  const rt = engineRuntime(storeLayer({ kind: "jsonl", dataDir: scratch("sessions") }), constantModel(["Hello", " there", "."]))
  const touch = async (n: number) => {
    for (let i = 0; i < n; i++) await runTurn(rt, await createSession(rt), "hello")
  }
  await touch(20) // warm-up: code paths compiled, store caches made
  const half = Math.floor(config.sessions / 2)
  const h0 = heap()
  await touch(half)
  const h1 = heap()
  await touch(half)
  const h2 = heap()
  await rt.dispose()
  if (!global.gc) console.log("(no --expose-gc: row 9 measures garbage too)")
  const first = h1 - h0
  const second = h2 - h1
  const kib = (bytes: number) => format(bytes / half / 1024, " KiB/session")
  return [
    ratioRow(9, `sessions held in memory by a long-running engine: heap growth, sessions ${half + 1}–${2 * half} vs 1–${half}`, [second / first], {
      text: "≤ 0.1× (bounded)",
      met: (m) => m <= 0.1
    }, `first ${half}: ${kib(first)}, next ${half}: ${kib(second)}; heap ${format(h0 / 1048576, "")} → ${format(h2 / 1048576, " MB")}`)
  ]
}
