/**
 * Preloaded into `serve` by `bench/probe-split/run.mjs` (`node --import`): stamps, on the machine's
 * monotonic clock (ms), each connection accepted (`accepts`) and handed to the HTTP server (`conns`;
 * the same moment but for `serve`'s held ones) and `/healthz` request by the client's port, each
 * `/healthz` response's `finish`, each GC, and each turn of the loop over 4 ms (a 1 ms timer: wall,
 * the process's CPU, the main thread's time on a CPU and waiting for one), and at every tick the
 * main thread's time on a CPU (`cpu`: time, ms on a CPU, flat pairs). On SIGUSR2 it writes them
 * as JSON to `$PROBE_SPLIT_OUT`.
 */
import { openSync, readSync, writeFileSync } from "node:fs"
import http from "node:http"
import net from "node:net"
import { PerformanceObserver } from "node:perf_hooks"

const now = () => Number(process.hrtime.bigint()) / 1e6
const offset = now() - performance.now()
const out = { accepts: [], conns: [], health: [], gaps: [], gcs: [], cpu: [] }
const schedFd = openSync("/proc/thread-self/schedstat", "r")
const buffer = Buffer.alloc(128)
const sched = () => {
  const length = readSync(schedFd, buffer, 0, buffer.length, 0)
  const [running, waiting] = buffer.toString("latin1", 0, length).split(" ")
  return [Number(running) / 1e6, Number(waiting) / 1e6]
}
// On the prototype: the server's own hook on its `emit` (requests started as tasks) calls through to it.
const emit = net.Server.prototype.emit
net.Server.prototype.emit = function(event, ...args) {
  if (event === "connection") out.conns.push([now(), args[0].remotePort])
  if (event === "request" && args[0].url === "/healthz") stampHealth(args[0], args[1])
  return emit.call(this, event, ...args)
}
// `serve` holds a connection unread while others are being accepted (perf63serve) and emits its
// `connection` to the prototype's (stamped above, as `conns`) only when it hands it over: its accept
// is stamped (`accepts`) where the server's own hooks on `emit` first see it, through an accessor
// that wraps each hook the server sets.
const seen = new WeakSet()
const hooked = Symbol("hooked")
const stampedEmit = net.Server.prototype.emit
Object.defineProperty(net.Server.prototype, "emit", {
  configurable: true,
  get() {
    return this[hooked] ?? stampedEmit
  },
  set(hook) {
    this[hooked] = function(event, ...args) {
      if (event === "connection" && !seen.has(args[0])) {
        seen.add(args[0])
        out.accepts.push([now(), args[0].remotePort])
      }
      return hook.call(this, event, ...args)
    }
  }
})
const stamped = new WeakSet()
const stampHealth = (request, response) => {
  stamped.add(response)
  const stamp = { port: request.socket.remotePort, request: now() }
  out.health.push(stamp)
  response.once("finish", () => (stamp.finish = now()))
}
// `serve` answers a plain `/healthz` in its hook, without a `request` event (serve19): stamped at its answer.
const writeHead = http.ServerResponse.prototype.writeHead
http.ServerResponse.prototype.writeHead = function(...args) {
  if (!stamped.has(this) && this.req?.url === "/healthz") stampHealth(this.req, this)
  return writeHead.apply(this, args)
}
let last = now()
let lastCpu = process.cpuUsage()
let lastSched = sched()
setInterval(() => {
  const wall = now()
  const cpu = process.cpuUsage()
  const [running, waiting] = sched()
  // The main thread's time on a CPU at each tick: a probe's share of the server's work, which the load does not stretch.
  out.cpu.push(Math.round(wall * 1000) / 1000, Math.round(running * 1000) / 1000)
  if (wall - last > 4) {
    out.gaps.push({ start: last, end: wall, cpu: (cpu.user + cpu.system - lastCpu.user - lastCpu.system) / 1000, running: running - lastSched[0], waiting: waiting - lastSched[1] })
  }
  last = wall
  lastCpu = cpu
  lastSched = [running, waiting]
}, 1).unref()
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) out.gcs.push({ start: entry.startTime + offset, ms: entry.duration, kind: entry.detail?.kind })
}).observe({ entryTypes: ["gc"] })
process.on("SIGUSR2", () => writeFileSync(process.env["PROBE_SPLIT_OUT"], JSON.stringify(out)))
