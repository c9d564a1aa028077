/**
 * `afterToolResult` ("may rewrite a tool's result before it is stored and sent to
 * the model": redaction) on a `task` call's result — live, and when the call is resumed after a restart.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import type * as FakeModelProvider from "../../src/layers/FakeModelProvider.js"
import * as JsonlEventStore from "../../src/layers/JsonlEventStore.js"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as TaskTool from "../../src/layers/TaskTool.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"
import { AgentHooks } from "../../src/services/AgentHooks.js"
import { collect, engineLayer, engineProcess, tempDir } from "../helpers.js"

const redacting = Layer.succeed(AgentHooks, {
  afterToolResult: (_call, output) => Effect.succeed({ ...output, result: "[redacted]" })
})

const engineOn = (dataDir: string, model: FakeModelProvider.Options) =>
  engineLayer(JsonlEventStore.layer({ dataDir }).pipe(Layer.provide(NodeContext.layer)), model).pipe(
    Layer.provideMerge(TaskTool.layer.pipe(Layer.provide(WorkspaceTools.layer().pipe(Layer.provide(NodeContext.layer))))),
    Layer.provideMerge(PermissionPolicy.layer({})),
    Layer.provideMerge(redacting),
    Layer.provideMerge(NodeContext.layer)
  )

const task = { tool: "task", args: { description: "write the notes", prompt: "child: write" }, id: "t1" }

describe("afterToolResult and a task's result", () => {
  it.scoped("live: the task's result is redacted", () =>
    Effect.gen(function*() {
      const root = NodeFs.realpathSync(yield* tempDir)
      const p = yield* engineProcess(engineOn(NodePath.join(root, "d"), {
        responses: [{ toolCalls: [task] }, { chunks: ["ok"] }],
        subagents: { "child: write": [{ chunks: ["SECRET=hunter2"] }] }
      }))
      const events = yield* p.provide(Effect.gen(function*() {
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd: root, client: "test" })
        return yield* collect(engine.runTurn({ sessionId, userMessage: "go" }))
      }))
      yield* p.stop
      const done = events.find((e) => e.type === "tool.completed" && e.payload.toolCallId === "t1")
      expect(JSON.stringify(done?.payload)).not.toContain("hunter2")
    }).pipe(Effect.provide(NodeContext.layer)), { timeout: 30_000 })

  it.scoped("resumed after a restart: the task's result goes through afterToolResult too (review61a found it skipped)", () =>
    Effect.gen(function*() {
      const root = NodeFs.realpathSync(yield* tempDir)
      const cwd = NodePath.join(root, "ws")
      NodeFs.mkdirSync(cwd)
      const dataDir = NodePath.join(root, "d")
      const first = yield* engineProcess(engineOn(dataDir, {
        responses: [{ toolCalls: [task] }],
        subagents: { "child: write": [{ toolCalls: [{ tool: "write_file", args: { path: "n.txt", content: "x" }, id: "w1" }] }] }
      }))
      const sessionId = yield* first.provide(Effect.gen(function*() {
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd, client: "test" })
        const reached = yield* Deferred.make<AgentEvent>()
        yield* engine.runTurn({ sessionId, userMessage: "go" }).pipe(
          Stream.tap((e) => e.type === "subagent.asked" ? Deferred.succeed(reached, e) : Effect.void),
          Stream.runDrain,
          Effect.forkDaemon
        )
        yield* Deferred.await(reached)
        return sessionId
      }))
      yield* first.stop
      const second = yield* engineProcess(engineOn(dataDir, {
        responses: [{ chunks: ["ok"] }],
        subagents: { "child: write": [{ chunks: ["SECRET=hunter2"] }] }
      }))
      const events = yield* second.provide(Effect.gen(function*() {
        const engine = yield* SessionEngine
        yield* engine.resolvePermission({ sessionId, toolCallId: "w1", decision: "allow" })
        yield* Stream.runDrain(engine.resumeTurn({ sessionId }))
        return yield* collect(engine.replaySession({ sessionId }))
      }))
      yield* second.stop
      const done = events.find((e) => e.type === "tool.completed" && e.payload.toolCallId === "t1")
      expect(JSON.stringify(done?.payload)).not.toContain("hunter2")
    }).pipe(Effect.provide(NodeContext.layer)), { timeout: 30_000 })
})
