/**
 * The benchmarks of issue 10: every row measures effect-agent against a baseline run in the same
 * process (or, for memory, in sibling child processes), contenders interleaved and repeated, and
 * prints the median ratio, its spread and the goal. `npm run bench` (full, ~1.5 min on 2 cores) or
 * `npm run bench -- --quick` (smaller sizes); `--only=1,7` runs some rows; sizes come from BENCH_* variables
 * (see bench/config.ts). Numbers compare changes on one machine; nothing here is a test.
 */
import { writeFileSync } from "node:fs"
import { availableParallelism, loadavg } from "node:os"
import { join } from "node:path"
import { config, only, quick } from "./config.js"
import { printRow, type Row, table } from "./measure.js"

type Suite = { readonly rows: ReadonlyArray<number>; readonly run: () => Promise<Array<Row>> }

const suites: ReadonlyArray<Suite> = [
  { rows: [1, 2], run: () => import("./rows/turn.js").then((m) => m.run()) },
  { rows: [3], run: () => import("./rows/append.js").then((m) => m.run()) },
  { rows: [4, 5], run: () => import("./rows/replay.js").then((m) => m.run()) },
  { rows: [6], run: () => import("./rows/growth.js").then((m) => m.run()) },
  { rows: [7], run: () => import("./rows/cancel.js").then((m) => m.run()) },
  { rows: [8], run: () => import("./rows/cli.js").then((m) => m.run()) },
  { rows: [9], run: () => import("./rows/sessions.js").then((m) => m.run()) },
  { rows: [10, 11, 24, 25], run: () => import("./rows/sdkTurn.js").then((m) => m.run()) },
  { rows: [12, 13], run: () => import("./rows/listing.js").then((m) => m.run()) },
  { rows: [14], run: () => import("./rows/runner.js").then((m) => m.run()) },
  { rows: [15, 16, 17, 18, 26, 27], run: () => import("./rows/serve.js").then((m) => m.run()) },
  { rows: [19, 20, 21], run: () => import("./rows/steps.js").then((m) => m.run()) },
  { rows: [22, 23], run: () => import("./rows/forkRewind.js").then((m) => m.run()) }
]

const main = async () => {
  if (!global.gc) console.log("(run with node --expose-gc, as `npm run bench` does, for clean memory figures)")
  const machine = `node ${process.version}, ${availableParallelism()} cores, load average ${loadavg()[0]!.toFixed(1)} at start`
  console.log(`effect-agent benchmarks (${quick ? "quick" : "full"}), ${machine}, ${new Date().toISOString()}`)
  console.log(`sizes: ${JSON.stringify(config)}`)
  const rows: Array<Row> = []
  for (const suite of suites) {
    const selected = only
    if (selected !== undefined && !suite.rows.some((r) => selected.has(r))) continue
    const started = performance.now()
    const measured = await suite.run()
    console.log(`\n(rows ${suite.rows.join(", ")}: ${((performance.now() - started) / 1000).toFixed(1)} s)`)
    for (const row of measured) {
      printRow(row)
      rows.push(row)
    }
  }
  rows.sort((a, b) => a.id - b.id)
  const markdown = table(rows)
  console.log(`\n${markdown}`)
  const header = `Measured by \`npm run bench${quick ? " -- --quick" : ""}\` (${machine}), ${new Date().toISOString().slice(0, 10)}; contenders run interleaved in the same process (memory rows: sibling child processes).\n\n`
  const legend = "\n\nresult: for ratios, the median over interleaved repetitions of (effect-agent / baseline) as the row names it, spread its interquartile range; row 7 is a p99 latency, spread its p50 and max.\n"
  console.log(legend)
  if (only !== undefined) return console.log("(bench/results.md is written only by a run of every row)")
  writeFileSync(join(import.meta.dirname, "results.md"), header + markdown + legend)
}

main().then(() => process.exit(0), (error) => {
  console.error(error)
  process.exit(1)
})
