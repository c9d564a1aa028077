/**
 * "Always" through the engine: a remembered approval of a read-only command covers later reads of
 * that program, and never an invocation that could run something else.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as FileSystem from "@effect/platform/FileSystem"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"
import { collect, engineLayer, expectWellFormedLog, tempDir } from "../helpers.js"

/** Runs a turn, answering each ask with `answer`. */
const runTurn = (sessionId: string, userMessage: string, answer: "always" | "deny") =>
  Effect.flatMap(SessionEngine, (engine) =>
    collect(engine.runTurn({ sessionId, userMessage }).pipe(
      Stream.tap((event) =>
        event.type === "permission.resolved" && event.payload.decision === "ask"
          ? engine.resolvePermission({ sessionId, toolCallId: event.payload.toolCallId, decision: answer === "always" ? "allow" : "deny", remember: answer === "always" })
          : Effect.void
      )
    )))

const decisions = (events: ReadonlyArray<AgentEvent>) =>
  events.filter((e) => e.type === "permission.resolved").map((e) => [(e.payload as { decision: string }).decision, (e.payload as { actor: string }).actor])

describe("\"always\" on a read-only command", () => {
  it.scoped("[a]lways on `git status`, then `git -c alias.x=\"!touch x\" x` asks and, denied, never runs", () =>
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const cwd = yield* tempDir
      const marker = `${cwd}/x`
      yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd, client: "test" })
        const first = yield* runTurn(sessionId, "status", "always")
        expect(decisions(first)).toEqual([["ask", "policy"], ["allow", "user"]])
        const second = yield* runTurn(sessionId, "log", "deny")
        expect(decisions(second)).toEqual([["allow", "policy"]])
        const third = yield* runTurn(sessionId, "alias", "deny")
        expect(decisions(third)).toEqual([["ask", "policy"], ["deny", "user"]])
        expect(yield* fs.exists(marker)).toBe(false)
        expectWellFormedLog(yield* collect(engine.replaySession({ sessionId })))
      }).pipe(Effect.provide(engineLayer(MemoryEventStore.layer, {
        responses: [
          { toolCalls: [{ tool: "shell", args: { command: "git status" } }] },
          { chunks: ["ok"] },
          { toolCalls: [{ tool: "shell", args: { command: "git log -1" } }] },
          { chunks: ["ok"] },
          { toolCalls: [{ tool: "shell", args: { command: `git -c alias.x="!touch ${marker}" x` } }] },
          { chunks: ["ok"] }
        ]
      }).pipe(
        Layer.provideMerge(WorkspaceTools.layer().pipe(Layer.provide(NodeContext.layer))),
        Layer.provideMerge(PermissionPolicy.layer({}))
      )))
    }).pipe(Effect.provide(NodeContext.layer)))
})
