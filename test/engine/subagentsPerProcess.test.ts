/**
 * Leftovers 41, item 5: `maxSubagents` bounds one top turn's tree, counted by the engine (process)
 * that runs the turn — the whole tree runs there. Several processes or runners on one store each
 * bound their own turns: there is no count across the store (docs/embedding.md "How many"). Two
 * engines on one JSONL data dir, `maxSubagents: 2`, one turn each asking for three tasks at once:
 * each turn starts two and is refused the third, four subagents on the store in all.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as SessionEngineModule from "../../src/engine/SessionEngine.js"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import * as FakeModelProvider from "../../src/layers/FakeModelProvider.js"
import * as JsonlEventStore from "../../src/layers/JsonlEventStore.js"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as TaskTool from "../../src/layers/TaskTool.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"
import * as IdGenerator from "../../src/services/IdGenerator.js"
import { collect, tempDir } from "../helpers.js"
import { ofType } from "./subagentEngine.js"

const prompts = ["first", "second", "third"]
const model = {
  responses: [{ toolCalls: prompts.map((prompt, i) => ({ tool: "task", args: { description: prompt, prompt }, id: `t${i}` })) }, { chunks: ["top done"] }],
  subagents: Object.fromEntries(prompts.map((prompt) => [prompt, [{ chunks: [`${prompt} done`] }]]))
}

/** One "process": its own engine (and subagent count) on the shared data dir. */
const process = (dataDir: string) =>
  SessionEngineModule.layer({ maxSubagents: 2 }).pipe(
    Layer.provideMerge(JsonlEventStore.layer({ dataDir })),
    Layer.provideMerge(FakeModelProvider.layer(model)),
    // Random ids, as two processes make: sequential ones would name both sessions `sess_1`.
    Layer.provideMerge(IdGenerator.layer),
    Layer.provideMerge(TaskTool.layer.pipe(Layer.provide(WorkspaceTools.layer().pipe(Layer.provide(NodeContext.layer))))),
    Layer.provideMerge(PermissionPolicy.layer({})),
    Layer.provideMerge(NodeContext.layer)
  )

describe("maxSubagents with several processes on one store", () => {
  it.scoped("each process bounds the turns it runs: two turns at once start two subagents each, four on the store", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      const cwd = yield* tempDir
      const turnIn = Effect.gen(function*() {
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd, client: "test" })
        return yield* collect(engine.runTurn({ sessionId, userMessage: "fan out" }))
      })
      const turns = yield* Effect.all([Effect.provide(turnIn, process(dataDir)), Effect.provide(turnIn, process(dataDir))], { concurrency: 2 })
      for (const turn of turns) {
        expect(ofType(turn, "subagent.started")).toHaveLength(2)
        expect(ofType(turn, "tool.failed").map((e) => e.payload.errorCode)).toEqual(["subagents_exceeded"])
        expect(turn.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
      }
      const sessions = yield* Effect.provide(Effect.flatMap(SessionEngine, (engine) => engine.listSessions), process(dataDir))
      // Two top sessions and the four subagents' sessions.
      expect(sessions).toHaveLength(6)
    }).pipe(Effect.provide(NodeContext.layer)))
})
