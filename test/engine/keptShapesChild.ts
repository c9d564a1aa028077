/**
 * The child of keptShapes.integration.test.ts: turns of one delta per chunk on the memory store, a
 * full GC before each, as an embedder between two `runPromise` turns (or a process gone idle) has
 * one. `fresh`: an engine a turn (bench row 1); `same`: one engine and session for all. Run under
 * `--expose-gc --trace-deopt --no-concurrent-recompilation`, the parent reads V8's trace.
 */
import { Effect, Layer, ManagedRuntime, Stream } from "effect"
import { IdGenerator, MemoryEventStore, ModelProvider, SessionEngine } from "../../src/index.js"

const [mode = "same", turns = "4", deltas = "2000"] = process.argv.slice(2)
const chunks = Array.from({ length: Number(deltas) }, (_, i) => ModelProvider.textDelta(`d${i}`))
const model = Layer.succeed(ModelProvider.ModelProvider, ModelProvider.ModelProvider.of({
  capabilities: { provider: "fake", model: "kept", maxContextTokens: 1_000_000 },
  stream: () => Stream.concat(Stream.fromIterable(chunks).pipe(Stream.rechunk(1)), Stream.make(ModelProvider.finish("stop")))
}))
const engine = () => ManagedRuntime.make(SessionEngine.layer().pipe(Layer.provide(Layer.mergeAll(MemoryEventStore.layer, model, IdGenerator.layer))))
const session = (rt: ReturnType<typeof engine>) =>
  rt.runPromise(Effect.flatMap(SessionEngine.SessionEngine, (e) => e.createSession({ cwd: "/kept", client: "test" }))).then((s) => s.sessionId)
const turn = (rt: ReturnType<typeof engine>, sessionId: string) =>
  rt.runPromise(Effect.flatMap(SessionEngine.SessionEngine, (e) => Stream.runDrain(e.runTurn({ sessionId, userMessage: "hi" }))))

let kept: { rt: ReturnType<typeof engine>; sessionId: string } | undefined
for (let i = 0; i < Number(turns); i++) {
  globalThis.gc!()
  console.log(`[kept] turn ${i}`)
  if (kept === undefined || mode === "fresh") {
    const rt = engine()
    kept = { rt, sessionId: await session(rt) }
  }
  await turn(kept.rt, kept.sessionId)
  if (mode === "fresh") await kept.rt.dispose()
}
console.log("[kept] done")
