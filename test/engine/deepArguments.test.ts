/**
 * A hostile model's tool arguments nested 100k deep (issue 18, one level below the deep HTTP body):
 * the turn goes on — the call fails `invalid_arguments`, the model is told, the log stays well formed
 * and every store can write it — instead of dying on a stack overflow.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Layer from "effect/Layer"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"
import * as Json from "../../src/domain/Json.js"
import { collect, expectWellFormedLog, jsonlEngine, memoryEngine, typesOf } from "../helpers.js"

const nested = (depth: number, leaf: unknown, array = false): Json.Json => {
  let value = leaf
  for (let i = 0; i < depth; i++) value = array ? [value] : { a: value }
  return value as Json.Json
}

const deepCalls = [
  { toolCalls: [{ tool: "read_file", args: { path: nested(100_000, "x") } }] },
  { toolCalls: [{ tool: "read_file", args: { path: "a.txt", extra: nested(100_000, 1, true) } }] },
  { chunks: ["I will stop."] }
]

describe("tool arguments nested deeper than any tool takes", () => {
  // The workspace's own tools and policy, as the CLI runs them.
  const tools = Layer.mergeAll(WorkspaceTools.layer(), PermissionPolicy.layer()).pipe(Layer.provideMerge(NodeContext.layer))
  const engines = [
    ["memory", () => memoryEngine({ responses: deepCalls }).pipe(Layer.provide(tools))],
    ["JSONL", () => jsonlEngine(mkdtempSync(join(tmpdir(), "effect-agent-deep-")), { responses: deepCalls }).pipe(Layer.provide(tools))]
  ] as const
  for (const [name, engine] of engines) {
    it.effect(`fail the call as invalid_arguments and the turn goes on (${name} store)`, () =>
      Effect.gen(function*() {
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd: "/tmp", client: "test" })
        const events = yield* collect(engine.runTurn({ sessionId, userMessage: "go" }))
        expect(typesOf(events).filter((t) => t === "tool.failed")).toHaveLength(2)
        for (const failed of events.filter((e) => e.type === "tool.failed")) expect(failed.payload).toMatchObject({ errorCode: "invalid_arguments" })
        expect(events.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
        const stored = yield* collect(engine.replaySession({ sessionId }))
        expectWellFormedLog(stored)
        expect(stored).toEqual([expect.anything(), ...events])
      }).pipe(Effect.provide(engine())))
  }

  it("Json.isJson answers for any depth without overflowing", () => {
    expect(Json.isJson(nested(200_000, "x"))).toBe(true)
    expect(Json.isJson(nested(200_000, undefined))).toBe(false)
    expect(Json.isJson(nested(200_000, 1, true))).toBe(true)
    expect(Json.isJson(nested(200_000, Number.NaN, true))).toBe(false)
  })
})
