// Reads bench/cancel-trace.ts's output: each window's ms and what V8 printed inside it, by kind
// (scavenge, mark-compact, optimizing, deoptimizing, …); the slowest windows listed with their lines.
import { readFileSync } from "node:fs"

const lines = readFileSync(process.argv[2], "utf8").split("\n")
const windows = []
let open
for (const line of lines) {
  if (line.startsWith("#S ")) open = { i: Number(line.slice(3)), lines: [] }
  else if (line.startsWith("#E ") && open !== undefined) {
    const [, , ms, returned, run, wait, cpu] = line.split(" ")
    windows.push({ ...open, ms: Number(ms), returned: Number(returned), run: Number(run), wait: Number(wait), cpu: Number(cpu) })
    open = undefined
  } else if (open !== undefined && line.trim() !== "") open.lines.push(line)
}
const kindOf = (line) =>
  /Scavenge/.test(line) ? "scavenge" : /Mark-Compact|Mark-sweep/i.test(line) ? "mark-compact" : /bailout|deoptimiz/i.test(line) ? "deopt" : /optimiz|compiling/.test(line) ? "opt" : "other"
const sorted = [...windows].sort((a, b) => a.ms - b.ms)
const q = (p) => sorted[Math.floor((sorted.length - 1) * p)].ms
console.log(`n=${sorted.length} p50 ${q(0.5)} p90 ${q(0.9)} p98 ${q(0.98)} p99 ${q(0.99)} max ${sorted.at(-1).ms} ms`)
const tally = (ws) => {
  const t = {}
  for (const w of ws) for (const k of new Set(w.lines.map(kindOf))) t[k] = (t[k] ?? 0) + 1
  return JSON.stringify(t)
}
const cut = Math.floor(sorted.length * 0.98)
console.log(`slowest 2% (${sorted.length - cut}): windows with … ${tally(sorted.slice(cut))}`)
console.log(`the rest (${cut}): windows with … ${tally(sorted.slice(0, cut))}`)
for (const w of sorted.slice(cut)) {
  console.log(`#${w.i} ${w.ms} ms (cancelTurn returned at ${w.returned}; main thread on a core ${w.run}, waiting for one ${w.wait})`)
  for (const l of w.lines.slice(0, 12)) console.log(`    ${l.slice(0, 160)}`)
}

// The same by the main thread's time on a core, which the machine's load moves less.
const byRun = [...windows].sort((a, b) => a.run - b.run)
const r = (p) => byRun[Math.floor((byRun.length - 1) * p)].run
console.log(`on a core: p50 ${r(0.5)} p90 ${r(0.9)} p98 ${r(0.98)} p99 ${r(0.99)} max ${byRun.at(-1).run} ms`)
console.log(`most on a core 2% (${byRun.length - cut}): windows with … ${tally(byRun.slice(cut))}; the rest: ${tally(byRun.slice(0, cut))}`)
for (const w of byRun.slice(cut)) console.log(`#${w.i} on a core ${w.run} ms (window ${w.ms}): ${[...new Set(w.lines.map(kindOf))].join(", ")} — ${w.lines.filter((l) => kindOf(l) === "deopt").map((l) => l.slice(0, 140)).join(" | ")}`)

// One line for an A/B: wall and process CPU (every thread: V8's compiler and GC helpers too) per
// window, and the TurboFan compiles finished and deoptimizations inside windows, per window.
const cpus = windows.map((w) => w.cpu).sort((a, b) => a - b)
const c = (p) => cpus[Math.floor((cpus.length - 1) * p)]
const count = (re) => windows.reduce((n, w) => n + w.lines.filter((l) => re.test(l)).length, 0) / windows.length
console.log(`summary: wall p50 ${q(0.5)} p90 ${q(0.9)} p99 ${q(0.99)} max ${sorted.at(-1).ms} ms; process CPU p50 ${c(0.5)} p99 ${c(0.99)} ms; per window: compiles ${count(/completed optimizing/).toFixed(2)}, deopts ${count(/bailout|marking dependent/).toFixed(2)}, GCs ${count(/Scavenge|Mark-Compact/).toFixed(2)}`)
