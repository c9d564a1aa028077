/**
 * a write the user is asked about (shown inside cwd), the process stopped while it
 * waits; the folder on its path swapped for a link leading outside before the next process resumes.
 * The call is prepared again on resume: it now leads outside cwd, which its question did not say, so it
 * fails `path_changed` (review61a found it written outside).
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
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"
import { collect, engineLayer, engineProcess, tempDir } from "../helpers.js"

const engineOn = (dataDir: string, model: FakeModelProvider.Options) =>
  engineLayer(JsonlEventStore.layer({ dataDir }).pipe(Layer.provide(NodeContext.layer)), model).pipe(
    Layer.provideMerge(WorkspaceTools.layer().pipe(Layer.provide(NodeContext.layer))),
    Layer.provideMerge(PermissionPolicy.layer({})),
    Layer.provideMerge(NodeContext.layer)
  )

/** A write asked about, the process stopped; `sub` becomes a link leading outside; the next process resumes. */
const swapAcrossRestart = (answered: boolean) =>
  Effect.gen(function*() {
    const root = NodeFs.realpathSync(yield* tempDir)
    const cwd = NodePath.join(root, "ws")
    const outside = NodePath.join(root, "outside")
    NodeFs.mkdirSync(NodePath.join(cwd, "sub"), { recursive: true })
    NodeFs.mkdirSync(outside)
    const dataDir = NodePath.join(root, "data")
    const model: FakeModelProvider.Options = {
      responses: [{ toolCalls: [{ tool: "write_file", args: { path: "sub/x.txt", content: "planted\n" }, id: "w1" }] }, { chunks: ["done"] }]
    }
    const first = yield* engineProcess(engineOn(dataDir, model))
    const { asked, sessionId } = yield* first.provide(Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd, client: "test" })
      const reached = yield* Deferred.make<AgentEvent>()
      yield* engine.runTurn({ sessionId, userMessage: "write" }).pipe(
        Stream.tap((e) => e.type === "permission.resolved" && e.payload.decision === "ask" ? Deferred.succeed(reached, e) : Effect.void),
        Stream.runDrain,
        Effect.forkDaemon
      )
      yield* Deferred.await(reached)
      const log = yield* collect(engine.replaySession({ sessionId }))
      return { asked: log.find((e) => e.type === "permission.requested")!.payload, sessionId }
    }))
    expect(asked).not.toHaveProperty("outsidePaths")
    yield* first.stop
    // Between the two processes: `sub` becomes a link leading outside cwd.
    NodeFs.rmSync(NodePath.join(cwd, "sub"), { recursive: true })
    NodeFs.symlinkSync(outside, NodePath.join(cwd, "sub"))

    const second = yield* engineProcess(engineOn(dataDir, { responses: [{ chunks: ["done"] }] }))
    const events = yield* second.provide(Effect.gen(function*() {
      const engine = yield* SessionEngine
      // Answered in the new process before the resume, or still waiting: the resumed turn does not
      // ask a question that is no longer the call's.
      if (answered) yield* engine.resolvePermission({ sessionId, toolCallId: "w1", decision: "allow" })
      return yield* collect(engine.resumeTurn({ sessionId }))
    }))
    yield* second.stop
    expect(events.filter((e) => e.type === "tool.failed").map((e) => e.payload.errorCode)).toEqual(["path_changed"])
    expect(events.some((e) => e.type === "tool.started")).toBe(false)
    expect(NodeFs.existsSync(NodePath.join(outside, "x.txt"))).toBe(false)
  }).pipe(Effect.provide(NodeContext.layer))

describe("resume after a restart re-prepares an answered call", () => {
  it.scoped("a folder swapped for a link between the ask and the resume: the approved write fails path_changed, nothing outside", () => swapAcrossRestart(true), { timeout: 30_000 })
  it.scoped("a folder swapped for a link between the ask and the resume: not yet answered: the resumed call fails path_changed before it is asked again, nothing outside", () => swapAcrossRestart(false), { timeout: 30_000 })
  it.scoped("control, no restart: the folder swapped while the question waits — path_changed, nothing outside", () =>
    Effect.gen(function*() {
      const root = NodeFs.realpathSync(yield* tempDir)
      const cwd = NodePath.join(root, "ws")
      const outside = NodePath.join(root, "outside")
      NodeFs.mkdirSync(NodePath.join(cwd, "sub"), { recursive: true })
      NodeFs.mkdirSync(outside)
      const p = yield* engineProcess(engineOn(NodePath.join(root, "data"), {
        responses: [{ toolCalls: [{ tool: "write_file", args: { path: "sub/x.txt", content: "planted\n" }, id: "w1" }] }, { chunks: ["done"] }]
      }))
      const events = yield* p.provide(Effect.gen(function*() {
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd, client: "test" })
        return yield* collect(engine.runTurn({ sessionId, userMessage: "write" }).pipe(
          Stream.tap((e) => {
            if (e.type !== "permission.resolved" || e.payload.decision !== "ask") return Effect.void
            NodeFs.rmSync(NodePath.join(cwd, "sub"), { recursive: true })
            NodeFs.symlinkSync(outside, NodePath.join(cwd, "sub"))
            return engine.resolvePermission({ sessionId, toolCallId: "w1", decision: "allow" })
          })
        ))
      }))
      yield* p.stop
      expect(events.filter((e) => e.type === "tool.failed").map((e) => e.payload.errorCode)).toEqual(["path_changed"])
      expect(NodeFs.existsSync(NodePath.join(outside, "x.txt"))).toBe(false)
    }).pipe(Effect.provide(NodeContext.layer)), { timeout: 30_000 })
})
