/**
 * Interleaved, repeated measurement and the statistics printed for each row. Contenders run in
 * alternating order within each repetition (ABAB… then BABA…) so drift on a shared machine falls on
 * both; each row's ratio is computed per repetition and summarised by its median and interquartile range.
 */
import { readFileSync } from "node:fs"

/** The main thread's CPU so far in µs (Linux; 0 elsewhere), in 10 ms ticks: without V8's helper threads (compiling, GC). */
export const mainThread = (): number => {
  try {
    const fields = readFileSync(`/proc/self/task/${process.pid}/stat`, "utf8").split(") ")[1]!.split(" ")
    return (Number(fields[11]) + Number(fields[12])) * 10_000
  } catch {
    return 0
  }
}

/** One contender: runs once and returns what it measured (a duration in ms, a rate, bytes…). */
export type Contender = () => Promise<number>

/** Runs every contender `warmups` times (default once) as a warm-up, then `reps` interleaved rounds. */
export const interleave = async (
  reps: number,
  contenders: ReadonlyArray<Contender>,
  options: { readonly warmups?: number } = {}
): Promise<Array<Array<number>>> => {
  for (let w = 0; w < (options.warmups ?? 1); w++) for (const run of contenders) await run()
  const samples = contenders.map((): Array<number> => [])
  for (let rep = 0; rep < reps; rep++) {
    const order = contenders.map((_, i) => i)
    // Rotate the starting contender each round, so none always runs first (or after another's garbage).
    for (let k = 0; k < rep % contenders.length; k++) order.push(order.shift()!)
    for (const i of order) {
      if (global.gc) global.gc()
      samples[i]!.push(await contenders[i]!())
    }
  }
  return samples
}

export const quantile = (values: ReadonlyArray<number>, q: number): number => {
  const sorted = [...values].sort((a, b) => a - b)
  if (sorted.length === 0) return Number.NaN
  const at = (sorted.length - 1) * q
  const lo = Math.floor(at)
  const hi = Math.ceil(at)
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (at - lo)
}
export const median = (values: ReadonlyArray<number>) => quantile(values, 0.5)

/** Per-repetition ratios of two sample series of the same length. */
export const ratios = (a: ReadonlyArray<number>, b: ReadonlyArray<number>): Array<number> => a.map((x, i) => x / b[i]!)

/** A row of the results table. */
export interface Row {
  readonly id: number
  readonly measure: string
  /** The summary value compared with the goal (a ratio, or ms for the cancel latency). */
  readonly value: number
  readonly spread: string
  readonly unit: "×" | "ms" | " MB"
  readonly goal: string
  readonly met: boolean
  /** Raw figures behind the ratio, printed under the row. */
  readonly detail: string
}

const fmt = (x: number, unit: string) => Number.isFinite(x) ? `${x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2)}${unit}` : "n/a"

/** A ratio row from per-repetition ratios: median and interquartile range (min–max in the detail). */
export const ratioRow = (
  id: number,
  measure: string,
  values: ReadonlyArray<number>,
  goal: { readonly text: string; readonly met: (median: number) => boolean },
  detail: string
): Row => {
  const m = median(values)
  return {
    id,
    measure,
    value: m,
    spread: `${fmt(quantile(values, 0.25), "")}–${fmt(quantile(values, 0.75), "×")} (n=${values.length})`,
    unit: "×",
    goal: goal.text,
    met: goal.met(m),
    detail: `${detail}; ratio min–max ${fmt(Math.min(...values), "")}–${fmt(Math.max(...values), "×")}`
  }
}

export const format = fmt

/** Prints a row as soon as it is measured. */
export const printRow = (row: Row) => {
  console.log(`\n[${row.id}] ${row.measure}`)
  console.log(`    ${fmt(row.value, row.unit)}  spread ${row.spread}  goal ${row.goal}  ${row.met ? "✓" : "✗"}`)
  console.log(`    ${row.detail}`)
}

/** The markdown table of all rows. */
export const table = (rows: ReadonlyArray<Row>): string =>
  [
    "| # | measure | result | spread | goal | met |",
    "|---|---|---|---|---|---|",
    ...rows.map((r) => `| ${r.id} | ${r.measure} | ${fmt(r.value, r.unit)} | ${r.spread} | ${r.goal} | ${r.met ? "✓" : "✗"} |`)
  ].join("\n")

export const ms = (start: number) => performance.now() - start
export const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`
