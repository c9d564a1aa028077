/**
 * A model names the tool it calls, any name at all. The workspace tools were looked up in a plain
 * object, so a name it inherits (`constructor`, `toString`, `__proto__`, …) was taken for a tool:
 * preparing the call threw (a defect, not the `unknown_tool` failure the model is told of).
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"

describe("the workspace tools' names", () => {
  for (const name of ["constructor", "toString", "__proto__", "hasOwnProperty", "valueOf"]) {
    it.effect(`a call of "${name}" fails unknown_tool`, () =>
      Effect.gen(function*() {
        const tools = yield* WorkspaceTools.make()
        const failure = yield* Effect.flip(tools.prepare({ toolCallId: "c1", tool: name, args: { path: "a.txt" } }, "/tmp"))
        expect(failure.errorCode).toBe("unknown_tool")
        expect(failure.message).toContain("Available: read_file, write_file")
      }).pipe(Effect.provide(NodeContext.layer)))
  }
})
