/**
 * What optimized code lost at a GC: reads V8's `--print-opt-code --trace-deopt` output (of
 * `bench/row1-cpu.ts`, say) and, for each code object thrown away for "weak objects", names its
 * function (the first line of its source) and the objects it embedded that no later compile of the
 * same function embeds again at the same address — the objects that died, or the maps of them.
 *
 *   ROW1_MARKS=1 node --expose-gc --print-opt-code --trace-deopt --import tsx bench/row1-cpu.ts 2 10000 \
 *     | node bench/weak-embedded.mjs
 *
 * Maps print as `<Map[size](kind)>`; with V8's map log (`--log-maps --log-maps-details
 * --logfile=v8.log --no-logfile-per-isolate` on the run, its path as this script's argument) each is
 * named by its prototype and its properties.
 */
import { createReadStream } from "node:fs"
import { createInterface } from "node:readline"

/** Map address → what the map log said of maps at that address (prototype, properties). */
const mapLog = new Map()
if (process.argv[2] !== undefined) {
  for await (const line of createInterface({ input: createReadStream(process.argv[2]) })) {
    if (!line.startsWith("map-details,")) continue
    const address = line.split(",")[2]
    const text = line.replace(/\\n/g, "\n").replace(/\\x2C/g, ",")
    const prototype = /- prototype: 0x[0-9a-f]+ (<[^>]*>)/.exec(text)?.[1]?.replace(/ map = 0x[0-9a-f]+/, "") ?? "?"
    const keys = [...text.matchAll(/^ +\[\d+\]: 0x[0-9a-f]+(?:: \[String\] in \w+: #| )(<Symbol: [^>]*>|[^ ]*)/gm)].map((m) => m[1])
    const named = `proto ${prototype} {${keys.join(",")}}`
    const seen = mapLog.get(address) ?? new Set()
    seen.add(named)
    mapLog.set(address, seen)
  }
}
const describe = (object) => {
  const [address, ...rest] = object.split(" ")
  const named = mapLog.get(address)
  const text = rest.join(" ")
  return named === undefined || !text.startsWith("<Map") ? text : `${text} ${[...named].join(" | ")}`
}

const codes = new Map() // opt id → { key, name, source, objects: Set }
const byKey = new Map() // function key → [opt ids in order]
let reading // "source" | "code"
let source = []
let current
const thrown = []
for await (const line of createInterface({ input: process.stdin })) {
  if (line === "--- Raw source ---") {
    reading = "source"
    source = []
    continue
  }
  if (line === "--- Optimized code ---") {
    reading = "code"
    current = { source: source.find((l) => l.trim() !== "")?.trim().slice(0, 100) ?? "", objects: new Set() }
    continue
  }
  if (line === "--- End code ---") {
    if (current?.id !== undefined) {
      current.key = `${current.name} @${current.position}`
      codes.set(current.id, current)
      byKey.set(current.key, [...(byKey.get(current.key) ?? []), current.id])
    }
    reading = undefined
    current = undefined
    continue
  }
  if (reading === "source") {
    if (source.length < 3) source.push(line)
    continue
  }
  if (reading === "code" && current !== undefined) {
    let m
    if ((m = /^optimization_id = (\d+)/.exec(line))) current.id = Number(m[1])
    else if ((m = /^source_position = (\d+)/.exec(line))) current.position = Number(m[1])
    else if ((m = /^name = (.*)/.exec(line))) current.name = m[1] || "(anonymous)"
    else if ((m = /embedded object {2}\((0x[0-9a-f]+) (.*)\)$/.exec(line))) current.objects.add(`${m[1]} ${m[2]}`)
    continue
  }
  const m = /marking dependent code .*\(opt id (\d+)\) for deoptimization, reason: weak objects/.exec(line)
  if (m) thrown.push(Number(m[1]))
}

const died = new Map()
for (const id of thrown) {
  const code = codes.get(id)
  if (code === undefined) continue
  const later = (byKey.get(code.key) ?? []).filter((other) => other > id).map((other) => codes.get(other).objects)
  const gone = [...code.objects].filter((o) => later.length > 0 && later.every((objects) => !objects.has(o)))
  const line = `${code.key} «${code.source}»\n      ${gone.map(describe).join("\n      ") || "(no later compile to compare)"}`
  died.set(line, (died.get(line) ?? 0) + 1)
}
for (const [line, n] of [...died].sort((a, b) => b[1] - a[1])) console.log(`${n}× ${line}`)
