/**
 * Rows 17–18's `/healthz` prober, in a process of its own: `node bench/health-probe.mjs <url>`.
 * Probes `<url>/healthz` one request after another, each on a fresh connection, prints `ready` after
 * the first answer, and once its stdin ends prints the latencies (ms) as one JSON array. Plain
 * JavaScript with nothing loaded: its own pauses would count as the server's latency, and the
 * bench process, which probed until now, holds what rows 1–14 left in its heap (a major GC of it
 * during a run would be read as a slow answer) and runs the rows' bookkeeping meanwhile.
 */
import { get } from "node:http"

const url = process.argv[2]
const latencies = []
let stopped = false
process.stdin.on("end", () => (stopped = true))
process.stdin.resume()

const once = () =>
  new Promise((resolve, reject) => {
    const start = performance.now()
    get(`${url}/healthz`, { agent: false }, (res) => {
      res.resume()
      res.on("end", () => {
        latencies.push(performance.now() - start)
        resolve()
      })
    }).on("error", reject)
  })

await once()
process.stdout.write("ready\n")
while (!stopped) await once()
process.stdout.write(`${JSON.stringify(latencies.slice(1))}\n`)
