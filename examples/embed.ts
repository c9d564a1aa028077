/**
 * Embedding effect-agent in an Effect program: build the engine from layers, run one turn as a
 * stream, and handle the typed errors. Run it with `npx tsx examples/embed.ts`.
 */
import { NodeContext, NodeRuntime } from "@effect/platform-node"
import { Console, Effect, Layer, Stream } from "effect"
import { FakeModelProvider, IdGenerator, JsonlEventStore, SessionEngine } from "effect-agent"

// The ports, each a Layer: a JSONL store, a scripted model, random ids.
const AgentLive = SessionEngine.layer.pipe(
  Layer.provide(JsonlEventStore.layer({ dataDir: ".effect-agent" })),
  Layer.provide(FakeModelProvider.layer({ responses: [{ chunks: ["Hello", " from", " effect-agent!"] }] })),
  Layer.provide(IdGenerator.layer),
  Layer.provide(NodeContext.layer)
)

export const program = Effect.gen(function*() {
  const engine = yield* SessionEngine.SessionEngine
  const session = yield* engine.createSession({ cwd: process.cwd(), client: "cli" })

  // A turn is a Stream of stored events; interrupting it cancels the turn.
  yield* engine.runTurn({ sessionId: session.sessionId, userMessage: "Say hello" }).pipe(
    Stream.runForEach((event) =>
      event.type === "model.delta"
        ? Effect.sync(() => process.stdout.write(event.payload.text))
        : event.type === "turn.completed"
        ? Console.log(`\n[${event.payload.stopReason}]`)
        : Effect.void
    )
  )
  return session.sessionId
}).pipe(
  // Provider failures never get here (they end the turn with stopReason "error"); these do:
  Effect.catchTags({
    EventStoreFailure: (e) => Console.error(`storage problem: ${e.message}`),
    SessionNotFound: (e) => Console.error(`no such session: ${e.sessionId}`)
  })
)

if (import.meta.url === `file://${process.argv[1]}`) {
  program.pipe(Effect.provide(AgentLive), NodeRuntime.runMain)
}
