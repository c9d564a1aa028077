/**
 * The child of keptShapes.integration.test.ts: turns of one delta per chunk on the memory store, a
 * full GC before each, as an embedder between two `runPromise` turns (or a process gone idle) has
 * one. `fresh`: an engine a turn (bench row 1); `same`: one engine and session for all; `steps`: an
 * engine a turn (bench row 19), each turn `deltas` `read_file` steps of a 4 KB file with the
 * workspace tools and the default policy, then an answer. Run under
 * `--expose-gc --trace-deopt --no-concurrent-recompilation`, the parent reads V8's trace.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { Effect, Layer, ManagedRuntime, Stream } from "effect"
import { FakeModelProvider, IdGenerator, MemoryEventStore, ModelProvider, PermissionPolicy, SessionEngine, WorkspaceTools } from "../../src/index.js"

const [mode = "same", turns = "4", deltas = "2000"] = process.argv.slice(2)
const chunks = Array.from({ length: Number(deltas) }, (_, i) => ModelProvider.textDelta(`d${i}`))
const model = Layer.succeed(ModelProvider.ModelProvider, ModelProvider.ModelProvider.of({
  capabilities: { provider: "fake", model: "kept", maxContextTokens: 1_000_000 },
  stream: () => Stream.concat(Stream.fromIterable(chunks).pipe(Stream.rechunk(1)), Stream.make(ModelProvider.finish("stop")))
}))
const cwd = mode === "steps" ? join(mkdtempSync(join(tmpdir(), "kept-")), "work") : "/kept"
if (mode === "steps") {
  mkdirSync(cwd)
  writeFileSync(join(cwd, "a.txt"), "x".repeat(4095) + "\n")
}
const steps = mode === "steps"
  ? Layer.mergeAll(
    FakeModelProvider.layer({
      responses: [...Array.from({ length: Number(deltas) }, () => ({ toolCalls: [{ tool: "read_file", args: { path: "a.txt" } }] })), { chunks: ["done"] }]
    }),
    WorkspaceTools.layer().pipe(Layer.provide(NodeContext.layer)),
    PermissionPolicy.layer()
  )
  : undefined
const engine = () =>
  ManagedRuntime.make(
    steps === undefined
      ? SessionEngine.layer().pipe(Layer.provide(Layer.mergeAll(MemoryEventStore.layer, model, IdGenerator.layer)))
      : SessionEngine.layer({ maxSteps: Number(deltas) + 1 }).pipe(Layer.provide(Layer.mergeAll(MemoryEventStore.layer, steps, IdGenerator.layer)))
  )
const session = (rt: ReturnType<typeof engine>) =>
  rt.runPromise(Effect.flatMap(SessionEngine.SessionEngine, (e) => e.createSession({ cwd, client: "test" }))).then((s) => s.sessionId)
const turn = (rt: ReturnType<typeof engine>, sessionId: string) =>
  rt.runPromise(Effect.flatMap(SessionEngine.SessionEngine, (e) => Stream.runDrain(e.runTurn({ sessionId, userMessage: "hi" }))))

let kept: { rt: ReturnType<typeof engine>; sessionId: string } | undefined
for (let i = 0; i < Number(turns); i++) {
  globalThis.gc!()
  console.log(`[kept] turn ${i}`)
  if (kept === undefined || mode !== "same") {
    const rt = engine()
    kept = { rt, sessionId: await session(rt) }
  }
  await turn(kept.rt, kept.sessionId)
  if (mode !== "same") await kept.rt.dispose()
}
console.log("[kept] done")
