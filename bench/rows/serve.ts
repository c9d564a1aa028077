/**
 * Rows 15–18: `serve` fan-out (issue 20). The built CLI's `serve` runs in a subprocess (JSONL store,
 * a scripted model answering one turn with N deltas at once); real HTTP clients in another child
 * process (`bench/serve-clients.ts`) watch `/live`, each checking it reads every id once, in order.
 *
 * - 15: one N-delta turn watched by 100 clients vs by 1: time until every client has read
 *   `turn.completed` (goal ≤ 3×); the server's CPU per event per client and peak RSS in the detail.
 * - 16: the server's peak RSS (VmHWM) with 100 clients vs 1 (goal ≤ 2×).
 * - 26: the same on a paced turn (the scripted model's `delay`, 1 ms before each delta: one delta per
 *   chunk, the engine committing about one delta at a time, as a real vendor's stream makes it; each
 *   extra client then costs the server per event what rows 15's batches amortise), fewer deltas
 *   (each turn lasts about deltas × 1 ms): 100 clients vs 1, goal ≤ 3×.
 * - 27: a slow client: the paced turn watched by 100 clients of which one stops reading once
 *   connected, vs 100 that all read: the 99 readers' delivery time (goal ≤ 1.2×, unaffected) and the
 *   server's peak RSS (detail). The stalled client's backlog is one 2,000-delta turn (a few hundred
 *   KB), so RSS staying bounded is only weakly tested.
 * - 17, 18: `/healthz` latency (max over the run; p50/p99 in the detail) while 50 and 500 watchers
 *   connect and then follow a 2,000-delta turn, probed one request after another on fresh
 *   connections from a small process of its own (`bench/health-probe.mjs`; goal < 50 ms).
 *
 * A fresh server per repetition, so peak RSS is that repetition's.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { readFileSync, writeFileSync } from "node:fs"
import { request } from "node:http"
import { join } from "node:path"
import { config, only } from "../config.js"
import { scratch } from "../engine.js"
import { format, median, quantile, ratioRow, type Row } from "../measure.js"
import { ensureBuilt } from "./cli.js"

const root = join(import.meta.dirname, "..", "..")
/** The CLI served; `BENCH_SERVE_BIN` names another build's (an A/B against a copy of main's dist). */
const bin = process.env["BENCH_SERVE_BIN"] ?? join(root, "dist", "cli", "bin.js")
const token = "bench-token-0123456789abcdef"
const env = {
  ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !/API_KEY$/.test(name) && !name.startsWith("NODE_OPTIONS"))),
  EFFECT_AGENT_TOKEN: token,
  // The sessions the server starts are recorded in a config folder (StartedSessions): this run's, not the machine's.
  EFFECT_AGENT_CONFIG_DIR: scratch("serve-config")
}

interface Server {
  readonly url: string
  readonly pid: number
  readonly stop: () => Promise<void>
}

/** `serve` on a free port, answering one turn with `deltas` deltas (`delay` before each: one delta per chunk, paced). */
const startServer = (deltas: number, delay?: string): Promise<Server> =>
  new Promise((resolve, reject) => {
    const dir = scratch("serve")
    const script = join(dir, "script.json")
    writeFileSync(script, JSON.stringify({ responses: [{ chunks: Array.from({ length: deltas }, (_, i) => `d${i} `), ...(delay === undefined ? {} : { delay }) }] }))
    const child: ChildProcess = spawn(process.execPath, [bin, "serve", "--port", "0", "--script", script, "--data-dir", join(dir, "data"), "--no-instructions"], {
      cwd: dir,
      env,
      stdio: ["ignore", "pipe", "pipe"]
    })
    let output = ""
    const onData = (chunk: Buffer) => {
      output += chunk.toString()
      const match = /listening on (http:\/\/[^\s]+)/.exec(output)
      if (match === null) return
      child.stdout!.off("data", onData)
      child.stderr!.off("data", onData)
      child.stdout!.resume()
      child.stderr!.resume()
      resolve({
        url: match[1]!,
        pid: child.pid!,
        stop: () =>
          new Promise<void>((done) => {
            child.once("exit", () => done())
            child.kill("SIGKILL")
          })
      })
    }
    child.stdout!.on("data", onData)
    child.stderr!.on("data", onData)
    child.once("exit", (code) => reject(new Error(`serve exited ${code}: ${output}`)))
  })

const call = (method: string, url: string, body?: unknown) =>
  new Promise<unknown>((resolve, reject) => {
    const req = request(url, { method, headers: { authorization: `Bearer ${token}`, "content-type": "application/json" } }, (res) => {
      let text = ""
      res.setEncoding("utf8")
      res.on("data", (t: string) => (text += t))
      res.on("end", () => (res.statusCode! < 300 ? resolve(JSON.parse(text)) : reject(new Error(`${method} ${url}: ${res.statusCode} ${text}`))))
    })
    req.on("error", reject)
    req.end(body === undefined ? undefined : JSON.stringify(body))
  })

/** User + system CPU of a process so far, in ms (Linux /proc). */
const cpuMs = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")
  return (Number(fields[11]) + Number(fields[12])) * 10
}
/**
 * Resolves once the server's CPU time has not moved for `stillMs` (it is idle), or after `maxMs`.
 * A client reads `: connected` as soon as its response starts, before the server has subscribed it
 * and read the session's stored events: with 100 clients, 50–100 ms of that work (0.5–1 ms of CPU
 * a client) was still queued when the last one read it, and the turn's first batch was stored
 * 120–330 ms after the turn's request instead of 13–40 ms — row 15 timed the end of the
 * connections (rows 17–18's subject) as well as the turn's fan-out. Linux reports CPU time in
 * 10 ms ticks: still over `stillMs` means no work queued, not a pause between two tasks.
 */
const idle = async (pid: number, stillMs = 100, maxMs = 10_000) => {
  const start = performance.now()
  let last = cpuMs(pid)
  let since = performance.now()
  while (performance.now() - since < stillMs && performance.now() - start < maxMs) {
    await new Promise((resolve) => setTimeout(resolve, 10))
    const now = cpuMs(pid)
    if (now !== last) {
      last = now
      since = performance.now()
    }
  }
}
/** Peak resident set size of a process so far, in bytes (Linux /proc). */
const peakRss = (pid: number) => Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) * 1024

/**
 * `/healthz` probed one request after another (fresh connection each) by `bench/health-probe.mjs`, a
 * process of its own, until `stop` resolves; the latencies in ms. Resolves `started` once the first
 * probe is answered (not counted).
 */
const probeHealth = (url: string) => {
  const child = spawn(process.execPath, [join(root, "bench", "health-probe.mjs"), url], { stdio: ["pipe", "pipe", "inherit"] })
  let out = ""
  let onReady!: () => void
  const started = new Promise<void>((resolve) => (onReady = resolve))
  const latencies = new Promise<ReadonlyArray<number>>((resolve, reject) => {
    child.stdout.on("data", (c: Buffer) => {
      out += c.toString()
      if (out.startsWith("ready\n")) onReady()
    })
    child.once("exit", (code) => (code === 0 ? resolve(JSON.parse(out.trim().split("\n").at(-1)!)) : reject(new Error(`health-probe exited ${code}`))))
  })
  const stop = () => {
    child.stdin.end()
    return latencies
  }
  return { started, stop }
}

interface Run {
  readonly ms: number
  readonly events: number
  readonly clients: number
  readonly cpuMs: number
  readonly peakRss: number
  readonly health: ReadonlyArray<number>
}

/** One repetition: a fresh server, `clients` watchers (`stalled` of them stop reading), one turn of `deltas` deltas, paced by `delay`. */
const fanOut = async (deltas: number, clients: number, probe: boolean, delay?: string, stalled = 0): Promise<Run> => {
  const server = await startServer(deltas, delay)
  try {
    const session = await call("POST", `${server.url}/sessions`, {}) as { sessionId: string }
    // Probing from before the first watcher connects.
    const prober = probe ? probeHealth(server.url) : undefined
    if (prober !== undefined) await prober.started
    const child = spawn(process.execPath, ["--import", "tsx", join(root, "bench", "serve-clients.ts"), server.url, token, session.sessionId, String(clients), String(stalled)], {
      cwd: root,
      stdio: ["pipe", "pipe", "pipe"]
    })
    let out = ""
    let err = ""
    child.stderr.on("data", (c: Buffer) => (err += c.toString()))
    let cpuBefore = 0
    let ready = false
    const finished = new Promise<{ ms: number; events: number; clients: number }>((resolve, reject) => {
      child.stdout.on("data", (c: Buffer) => {
        out += c.toString()
        if (out.startsWith("ready\n") && !ready) {
          ready = true
          // Rows 15–16 time the turn's fan-out to connected watchers: the turn starts once the server
          // is done connecting them. Rows 17–18 probe while they connect: the turn starts at once.
          void (probe ? Promise.resolve() : idle(server.pid)).then(() => {
            cpuBefore = cpuMs(server.pid)
            child.stdin.write("go\n")
          })
        }
      })
      child.once("exit", (code) => {
        if (code !== 0) return reject(new Error(`serve-clients exited ${code}: ${err}`))
        resolve(JSON.parse(out.trim().split("\n").at(-1)!))
      })
    })
    const result = await finished.finally(() => prober?.stop())
    const cpu = cpuMs(server.pid) - cpuBefore
    return { ...result, cpuMs: cpu, peakRss: peakRss(server.pid), health: prober === undefined ? [] : await prober.stop() }
  } finally {
    await server.stop()
  }
}

const mbOf = (bytes: number) => format(bytes / 1048576, " MB")
const range = (values: ReadonlyArray<number>, unit: string) => `${format(Math.min(...values), "")}–${format(Math.max(...values), unit)}`

/** Rows 26–27: the paced turn, 1 vs 100 clients, and 100 with one stalled. */
const pacedRows = async (describe: (name: string, runs: ReadonlyArray<Run>) => string): Promise<Array<Row>> => {
  const deltas = config.servePacedDeltas
  const many = config.serveClients
  const delay = `${config.vendorPaceMs} millis`
  const one: Array<Run> = []
  const hundred: Array<Run> = []
  const stalled: Array<Run> = []
  for (let rep = 0; rep < config.serveReps; rep++) {
    // Rotate which goes first.
    const order = [
      async () => one.push(await fanOut(deltas, 1, false, delay)),
      async () => hundred.push(await fanOut(deltas, many, false, delay)),
      async () => stalled.push(await fanOut(deltas, many, false, delay, 1))
    ]
    for (let k = 0; k < order.length; k++) await order[(k + rep) % order.length]!()
  }
  const events = one[0]!.events
  return [
    ratioRow(26, `\`serve\`: one ${deltas.toLocaleString("en-US")}-delta turn (${events.toLocaleString("en-US")} events) paced ${config.vendorPaceMs} ms a delta (one per chunk) delivered to ${many} SSE clients vs 1, time until all have read it`, hundred.map((r, i) => r.ms / one[i]!.ms), {
      text: "≤ 3×",
      met: (m) => m <= 3
    }, `${describe("1 client", one)}; ${describe(`${many} clients`, hundred)}`),
    ratioRow(27, `\`serve\`: the same paced turn, ${many} clients of which 1 stops reading vs ${many} all reading, time until the ${many - 1} readers have read it`, stalled.map((r, i) => r.ms / hundred[i]!.ms), {
      text: "≤ 1.2× (unaffected)",
      met: (m) => m <= 1.2
    }, `${describe(`${many - 1} readers + 1 stalled`, stalled)}; ${describe(`${many} readers`, hundred)}; peak RSS stalled/all-reading ${format(median(stalled.map((r, i) => r.peakRss / hundred[i]!.peakRss)), "×")} (µs/event/client counts the readers)`)
  ]
}

export const run = async (): Promise<Array<Row>> => {
  if (process.env["BENCH_SERVE_BIN"] === undefined) ensureBuilt()
  const deltas = config.serveDeltas
  const many = config.serveClients
  // Warm-up: the file cache and the JIT of this process; not measured.
  await fanOut(Math.min(deltas, 1000), 1, false)
  const one: Array<Run> = []
  const hundred: Array<Run> = []
  const rows: Array<Row> = []
  const flood = only === undefined || [15, 16, 17, 18].some((r) => only!.has(r))
  for (let rep = 0; rep < (flood ? config.serveReps : 0); rep++) {
    // Alternate which goes first.
    if (rep % 2 === 0) {
      one.push(await fanOut(deltas, 1, false))
      hundred.push(await fanOut(deltas, many, false))
    } else {
      hundred.push(await fanOut(deltas, many, false))
      one.push(await fanOut(deltas, 1, false))
    }
  }
  const perEvent = (r: Run) => (r.cpuMs * 1000) / (r.events * r.clients)
  const describe = (name: string, runs: ReadonlyArray<Run>) =>
    `${name}: ${format(median(runs.map((r) => r.ms)), " ms")} (${range(runs.map((r) => r.ms), " ms")}), server CPU ${format(median(runs.map(perEvent)), " µs")}/event/client (${range(runs.map(perEvent), " µs")}), peak RSS ${mbOf(median(runs.map((r) => r.peakRss)))} (${mbOf(Math.min(...runs.map((r) => r.peakRss)))}–${mbOf(Math.max(...runs.map((r) => r.peakRss)))})`
  const events = one[0]?.events ?? 0
  if (flood) rows.push(
    ratioRow(15, `\`serve\`: one ${deltas.toLocaleString("en-US")}-delta turn (${events.toLocaleString("en-US")} events) delivered to ${many} SSE clients vs 1, time until all have read it`, hundred.map((r, i) => r.ms / one[i]!.ms), {
      text: "≤ 3×",
      met: (m) => m <= 3
    }, `${describe("1 client", one)}; ${describe(`${many} clients`, hundred)}`),
    ratioRow(16, `\`serve\`: peak RSS with ${many} SSE clients vs 1 (the same turn)`, hundred.map((r, i) => r.peakRss / one[i]!.peakRss), {
      text: "≤ 2×",
      met: (m) => m <= 2
    }, `1 client ${mbOf(median(one.map((r) => r.peakRss)))}, ${many} clients ${mbOf(median(hundred.map((r) => r.peakRss)))}`)
  )
  if (only === undefined || only.has(26) || only.has(27)) rows.push(...await pacedRows(describe))
  for (const [id, watchers] of flood ? [[17, config.healthWatchers], [18, config.healthWatchersMany]] as const : []) {
    const runs: Array<Run> = []
    for (let rep = 0; rep < config.serveReps; rep++) runs.push(await fanOut(config.healthDeltas, watchers, true))
    const all = runs.flatMap((r) => r.health)
    const worst = runs.map((r) => Math.max(...r.health))
    rows.push({
      id,
      measure: `\`serve\`: \`/healthz\` latency while ${watchers} watchers connect to and follow a ${config.healthDeltas.toLocaleString("en-US")}-delta turn (max per run, median of runs)`,
      value: median(worst),
      spread: `${range(worst, " ms")} (n=${runs.length})`,
      unit: "ms",
      goal: "< 50 ms",
      met: median(worst) < 50 && Math.max(...worst) < 50,
      detail: `${all.length} probes: p50 ${format(quantile(all, 0.5), " ms")}, p99 ${format(quantile(all, 0.99), " ms")}, max ${format(Math.max(...all), " ms")}; delivery to all ${format(median(runs.map((r) => r.ms)), " ms")} (${range(runs.map((r) => r.ms), " ms")}), peak RSS ${mbOf(median(runs.map((r) => r.peakRss)))}`
    })
  }
  return rows
}
