/**
 * Row 10's turn taken apart by layer: CPU time per event of this process for the Anthropic SDK's
 * `messages.create` iterated with no work, for our `AnthropicModelProvider`'s stream drained, and
 * for the whole turn (engine, memory store) — each reading the same local fake vendor
 * (`bench/vendor.ts`, its own process, unpaced: many events per socket read), one delta per SSE
 * event. So what our SDK costs, what our adapter adds and what the engine adds are read apart.
 * pi-agent-core does not pay the same SDK cost: pi-ai bundles its own `@anthropic-ai/sdk` (0.91.1),
 * uses it to send the request and parses the SSE itself. The three are
 * alternated, round by round, in one process. Not part of `npm run bench` (the row is); a tool for
 * finding where an event goes:
 *
 *   node --import tsx bench/sdk-parts.ts [rounds=4] [turns=5] [deltas=10000]
 */
import Anthropic from "@anthropic-ai/sdk"
import { Effect, Stream } from "effect"
import * as Redacted from "effect/Redacted"
import * as AnthropicModelProvider from "../src/layers/AnthropicModelProvider.js"
import { createSession, engineRuntime, runTurn, storeLayer } from "./engine.js"
import { format, median } from "./measure.js"
import { startVendor } from "./rows/sdkTurn.js"

const [rounds = 4, turns = 5, deltas = 10_000] = process.argv.slice(2).map(Number)
const vendor = await startVendor(deltas)
const options = { apiKey: Redacted.make("bench"), baseURL: vendor.url, model: "bench" }

/** CPU microseconds of this process per event of `run`. */
const perEvent = async (run: () => Promise<number>): Promise<number> => {
  global.gc?.()
  const before = process.cpuUsage()
  const events = await run()
  const used = process.cpuUsage(before)
  return (used.user + used.system) / events
}

const sdk = async (): Promise<number> => {
  const client = new Anthropic({ apiKey: "bench", baseURL: vendor.url, maxRetries: 0, timeout: 60 * 60 * 1000 })
  const controller = new AbortController()
  return perEvent(async () => {
    let n = 0
    const events = await client.messages.create({ model: "bench", max_tokens: 10, stream: true, messages: [{ role: "user", content: "hi" }] }, { signal: controller.signal })
    for await (const event of events) if (event.type === "content_block_delta") n++
    return n
  })
}

const provider = async (): Promise<number> => {
  const model = await Effect.runPromise(AnthropicModelProvider.make(options))
  return perEvent(() =>
    Effect.runPromise(Effect.suspend(() => {
      let n = 0
      return Stream.runForEachChunk(model.stream({ system: "", messages: [{ role: "user", content: "hi" }], tools: [] }), (chunk) => {
        for (const piece of chunk) if (piece._tag === "TextDelta") n++
        return Effect.void
      }).pipe(Effect.map(() => n))
    })))
}

const turn = async (): Promise<number> => {
  const rt = engineRuntime(storeLayer({ kind: "memory" }), AnthropicModelProvider.layer(options))
  try {
    const sessionId = await createSession(rt)
    return await perEvent(() => runTurn(rt, sessionId))
  } finally {
    await rt.dispose()
  }
}

const parts = { "the SDK iterated": sdk, "our provider's stream": provider, "our whole turn": turn }
const results = new Map<string, Array<number>>(Object.keys(parts).map((name) => [name, []]))
try {
  for (let round = 0; round < rounds; round++) {
    for (const [name, run] of Object.entries(parts)) {
      for (let i = 0; i < turns; i++) results.get(name)!.push(await run())
    }
  }
  for (const [name, xs] of results) {
    const sorted = [...xs].sort((a, b) => a - b)
    console.log(`${name}: ${format(median(xs), " µs CPU/event")} (${format(sorted[0]!, "")}–${format(sorted.at(-1)!, " µs")}, n=${xs.length})`)
  }
} finally {
  vendor.child.kill()
}
