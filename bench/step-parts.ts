/**
 * Row 19's step taken apart: CPU time per `read_file` step on each side, with the real tool and with
 * the same tool answering the same 4 KB text without touching the file system — so what the engine
 * (or pi-agent-core's loop) costs around a call, and what the call's file work costs, are read
 * apart. The four variants are alternated, round by round, in one process. Not part of `npm run
 * bench` (the row is); a tool for finding where a step goes:
 *
 *   node --import tsx bench/step-parts.ts [rounds=4] [turns=10] [steps=50]
 *
 * "without the file system" keeps each side's tool interface: ours is the workspace router whose
 * `prepare` answers each call as it prepared one like it once (its path resolved) and whose
 * `execute` answers the text (the engine still asks the policy, stores the events and renders the
 * result); pi's tool returns the text.
 */
import { mkdirSync, writeFileSync } from "node:fs"
import { readFile } from "node:fs/promises"
import { join } from "node:path"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { Agent, type AgentTool } from "@mariozechner/pi-agent-core"
import { Type } from "@mariozechner/pi-ai"
import { Effect, Layer, ManagedRuntime } from "effect"
import { FakeModelProvider, IdGenerator, MemoryEventStore, PermissionPolicy, SessionEngine, ToolRouter, WorkspaceTools } from "../src/index.js"
import { count, scratch, touchPi } from "./engine.js"
import { median } from "./measure.js"
import { readFileScript, scriptedModel, scriptedStreamFn } from "./piScripted.js"

const [rounds = 4, turns = 10, steps = 50] = process.argv.slice(2).map(Number)
const cwd = join(scratch("step-parts"), "work")
mkdirSync(cwd, { recursive: true })
const text = "x".repeat(4095) + "\n"
writeFileSync(join(cwd, "a.txt"), text)

const cpuMs = () => {
  const used = process.cpuUsage()
  return (used.user + used.system) / 1000
}

/** The workspace tools, or the same router answering without the file system. */
const tools = (withFiles: boolean) => {
  const real = WorkspaceTools.layer().pipe(Layer.provide(NodeContext.layer))
  if (withFiles) return real
  // The real router prepares one call once (its path resolved), and every call is answered with that.
  return Layer.effect(ToolRouter.ToolRouter, Effect.flatMap(ToolRouter.ToolRouter, (router) =>
    Effect.map(router.prepare({ toolCallId: "template", tool: "read_file", args: { path: "a.txt" } }, cwd), (template): ToolRouter.ToolRouter.Service => ({
      ...router,
      prepare: (call) => Effect.succeed({ ...template, ...call }),
      execute: () => Effect.succeed({ result: text })
    })))).pipe(Layer.provide(real), Layer.orDie)
}

/** Our CPU ms per step, the median of `turns` turns of `steps` calls each (a fresh session per turn). */
const ours = async (withFiles: boolean): Promise<number> => {
  const responses = Array.from({ length: turns }, () => [
    ...Array.from({ length: steps }, () => ({ toolCalls: [{ tool: "read_file", args: { path: "a.txt" } }] })),
    { chunks: ["done"] }
  ]).flat()
  const rt = ManagedRuntime.make(SessionEngine.layer({ maxSteps: steps + 1 }).pipe(Layer.provide(Layer.mergeAll(
    MemoryEventStore.layer,
    FakeModelProvider.layer({ responses }),
    IdGenerator.layer,
    tools(withFiles),
    PermissionPolicy.layer()
  ))))
  try {
    const engine = await rt.runPromise(SessionEngine.SessionEngine)
    const perStep: Array<number> = []
    for (let t = 0; t < turns; t++) {
      const { sessionId } = await rt.runPromise(engine.createSession({ cwd, client: "test" }))
      const start = cpuMs()
      const events = await rt.runPromise(count(engine.runTurn({ sessionId, userMessage: "read it" })))
      perStep.push((cpuMs() - start) / steps)
      // turn.started, user.message, context.built, then 5 events a call (requested, permission ×2, started, completed), the answer's delta, turn.completed
      if (events < steps * 5) throw new Error(`effect-agent's turn streamed ${events} events for ${steps} calls`)
    }
    return median(perStep)
  } finally {
    await rt.dispose()
  }
}

/** pi-agent-core's CPU ms per step, measured the same way. */
const pi = async (withFiles: boolean): Promise<number> => {
  const tool: AgentTool = {
    name: "read_file",
    label: "Read file",
    description: "Reads a file of the workspace",
    parameters: Type.Object({ path: Type.String() }),
    execute: async (_id, params) => ({
      content: [{ type: "text", text: withFiles ? await readFile(join(cwd, (params as { path: string }).path), "utf8") : text }],
      details: undefined
    })
  }
  const perStep: Array<number> = []
  for (let t = 0; t < turns; t++) {
    // Over the scripted stream function row 19 uses (each response whole, nothing done with the request).
    const agent = new Agent({
      initialState: { model: scriptedModel, systemPrompt: "", tools: [tool] },
      streamFn: scriptedStreamFn(readFileScript(steps))
    })
    agent.subscribe(touchPi)
    const start = cpuMs()
    await agent.prompt("read it")
    perStep.push((cpuMs() - start) / steps)
    const results = agent.state.messages.filter((m) => m.role === "toolResult").length
    if (results !== steps) throw new Error(`pi-agent-core ran ${results} of ${steps} tool calls`)
  }
  return median(perStep)
}

const variants = [
  ["effect-agent, read_file", () => ours(true)],
  ["effect-agent, no file system", () => ours(false)],
  ["pi-agent-core, readFile", () => pi(true)],
  ["pi-agent-core, no file system", () => pi(false)]
] as const
const results = variants.map((): Array<number> => [])
for (let round = 0; round < rounds; round++) {
  for (let i = 0; i < variants.length; i++) results[i]!.push(await variants[i]![1]())
}
const ms = (x: number) => x.toFixed(2)
console.log(`CPU ms per step, median of ${rounds} rounds (range); load average ${(await import("node:os")).loadavg().map((l) => l.toFixed(1)).join(" ")}`)
variants.forEach(([name], i) => {
  const xs = results[i]!
  console.log(`  ${name.padEnd(30)} ${ms(median(xs))} (${ms(Math.min(...xs))}–${ms(Math.max(...xs))})`)
})
const part = (withFiles: Array<number>, without: Array<number>) => median(withFiles.map((x, i) => x - without[i]!))
console.log(`  the file work, round by round: effect-agent ${ms(part(results[0]!, results[1]!))}, pi-agent-core ${ms(part(results[2]!, results[3]!))}`)
process.exit(0)
