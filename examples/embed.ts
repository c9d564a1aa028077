/**
 * Embedding effect-agent in an Effect program: build the engine from layers, run one turn as a
 * stream, answer approvals, and handle the typed errors. Run it with `npx tsx examples/embed.ts`.
 */
import { NodeContext, NodeRuntime } from "@effect/platform-node"
import { Console, Effect, Layer, Stream } from "effect"
import {
  FakeModelProvider,
  IdGenerator,
  JsonlEventStore,
  PermissionPolicy,
  PromptComposer,
  SessionEngine,
  WorkspaceTools
} from "effect-agent"

// A scripted model that lists the directory, then answers; swap in a real provider layer.
const model = FakeModelProvider.layer({
  responses: [
    { chunks: ["Let me look around."], toolCalls: [{ tool: "list_dir", args: {} }] },
    { chunks: ["Hello from effect-agent!"] }
  ]
})

// Every port is a Layer. The tools, the policy and the prompt are optional: without them the agent only talks.
export const AgentLive = SessionEngine.layer({ maxSteps: 10 }).pipe(
  Layer.provide(JsonlEventStore.layer({ dataDir: ".effect-agent" })),
  Layer.provide(model),
  Layer.provide(IdGenerator.layer),
  Layer.provide(WorkspaceTools.layer()),
  Layer.provide(PermissionPolicy.layer({
    mode: "default",
    rules: [{ name: "tests-ok", tool: "shell", command: "npm test*", decision: "allow" }]
  })),
  Layer.provide(PromptComposer.layer({ instructions: "Answer in one short paragraph." })),
  Layer.provide(NodeContext.layer)
)

export const program = Effect.gen(function*() {
  const engine = yield* SessionEngine.SessionEngine
  const session = yield* engine.createSession({ cwd: process.cwd(), client: "cli" })

  // A turn is a Stream of stored events; interrupting it cancels the turn.
  yield* engine.runTurn({ sessionId: session.sessionId, userMessage: "Say hello" }).pipe(
    Stream.runForEach((event) => {
      switch (event.type) {
        case "model.delta":
          return Effect.sync(() => process.stdout.write(event.payload.text))
        case "permission.resolved":
          // The policy paused a call: decide (here, always deny) and the turn goes on.
          return event.payload.decision === "ask"
            ? engine.resolvePermission({ sessionId: session.sessionId, toolCallId: event.payload.toolCallId, decision: "deny" })
            : Effect.void
        case "turn.completed":
          return Console.log(`\n[${event.payload.stopReason}]`)
        default:
          return Effect.void
      }
    })
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
