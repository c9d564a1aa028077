/**
 * Row 18 once, counted: `node bench/row18-counts.mjs [watchers=500]` runs rows 17–18's setup (the
 * built `serve` — `BENCH_SERVE_BIN`, else this checkout's `dist`; JSONL, the scripted 2,000-delta
 * turn; `bench/serve-clients.ts`'s watchers connecting at once; `bench/health-probe.mjs` probing from
 * before they connect) and prints one JSON line of what depends less on the machine's load than the
 * row's wall time: the server's CPU time (main thread and all threads, from schedstat, in ms) at
 * three marks — listening, all watchers connected, the turn read by all —, its system calls and
 * bytes read and written (`/proc/<pid>/io`), its context switches and peak RSS; and the row's own
 * figures (worst probe, probes, delivery to all). `ROW18_PRELOAD=<file>` preloads a module into
 * `serve` that writes its own counts to `$ROW18_OUT` on SIGUSR2 (merged into the line as
 * `preload`); a preload is a flag, so the CLI's compile cache is another file (see
 * `ROW18_CACHE_FROM`, which copies a cache file in as this run's). Linux only (/proc).
 */
import { spawn } from "node:child_process"
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { newSession, startServe } from "./serve-setup.mjs"

const root = join(import.meta.dirname, "..")
const bin = process.env["BENCH_SERVE_BIN"] ?? join(root, "dist", "cli", "bin.js")
const watchers = process.argv[2] ?? "500"
const token = "bench-token-0123456789abcdef"
const dir = mkdtempSync(join(tmpdir(), "row18-"))
writeFileSync(join(dir, "script.json"), JSON.stringify({ responses: [{ chunks: Array.from({ length: 2000 }, (_, i) => `d${i} `) }] }))
const preload = process.env["ROW18_PRELOAD"]
const execArgv = preload === undefined ? [] : ["--import", preload]
const env = {
  ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !/API_KEY$/.test(name) && !name.startsWith("NODE_OPTIONS"))),
  EFFECT_AGENT_TOKEN: token,
  EFFECT_AGENT_CONFIG_DIR: join(dir, "config"),
  ROW18_OUT: join(dir, "preload.json")
}
// The compile cache's file for these flags (CodeCache.ts: `${hash}-${node}-${arch}-${flags}-serve.v8`), copied from another's.
const cacheFrom = process.env["ROW18_CACHE_FROM"]
if (cacheFrom !== undefined) {
  const folder = env["EFFECT_AGENT_CODE_CACHE_DIR"]
  if (folder === undefined) throw new Error("ROW18_CACHE_FROM needs EFFECT_AGENT_CODE_CACHE_DIR")
  let h = 0x811c9dc5
  const text = [...execArgv, ""].join("\0")
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193)
  const flags = (h >>> 0).toString(16).padStart(8, "0")
  const name = cacheFrom.split("/").at(-1).replace(/-[0-9a-f]{8}-serve\.v8$/, `-${flags}-serve.v8`)
  copyFileSync(cacheFrom, join(folder, name))
}

/** Time on a CPU of the main thread and of all threads, ms. */
const cpu = (pid) => {
  let all = 0
  let main = 0
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const ms = Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ")[0]) / 1e6
      all += ms
      if (tid === String(pid)) main = ms
    } catch { /* gone */ }
  }
  return { main: Math.round(main * 10) / 10, all: Math.round(all * 10) / 10 }
}
const io = (pid) => Object.fromEntries(readFileSync(`/proc/${pid}/io`, "utf8").trim().split("\n").map((l) => l.split(": ")).map(([k, v]) => [k, Number(v)]))
const status = (pid) => {
  const text = readFileSync(`/proc/${pid}/status`, "utf8")
  const field = (name) => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(text)[1])
  return { voluntary: field("voluntary_ctxt_switches"), involuntary: field("nonvoluntary_ctxt_switches"), hwmMB: Math.round(field("VmHWM") / 1024) }
}
const load = Number(readFileSync("/proc/loadavg", "utf8").split(" ")[0])

const { server, url } = await startServe(execArgv, bin, dir, env)
const listening = cpu(server.pid)
// `ROW18_PERF=<file>`: `perf record` of the server from here to the turn's end (V8's own C++ frames
// are named without any flag to node, so the compile cache stays the one the row uses).
const perf = process.env["ROW18_PERF"] === undefined ? undefined : spawn("perf", ["record", "-q", "-F", "1999", "-p", String(server.pid), "-o", process.env["ROW18_PERF"]], { stdio: "ignore" })
if (perf !== undefined) await new Promise((resolve) => setTimeout(resolve, 300))
const session = await newSession(url, token)
const prober = spawn(process.execPath, [join(root, "bench", "health-probe.mjs"), url], { stdio: ["pipe", "pipe", "inherit"] })
let proberOut = ""
await new Promise((resolve) => prober.stdout.on("data", (chunk) => (proberOut += chunk, proberOut.startsWith("ready\n") && resolve())))
const ioBefore = io(server.pid)
// The preload's first phase starts here (it counts from the server's start: the prober's first probe and the session's POST are in it).
const before = cpu(server.pid)
const clients = spawn(process.execPath, ["--import", "tsx", join(root, "bench", "serve-clients.ts"), url, token, session.sessionId, watchers], { cwd: root, stdio: ["pipe", "pipe", "inherit"] })
let clientsOut = ""
await new Promise((resolve) => clients.stdout.on("data", (chunk) => (clientsOut += chunk, clientsOut.startsWith("ready\n") && resolve())))
const connected = cpu(server.pid)
if (preload !== undefined) server.kill("SIGUSR1")
clients.stdin.write("go\n")
await new Promise((resolve) => clients.once("exit", resolve))
const after = cpu(server.pid)
const ioAfter = io(server.pid)
if (perf !== undefined) {
  perf.kill("SIGINT")
  await new Promise((resolve) => perf.once("exit", resolve))
}
const st = status(server.pid)
prober.stdin.end()
await new Promise((resolve) => prober.once("exit", resolve))
const latencies = JSON.parse(proberOut.trim().split("\n").at(-1))
let preloaded
if (preload !== undefined) {
  server.kill("SIGUSR2")
  for (let i = 0; i < 200 && !existsSync(env.ROW18_OUT); i++) await new Promise((resolve) => setTimeout(resolve, 10))
  await new Promise((resolve) => setTimeout(resolve, 50))
  preloaded = JSON.parse(readFileSync(env.ROW18_OUT, "utf8"))
  // `bench/row18-longtasks.mjs` writes its long turns beside (after its profile, if any, is read).
  const long = `${env.ROW18_OUT}.long.json`
  if (preload.endsWith("row18-longtasks.mjs")) {
    for (let i = 0; i < 1000 && !existsSync(long); i++) await new Promise((resolve) => setTimeout(resolve, 10))
    await new Promise((resolve) => setTimeout(resolve, 50))
    preloaded.push(JSON.parse(readFileSync(long, "utf8")))
  }
}
server.kill("SIGKILL")
const delivery = JSON.parse(clientsOut.trim().split("\n").at(-1)).ms
const round = (n) => Math.round(n * 10) / 10
const diff = (a, b) => ({ main: round(a.main - b.main), all: round(a.all - b.all) })
process.stdout.write(`${JSON.stringify({
  load,
  worst: round(Math.max(...latencies)),
  probes: latencies.length,
  delivery: Math.round(delivery),
  cpu: { startup: listening, connecting: diff(connected, before), turn: diff(after, connected) },
  io: { syscr: ioAfter.syscr - ioBefore.syscr, syscw: ioAfter.syscw - ioBefore.syscw, rchar: ioAfter.rchar - ioBefore.rchar, wchar: ioAfter.wchar - ioBefore.wchar },
  ...st,
  ...(preloaded === undefined ? {} : { preload: preloaded })
})}\n`)
