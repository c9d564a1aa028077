import { writeFileSync } from "node:fs"
import { join } from "node:path"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as Toolkit from "../../src/layers/Toolkit.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"
import { ToolFailure, ToolRouter } from "../../src/services/ToolRouter.js"
import { collect, engineLayer, expectWellFormedLog, tempDir } from "../helpers.js"

class Forecasts extends Context.Tag("test/Forecasts")<Forecasts, { readonly of: (city: string) => string }>() {}

const weather = Toolkit.tool({
  name: "weather",
  description: "Today's weather in a city",
  parameters: Schema.Struct({ city: Schema.String.pipe(Schema.minLength(1)) }),
  risk: "read",
  run: ({ city }) =>
    Effect.flatMap(Forecasts, (forecasts) =>
      city === "Atlantis" ? Effect.fail(new ToolFailure({ errorCode: "no_forecast", message: "no forecast under the sea" })) : Effect.succeed(forecasts.of(city)))
})

const calls = [
  { tool: "weather", args: { city: "Oslo" } },
  { tool: "weather", args: { town: "Oslo" } },
  { tool: "weather", args: { city: "Atlantis" } },
  { tool: "read_file", args: { path: "notes.txt" } },
  { tool: "teleport", args: {} }
]

describe("Toolkit", () => {
  it.scoped("one tool of your own beside the workspace tools: validated, decided, run with its services", () =>
    Effect.gen(function*() {
      const cwd = yield* tempDir
      writeFileSync(join(cwd, "notes.txt"), "milk")
      const tools = Toolkit.extend([weather]).pipe(
        Layer.provide(WorkspaceTools.layer()),
        Layer.provide(Layer.succeed(Forecasts, { of: (city) => `sunny in ${city}` }))
      )
      const layer = engineLayer(MemoryEventStore.layer, { responses: [{ toolCalls: calls }, { chunks: ["done"] }] }).pipe(
        Layer.provide(Layer.mergeAll(tools, PermissionPolicy.layer())),
        Layer.provide(NodeContext.layer)
      )
      const events = yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        const session = yield* engine.createSession({ cwd, client: "test" })
        yield* collect(engine.runTurn({ sessionId: session.sessionId, userMessage: "weather?" }))
        return yield* collect(engine.replaySession({ sessionId: session.sessionId }))
      }).pipe(Effect.provide(layer))
      expectWellFormedLog(events)
      const ends = events.flatMap((e) => (e.type === "tool.completed" || e.type === "tool.failed" ? [e.payload] : []))
      expect(ends).toEqual(expect.arrayContaining([
        { toolCallId: "call_1", result: "sunny in Oslo" },
        expect.objectContaining({ toolCallId: "call_2", errorCode: "invalid_arguments" }),
        { toolCallId: "call_3", errorCode: "no_forecast", message: "no forecast under the sea" },
        expect.objectContaining({ toolCallId: "call_4", result: "milk" }),
        expect.objectContaining({ toolCallId: "call_5", errorCode: "unknown_tool" })
      ]))
      // A read tool is allowed by the default mode; the invalid call never reached the policy.
      expect(events.filter((e) => e.type === "permission.resolved").map((e) => e.payload.toolCallId)).toEqual(["call_1", "call_3", "call_4"])
    }).pipe(Effect.provide(NodeContext.layer)))

  it.effect("the model sees every tool, and a tool of yours replaces a workspace tool of the same name", () =>
    Effect.gen(function*() {
      const mine = Toolkit.tool({ name: "list_dir", description: "mine", parameters: Schema.Struct({}), run: () => Effect.succeed("x") })
      const router = yield* Toolkit.make([weather, mine], yield* WorkspaceTools.make())
      const names = router.definitions.map((d) => d.name)
      expect(names.filter((n) => n === "list_dir")).toHaveLength(1)
      expect(router.definitions.find((d) => d.name === "list_dir")?.description).toBe("mine")
      expect(router.definitions.find((d) => d.name === "weather")?.inputSchema).toMatchObject({ type: "object", required: ["city"] })
      expect(names).toEqual(expect.arrayContaining(["read_file", "shell", "weather"]))
    }).pipe(Effect.provide(NodeContext.layer), Effect.provide(Layer.succeed(Forecasts, { of: () => "" }))))

  // A type-level check first: with no tools, the layer's requirement was inferred as `unknown`
  // (an empty tuple's element type is never, and inferring from never gives unknown), which no
  // context satisfies; this did not type-check before (npm test's tsc step, or tsc --noEmit).
  it.effect("a toolkit of no tools needs nothing: alone, it offers none; extending, it offers the router's below", () =>
    Effect.gen(function*() {
      const alone = yield* Effect.provide(ToolRouter, Toolkit.layer([]))
      expect(alone.definitions).toEqual([])
      const below = Toolkit.layer([Toolkit.tool({ name: "below", description: "A tool below", parameters: Schema.Struct({}), run: () => Effect.succeed("") })])
      const extended = yield* Effect.provide(ToolRouter, Toolkit.extend([]).pipe(Layer.provide(below)))
      expect(extended.definitions.map((d) => d.name)).toEqual(["below"])
    }))
})
