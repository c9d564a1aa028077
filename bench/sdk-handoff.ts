/**
 * Row 24's turn by layer (perf61sdk): the paced fake vendor of `bench/vendor.ts` in a child process
 * (`BENCH_VENDOR_PACE_MS`, default 1), and in turn, interleaved, for <reps> rounds of a turn of <deltas>:
 *
 * - `sdk`: the Anthropic SDK's `messages.create` stream iterated with no work — the floor under
 *   every side (the HTTP read, the SSE parse, a wake-up of the process per socket read);
 * - `ours`: the engine's turn through `AnthropicModelProvider` (memory store, the commit window of
 *   `COMMIT_WINDOW_MS` or the default), with how many chunks the provider's stream handed the engine's
 *   reader (each a wake-up of it) and how many commits (appends) the turn made;
 * - `pi`: pi-agent-core's turn over pi-ai's Anthropic provider, as row 24 runs it.
 *
 * CPU of this process per event (`process.cpuUsage`), medians. Not a row; a probe.
 *
 *   node --import tsx bench/sdk-handoff.ts [reps=5] [deltas=2000]
 */
import Anthropic from "@anthropic-ai/sdk"
import { Effect, Layer, ManagedRuntime, Stream } from "effect"
import * as Redacted from "effect/Redacted"
import * as AnthropicModelProvider from "../src/layers/AnthropicModelProvider.js"
import { type AgentEvent, EventStore, IdGenerator, MemoryEventStore, ModelProvider, SessionEngine } from "../src/index.js"
import { count } from "./engine.js"
import { median } from "./measure.js"
import { piTurn, startVendor } from "./rows/sdkTurn.js"

const reps = Number(process.argv[2] ?? 5)
const deltas = Number(process.argv[3] ?? 2000)
const window = process.env.COMMIT_WINDOW_MS

const cpu = async (run: () => Promise<number>) => {
  const before = process.cpuUsage()
  const events = await run()
  const used = process.cpuUsage(before)
  return (used.user + used.system) / events
}

const sdkOnly = (url: string) => async () => {
  const client = new Anthropic({ apiKey: "bench", baseURL: url, maxRetries: 0 })
  return cpu(async () => {
    let events = 0
    const stream = await client.messages.create({ model: "bench", max_tokens: 10, stream: true, messages: [{ role: "user", content: "hi" }] })
    for await (const _ of stream) events++
    return events
  })
}

const ours = (url: string, counts: { chunks: Array<number>; appends: Array<number> }) => async () => {
  let chunks = 0
  let appends = 0
  const provider = Layer.effect(ModelProvider.ModelProvider, Effect.map(ModelProvider.ModelProvider, (p) => ({
    ...p,
    stream: (request: ModelProvider.ModelRequest) =>
      Stream.mapChunks(p.stream(request), (chunk) => {
        chunks++
        return chunk
      })
  }))).pipe(Layer.provide(AnthropicModelProvider.layer({ apiKey: Redacted.make("bench"), baseURL: url, model: "bench" })))
  const store = Layer.effect(EventStore.EventStore, Effect.map(EventStore.EventStore, (s) => ({
    ...s,
    appendAll: (events: ReadonlyArray<AgentEvent.AgentEvent>) => Effect.zipRight(Effect.sync(() => appends++), s.appendAll(events))
  }))).pipe(Layer.provide(MemoryEventStore.layer))
  const rt = ManagedRuntime.make(SessionEngine.layer(window === undefined ? {} : { commitWindow: Number(window) }).pipe(
    Layer.provide(Layer.mergeAll(store, provider, IdGenerator.layer))
  ))
  try {
    const engine = await rt.runPromise(SessionEngine.SessionEngine)
    const { sessionId } = await rt.runPromise(engine.createSession({ cwd: "/bench", client: "test" }))
    const used = await cpu(() => rt.runPromise(count(engine.runTurn({ sessionId, userMessage: "hi" }))))
    counts.chunks.push(chunks)
    counts.appends.push(appends)
    return used
  } finally {
    await rt.dispose()
  }
}

const vendor = await startVendor(deltas, Number(process.env.BENCH_VENDOR_PACE_MS ?? 1))
try {
  const counts = { chunks: [] as Array<number>, appends: [] as Array<number> }
  const sides = { sdk: sdkOnly(vendor.url), ours: ours(vendor.url, counts), pi: piTurn(vendor.url) }
  const results: Record<string, Array<number>> = { sdk: [], ours: [], pi: [] }
  // A warm-up round, not counted.
  for (const run of Object.values(sides)) await run()
  counts.chunks.length = 0
  counts.appends.length = 0
  for (let r = 0; r < reps; r++) for (const [name, run] of Object.entries(sides)) results[name]!.push(await run())
  const us = (xs: Array<number>) => `${median(xs).toFixed(0)} µs (${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)})`
  console.log(`${deltas} deltas paced, ${reps} rounds, window ${window ?? "default"}: CPU per event — sdk alone ${us(results.sdk!)}, ours ${us(results.ours!)}, pi ${us(results.pi!)}; ours: ${median(counts.chunks)} provider chunks, ${median(counts.appends)} appends a turn (medians)`)
} finally {
  vendor.child.kill()
}
