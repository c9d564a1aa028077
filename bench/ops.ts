/**
 * Counts the Effect operations (every op of every fiber, by a supervisor with op supervision) and the
 * fibers a warm engine spends on a trivial turn, and per `read_file` step of a turn of N steps — the
 * fixed structure of a turn, which a CPU profile spreads over the runtime's functions. Deterministic,
 * unlike times on a shared machine; not a test.
 *
 *   node --import tsx bench/ops.ts
 */
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { Effect, Layer, ManagedRuntime, RuntimeFlags, RuntimeFlagsPatch, Supervisor } from "effect"
import { FakeModelProvider, IdGenerator, MemoryEventStore, PermissionPolicy, SessionEngine, WorkspaceTools } from "../src/index.js"
import { count, scratch } from "./engine.js"

class Counter extends Supervisor.AbstractSupervisor<void> {
  ops = 0
  fibers = 0
  readonly value = Effect.void
  override onStart() {
    this.fibers++
  }
  override onEffect() {
    this.ops++
  }
}

/** Runs `effect` counting its ops and fibers (and those of every fiber it forks). */
const counted = async <A, E>(rt: ManagedRuntime.ManagedRuntime<SessionEngine.SessionEngine, never>, effect: Effect.Effect<A, E, SessionEngine.SessionEngine>) => {
  const counter = new Counter()
  await rt.runPromise(Effect.withRuntimeFlagsPatch(Effect.supervised(effect, counter), RuntimeFlagsPatch.enable(RuntimeFlags.OpSupervision)))
  return counter
}

const measure = async (label: string, units: number, responses: ReadonlyArray<FakeModelProvider.ScriptedResponse>, cwd: string, turns: number) => {
  const rt = ManagedRuntime.make(SessionEngine.layer().pipe(Layer.provide(Layer.mergeAll(
    MemoryEventStore.layer,
    FakeModelProvider.layer({ responses: [{ chunks: ["warm"] }, ...responses] }),
    IdGenerator.layer,
    WorkspaceTools.layer().pipe(Layer.provide(NodeContext.layer)),
    PermissionPolicy.layer()
  ))))
  try {
    const engine = await rt.runPromise(SessionEngine.SessionEngine)
    const { sessionId } = await rt.runPromise(engine.createSession({ cwd, client: "test" }))
    await rt.runPromise(count(engine.runTurn({ sessionId, userMessage: "warm up" })))
    const turn = count(engine.runTurn({ sessionId, userMessage: "go" }))
    const counter = await counted(rt, Effect.repeatN(turn, turns - 1))
    console.log(`${label}: ${(counter.ops / units).toFixed(0)} Effect ops, ${(counter.fibers / units).toFixed(2)} fibers`)
  } finally {
    await rt.dispose()
  }
}

const main = async () => {
  const cwd = join(scratch("ops"), "work")
  mkdirSync(cwd, { recursive: true })
  writeFileSync(join(cwd, "a.txt"), "x".repeat(4095) + "\n")
  const turns = 20
  await measure("a trivial turn", turns, Array.from({ length: turns }, () => ({ chunks: ["Hi."] })), cwd, turns)
  const steps = 20
  await measure("a read_file step", steps, [
    ...Array.from({ length: steps }, () => ({ toolCalls: [{ tool: "read_file", args: { path: "a.txt" } }] })),
    { chunks: ["done"] }
  ], cwd, 1)
}

main().then(() => process.exit(0), (error) => {
  console.error(error)
  process.exit(1)
})
