/**
 * Subagents whose store fails, and a subagent's question answered "always" (review55: a child whose
 * store write failed kept its turn open forever; "always" on a subagent's question had no effect).
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import * as NodeFs from "node:fs"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import { EventStoreFailure } from "../../src/domain/Errors.js"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import type * as FakeModelProvider from "../../src/layers/FakeModelProvider.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as TaskTool from "../../src/layers/TaskTool.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"
import { EventStore } from "../../src/services/EventStore.js"
import { collect, engineLayer, expectWellFormedLog, tempDir } from "../helpers.js"

/** A memory store whose appends fail once `fail(event)` says so (one time each). */
const flakyStore = (fail: (event: AgentEvent) => boolean) =>
  Layer.effect(EventStore, Effect.gen(function*() {
    const store = yield* EventStore
    let failed = false
    const check = (events: ReadonlyArray<AgentEvent>) => !failed && events.some(fail) ? (failed = true) : false
    const boom = (sessionId: string) => Effect.fail(new EventStoreFailure({ reason: "disk_full", operation: "append", sessionId, detail: "simulated" }))
    return {
      ...store,
      append: (event: AgentEvent) => Effect.suspend(() => check([event]) ? boom(event.sessionId) : store.append(event)),
      appendAll: (events: ReadonlyArray<AgentEvent>) => Effect.suspend(() => check(events) ? boom(events[0]!.sessionId) : store.appendAll(events))
    }
  })).pipe(Layer.provideMerge(MemoryEventStore.layer))

const withTools = (model: FakeModelProvider.Options, fail: (e: AgentEvent) => boolean = () => false) =>
  engineLayer(flakyStore(fail), model).pipe(
    Layer.provideMerge(TaskTool.layer.pipe(Layer.provide(WorkspaceTools.layer().pipe(Layer.provide(NodeContext.layer))))),
    Layer.provideMerge(PermissionPolicy.layer({}))
  )
const task = (prompt: string, id: string) => ({ tool: "task", args: { description: "d", prompt }, id })
const logOf = (sessionId: string) => Effect.flatMap(SessionEngine, (engine) => collect(engine.replaySession({ sessionId })))
const ws = Effect.map(tempDir, (dir) => NodeFs.realpathSync(dir))

describe("subagent failures", () => {
  it.scoped("the child's store fails mid-turn: the call fails, the parent ends; the child's log is closed at once; the next turn runs", () =>
    Effect.gen(function*() {
      const cwd = yield* ws
      yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd, client: "test" })
        const events = yield* collect(engine.runTurn({ sessionId, userMessage: "go" }))
        expect(events.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
        const childId = (events.find((e) => e.type === "subagent.started")!.payload as { childSessionId: string }).childSessionId
        expect(events.filter((e) => e.type === "tool.failed").map((e) => (e.payload as { errorCode: string }).errorCode)).toEqual(["subagent_failed"])
        expectWellFormedLog(yield* logOf(sessionId))
        const child = yield* logOf(childId)
        expectWellFormedLog(child)
        // Closed by the parent's call at once (no run of the child would ever close it), as its next run would.
        expect(child.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "error", errorCode: "event_store_failure" } })
        const next = yield* collect(engine.runTurn({ sessionId, userMessage: "again" }))
        expect(next.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
      }).pipe(Effect.provide(withTools({
        responses: [{ toolCalls: [task("child: read", "t1")] }, { chunks: ["parent done"] }, { chunks: ["next turn"] }],
        subagents: { "child: read": [{ toolCalls: [{ tool: "list_files", args: {} }] }, { chunks: ["child done"] }] }
      }, (e) => e.type === "context.built" && e.sessionId === "sess_2")))
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("the parent's store fails while its child runs: the child is cancelled, both logs close on next use, the next turn runs", () =>
    Effect.gen(function*() {
      const cwd = yield* ws
      yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd, client: "test" })
        const first = yield* Effect.either(collect(engine.runTurn({ sessionId, userMessage: "go" })))
        expect(Either.isLeft(first) && first.left._tag).toBe("EventStoreFailure")
        const next = yield* collect(engine.runTurn({ sessionId, userMessage: "again" }))
        expect(next.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
        const parent = yield* logOf(sessionId)
        expectWellFormedLog(parent)
        const childId = (parent.find((e) => e.type === "subagent.started")!.payload as { childSessionId: string }).childSessionId
        const child = yield* logOf(childId)
        expectWellFormedLog(child)
        expect(child.filter((e) => e.type === "turn.completed")).toHaveLength(1)
      }).pipe(Effect.provide(withTools({
        responses: [{ toolCalls: [task("child: read", "t1")] }, { chunks: ["next turn"] }],
        subagents: { "child: read": [{ toolCalls: [{ tool: "list_files", args: {} }] }, { chunks: ["child done"] }] }
      }, (e) => e.type === "subagent.progress")))
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("the parent's store fails storing subagent.started: the child is not left linked (run on its own, its calls are the orphan's)", () =>
    Effect.gen(function*() {
      const cwd = yield* ws
      yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd, client: "test" })
        const first = yield* Effect.either(collect(engine.runTurn({ sessionId, userMessage: "go" })))
        expect(Either.isLeft(first) && first.left._tag).toBe("EventStoreFailure")
        // The child's session was made before the parent's store failed; nothing in the parent's log names it.
        const childId = "sess_2"
        expect((yield* logOf(childId))[0]).toMatchObject({ type: "session.created" })
        // Until December 2026 the child stayed linked below the parent's call that failed: its calls were
        // decided as that call's subagent's, for as long as the process ran.
        const own = yield* collect(engine.runTurn({ sessionId: childId, userMessage: "on its own" }))
        const decided = own.filter((e) => e.type === "permission.resolved").map((e) => (e.payload as { policy?: string }).policy)
        expect(decided).toEqual(["subagent/orphaned"])
      }).pipe(Effect.provide(withTools({
        responses: [{ toolCalls: [task("child: read", "t1")] }, { toolCalls: [{ tool: "list_dir", args: {}, id: "c1" }] }, { chunks: ["done"] }]
      }, (e) => e.type === "subagent.started")))
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("a subagent's question answered 'always' is not asked again for the same scope (the parent's decision sees the subagent's remembered answers)", () =>
    Effect.gen(function*() {
      const cwd = yield* ws
      yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd, client: "test" })
        const events = yield* collect(engine.runTurn({ sessionId, userMessage: "go" }).pipe(
          Stream.tap((e) => e.type === "subagent.asked"
            ? Effect.fork(engine.resolvePermission({ sessionId, toolCallId: (e.payload as { childToolCallId: string }).childToolCallId, decision: "allow", remember: true }))
            : Effect.void)))
        const asked = events.filter((e) => e.type === "subagent.asked").map((e) => (e.payload as { childToolCallId: string }).childToolCallId)
        expect(events.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
        expect(asked).toEqual(["w1"])
      }).pipe(Effect.provide(withTools({
        responses: [{ toolCalls: [task("child: write", "t1")] }, { chunks: ["done"] }],
        subagents: { "child: write": [
          { toolCalls: [{ tool: "write_file", args: { path: "x.txt", content: "1" }, id: "w1" }] },
          { toolCalls: [{ tool: "write_file", args: { path: "x.txt", content: "2" }, id: "w2" }] },
          { chunks: ["child done"] }
        ] }
      })))
    }).pipe(Effect.provide(NodeContext.layer)))
})

