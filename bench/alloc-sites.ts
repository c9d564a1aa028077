/**
 * Row 1's turn (memory store, one delta per chunk), allocations by site: V8's sampling heap profiler
 * with the objects the GCs collected included, in bytes an event, after 3 warm-up turns. Bundle it for
 * function names and lines (perf63core):
 *
 *   npx esbuild bench/alloc-sites.ts --bundle --platform=node --format=esm --packages=external --outfile=.cache/bench/alloc-sites.mjs
 *   node .cache/bench/alloc-sites.mjs [turns=6] [deltas=10000] [top=40]
 */
import { Session } from "node:inspector/promises"
import { createSession, deltaTexts, engineRuntime, runTurn, storeLayer } from "./engine.js"
import { perDeltaModel } from "./rows/turn.js"

const [turns = 6, deltas = 10_000, top = 40] = process.argv.slice(2).map(Number)
const rt = engineRuntime(storeLayer({ kind: "memory" }), perDeltaModel(deltaTexts(deltas)))
for (let t = 0; t < 3; t++) await runTurn(rt, await createSession(rt))
const s = new Session()
s.connect()
await s.post("HeapProfiler.enable")
await s.post("HeapProfiler.startSampling", { samplingInterval: 256, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true } as never)
let events = 0
for (let t = 0; t < turns; t++) events += await runTurn(rt, await createSession(rt))
const { profile } = await s.post("HeapProfiler.stopSampling") as { profile: { head: Node } }
type Node = { callFrame: { functionName: string; url: string; lineNumber: number }; selfSize: number; children: Array<Node> }
const self = new Map<string, number>()
const stacks = new Map<string, number>()
let total = 0
const walk = (n: Node, path: Array<string>) => {
  const cf = n.callFrame
  const key = `${cf.functionName || "(anon)"} ${cf.url.replace(/.*node_modules\//, "").replace(/.*perf63core\//, "").replace(/.*-base\//, "")}:${cf.lineNumber + 1}`
  const p = [...path, key]
  if (n.selfSize > 0) {
    self.set(key, (self.get(key) ?? 0) + n.selfSize)
    const ours = p.slice(-4, -1).reverse().join(" < ")
    const sk = `${key}  <=  ${ours}`
    stacks.set(sk, (stacks.get(sk) ?? 0) + n.selfSize)
    total += n.selfSize
  }
  for (const c of n.children) walk(c, p)
}
walk(profile.head, [])
console.log(`${events} events, sampled ${(total / events).toFixed(0)} bytes an event`)
for (const [k, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(String((v / events).toFixed(0)).padStart(6), k)
console.log("--- with our nearest frames")
for (const [k, v] of [...stacks].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(String((v / events).toFixed(0)).padStart(6), k)
await rt.dispose()
