/**
 * Preloaded into `serve` by `bench/row18-counts.mjs` (`ROW18_PRELOAD`): counts per phase of row 18
 * — connections accepted, `/healthz` requests, GCs (count and pause by kind), the event loop's delay
 * (`monitorEventLoopDelay`, 1 ms resolution: max, p99, mean) and the process's CPU. SIGUSR1 closes
 * the first phase (the watchers connected); SIGUSR2 closes the second and writes both as JSON to
 * `$ROW18_OUT`.
 */
import { writeFileSync } from "node:fs"
import http from "node:http"
import net from "node:net"
import { constants, monitorEventLoopDelay, PerformanceObserver } from "node:perf_hooks"
import { getHeapSpaceStatistics } from "node:v8"

const fresh = () => ({ connections: 0, healthz: 0, requests: 0, scavenges: 0, scavengeMs: 0, longestScavengeMs: 0, marks: 0, markMs: 0, cpu: process.cpuUsage() })
let phase = fresh()
const phases = []
const emit = net.Server.prototype.emit
net.Server.prototype.emit = function(event, ...args) {
  if (event === "connection") phase.connections++
  else if (event === "request") args[0].url === "/healthz" ? counted.add(args[1]) && phase.healthz++ : phase.requests++
  return emit.call(this, event, ...args)
}
const counted = new WeakSet()
// `serve` answers a plain `/healthz` in its hook, without a `request` event (serve19): counted at its answer.
const writeHead = http.ServerResponse.prototype.writeHead
http.ServerResponse.prototype.writeHead = function(...args) {
  if (!counted.has(this) && this.req?.url === "/healthz") phase.healthz++
  return writeHead.apply(this, args)
}
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    if (entry.detail?.kind === constants.NODE_PERFORMANCE_GC_MINOR) {
      phase.scavenges++
      phase.scavengeMs += entry.duration
      phase.longestScavengeMs = Math.max(phase.longestScavengeMs, entry.duration)
    } else {
      phase.marks++
      phase.markMs += entry.duration
    }
  }
}).observe({ entryTypes: ["gc"] })
const delay = monitorEventLoopDelay({ resolution: 1 })
delay.enable()
const close = () => {
  const cpu = process.cpuUsage(phase.cpu)
  const round = (n) => Math.round(n * 10) / 10
  phases.push({
    ...phase,
    scavengeMs: round(phase.scavengeMs),
    longestScavengeMs: round(phase.longestScavengeMs),
    markMs: round(phase.markMs),
    cpu: round((cpu.user + cpu.system) / 1000),
    delay: { max: round(delay.max / 1e6), p99: round(delay.percentile(99) / 1e6), mean: round(delay.mean / 1e6) },
    // Each heap space's size at the phase's end (MB), and the process's external memory.
    spaces: Object.fromEntries(getHeapSpaceStatistics().map((space) => [space.space_name, round(space.space_size / 1048576)])),
    externalMB: round(process.memoryUsage().external / 1048576)
  })
  delay.reset()
  phase = fresh()
}
process.on("SIGUSR1", close)
process.on("SIGUSR2", () => {
  close()
  writeFileSync(process.env["ROW18_OUT"], JSON.stringify(phases))
})
