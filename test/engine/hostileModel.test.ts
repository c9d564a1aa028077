/**
 * A model as untrusted input, through the engine with the scripted model, the real workspace tools
 * and the JSONL store: tool call ids it repeats, reuses or fills with control and bidi characters;
 * calls to tools it was not offered; arguments of the wrong type, with `__proto__` keys, NUL and
 * lone surrogates; the same call over and over; responses with nothing in them; calls that end
 * with `stop`. Each ends typed in the log, the log stays one JSON event a line, and the turn ends sane.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import type { AgentEvent, EventOfType } from "../../src/domain/AgentEvent.js"
import { type Options, SessionEngine } from "../../src/engine/SessionEngine.js"
import type * as FakeModelProvider from "../../src/layers/FakeModelProvider.js"
import * as JsonlEventStore from "../../src/layers/JsonlEventStore.js"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"
import { vendorsTake } from "../../src/engine/ToolCallIds.js"
import type { Json } from "../../src/domain/Json.js"
import { collect, engineLayer, expectWellFormedLog, tempDir } from "../helpers.js"

const ofType = <T extends AgentEvent["type"]>(events: ReadonlyArray<AgentEvent>, type: T) =>
  events.filter((e): e is EventOfType<T> => e.type === type)

/** One turn of `model` in a fresh session of a fresh JSONL store: its events, and the session file's lines, each parsed. */
const hostileTurn = (model: FakeModelProvider.Options, options: Options = {}) =>
  Effect.gen(function*() {
    const dir = NodeFs.realpathSync(yield* tempDir)
    const cwd = NodePath.join(dir, "ws")
    NodeFs.mkdirSync(cwd)
    NodeFs.writeFileSync(NodePath.join(cwd, "a.txt"), "a\n")
    const dataDir = NodePath.join(dir, "data")
    return yield* Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd, client: "test" })
      const events = yield* collect(engine.runTurn({ sessionId, userMessage: "go" }))
      expectWellFormedLog(yield* collect(engine.replaySession({ sessionId })))
      const file = NodeFs.readFileSync(NodePath.join(dataDir, "sessions", `${sessionId}.jsonl`), "utf8")
      // One event a line (after the file's header line): no raw line break, every line a JSON object.
      const lines = file.split("\n").filter((line) => line !== "").map((line) => JSON.parse(line) as { sequence?: number })
      expect(lines.slice(1).map((l) => l.sequence)).toEqual(Array.from({ length: events.at(-1)!.sequence }, (_, i) => i + 1))
      return { events, lines }
    }).pipe(Effect.provide(engineLayer(JsonlEventStore.layer({ dataDir }), model, options).pipe(
      Layer.provideMerge(WorkspaceTools.layer().pipe(Layer.provide(NodeContext.layer))),
      Layer.provideMerge(PermissionPolicy.layer({}))
    )))
  }).pipe(Effect.provide(NodeContext.layer))

const list = (id: string, args: Json = { path: "." }) => ({ tool: "list_dir", args, id })

describe("a hostile model", () => {
  it.scoped("ids repeated in a step, reused from an earlier step, with control and bidi characters, 10 KB long: every call stored under its own id a vendor takes", () =>
    Effect.gen(function*() {
      const { events } = yield* hostileTurn({
        responses: [
          { toolCalls: [list("dup"), list("dup"), list("x\u202e\u0000\u001b[2J\n"), list("k".repeat(10_240))] },
          { toolCalls: [list("dup"), list("")] },
          { chunks: ["done"] }
        ]
      })
      const ids = ofType(events, "model.tool_call_requested").map((e) => e.payload.toolCallId)
      expect(ids).toHaveLength(6)
      expect(new Set(ids).size).toBe(6)
      expect(ids.every(vendorsTake)).toBe(true)
      expect(ofType(events, "tool.completed")).toHaveLength(6)
      expect(events.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
    }))

  it.scoped("a tool it was not offered: unknown_tool, with no permission events; the turn goes on", () =>
    Effect.gen(function*() {
      const { events } = yield* hostileTurn({
        responses: [{ toolCalls: [{ tool: "task", args: { description: "d", prompt: "p" }, id: "t" }, { tool: "rm_rf", args: {}, id: "r" }, { tool: "__proto__", args: {}, id: "p" }] }, { chunks: ["ok"] }]
      })
      expect(ofType(events, "tool.failed").map((e) => e.payload.errorCode)).toEqual(["unknown_tool", "unknown_tool", "unknown_tool"])
      expect(ofType(events, "permission.requested")).toHaveLength(0)
      expect(events.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
    }))

  it.scoped("arguments of the wrong type, __proto__ and constructor keys, NUL, lone surrogates: each call fails typed, nothing is polluted, every line parses", () =>
    Effect.gen(function*() {
      const polluted = JSON.parse("{\"__proto__\": {\"polluted\": true}, \"constructor\": {\"prototype\": {\"polluted\": true}}, \"path\": \".\"}")
      const { events } = yield* hostileTurn({
        responses: [{
          toolCalls: [
            list("n", { path: 5 }),
            list("p", polluted),
            { tool: "read_file", args: { path: "a.txt\u0000/etc/passwd" }, id: "z" },
            { tool: "read_file", args: { path: "\ud800a.txt" }, id: "s" },
            { tool: "grep", args: { pattern: "\udfff" }, id: "w" }
          ]
        }, { chunks: ["ok"] }]
      })
      expect(({} as Record<string, unknown>).polluted).toBeUndefined()
      const failed = new Map(ofType(events, "tool.failed").map((e) => [e.payload.toolCallId, e.payload] as const))
      expect(failed.get("n")?.errorCode).toBe("invalid_arguments")
      expect(failed.get("p")?.errorCode).toBe("invalid_arguments")
      // A path the system would cut at its NUL, or open under another name (a lone surrogate becomes
      // U+FFFD): refused before any permission is asked, never an "outside cwd" question to the user.
      expect(failed.get("z")).toEqual({ toolCallId: "z", errorCode: "invalid_arguments", message: "path cannot name a file: it contains a NUL byte" })
      expect(failed.get("s")).toEqual({ toolCallId: "s", errorCode: "invalid_arguments", message: "path cannot name a file: it contains a lone surrogate (half of a UTF-16 pair)" })
      expect(ofType(events, "permission.requested").map((e) => e.payload.toolCallId)).toEqual(["w"])
      expect(ofType(events, "tool.completed").map((e) => e.payload.toolCallId)).toEqual(["w"])
      expect(events.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
    }))

  it.scoped("the same call over and over: the turn stops at maxSteps, typed max_steps", () =>
    Effect.gen(function*() {
      const { events } = yield* hostileTurn({ responses: Array.from({ length: 1_000 }, () => ({ toolCalls: [list("same")] })) }, { maxSteps: 25 })
      expect(ofType(events, "model.tool_call_requested")).toHaveLength(25)
      expect(events.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "error", errorCode: "max_steps" } })
    }))

  it.scoped("a response with nothing at all ends the turn final, with no text and one request; calls with a stop finish reason still run", () =>
    Effect.gen(function*() {
      const empty = yield* hostileTurn({ responses: Array.from({ length: 25 }, () => ({})) })
      expect(empty.events.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
      expect(ofType(empty.events, "model.delta")).toHaveLength(0)
      const stopped = yield* hostileTurn({ responses: [{ toolCalls: [list("a")], finishReason: "stop" }, { chunks: ["ok"] }] })
      expect(ofType(stopped.events, "tool.completed")).toHaveLength(1)
      expect(stopped.events.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
    }))
})
