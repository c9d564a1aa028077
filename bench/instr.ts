/**
 * Fixed workloads for counting instructions (`bench/instr.sh`, valgrind's callgrind): a machine's
 * load moves times by tens of percent, instructions by a fraction of one. Each mode's cost is read
 * as the difference of two runs that differ only in the work counted (start-up subtracted):
 *
 *   steps <turns> <steps>     a warm engine (workspace tools, default policy, memory store) and one
 *                             session, a warm-up of 2 turns of <steps> `read_file` steps, then <turns>
 *                             more: row 19's step (compare <turns> = N with <turns> = 0)
 *   trivial <turns>           a warm engine, <turns> trivial turns after 20 warm-up turns: row 20
 *   concurrent <sessions> <deltas>   row 21's child (`bench/child.ts concurrent`), <sessions> at once
 *   spans <n>                 <n> of the engine's spans (`OwnedSpan.within` around `Effect.void`, in a
 *                             caller's span, the default tracer), one after another in one fiber
 *   turns <turns> <deltas>    <turns> turns one after another, each of a new session, of <deltas> deltas one per
 *                             chunk from `row21Response` (`ROW21_SOURCE`: row 1's stand-in; `paced`: row
 *                             24's stream without HTTP, timer-paced, so not exact); the memory store
 *   sdk <turns> <deltas>      the same, through the Anthropic SDK from `bench/vendor.ts` in a child
 *                             process (`BENCH_VENDOR_PACE_MS`: row 24 with 1) — for `node --cpu-prof`
 */
import { spawn } from "node:child_process"
import { once } from "node:events"
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Effect, Layer } from "effect"
import * as OwnedSpan from "../src/engine/OwnedSpan.js"
import { ModelProvider, SessionEngine } from "../src/index.js"
import { count, createSession, deltaTexts, engineRuntime, row21Response, runTurn, scratch, scripted, storeLayer, toolSession } from "./engine.js"

const [mode, ...args] = process.argv.slice(2)
const [a = 0, b = 0] = args.map(Number)

if (mode === "steps") {
  const [turns, steps] = [a, b]
  const cwd = join(scratch("instr-steps"), "work")
  mkdirSync(cwd, { recursive: true })
  writeFileSync(join(cwd, "a.txt"), "x".repeat(4095) + "\n")
  const turn = () => [...Array.from({ length: steps }, () => ({ toolCalls: [{ tool: "read_file", args: { path: "a.txt" } }] })), { chunks: ["done"] }]
  const { engine, rt, sessionId } = await toolSession(cwd, Array.from({ length: 2 + turns }, turn).flat(), { engine: { maxSteps: steps + 1 } })
  for (let t = 0; t < 2 + turns; t++) {
    // A fresh session a turn, as row 19 and `bench/step-parts.ts` run them: no transcript grows over turns.
    const { sessionId: id } = t === 0 ? { sessionId } : await rt.runPromise(engine.createSession({ cwd, client: "test" }))
    const events = await rt.runPromise(count(engine.runTurn({ sessionId: id, userMessage: "read it" })))
    if (events < steps * 5) throw new Error(`a turn of ${steps} calls streamed ${events} events`)
  }
  await rt.dispose()
} else if (mode === "trivial") {
  const rt = engineRuntime(storeLayer({ kind: "memory" }), scripted(["ok"], 20 + a))
  const engine = await rt.runPromise(SessionEngine.SessionEngine)
  const { sessionId } = await rt.runPromise(engine.createSession({ cwd: "/bench", client: "test" }))
  for (let t = 0; t < 20 + a; t++) await rt.runPromise(count(engine.runTurn({ sessionId, userMessage: "hi" })))
  await rt.dispose()
} else if (mode === "concurrent") {
  const chunks = deltaTexts(b).map(ModelProvider.textDelta)
  const rt = engineRuntime(storeLayer({ kind: "memory" }), Layer.succeed(ModelProvider.ModelProvider, ModelProvider.ModelProvider.of({
    capabilities: { provider: "fake", model: "bench", maxContextTokens: 128_000 },
    stream: () => row21Response(chunks, process.env.ROW21_SOURCE)
  })))
  // One session first, so `a` = 0 still builds the engine and runs the code once.
  const one = (engine: SessionEngine.SessionEngine.Service) =>
    Effect.flatMap(engine.createSession({ cwd: "/bench", client: "test" }), ({ sessionId }) => count(engine.runTurn({ sessionId, userMessage: "hi" })))
  await rt.runPromise(Effect.flatMap(SessionEngine.SessionEngine, (engine) =>
    Effect.zipRight(one(engine), Effect.forEach(Array.from({ length: a }), () => one(engine), { concurrency: "unbounded" }))))
  await rt.dispose()
} else if (mode === "spans") {
  const span = OwnedSpan.within("span", { captureStackTrace: false, attributes: { sessionId: "s1", turnId: "t1" } })
  await Effect.runPromise(Effect.withSpan(Effect.forEach(Array.from({ length: a }), () => span(Effect.void), { discard: true }), "caller"))
} else if (mode === "turns") {
  const chunks = deltaTexts(b).map(ModelProvider.textDelta)
  const rt = engineRuntime(storeLayer({ kind: "memory" }), Layer.succeed(ModelProvider.ModelProvider, ModelProvider.ModelProvider.of({
    capabilities: { provider: "fake", model: "bench", maxContextTokens: 128_000 },
    stream: () => row21Response(chunks, process.env.ROW21_SOURCE)
  })))
  // A fresh session a turn, as rows 1 and 24 run them: no transcript grows over turns.
  for (let t = 0; t < a; t++) await runTurn(rt, await createSession(rt))
  await rt.dispose()
} else if (mode === "sdk") {
  const AnthropicModelProvider = await import("../src/layers/AnthropicModelProvider.js")
  const Redacted = await import("effect/Redacted")
  // From the worktree's root (this file runs bundled from elsewhere), as `rows/sdkTurn.ts`'s `startVendor` starts it.
  const child = spawn(process.execPath, ["--import", "tsx", "bench/vendor.ts"], {
    stdio: ["ignore", "pipe", "inherit"],
    env: { ...process.env, BENCH_VENDOR_DELTAS: String(b) }
  })
  const [line] = await once(child.stdout!.setEncoding("utf8"), "data") as [string]
  const vendor = { url: line.trim(), child }
  try {
    const rt = engineRuntime(storeLayer({ kind: "memory" }), AnthropicModelProvider.layer({ apiKey: Redacted.make("bench"), baseURL: vendor.url, model: "bench" }))
    for (let t = 0; t < a; t++) await runTurn(rt, await createSession(rt))
    await rt.dispose()
  } finally {
    vendor.child.kill()
  }
} else {
  throw new Error(`unknown mode ${mode}`)
}
