/**
 * Preloaded into `serve` by `bench/row18-counts.mjs` (`ROW18_PRELOAD=$PWD/bench/row18-longtasks.mjs`):
 * what `bench/row18-preload.mjs` counts, plus the server's long tasks, as the last entry of the JSON
 * line's `preload` — one object per phase (the watchers connecting, the turn), then the burst:
 *
 * - each turn of the event loop whose main thread ran over `ROW18_LONG_MS` (20) ms on a CPU
 *   (`/proc/thread-self/schedstat` between two ticks of a 1 ms timer: the machine's load stretches
 *   wall time, not this): `long`, `longMs`, and in `turns` what each did — socket writes (calls,
 *   bytes, wall ms in them, and `later`: writes the kernel did not take whole, finished by libuv in
 *   a later poll), connections accepted, sockets closed, GC pauses, `at` (ms after the first
 *   connection; -1 before it: the server's start);
 * - `over`: turns over 8, 12, 16, 20, 30 and 50 ms on a CPU; `maxTurnBytes`, `maxTurnCloses`;
 * - `closes` and `closeMs`: Node's work at each accepted socket's close (its `close` listeners — the
 *   HTTP server's, which aborts the requests still open on it, and the response's), timed whole;
 *   `closeTurns`: [closes, CPU ms] of each turn that closed 20 or more;
 * - `burstCpuMs`/`burstWallMs`: the densest 500 accepts (the watchers'), in the main thread's CPU
 *   and in wall time.
 *
 * With `ROW18_PROFILE=1` a CPU profile (inspector, 250 µs samples) is taken too, and each long turn
 * and the burst get their samples by kind (GC, socket writes, accepts, request parsing, closes, fiber
 * work, idle, other) and their busiest functions by self time (`top`, `ROW18_TOP` of them, 6). The
 * profile costs the server CPU: counts are read from runs without it (docs/benchmarks.md, probe21).
 * Linux only.
 */
import { openSync, readSync, writeFileSync } from "node:fs"
import net from "node:net"
import { PerformanceObserver } from "node:perf_hooks"
import "./row18-preload.mjs"

const longMs = Number(process.env["ROW18_LONG_MS"] ?? 20)
const out = process.env["ROW18_OUT"]
const fd = openSync("/proc/thread-self/schedstat", "r")
const buffer = Buffer.alloc(128)
/** The main thread's time on a CPU, ms. */
const onCpu = () => Number(buffer.toString("latin1", 0, readSync(fd, buffer, 0, 128, 0)).split(" ")[0]) / 1e6
const nowUs = () => Number(process.hrtime.bigint() / 1000n)

const fresh = () => ({ writes: 0, bytes: 0, writeMs: 0, later: 0, laterBytes: 0, accepts: 0, closes: 0, gcMs: 0 })
let turn = fresh()
/** When the first connection was accepted: a long turn's `at` is its end's ms after it (-1: before the server's first client). */
let firstUs
const accepts = []
const acceptUs = []
// A write the kernel did not take whole is finished by libuv in a later poll, when the socket is
// writable again, outside any slice of the scheduler: counted (`later`, `laterBytes`) in the turn it completes.
const write = (original) =>
  function(writev, data, encoding, cb) {
    const start = performance.now()
    const bytes = writev ? data.reduce((n, c) => n + (c.chunk?.length ?? c.length ?? 0), 0) : (data?.length ?? 0)
    let returned = false
    try {
      return original.call(this, writev, data, encoding, (...args) => {
        if (returned) {
          turn.later++
          turn.laterBytes += bytes
        }
        return cb(...args)
      })
    } finally {
      returned = true
      turn.writes++
      turn.writeMs += performance.now() - start
      turn.bytes += bytes
    }
  }
net.Socket.prototype._writeGeneric = write(net.Socket.prototype._writeGeneric)
const emit = net.Server.prototype.emit
net.Server.prototype.emit = function(event, ...args) {
  if (event === "connection") {
    firstUs ??= nowUs()
    turn.accepts++
    // The main thread's CPU at each accept: a burst's length in the server's own work, which the load does not stretch.
    accepts.push(onCpu())
    acceptUs.push(nowUs())
    const socket = args[0]
    socket.once("close", () => turn.closes++)
    // Node's own work at a socket's close (its listeners: the HTTP server's, which aborts the requests
    // still open on it; the response's), timed whole: `closeMs` per phase, `closes` counted.
    const socketEmit = socket.emit
    socket.emit = function(name, ...rest) {
      if (name !== "close") return socketEmit.call(this, name, ...rest)
      const start = performance.now()
      try {
        return socketEmit.call(this, name, ...rest)
      } finally {
        phase.closeMs += performance.now() - start
        phase.closes++
      }
    }
  }
  return emit.call(this, event, ...args)
}
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) if (entry.entryType === "gc") turn.gcMs += entry.duration
}).observe({ entryTypes: ["gc"] })

const blank = () => ({ long: 0, longMs: [], turns: [], over: { 8: 0, 12: 0, 16: 0, 20: 0, 30: 0, 50: 0 }, writes: 0, later: 0, laterBytes: 0, maxTurnBytes: 0, maxTurnLaterBytes: 0, maxTurnCloses: 0, closeTurns: [], closes: 0, closeMs: 0 })
let phase = blank()
const phases = []
let lastCpu = onCpu()
let lastUs = nowUs()
setInterval(() => {
  const cpu = onCpu()
  const us = nowUs()
  const ms = cpu - lastCpu
  for (const bound of [8, 12, 16, 20, 30, 50]) if (ms > bound) phase.over[bound]++
  phase.writes += turn.writes
  phase.later += turn.later
  phase.laterBytes += turn.laterBytes
  phase.maxTurnBytes = Math.max(phase.maxTurnBytes, turn.bytes)
  phase.maxTurnLaterBytes = Math.max(phase.maxTurnLaterBytes, turn.laterBytes)
  phase.maxTurnCloses = Math.max(phase.maxTurnCloses, turn.closes)
  // The watchers' closes after the turn come in bursts that Node handles in one poll: each such turn's closes and CPU.
  if (turn.closes >= 20) phase.closeTurns.push([turn.closes, Math.round(ms * 10) / 10])
  if (ms > longMs) {
    phase.long++
    phase.longMs.push(Math.round(ms))
    const r = (n) => Math.round(n * 10) / 10
    phase.turns.push({ fromUs: lastUs, toUs: us, at: firstUs === undefined ? -1 : Math.round((us - firstUs) / 1000), cpu: r(ms), wall: r((us - lastUs) / 1000), ...turn, writeMs: r(turn.writeMs), gcMs: r(turn.gcMs) })
  }
  lastCpu = cpu
  lastUs = us
  turn = fresh()
}, 1).unref()

let session
if (process.env["ROW18_PROFILE"] === "1") {
  const inspector = await import("node:inspector")
  session = new inspector.Session()
  session.connect()
  session.post("Profiler.enable")
  session.post("Profiler.setSamplingInterval", { interval: 250 })
  session.post("Profiler.start")
}

/** What a sample was doing, from its stack (leaf first). */
const kinds = [
  ["gc", /^\(garbage collector\)$/],
  ["write", /^(writev|writeBuffer|writeGeneric|_writeGeneric|writevGeneric|_writev|connectionCorkNT)$/],
  ["accept", /^onconnection$/],
  ["close", /^(socketOnClose|abortIncoming|onStreamRead.*EOF|destroy|_destroy|emitCloseNT)$/],
  ["request", /^(parserOnIncoming|parserOnHeadersComplete|parserOnBody|parserOnMessageComplete)$/],
  ["read", /^onStreamRead$/],
  ["fibers", /^(runTask|step|run)$/],
  ["idle", /^\((idle|program)\)$/]
]
const attribute = (profile, turns) => {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]))
  const parent = new Map()
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id)
  const kindOf = new Map()
  const kind = (id) => {
    if (kindOf.has(id)) return kindOf.get(id)
    let found = "other"
    for (let at = id; at !== undefined; at = parent.get(at)) {
      const name = byId.get(at).callFrame.functionName
      const hit = kinds.find(([, pattern]) => pattern.test(name))
      if (hit !== undefined) {
        found = hit[0]
        break
      }
    }
    kindOf.set(id, found)
    return found
  }
  let t = profile.startTime
  const stamps = profile.timeDeltas.map((d) => (t += d))
  for (const turn of turns) {
    const counts = {}
    const self = {}
    for (let i = 0; i < stamps.length; i++) {
      if (stamps[i] < turn.fromUs || stamps[i] > turn.toUs) continue
      const id = profile.samples[i]
      const k = kind(id)
      counts[k] = (counts[k] ?? 0) + 1
      const frame = byId.get(id).callFrame
      const name = `${frame.functionName || "(anonymous)"} ${frame.url.split("/").at(-1)}:${frame.lineNumber}:${frame.columnNumber}`
      self[name] = (self[name] ?? 0) + 1
    }
    turn.samples = counts
    turn.top = Object.entries(self).sort((a, b) => b[1] - a[1]).slice(0, Number(process.env["ROW18_TOP"] ?? 6)).map(([name, n]) => `${n} ${name}`)
  }
}

const close = () => {
  // The phase's bounds on the profile's clock (µs): from the first connection, or the last phase's end.
  phase.fromUs = phases.at(-1)?.toUs ?? firstUs
  phase.toUs = nowUs()
  phases.push(phase)
  phase = blank()
}
process.on("SIGUSR1", close)
process.on("SIGUSR2", () => {
  close()
  // The densest 500 accepts (the watchers' burst: the probes' accepts are spread over the run): their span in main-thread CPU.
  const n = Math.min(500, accepts.length)
  let burstCpuMs = Infinity
  let from = 0
  for (let i = 0; i + n - 1 < accepts.length; i++) {
    if (accepts[i + n - 1] - accepts[i] < burstCpuMs) {
      burstCpuMs = accepts[i + n - 1] - accepts[i]
      from = i
    }
  }
  // With a profile, the burst's samples by kind and its busiest functions (as a long turn's).
  phases.push({ burstCpuMs: Math.round(burstCpuMs * 10) / 10, burstWallMs: Math.round((acceptUs[from + n - 1] - acceptUs[from]) / 100) / 10, turns: [{ fromUs: acceptUs[from], toUs: acceptUs[from + n - 1] }] })
  const finish = () => writeFileSync(`${out}.long.json`, JSON.stringify(phases))
  if (session === undefined) return finish()
  session.post("Profiler.stop", (error, result) => {
    if (error === null) for (const p of phases) if (p.turns !== undefined) attribute(result.profile, p.turns)
    // The whole profile too, for a look by function (`bench/row18-profile.mjs`).
    if (error === null && process.env["ROW18_PROFILE_OUT"] !== undefined) writeFileSync(process.env["ROW18_PROFILE_OUT"], JSON.stringify(result.profile))
    finish()
  })
})
