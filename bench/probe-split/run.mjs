/**
 * Row 18's slow probes, split (docs/benchmarks.md, split18): `node bench/probe-split/run.mjs
 * [watchers=500] [over=35]` runs rows 17–18's setup once — the built `serve` (`BENCH_SERVE_BIN`, else
 * this checkout's `dist`; JSONL, the scripted 2,000-delta turn), `bench/serve-clients.ts`'s watchers
 * connecting at once and following the turn, a prober like the row's (`probe.mjs`) — with stamps on
 * every side on the machine's monotonic clock (`server-stamps.mjs` preloaded into `serve`). Prints
 * each probe over `over` ms split into: its TCP connect, the listen queue (connected → the server's
 * `connection`), accept → `request` (read in a later poll), request → `finish`, and the prober's
 * own wait for a CPU; the server's loop turns over 4 ms during it (wall, the process's CPU, the main
 * thread on a CPU / waiting for one, GCs); then, over the clients' window, the server's main thread
 * and other threads (V8's GC helpers, compiler) and the kernel's `ksoftirqd` threads (on a CPU /
 * waiting for one). Linux only (/proc).
 */
import { spawn } from "node:child_process"
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { newSession, startServe } from "../serve-setup.mjs"

const root = join(import.meta.dirname, "..", "..")
const bin = process.env["BENCH_SERVE_BIN"] ?? join(root, "dist", "cli", "bin.js")
const watchers = process.argv[2] ?? "500"
const over = Number(process.argv[3] ?? 35)
const token = "bench-token-0123456789abcdef"
const now = () => Number(process.hrtime.bigint()) / 1e6
const dir = mkdtempSync(join(tmpdir(), "probe-split-"))
writeFileSync(join(dir, "script.json"), JSON.stringify({ responses: [{ chunks: Array.from({ length: 2000 }, (_, i) => `d${i} `) }] }))
const env = {
  ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !/API_KEY$/.test(name) && !name.startsWith("NODE_OPTIONS"))),
  EFFECT_AGENT_TOKEN: token,
  EFFECT_AGENT_CONFIG_DIR: join(dir, "config"),
  PROBE_SPLIT_OUT: join(dir, "server.json")
}

/** Time on a CPU and waiting for one (ms) of each thread of a process, by thread id. */
const threads = (pid) => {
  const result = {}
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      result[tid] = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ").slice(0, 2).map((n) => Number(n) / 1e6)
    } catch { /* gone */ }
  }
  return result
}
const ksoftirqds = readdirSync("/proc").filter((pid) => /^\d+$/.test(pid) && existsSync(`/proc/${pid}/comm`) && readFileSync(`/proc/${pid}/comm`, "utf8").startsWith("ksoftirqd"))
const ksoftirqd = () => ksoftirqds.map((pid) => readFileSync(`/proc/${pid}/schedstat`, "utf8").split(" ").slice(0, 2).map((n) => Number(n) / 1e6)).reduce((a, b) => [a[0] + b[0], a[1] + b[1]], [0, 0])

/** User + system CPU of a process so far, ms (Linux /proc; 10 ms ticks); undefined once it is gone. */
const cpuOf = (pid) => {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ")
    return (Number(fields[11]) + Number(fields[12])) * 10
  } catch {
    return undefined
  }
}

const { server, url } = await startServe(["--import", join(import.meta.dirname, "server-stamps.mjs")], bin, dir, env)
const session = await newSession(url, token)
const prober = spawn(process.execPath, [join(import.meta.dirname, "probe.mjs"), url], { stdio: ["pipe", "pipe", "inherit"] })
let proberOut = ""
await new Promise((resolve) => prober.stdout.on("data", (chunk) => (proberOut += chunk, proberOut.startsWith("ready\n") && resolve())))

const before = { threads: threads(server.pid), ksoftirqd: ksoftirqd() }
const start = now()
const clients = spawn(process.execPath, ["--import", "tsx", join(root, "bench", "serve-clients.ts"), url, token, session.sessionId, watchers], { cwd: root, stdio: ["pipe", "pipe", "inherit"] })
let clientsOut = ""
await new Promise((resolve) => clients.stdout.on("data", (chunk) => (clientsOut += chunk, clientsOut.startsWith("ready\n") && resolve())))
const ready = now()
const clientsReady = cpuOf(clients.pid)
clients.stdin.write("go\n")
let clientsEnd = clientsReady
const sampling = setInterval(() => (clientsEnd = cpuOf(clients.pid) ?? clientsEnd), 20)
await new Promise((resolve) => clients.once("exit", resolve))
clearInterval(sampling)
const end = now()
const after = { threads: threads(server.pid), ksoftirqd: ksoftirqd() }
prober.stdin.end()
await new Promise((resolve) => prober.once("exit", resolve))
const probes = JSON.parse(proberOut.trim().split("\n").at(-1))
server.kill("SIGUSR2")
const stamps = join(dir, "server.json")
for (let i = 0; i < 100 && !existsSync(stamps); i++) await new Promise((resolve) => setTimeout(resolve, 20))
await new Promise((resolve) => setTimeout(resolve, 100))
const stamped = JSON.parse(readFileSync(stamps, "utf8"))
server.kill("SIGKILL")

const at = (t) => `+${(t - start).toFixed(0)}`
const ms = (n) => (n === undefined || Number.isNaN(n) ? "?" : n.toFixed(1))
// Loopback reuses ports quickly: a probe's connection is the first from its port accepted after it started.
const byPort = (entries, portOf, timeOf) => {
  const map = new Map()
  for (const entry of entries) map.set(portOf(entry), [...(map.get(portOf(entry)) ?? []), entry])
  return (probe) => (map.get(probe.port) ?? []).find((entry) => timeOf(entry) >= probe.start)
}
const acceptOf = byPort(stamped.conns, ([, port]) => port, ([t]) => t)
// The accept itself (the connection then held unread until handed over, `acceptOf`'s stamp).
const acceptedOf = byPort(stamped.accepts ?? stamped.conns, ([, port]) => port, ([t]) => t)
const answerOf = byPort(stamped.health, (h) => h.port, (h) => h.request)
const liveAccepts = (stamped.accepts ?? stamped.conns).filter(([t, port]) => t > start && !probes.some((p) => p.port === port)).map(([t]) => t)
const burstEnd = liveAccepts[Math.min(Number(watchers) - 1, liveAccepts.length - 1)]
console.log(`${probes.length} probes, worst ${ms(Math.max(...probes.map((p) => p.end - p.start)))} ms; clients started at +0, all connected ${at(burstEnd)} (first ${at(liveAccepts[0])}), ready ${at(ready)}, done ${at(end)}; ${clientsOut.trim().split("\n").at(-1)}`)
const tally = {}
for (const probe of probes.filter((p) => p.end - p.start > over)) {
  const accept = acceptOf(probe)?.[0]
  const accepted = acceptedOf(probe)?.[0] ?? accept
  const health = answerOf(probe)
  const parts = {
    "TCP connect": probe.connect - probe.start,
    "listen queue": accepted - probe.connect,
    "held": accept - accepted,
    "handed to request": health?.request - accept,
    "request to answer": health?.finish - health?.request,
    "the prober waiting for a CPU": probe.waited
  }
  const phase = probe.start < burstEnd ? "the burst" : probe.start < ready ? "the requests' starts" : "the turn"
  const largest = Object.entries(parts).filter(([, v]) => !Number.isNaN(v)).sort((a, b) => b[1] - a[1])[0]?.[0] ?? "unmatched"
  tally[`${largest}, ${phase}`] = (tally[`${largest}, ${phase}`] ?? 0) + 1
  // The connections the server accepted between the probe's connect and its own accept: what was ahead of it in the listen queue.
  const accepts = stamped.accepts ?? stamped.conns
  const ahead = accepted === undefined ? "?" : accepts.filter(([t]) => t > probe.connect && t < accepted).length
  // And those handed over while it was held: the connections set up and read ahead of it.
  const handedAhead = accept === undefined ? "?" : stamped.conns.filter(([t]) => t > accepted && t < accept).length
  console.log(`probe ${at(probe.start)} (${phase}) ${ms(probe.end - probe.start)} ms: ${Object.entries(parts).map(([name, v]) => `${name} ${ms(v)}`).join(", ")}; ${ahead} accepts ahead of it, ${handedAhead} handed over while it was held`)
  for (const gap of stamped.gaps.filter((g) => g.end > probe.start && g.start < probe.end)) {
    const gcs = stamped.gcs.filter((gc) => gc.start + gc.ms > gap.start && gc.start < gap.end).map((gc) => `${gc.kind === 1 ? "scavenge" : `gc kind ${gc.kind}`} ${ms(gc.ms)}`)
    console.log(`  server turn ${at(gap.start)} ${ms(gap.end - gap.start)} ms wall: process CPU ${ms(gap.cpu)}, main thread on a CPU ${ms(gap.running)} / waiting for one ${ms(gap.waiting)}${gcs.length > 0 ? `; ${gcs.join(", ")}` : ""}`)
  }
}
const main = String(server.pid)
const delta = (tid) => [0, 1].map((i) => after.threads[tid][i] - (before.threads[tid]?.[i] ?? 0))
const others = Object.keys(after.threads).filter((tid) => tid !== main).map(delta).reduce((a, b) => [a[0] + b[0], a[1] + b[1]], [0, 0])
console.log(`over the clients' ${ms(end - start)} ms: the server's main thread on a CPU ${ms(delta(main)[0])} / waiting for one ${ms(delta(main)[1])} ms; its other threads ${ms(others[0])} / ${ms(others[1])} ms; ksoftirqd ${ms(after.ksoftirqd[0] - before.ksoftirqd[0])} / ${ms(after.ksoftirqd[1] - before.ksoftirqd[1])} ms`)
console.log(`probes over ${over} ms by their largest part:`, tally)
// The server's main thread on a CPU during each probe (its ticks' stamps, interpolated): what a probe
// would wait on a quiet machine where the server has a core of its own, which the load does not stretch.
const cpuAt = (t) => {
  const c = stamped.cpu
  let lo = 0
  let hi = c.length / 2 - 1
  if (hi < 0 || t <= c[0]) return c[1] ?? 0
  if (t >= c[hi * 2]) return c[hi * 2 + 1]
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1
    if (c[mid * 2] <= t) lo = mid
    else hi = mid
  }
  const [t0, v0, t1, v1] = [c[lo * 2], c[lo * 2 + 1], c[hi * 2], c[hi * 2 + 1]]
  return v0 + (v1 - v0) * (t - t0) / (t1 - t0)
}
const byCpu = probes.map((p) => ({ p, cpu: cpuAt(p.end) - cpuAt(p.start) })).sort((a, b) => b.cpu - a.cpu)
const phaseOf = (p) => p.start < burstEnd ? "the burst" : p.start < ready ? "the requests' starts" : "the turn"
console.log(`the server's main thread on a CPU during a probe: worst ${byCpu.slice(0, 5).map(({ p, cpu }) => `${ms(cpu)} ms (${phaseOf(p)}, ${at(p.start)}, wall ${ms(p.end - p.start)}, ${acceptedOf(p) === undefined ? "?" : (stamped.accepts ?? stamped.conns).filter(([t]) => t > p.connect && t < acceptedOf(p)[0]).length} accepts ahead, held ${acceptOf(p) === undefined || acceptedOf(p) === undefined ? "?" : ms(acceptOf(p)[0] - acceptedOf(p)[0])} ms)`).join("; ")}`)
for (const name of ["the burst", "the requests' starts", "the turn"]) {
  const of = byCpu.filter(({ p }) => phaseOf(p) === name).map(({ cpu }) => cpu)
  if (of.length > 0) console.log(`  ${name}: ${of.length} probes, max ${ms(of[0])} ms, p50 ${ms(of[Math.floor(of.length / 2)])} ms on the server's main thread`)
}
console.log(`the clients' process: ${clientsReady} ms of CPU until all were connected, ${clientsEnd - clientsReady} ms in the turn`)
