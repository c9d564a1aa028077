/**
 * `bench/health-probe.mjs` with stamps, for `bench/probe-split/run.mjs`: probes `<url>/healthz` one
 * request after another on fresh connections and stamps each on the machine's monotonic clock (ms):
 * its start, its TCP connect, its answer's end, its local port, and its own main thread's time
 * waiting for a CPU during it. Prints `ready` after the first, the probes as one JSON array once
 * its stdin ends.
 */
import { openSync, readSync } from "node:fs"
import { get } from "node:http"

const now = () => Number(process.hrtime.bigint()) / 1e6
const schedFd = openSync("/proc/thread-self/schedstat", "r")
const buffer = Buffer.alloc(128)
const waited = () => Number(buffer.toString("latin1", 0, readSync(schedFd, buffer, 0, buffer.length, 0)).split(" ")[1]) / 1e6
const url = process.argv[2]
const probes = []
let stopped = false
process.stdin.on("end", () => (stopped = true))
process.stdin.resume()

const once = () =>
  new Promise((resolve, reject) => {
    const probe = { start: now(), waited: waited() }
    const request = get(`${url}/healthz`, { agent: false }, (response) => {
      response.resume()
      response.on("end", () => {
        probe.end = now()
        probe.waited = waited() - probe.waited
        probes.push(probe)
        resolve()
      })
    })
    request.on("socket", (socket) =>
      socket.on("connect", () => {
        probe.connect = now()
        probe.port = socket.localPort
      }))
    request.on("error", reject)
  })

await once()
process.stdout.write("ready\n")
while (!stopped) await once()
process.stdout.write(`${JSON.stringify(probes.slice(1))}\n`)
