/**
 * Rows 1–2: one turn streaming N scripted text deltas, in events per second as seen by the consumer.
 * Contenders, interleaved: the engine with the memory store, pi-agent-core's Agent over pi-ai's faux
 * provider (token size 1 = 4 characters, the same deltas), and the engine with the JSONL store.
 * Setup (engine, session, agent) is outside the timed part; the timed part is the whole turn.
 */
import { Agent } from "@mariozechner/pi-agent-core"
import { fauxAssistantMessage, registerFauxProvider } from "@mariozechner/pi-ai"
import { config } from "../config.js"
import { createSession, deltaTexts, engineRuntime, runTurn, scratch, scripted, storeLayer, touchPi } from "../engine.js"
import { format, interleave, median, ratioRow, ratios, type Row } from "../measure.js"

const oursTurn = (store: "memory" | "jsonl", chunks: ReadonlyArray<string>) => async (): Promise<number> => {
  const rt = engineRuntime(
    storeLayer(store === "memory" ? { kind: "memory" } : { kind: "jsonl", dataDir: scratch("turn") }),
    scripted(chunks, 1)
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
  const faux = registerFauxProvider({ tokenSize: { min: 1, max: 1 } })
  try {
    faux.setResponses([fauxAssistantMessage(chunks.join(""))])
    const agent = new Agent({ initialState: { model: faux.getModel(), systemPrompt: "" } })
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
  } finally {
    faux.unregister()
  }
}

export const run = async (): Promise<Array<Row>> => {
  const n = config.turnDeltas
  const chunks = deltaTexts(n)
  const [memory, pi, jsonl] = await interleave(config.turnReps, [oursTurn("memory", chunks), piTurn(chunks), oursTurn("jsonl", chunks)])
  const rate = (xs: ReadonlyArray<number>) => `${format(median(xs) / 1000, "")}k events/s`
  return [
    ratioRow(1, `one turn of ${n.toLocaleString("en")} scripted deltas, events/s: memory store vs pi-agent-core 0.73.1`, ratios(memory!, pi!), {
      text: "≥ 1.5×",
      met: (m) => m >= 1.5
    }, `memory store ${rate(memory!)}, pi-agent-core ${rate(pi!)}`),
    ratioRow(2, "same turn, JSONL store vs memory store", ratios(jsonl!, memory!), { text: "≥ 0.5×", met: (m) => m >= 0.5 }, `JSONL store ${rate(jsonl!)}, memory store ${rate(memory!)}`)
  ]
}
