// temp probe (not committed): CPU of a 10k-delta turn, memory vs JSONL store
import { createSession, deltaTexts, engineRuntime, runTurn, scratch, scripted, storeLayer } from "./engine.js"
const kind = process.argv[2] as "memory" | "jsonl"
const chunks = deltaTexts(10_000)
const one = async () => {
  const rt = engineRuntime(storeLayer(kind === "memory" ? { kind: "memory" } : { kind: "jsonl", dataDir: scratch("turn") }), scripted(chunks, 1))
  try {
    const id = await createSession(rt)
    const c0 = process.cpuUsage(); const t0 = performance.now()
    const n = await runTurn(rt, id)
    const c = process.cpuUsage(c0)
    return { ms: performance.now() - t0, cpu: (c.user + c.system) / 1000, n }
  } finally { await rt.dispose() }
}
for (let i = 0; i < 3; i++) await one()
const rs = []
for (let i = 0; i < 9; i++) rs.push(await one())
rs.sort((a, b) => a.cpu - b.cpu)
console.log(kind, "cpu ms median", rs[4]!.cpu.toFixed(1), "wall", rs[4]!.ms.toFixed(1), "range", rs[0]!.cpu.toFixed(1), rs[8]!.cpu.toFixed(1), "events", rs[0]!.n)
