/**
 * Counts V8's traces of `bench/row1-cpu.ts` by side (`ROW1_MARKS=1` marks each turn and `gc()`),
 * over the measured rounds (the first two warm up): code thrown away at a GC ("marking dependent
 * code … reason: weak objects"), deoptimizations by reason, and TurboFan compiles with their time.
 *
 *   ROW1_MARKS=1 node --expose-gc --trace-deopt --trace-opt --import tsx bench/row1-cpu.ts 6 10000 \
 *     | node bench/row1-deopts.mjs [top=12]
 */
import { createInterface } from "node:readline"

const top = Number(process.argv[2] ?? 12)
let section = "start"
let round = -1
const sides = new Map()
const side = () => {
  let s = sides.get(section)
  if (s === undefined) sides.set(section, s = { rounds: new Set(), marked: new Map(), bailouts: new Map(), compiles: 0, compileMs: 0, compiled: new Map() })
  return s
}
const bump = (map, key, n = 1) => map.set(key, (map.get(key) ?? 0) + n)
const fn = (line) => /<(?:JSFunction|SharedFunctionInfo) ?([^ >]*)/.exec(line)?.[1] || "(anonymous)"

for await (const line of createInterface({ input: process.stdin })) {
  const mark = /^\[row1-cpu\] ([\w-]+) (\d+)/.exec(line)
  if (mark) {
    section = mark[1]
    round = Number(mark[2])
    continue
  }
  if (round < 2) {
    if (!line.startsWith("[")) console.log(line)
    continue
  }
  const s = side()
  s.rounds.add(round)
  let m
  if ((m = /marking dependent code .* reason: ([^\]]+)/.exec(line))) bump(s.marked, `${m[1]}: ${fn(line)}`)
  else if ((m = /^\[bailout \(kind: ([^,]+), reason: ([^)]+)\)/.exec(line))) bump(s.bailouts, `${m[2]}: ${fn(line)}`)
  else if ((m = /^\[completed (?:compiling|optimizing) .*took ([\d.]+), ([\d.]+), ([\d.]+) ms/.exec(line))) {
    s.compiles++
    s.compileMs += Number(m[1]) + Number(m[2]) + Number(m[3])
    bump(s.compiled, fn(line))
  } else if (!line.startsWith("[") && !line.startsWith(" ")) console.log(line)
}

const total = (map) => [...map.values()].reduce((a, b) => a + b, 0)
const byReason = (map) => {
  const out = new Map()
  for (const [key, n] of map) bump(out, key.slice(0, key.lastIndexOf(": ")), n)
  return [...out].sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k} ${n}`).join(", ")
}
const first = (map) => [...map].sort((a, b) => b[1] - a[1]).slice(0, top).map(([k, n]) => `    ${n} ${k}`).join("\n")
for (const [name, s] of sides) {
  const r = s.rounds.size
  console.log(`${name}, ${r} rounds, a round: code thrown away ${(total(s.marked) / r).toFixed(1)} (${byReason(s.marked)}); deopts ${(total(s.bailouts) / r).toFixed(1)} (${byReason(s.bailouts)}); TurboFan compiles ${(s.compiles / r).toFixed(1)}, ${(s.compileMs / r).toFixed(1)} ms`)
  if (s.marked.size > 0) console.log(`  thrown away (all rounds):\n${first(s.marked)}`)
  if (s.bailouts.size > 0) console.log(`  deopts (all rounds):\n${first(s.bailouts)}`)
  if (s.compiled.size > 0) console.log(`  compiled (all rounds):\n${first(s.compiled)}`)
}
