/**
 * Rows 1–2: one turn streaming N scripted text deltas, **one delta per chunk on both sides** (as an SDK
 * stream hands them over), in events per second as seen by the consumer, which does the same work
 * per event on both sides (`touch`). Contenders, interleaved: the engine with the memory store over
 * `perDeltaModel` (row 21's model: the deltas as an effect `Stream`, `rechunk(1)`), pi-agent-core's
 * Agent over `perDeltaStreamFn` (one `text_delta` a microtask, nothing else — pi-ai's faux provider
 * copies the message per delta, work our model does not do), and the engine with the JSONL store.
 * Setup (engine, session, agent) is outside the timed part; the timed part is the whole turn.
 *
 * Until bench58 our side used the scripted `FakeModelProvider`, which hands a response over in
 * chunks of up to 4,096 deltas (a 10,000-delta turn was 3 commits), against pi one delta a microtask.
 */
import { Agent } from "@mariozechner/pi-agent-core"
import { Layer } from "effect"
import { ModelProvider } from "../../src/index.js"
import { config } from "../config.js"
import { createSession, deltaTexts, engineRuntime, row21Response, runTurn, scratch, storeLayer, touchPi } from "../engine.js"
import { format, interleave, median, ratioRow, ratios, type Row } from "../measure.js"
import { perDeltaStreamFn, scriptedModel } from "../piScripted.js"

/** Our model for rows 1–2: every request answered with `chunks`, one delta per chunk, then the finish. */
export const perDeltaModel = (chunks: ReadonlyArray<string>): Layer.Layer<ModelProvider.ModelProvider> => {
  const deltas = chunks.map(ModelProvider.textDelta)
  return Layer.succeed(ModelProvider.ModelProvider, ModelProvider.ModelProvider.of({
    capabilities: { provider: "fake", model: "bench", maxContextTokens: 128_000 },
    stream: () => row21Response(deltas, undefined)
  }))
}

const oursTurn = (store: "memory" | "jsonl", chunks: ReadonlyArray<string>) => async (): Promise<number> => {
  const rt = engineRuntime(
    storeLayer(store === "memory" ? { kind: "memory" } : { kind: "jsonl", dataDir: scratch("turn") }),
    perDeltaModel(chunks)
  )
  try {
    const sessionId = await createSession(rt)
    const start = performance.now()
    const events = await runTurn(rt, sessionId)
    return events / ((performance.now() - start) / 1000)
  } finally {
    await rt.dispose()
  }
}

const piTurn = (chunks: ReadonlyArray<string>) => async (): Promise<number> => {
  const agent = new Agent({ initialState: { model: scriptedModel, systemPrompt: "" }, streamFn: perDeltaStreamFn(chunks) })
  let events = 0
  agent.subscribe((event) => {
    events++
    touchPi(event)
  })
  const start = performance.now()
  await agent.prompt("hi")
  const rate = events / ((performance.now() - start) / 1000)
  if (agent.state.errorMessage !== undefined) throw new Error(`pi-agent-core turn failed: ${agent.state.errorMessage}`)
  return rate
}

export const run = async (): Promise<Array<Row>> => {
  const n = config.turnDeltas
  const chunks = deltaTexts(n)
  const [memory, pi, jsonl] = await interleave(config.turnReps, [oursTurn("memory", chunks), piTurn(chunks), oursTurn("jsonl", chunks)])
  const rate = (xs: ReadonlyArray<number>) => `${format(median(xs) / 1000, "")}k events/s`
  return [
    ratioRow(1, `one turn of ${n.toLocaleString("en")} scripted deltas, one per chunk on both sides, events/s: memory store vs pi-agent-core 0.73.1`, ratios(memory!, pi!), {
      text: "≥ 1.5×",
      met: (m) => m >= 1.5
    }, `memory store ${rate(memory!)}, pi-agent-core ${rate(pi!)}`),
    ratioRow(2, "same turn, JSONL store vs memory store", ratios(jsonl!, memory!), { text: "≥ 0.7×", met: (m) => m >= 0.7 }, `JSONL store ${rate(jsonl!)}, memory store ${rate(memory!)}`)
  ]
}
