/**
 * Rows 19–20 (issue 20): what a turn costs beyond its text.
 *
 * Row 19: a turn of N sequential tool steps, each one `read_file` of a real 4 KB file, then a short
 * answer. effect-agent: the engine (memory store) with the workspace tools and the default policy
 * (reads inside the cwd are allowed), the scripted model asking one call per step. pi-agent-core:
 * its `Agent` over a scripted stream function (`piScripted.ts`: each response handed over whole, as
 * our fake model hands over its own) asking the same calls of a `readFile` tool that reads the
 * same file with `fs.promises.readFile`. The result is our time per step over pi's (lower is better),
 * goal ≤ 1×; CPU time per step for both is in the detail, and pi-agent-core's over pi-ai's faux
 * provider, which the row used until row19b: that model serializes the whole context each request,
 * work our fake model does not do (docs/benchmarks.md, "Rows 19–20, row19b").
 *
 * Row 20: a trivial turn (one short answer, nothing else) in a warm engine and session: the median
 * wall time per turn, goal ≤ 2 ms of engine overhead; pi-agent-core's time for the same turn is in
 * the detail. Both sides consume every event with the same per-event work (`touch`).
 *
 * Row 21: 1,000 concurrent sessions × 100 deltas, each side in a fresh child process
 * (`bench/child.ts concurrent` / `pi-concurrent`): our wall time over pi-agent-core's, goal ≤ 2×,
 * and our peak RSS, goal ≤ 250 MB (both sides' in the detail). Our deltas come one per chunk, as
 * an SDK stream hands them over.
 */
import { mkdirSync, writeFileSync } from "node:fs"
import { readFile } from "node:fs/promises"
import { join } from "node:path"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { Agent, type AgentTool } from "@mariozechner/pi-agent-core"
import { fauxAssistantMessage, registerFauxProvider, Type } from "@mariozechner/pi-ai"
import { Chunk, Effect, Layer, ManagedRuntime, Stream } from "effect"
import { EventStore, FakeModelProvider, IdGenerator, MemoryEventStore, PermissionPolicy, SessionEngine, WorkspaceTools } from "../../src/index.js"
import { child } from "../children.js"
import { config } from "../config.js"
import { count, scratch, touchPi } from "../engine.js"
import { format, interleave, median, type Row, ratioRow, ratios } from "../measure.js"
import { readFileScript, scriptedModel, scriptedStreamFn } from "../piScripted.js"

/** Drops the warm-up runs' entries from a side array a contender pushes to: keeps its last `reps`. */
export const measuredOnly = (xs: Array<number>, reps: number): Array<number> => {
  xs.splice(0, Math.max(0, xs.length - reps))
  return xs
}

/** A workspace with the file both sides read. */
const workspace = () => {
  const cwd = join(scratch("steps"), "work")
  mkdirSync(cwd, { recursive: true })
  writeFileSync(join(cwd, "a.txt"), "x".repeat(4095) + "\n")
  return cwd
}

/** Wall and CPU time of an async run, in ms. */
const timed = async (run: () => Promise<void>) => {
  const cpu = process.cpuUsage()
  const start = performance.now()
  await run()
  const used = process.cpuUsage(cpu)
  return { wall: performance.now() - start, cpu: (used.user + used.system) / 1000 }
}

/** Our turn of `steps` read_file steps then an answer; answers ms per step (CPU ms per step in `cpu`). */
const oursSteps = (cwd: string, steps: number, cpu: Array<number>) => async (): Promise<number> => {
  const responses = [
    ...Array.from({ length: steps }, () => ({ toolCalls: [{ tool: "read_file", args: { path: "a.txt" } }] })),
    { chunks: ["done"] }
  ]
  // A turn of `steps` calls makes `steps + 1` model requests: above the engine's default limit (25)
  // when the row runs 50 steps, which would end the turn at the 25th request (`max_steps`).
  const store = MemoryEventStore.layer
  const rt = ManagedRuntime.make(Layer.merge(SessionEngine.layer({ maxSteps: steps + 1 }).pipe(Layer.provide(Layer.mergeAll(
    store,
    FakeModelProvider.layer({ responses }),
    IdGenerator.layer,
    WorkspaceTools.layer().pipe(Layer.provide(NodeContext.layer)),
    PermissionPolicy.layer()
  ))), store))
  try {
    // The engine and the session are made before the clock starts, as pi's Agent is.
    const engine = await rt.runPromise(SessionEngine.SessionEngine)
    const { sessionId } = await rt.runPromise(engine.createSession({ cwd, client: "test" }))
    const time = await timed(() => rt.runPromise(Effect.asVoid(count(engine.runTurn({ sessionId, userMessage: "read it" })))))
    // Every call ran and the turn ended with the answer, as checked on pi's side.
    const events = await rt.runPromise(Effect.flatMap(EventStore.EventStore, (store) => Stream.runCollect(store.read(sessionId))))
    const completed = Chunk.filter(events, (e) => e.type === "tool.completed").length
    const last = Chunk.unsafeLast(events)
    if (completed !== steps || last.type !== "turn.completed" || last.payload.stopReason !== "final") {
      throw new Error(`effect-agent ran ${completed} of ${steps} tool calls and ended with ${JSON.stringify(last.payload)}`)
    }
    cpu.push(time.cpu / steps)
    return time.wall / steps
  } finally {
    await rt.dispose()
  }
}

const piReadFile = (cwd: string): AgentTool => ({
  name: "read_file",
  label: "Read file",
  description: "Reads a file of the workspace",
  parameters: Type.Object({ path: Type.String() }),
  execute: async (_id, params) => {
    const { path } = params as { path: string }
    const text = await readFile(join(cwd, path), "utf8")
    return { content: [{ type: "text", text }], details: undefined }
  }
})

/**
 * pi-agent-core's turn of the same steps; answers ms per step (CPU ms per step in `cpu`). Over the
 * scripted stream function, or with `faux` over pi-ai's faux provider (what the row used before row19b).
 */
const piSteps = (cwd: string, steps: number, cpu: Array<number>, faux = false) => async (): Promise<number> => {
  const provider = faux ? registerFauxProvider({ tokenSize: { min: 1, max: 1 } }) : undefined
  try {
    provider?.setResponses(readFileScript(steps))
    const tools = [piReadFile(cwd)]
    const agent = provider === undefined
      ? new Agent({ initialState: { model: scriptedModel, systemPrompt: "", tools }, streamFn: scriptedStreamFn(readFileScript(steps)) })
      : new Agent({ initialState: { model: provider.getModel(), systemPrompt: "", tools } })
    agent.subscribe(touchPi)
    const time = await timed(() => agent.prompt("read it"))
    if (agent.state.errorMessage !== undefined) throw new Error(`pi-agent-core turn failed: ${agent.state.errorMessage}`)
    const results = agent.state.messages.filter((m) => m.role === "toolResult").length
    if (results !== steps) throw new Error(`pi-agent-core ran ${results} of ${steps} tool calls`)
    cpu.push(time.cpu / steps)
    return time.wall / steps
  } finally {
    provider?.unregister()
  }
}

/** `turns` trivial turns in one warm engine and session; answers the median ms per turn. */
const oursTrivial = (turns: number) => async (): Promise<number> => {
  const rt = ManagedRuntime.make(SessionEngine.layer().pipe(Layer.provide(Layer.mergeAll(
    MemoryEventStore.layer,
    FakeModelProvider.layer({ responses: Array.from({ length: turns + 1 }, () => ({ chunks: ["Hi."] })) }),
    IdGenerator.layer
  ))))
  try {
    const engine = await rt.runPromise(SessionEngine.SessionEngine)
    const { sessionId } = await rt.runPromise(engine.createSession({ cwd: "/bench", client: "test" }))
    await rt.runPromise(count(engine.runTurn({ sessionId, userMessage: "warm up" })))
    const times: Array<number> = []
    for (let i = 0; i < turns; i++) {
      const start = performance.now()
      await rt.runPromise(count(engine.runTurn({ sessionId, userMessage: "hi" })))
      times.push(performance.now() - start)
    }
    return median(times)
  } finally {
    await rt.dispose()
  }
}

const piTrivial = (turns: number) => async (): Promise<number> => {
  const faux = registerFauxProvider({ tokenSize: { min: 1, max: 1 } })
  try {
    faux.setResponses(Array.from({ length: turns + 1 }, () => fauxAssistantMessage("Hi.")))
    const agent = new Agent({ initialState: { model: faux.getModel(), systemPrompt: "" } })
    agent.subscribe(touchPi)
    await agent.prompt("warm up")
    const times: Array<number> = []
    for (let i = 0; i < turns; i++) {
      const start = performance.now()
      await agent.prompt("hi")
      times.push(performance.now() - start)
    }
    if (agent.state.errorMessage !== undefined) throw new Error(`pi-agent-core turn failed: ${agent.state.errorMessage}`)
    return median(times)
  } finally {
    faux.unregister()
  }
}

export const run = async (): Promise<Array<Row>> => {
  const cwd = workspace()
  const steps = config.toolSteps
  const oursCpu: Array<number> = []
  const oursRss: Array<number> = []
  const piRss: Array<number> = []
  const piCpu: Array<number> = []
  const fauxCpu: Array<number> = []
  const [ours, pi, faux] = await interleave(config.toolStepReps, [oursSteps(cwd, steps, oursCpu), piSteps(cwd, steps, piCpu), piSteps(cwd, steps, fauxCpu, true)])
  const turns = config.trivialTurns
  const [trivial, piTurn] = await interleave(config.toolStepReps, [oursTrivial(turns), piTrivial(turns)])
  const ms = (xs: ReadonlyArray<number>) => format(median(xs), " ms")
  const sessions = String(config.concurrentSessions)
  const deltas = String(config.concurrentDeltas)
  const concurrent = await interleave(config.concurrentReps, [
    () => child("concurrent", sessions, deltas).then((r) => { oursRss.push(r.maxRss); return r.ms }),
    () => child("pi-concurrent", sessions, deltas).then((r) => { piRss.push(r.maxRss); return r.ms })
  ])
  // `interleave` runs each contender once as a warm-up before its samples: the side arrays the
  // contenders push to hold that run first; only the last `reps` are samples.
  measuredOnly(oursCpu, config.toolStepReps)
  measuredOnly(piCpu, config.toolStepReps)
  measuredOnly(fauxCpu, config.toolStepReps)
  measuredOnly(oursRss, config.concurrentReps)
  measuredOnly(piRss, config.concurrentReps)
  const mb = (xs: ReadonlyArray<number>) => format(median(xs) / 1048576, " MB")
  return [
    ratioRow(19, `a turn of ${steps} sequential read_file steps (a real 4 KB file), time per step: effect-agent vs pi-agent-core 0.73.1`, ratios(ours!, pi!), {
      text: "≤ 1.0×",
      met: (m) => m <= 1.0
    }, `effect-agent ${ms(ours!)} per step (CPU ${ms(oursCpu)}), pi-agent-core ${ms(pi!)} per step (CPU ${ms(piCpu)}); over pi-ai's faux provider ${ms(faux!)} per step (CPU ${ms(fauxCpu)}), ${format(median(ratios(ours!, faux!)), "×")}`),
    {
      id: 20,
      measure: "a trivial turn (one short answer) in a warm engine and session, memory store: median time per turn",
      value: median(trivial!),
      spread: `${format(Math.min(...trivial!), "")}–${format(Math.max(...trivial!), " ms")} (n=${trivial!.length} runs of ${turns})`,
      unit: "ms",
      goal: "≤ 2 ms",
      met: median(trivial!) <= 2,
      detail: `pi-agent-core ${ms(piTurn!)} per turn`
    },
    ratioRow(21, `${config.concurrentSessions.toLocaleString("en")} concurrent sessions × ${config.concurrentDeltas} deltas (one per chunk), wall time: effect-agent vs pi-agent-core`, ratios(concurrent[0]!, concurrent[1]!), {
      text: "≤ 2×",
      met: (m) => m <= 2
    }, `effect-agent ${ms(concurrent[0]!)}, peak RSS ${mb(oursRss)}; pi-agent-core ${ms(concurrent[1]!)}, peak RSS ${mb(piRss)}`),
    {
      id: 21,
      measure: `the same, effect-agent's peak RSS`,
      value: median(oursRss) / 1048576,
      spread: `${format(Math.min(...oursRss) / 1048576, "")}–${format(Math.max(...oursRss) / 1048576, " MB")} (n=${oursRss.length})`,
      unit: " MB",
      goal: "≤ 250 MB",
      met: median(oursRss) <= 250 * 1048576,
      detail: `pi-agent-core ${mb(piRss)}`
    }
  ]
}
