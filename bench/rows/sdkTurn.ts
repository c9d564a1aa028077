/**
 * Rows 10–11: one turn of N text deltas as users run it — the official Anthropic SDK reading a local
 * fake-vendor HTTP stream (`bench/vendor.ts`, its own process), one delta per SSE event, so the
 * adapter hands the engine one delta per chunk. Contenders, interleaved: the engine
 * (AnthropicModelProvider) with the memory store, pi-agent-core's Agent over pi-ai's Anthropic
 * provider (the same SDK, the same server), and the engine with the JSONL store. Both sides consume
 * every event one by one (`touch`); the measure is CPU time of this process per event
 * (`process.cpuUsage`, user + system), which the server's work does not enter.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { once } from "node:events"
import { join } from "node:path"
import { Agent } from "@mariozechner/pi-agent-core"
import { getModel } from "@mariozechner/pi-ai"
import * as Redacted from "effect/Redacted"
import * as AnthropicModelProvider from "../../src/layers/AnthropicModelProvider.js"
import { config } from "../config.js"
import { createSession, engineRuntime, runTurn, scratch, storeLayer, touchPi } from "../engine.js"
import { format, interleave, median, ratioRow, ratios, type Row } from "../measure.js"

/** Starts the fake vendor in a child process; resolves with its URL. */
export const startVendor = async (deltas: number): Promise<{ readonly url: string; readonly child: ChildProcess }> => {
  const child = spawn(process.execPath, ["--import", "tsx", join(import.meta.dirname, "..", "vendor.ts")], {
    stdio: ["ignore", "pipe", "inherit"],
    env: { ...process.env, BENCH_VENDOR_DELTAS: String(deltas) }
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

const piTurn = (url: string) => async (): Promise<number> => {
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

export const run = async (): Promise<Array<Row>> => {
  const n = config.turnDeltas
  const vendor = await startVendor(n)
  try {
    const url = vendor.url
    const [memory, pi, jsonl] = await interleave(config.sdkTurnReps, [oursTurn(url, "memory"), piTurn(url), oursTurn(url, "jsonl")])
    const us = (xs: ReadonlyArray<number>) => `${format(median(xs), "")} µs CPU/event`
    // Events per CPU second, ours over pi's: pi's CPU per event over ours.
    return [
      ratioRow(10, `one turn of ${n.toLocaleString("en")} deltas, one per SSE event through the Anthropic SDK from a local fake vendor, events per CPU second: memory store vs pi-agent-core 0.73.1`, ratios(pi!, memory!), {
        text: "≥ 1.5×",
        met: (m) => m >= 1.5
      }, `memory store ${us(memory!)}, pi-agent-core ${us(pi!)}, JSONL store ${us(jsonl!)}`),
      ratioRow(11, "same turn, JSONL store vs memory store, events per CPU second", ratios(memory!, jsonl!), { text: "≥ 0.7×", met: (m) => m >= 0.7 }, `JSONL store ${us(jsonl!)}, memory store ${us(memory!)}`)
    ]
  } finally {
    vendor.child.kill()
  }
}
