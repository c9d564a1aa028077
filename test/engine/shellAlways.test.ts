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
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
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

  it.scoped("[a]lways on `cat a.txt`, then `cat notes.md` and `cat docs/secret.txt` (links out) ask and, denied, print nothing; so does `grep -R SECRET .` after [a]lways on grep", () =>
    Effect.gen(function*() {
      const root = NodeFs.realpathSync(yield* tempDir)
      const cwd = NodePath.join(root, "ws")
      const out = NodePath.join(root, "out")
      NodeFs.mkdirSync(NodePath.join(out, "docs"), { recursive: true })
      NodeFs.mkdirSync(cwd)
      NodeFs.writeFileSync(NodePath.join(cwd, "a.txt"), "inside\n")
      NodeFs.writeFileSync(NodePath.join(out, "secret.txt"), "SECRET-OUTSIDE\n")
      NodeFs.writeFileSync(NodePath.join(out, "docs", "secret.txt"), "SECRET-OUTSIDE\n")
      NodeFs.symlinkSync(NodePath.join(out, "secret.txt"), NodePath.join(cwd, "notes.md"))
      NodeFs.symlinkSync(NodePath.join(out, "docs"), NodePath.join(cwd, "docs"))
      yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd, client: "test" })
        expect(decisions(yield* runTurn(sessionId, "a", "always"))).toEqual([["ask", "policy"], ["allow", "user"]])
        for (const message of ["notes", "docs"]) {
          const events = yield* runTurn(sessionId, message, "deny")
          expect(decisions(events), message).toEqual([["ask", "policy"], ["deny", "user"]])
          // The prompt names where the link leads.
          const requested = events.find((e) => e.type === "permission.requested")!.payload as { outsidePaths?: ReadonlyArray<string> }
          expect(requested.outsidePaths?.[0]).toContain(out)
        }
        expect(decisions(yield* runTurn(sessionId, "grep", "always"))).toEqual([["ask", "policy"], ["allow", "user"]])
        expect(decisions(yield* runTurn(sessionId, "grep -R", "deny"))).toEqual([["ask", "policy"], ["deny", "user"]])
        const log = yield* collect(engine.replaySession({ sessionId }))
        expectWellFormedLog(log)
        expect(JSON.stringify(log)).not.toContain("SECRET-OUTSIDE")
      }).pipe(Effect.provide(engineLayer(MemoryEventStore.layer, {
        responses: [
          { toolCalls: [{ tool: "shell", args: { command: "cat a.txt" } }] },
          { chunks: ["ok"] },
          { toolCalls: [{ tool: "shell", args: { command: "cat notes.md" } }] },
          { chunks: ["ok"] },
          { toolCalls: [{ tool: "shell", args: { command: "cat docs/secret.txt" } }] },
          { chunks: ["ok"] },
          { toolCalls: [{ tool: "shell", args: { command: "grep inside a.txt" } }] },
          { chunks: ["ok"] },
          { toolCalls: [{ tool: "shell", args: { command: "grep -R SECRET ." } }] },
          { chunks: ["ok"] }
        ]
      }).pipe(
        Layer.provideMerge(WorkspaceTools.layer().pipe(Layer.provide(NodeContext.layer))),
        Layer.provideMerge(PermissionPolicy.layer({}))
      )))
    }).pipe(Effect.provide(NodeContext.layer)))
})
