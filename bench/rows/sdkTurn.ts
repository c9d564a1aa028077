/**
 * Rows 10–11 and 24–25: one turn of N text deltas as users run it — the official Anthropic SDK reading
 * a local fake-vendor HTTP stream (`bench/vendor.ts`, its own process), one delta per SSE event.
 *
 * Rows 10–11: the vendor unpaced, writing the next event as soon as the previous reached the socket.
 * That is a flood, not one delta per chunk: the SDK reads many events per socket read and the
 * adapter's `fromSdk` hands over what has arrived as one chunk (a median of ~136 deltas a commit in
 * review58c's probe). Contenders, interleaved: the engine (AnthropicModelProvider) with the memory
 * store, pi-agent-core's Agent over pi-ai's Anthropic provider (the same server; pi-ai bundles its own
 * `@anthropic-ai/sdk` 0.91.1 and parses the SSE itself, where our adapter iterates our SDK's stream),
 * and the engine with the JSONL store. Both sides consume every event one by one (`touch`); the
 * measure is CPU time of this process per event (`process.cpuUsage`, user + system), which the
 * server's work does not enter.
 *
 * Row 24: the same with the vendor paced (`BENCH_VENDOR_PACE_MS`, each event in its own write, 1 ms
 * apart: about one event per socket read, so about one delta per chunk), fewer deltas (each turn
 * lasts N ms), memory store vs pi-agent-core reading the same paced stream, CPU per event.
 *
 * Row 25: the first delta's latency: the paced vendor in this process, a timestamp just before it
 * writes the turn's first delta and one when the engine's consumer reads its `model.delta` event;
 * p99 over short turns (median in the detail), goal ≤ 5 ms (issue 20: the first delta of a step
 * committed within 5 ms of its arrival).
 */
import { type ChildProcess, spawn } from "node:child_process"
import { once } from "node:events"
import { join } from "node:path"
import { Agent } from "@mariozechner/pi-agent-core"
import { getModel } from "@mariozechner/pi-ai"
import * as Redacted from "effect/Redacted"
import * as AnthropicModelProvider from "../../src/layers/AnthropicModelProvider.js"
import { Effect, Stream } from "effect"
import { SessionEngine } from "../../src/index.js"
import { config, only } from "../config.js"
import { createSession, engineRuntime, type EngineRuntime, runTurn, scratch, storeLayer, touch, touchPi } from "../engine.js"
import { format, interleave, median, quantile, ratioRow, ratios, type Row } from "../measure.js"
import { startVendorServer } from "../vendor-server.js"

/** Starts the fake vendor in a child process (events `paceMs` apart, 0: unpaced); resolves with its URL. */
export const startVendor = async (deltas: number, paceMs = 0): Promise<{ readonly url: string; readonly child: ChildProcess }> => {
  const child = spawn(process.execPath, ["--import", "tsx", join(import.meta.dirname, "..", "vendor.ts")], {
    stdio: ["ignore", "pipe", "inherit"],
    env: { ...process.env, BENCH_VENDOR_DELTAS: String(deltas), BENCH_VENDOR_PACE_MS: String(paceMs) }
  })
  const [line] = await once(child.stdout!.setEncoding("utf8"), "data") as [string]
  return { url: line.trim(), child }
}

/** CPU microseconds of this process spent in `run`, and what it returned. */
const cpuOf = async (run: () => Promise<number>): Promise<{ readonly cpuUs: number; readonly events: number }> => {
  const before = process.cpuUsage()
  const events = await run()
  const used = process.cpuUsage(before)
  return { cpuUs: used.user + used.system, events }
}

/** Microseconds of CPU per event. */
const perEvent = (m: { readonly cpuUs: number; readonly events: number }) => m.cpuUs / m.events

const oursTurn = (url: string, store: "memory" | "jsonl") => async (): Promise<number> => {
  const provider = AnthropicModelProvider.layer({ apiKey: Redacted.make("bench"), baseURL: url, model: "bench" })
  const rt = engineRuntime(storeLayer(store === "memory" ? { kind: "memory" } : { kind: "jsonl", dataDir: scratch("sdk-turn") }), provider)
  try {
    const sessionId = await createSession(rt)
    return perEvent(await cpuOf(() => runTurn(rt, sessionId)))
  } finally {
    await rt.dispose()
  }
}

export const piTurn = (url: string) => async (): Promise<number> => {
  const model = { ...getModel("anthropic", "claude-sonnet-4-5"), baseUrl: url }
  const agent = new Agent({ initialState: { model, systemPrompt: "" }, getApiKey: () => "bench" })
  let events = 0
  agent.subscribe((event) => {
    events++
    touchPi(event)
  })
  const used = await cpuOf(async () => {
    await agent.prompt("hi")
    return events
  })
  if (agent.state.errorMessage !== undefined) throw new Error(`pi-agent-core turn failed: ${agent.state.errorMessage}`)
  return perEvent(used)
}

/** `performance.now()` when the consumer reads a turn's first `model.delta` (every event touched, as `count` does). */
const firstDeltaRead = (rt: EngineRuntime, sessionId: string): Promise<number> =>
  rt.runPromise(Effect.flatMap(SessionEngine.SessionEngine, (engine) =>
    Effect.suspend(() => {
      let first = Number.NaN
      return Stream.runForEachChunk(engine.runTurn({ sessionId, userMessage: "hi" }), (chunk) => {
        for (const event of chunk) {
          touch(event)
          if (event.type === "model.delta" && Number.isNaN(first)) first = performance.now()
        }
        return Effect.void
      }).pipe(Effect.map(() => first))
    })))

/** Row 25's samples: ms from the in-process paced vendor's write of each turn's first delta to the consumer's read of it. */
export const firstDeltaLatencies = async (turns: number, deltas: number, paceMs: number): Promise<Array<number>> => {
  let written = Number.NaN
  const vendor = await startVendorServer({ deltas, paceMs, onFirstDelta: (at) => (written = at) })
  const provider = AnthropicModelProvider.layer({ apiKey: Redacted.make("bench"), baseURL: vendor.url, model: "bench" })
  const rt = engineRuntime(storeLayer({ kind: "memory" }), provider)
  try {
    const sessionId = await createSession(rt)
    const samples: Array<number> = []
    // The first turn warms the engine, the SDK and the connection: not a sample.
    for (let i = 0; i <= turns; i++) {
      written = Number.NaN
      const read = await firstDeltaRead(rt, sessionId)
      if (Number.isNaN(written) || Number.isNaN(read)) throw new Error("row 25: a turn without its first delta")
      if (i > 0) samples.push(read - written)
    }
    return samples
  } finally {
    await rt.dispose()
    vendor.server.closeAllConnections()
    vendor.server.close()
  }
}

const us = (xs: ReadonlyArray<number>) => `${format(median(xs), "")} µs CPU/event`

export const run = async (): Promise<Array<Row>> => {
  const rows: Array<Row> = []
  if (only === undefined || only.has(10) || only.has(11)) rows.push(...await flood())
  if (only === undefined || only.has(24)) rows.push(await paced())
  if (only === undefined || only.has(25)) rows.push(await firstDelta())
  return rows
}

const flood = async (): Promise<Array<Row>> => {
  const n = config.turnDeltas
  const vendor = await startVendor(n)
  try {
    const url = vendor.url
    const [memory, pi, jsonl] = await interleave(config.sdkTurnReps, [oursTurn(url, "memory"), piTurn(url), oursTurn(url, "jsonl")])
    // Events per CPU second, ours over pi's: pi's CPU per event over ours.
    return [
      ratioRow(10, `one turn of ${n.toLocaleString("en")} deltas, one per SSE event through the Anthropic SDK from a local fake vendor writing them back to back (many per socket read), events per CPU second: memory store vs pi-agent-core 0.73.1`, ratios(pi!, memory!), {
        text: "≥ 1.5×",
        met: (m) => m >= 1.5
      }, `memory store ${us(memory!)}, pi-agent-core ${us(pi!)}, JSONL store ${us(jsonl!)}`),
      ratioRow(11, "same turn, JSONL store vs memory store, events per CPU second", ratios(memory!, jsonl!), { text: "≥ 0.7×", met: (m) => m >= 0.7 }, `JSONL store ${us(jsonl!)}, memory store ${us(memory!)}`)
    ]
  } finally {
    vendor.child.kill()
  }
}

const paced = async (): Promise<Row> => {
  const n = config.pacedDeltas
  const pace = config.vendorPaceMs
  const vendor = await startVendor(n, pace)
  try {
    const [memory, pi] = await interleave(config.pacedReps, [oursTurn(vendor.url, "memory"), piTurn(vendor.url)])
    return ratioRow(24, `one turn of ${n.toLocaleString("en")} deltas through the Anthropic SDK from a fake vendor pacing its SSE events ${pace} ms apart (about one delta per chunk), events per CPU second: memory store vs pi-agent-core 0.73.1`, ratios(pi!, memory!), {
      text: "≥ 1.5×",
      met: (m) => m >= 1.5
    }, `memory store ${us(memory!)}, pi-agent-core ${us(pi!)}`)
  } finally {
    vendor.child.kill()
  }
}

const firstDelta = async (): Promise<Row> => {
  const samples = await firstDeltaLatencies(config.firstDeltaTurns, config.firstDeltaDeltas, config.vendorPaceMs)
  const p99 = quantile(samples, 0.99)
  return {
    id: 25,
    measure: `first delta of a turn: from the paced fake vendor's write of it to the engine's consumer reading its event (Anthropic SDK, memory store, vendor in this process), p99`,
    value: p99,
    spread: `p50 ${format(median(samples), "")}, max ${format(Math.max(...samples), " ms")} (n=${samples.length})`,
    unit: "ms",
    goal: "≤ 5 ms",
    met: p99 <= 5,
    detail: `${samples.length} turns of ${config.firstDeltaDeltas} deltas ${config.vendorPaceMs} ms apart: median ${format(median(samples), " ms")}, p99 ${format(p99, " ms")}, max ${format(Math.max(...samples), " ms")}`
  }
}
