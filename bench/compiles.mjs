/**
 * TurboFan compiles a turn, by the source position of the function compiled: reads the trace of
 * `test/engine/keptShapesChild.ts` (`--trace-opt`, its `[kept] turn N` marks) and V8's code log of the
 * same run (`--log-code`), which names each shared function info with its `file:line:column` (of the
 * code tsx ran: a file's line 1, column N of its transpiled text). A site compiled in most turns after
 * the warm-up is code a full GC between turns threw away (a closure made per call: perf64steps).
 *
 *   node --expose-gc --trace-opt --trace-deopt --no-concurrent-recompilation --log-code --logfile=/tmp/v8.log \
 *     --no-logfile-per-isolate --import tsx test/engine/keptShapesChild.ts steps 8 50 > /tmp/trace.txt
 *   node bench/compiles.mjs /tmp/trace.txt /tmp/v8.log [from=2]
 */
import { readFileSync } from "node:fs"

const [trace, log, from = "2"] = process.argv.slice(2)
const where = new Map()
for (const line of readFileSync(log, "utf8").split("\n")) {
  const parts = line.split(",")
  if (parts[0] === "code-creation" && parts[1] === "JS") where.set(BigInt(parts[parts.length - 2]), parts.slice(6, -2).join(",").trim())
  else if (parts[0] === "sfi-move" && where.has(BigInt(parts[1]))) where.set(BigInt(parts[2]), where.get(BigInt(parts[1])))
}
let turn = -1
const byTurn = new Map()
const bySite = new Map()
for (const line of readFileSync(trace, "utf8").split("\n")) {
  const marked = /^\[kept\] turn (\d+)/.exec(line)
  if (marked !== null) turn = Number(marked[1])
  const site = turn >= Number(from) ? /completed compiling .*\(sfi = (0x[0-9a-f]+)\)> \(target TURBOFAN\)/.exec(line) : null
  if (site === null) continue
  // The trace's address is tagged: the log's + 1.
  const name = (where.get(BigInt(site[1]) - 1n) ?? `? ${site[1]}`).replace(/file:\/\/\S*?\/(src|node_modules)\//, "$1/")
  byTurn.set(turn, (byTurn.get(turn) ?? 0) + 1)
  bySite.set(name, (bySite.get(name) ?? 0) + 1)
}
const total = [...byTurn.values()].reduce((a, b) => a + b, 0)
console.log(`TurboFan compiles from turn ${from}: ${total} (${[...byTurn].map(([t, n]) => `turn ${t}: ${n}`).join(", ")})`)
console.log("compiled in more than one turn:")
for (const [name, n] of [...bySite].sort((a, b) => b[1] - a[1])) if (n > 1) console.log(`${String(n).padStart(4)}  ${name}`)
