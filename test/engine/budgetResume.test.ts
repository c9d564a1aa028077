/**
 * A turn's budget (tokens/steps of its tree) holds across a restart: a process that resumes a paused
 * turn counts on from what the turn spent before the pause (review55 found it counted from zero, and
 * dropped a per-turn budget entirely).
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
import type { Options } from "../../src/engine/SessionEngine.js"
import type * as FakeModelProvider from "../../src/layers/FakeModelProvider.js"
import * as JsonlEventStore from "../../src/layers/JsonlEventStore.js"
import * as LogSeek from "../../src/layers/jsonl/LogSeek.js"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as TaskTool from "../../src/layers/TaskTool.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"
import { collect, engineLayer, engineProcess, expectWellFormedLog, tempDir } from "../helpers.js"

const engineOn = (dataDir: string, model: FakeModelProvider.Options, options: Options) =>
  engineLayer(JsonlEventStore.layer({ dataDir }).pipe(Layer.provide(NodeContext.layer)), model, options).pipe(
    Layer.provideMerge(TaskTool.layer.pipe(Layer.provide(WorkspaceTools.layer().pipe(Layer.provide(NodeContext.layer))))),
    Layer.provideMerge(PermissionPolicy.layer({})),
    Layer.provideMerge(NodeContext.layer)
  )
const process = engineProcess
const write = (path: string, id: string) => ({ tool: "write_file", args: { path, content: `${path}\n` }, id })
const spend = { inputTokens: 500, outputTokens: 100 }

const scenario = (perTurn: boolean) =>
  Effect.gen(function*() {
    const root = NodeFs.realpathSync(yield* tempDir)
    const cwd = NodePath.join(root, "ws")
    NodeFs.mkdirSync(cwd)
    const dataDir = NodePath.join(root, "data")
    const budget = { maxTokens: 1000 }
    const engineBudget: Options = perTurn ? {} : { budget }
    const first = yield* process(engineOn(dataDir, { responses: [{ toolCalls: [write("a.txt", "w1")], usage: spend }] }, engineBudget))
    const sessionId = yield* first.provide(Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd, client: "test" })
      const asked = yield* Deferred.make<void>()
      yield* engine.runTurn({ sessionId, userMessage: "go", ...(perTurn ? { budget } : {}) }).pipe(
        Stream.tap((e: AgentEvent) => e.type === "permission.resolved" && e.payload.decision === "ask" ? Deferred.succeed(asked, undefined) : Effect.void),
        Stream.runDrain, Effect.forkDaemon)
      yield* Deferred.await(asked)
      return sessionId
    }))
    yield* first.stop
    // The next process (the CLI's `approve`, a restarted server): the same budget, 600 tokens already spent.
    const second = yield* process(engineOn(dataDir, {
      responses: [{ toolCalls: [write("b.txt", "w2")], usage: spend }, { toolCalls: [write("c.txt", "w3")], usage: spend }, { chunks: ["over budget"], usage: spend }]
    }, engineBudget))
    const events = yield* second.provide(Effect.gen(function*() {
      const engine = yield* SessionEngine
      yield* engine.resolvePermission({ sessionId, toolCallId: "w1", decision: "allow", remember: true })
      const resumed = yield* collect(engine.resumeTurn({ sessionId }).pipe(
        Stream.tap((e) => e.type === "permission.resolved" && e.payload.decision === "ask" ? Effect.fork(engine.resolvePermission({ sessionId, toolCallId: e.payload.toolCallId, decision: "allow" })) : Effect.void)))
      expectWellFormedLog(yield* collect(engine.replaySession({ sessionId })))
      return resumed
    }))
    yield* second.stop
    const usages = events.filter((e) => e.type === "model.usage").length
    // 600 before the restart + 600 after = 1200 > 1000: the turn must end budget_exceeded before a third request,
    // its usage the whole turn's (before and after the restart).
    expect({ usagesAfterRestart: usages, end: events.at(-1)?.type === "turn.completed" ? events.at(-1)!.payload : undefined })
      .toMatchObject({ usagesAfterRestart: 1, end: { stopReason: "error", errorCode: "budget_exceeded", usage: { inputTokens: 1000, outputTokens: 200 } } })
  }).pipe(Effect.provide(NodeContext.layer))

const task = (prompt: string, id: string) => ({ tool: "task", args: { description: "d", prompt }, id })

/**
 * A tree paused on its child's question in a first process, resumed by a second with the same
 * options: the child spent `spend` before the pause; the second process answers and resumes.
 */
const treeAcrossRestart = (options: Options, second: FakeModelProvider.Options, firstScript: FakeModelProvider.Options = {
  responses: [{ toolCalls: [task("child: write", "t1")] }],
  subagents: { "child: write": [{ toolCalls: [write("a.txt", "w1")], usage: spend }] }
}) =>
  Effect.gen(function*() {
    const root = NodeFs.realpathSync(yield* tempDir)
    const cwd = NodePath.join(root, "ws")
    NodeFs.mkdirSync(cwd)
    const dataDir = NodePath.join(root, "data")
    const first = yield* process(engineOn(dataDir, firstScript, options))
    const sessionId = yield* first.provide(Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd, client: "test" })
      const asked = yield* Deferred.make<void>()
      yield* engine.runTurn({ sessionId, userMessage: "go" }).pipe(
        Stream.tap((e: AgentEvent) => e.type === "subagent.asked" ? Deferred.succeed(asked, undefined) : Effect.void),
        Stream.runDrain, Effect.forkDaemon)
      yield* Deferred.await(asked)
      return sessionId
    }))
    yield* first.stop
    const next = yield* process(engineOn(dataDir, second, options))
    const events = yield* next.provide(Effect.gen(function*() {
      const engine = yield* SessionEngine
      yield* engine.resolvePermission({ sessionId, toolCallId: "w1", decision: "allow" })
      const resumed = yield* collect(engine.resumeTurn({ sessionId }).pipe(
        Stream.tap((e) => e.type === "subagent.asked" ? Effect.fork(engine.resolvePermission({ sessionId, toolCallId: e.payload.childToolCallId, decision: "allow" })) : Effect.void)))
      expectWellFormedLog(yield* collect(engine.replaySession({ sessionId })))
      return resumed
    }))
    yield* next.stop
    return events
  })

/** After the restart, the tree's next `task` (t2) is refused `subagents_exceeded`, no subagent starts, and the turn ends final. */
const expectRefusedT2 = (events: ReadonlyArray<AgentEvent>) => {
  expect(events.filter((e) => e.type === "tool.failed").map((e) => [e.payload.toolCallId, e.payload.errorCode])).toEqual([["t2", "subagents_exceeded"]])
  expect(events.filter((e) => e.type === "subagent.started")).toEqual([])
  expect(events.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
}

describe("a turn's budget across a restart", () => {
  it.scoped("engine budget (CLI --max-tokens): tokens spent before the pause count", () => scenario(false))
  it.scoped("per-turn budget (runTurn budget, server/ACP): kept by the resume, from turn.started", () => scenario(true))

  it.scoped("a subagent's spending before the pause counts against the tree's budget", () =>
    Effect.gen(function*() {
      // The child spent 600 before the restart; 600 more after is over 1000: it stops at its next step, and so does its parent.
      const events = yield* treeAcrossRestart({ budget: { maxTokens: 1000 } }, {
        responses: [{ chunks: ["should not be asked"] }],
        subagents: { "child: write": [{ toolCalls: [write("b.txt", "w2")], usage: spend }, { chunks: ["over budget"], usage: spend }] }
      })
      expect(events.filter((e) => e.type === "subagent.completed").map((e) => [e.payload.outcome, e.payload.errorCode, e.payload.usage]))
        .toEqual([["error", "budget_exceeded", { inputTokens: 1000, outputTokens: 200 }]])
      expect(events.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "error", errorCode: "budget_exceeded" } })
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("the subagents a turn started before the pause count against --max-subagents", () =>
    Effect.gen(function*() {
      const events = yield* treeAcrossRestart({ maxSubagents: 1 }, {
        responses: [{ toolCalls: [task("child: again", "t2")] }, { chunks: ["done"] }],
        subagents: { "child: write": [{ chunks: ["wrote a.txt"] }], "child: again": [{ chunks: ["a second child"] }] }
      })
      expectRefusedT2(events)
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("a grandchild started before the pause counts against --max-subagents too (its subagent.started is in its parent's log, not the top one's)", () =>
    Effect.gen(function*() {
      // Before the restart: the child started a grandchild (2 subagents of 2), which waits on w1.
      const events = yield* treeAcrossRestart({ maxSubagents: 2 }, {
        responses: [{ toolCalls: [task("child: again", "t2")] }, { chunks: ["done"] }],
        subagents: { "grandchild: write": [{ chunks: ["wrote a.txt"] }], "child: spawn": [{ chunks: ["my grandchild wrote"] }], "child: again": [{ chunks: ["a third subagent"] }] }
      }, {
        responses: [{ toolCalls: [task("child: spawn", "t1")] }],
        subagents: { "child: spawn": [{ toolCalls: [task("grandchild: write", "g1")] }], "grandchild: write": [{ toolCalls: [write("a.txt", "w1")] }] }
      })
      expectRefusedT2(events)
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("a resumed turn reads what it spent from its own turn.started on, not the whole log again (kernel45: a 100 MB session was read twice)", () =>
    Effect.gen(function*() {
      const root = NodeFs.realpathSync(yield* tempDir)
      const cwd = NodePath.join(root, "ws")
      NodeFs.mkdirSync(cwd)
      const dataDir = NodePath.join(root, "data")
      // Past a ranged read's seek window (64 KiB): about 300 KiB of turns.
      const earlier = Array.from({ length: 120 }, (_, n) => ({ chunks: [`answer ${n} ${"x".repeat(2000)}`], usage: spend }))
      const first = yield* process(engineOn(dataDir, { responses: [...earlier, { toolCalls: [write("a.txt", "w1")], usage: spend }] }, {}))
      const sessionId = yield* first.provide(Effect.gen(function*() {
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd, client: "test" })
        for (let n = 0; n < earlier.length; n++) yield* collect(engine.runTurn({ sessionId, userMessage: `turn ${n}` }))
        const asked = yield* Deferred.make<void>()
        yield* engine.runTurn({ sessionId, userMessage: "go" }).pipe(
          Stream.tap((e: AgentEvent) => e.type === "permission.resolved" && e.payload.decision === "ask" ? Deferred.succeed(asked, undefined) : Effect.void),
          Stream.runDrain, Effect.forkDaemon)
        yield* Deferred.await(asked)
        return sessionId
      }))
      yield* first.stop
      const lines = NodeFs.readFileSync(NodePath.join(dataDir, "sessions", `${sessionId}.jsonl`), "utf8").split("\n").filter((l) => l !== "").length
      const second = yield* process(engineOn(dataDir, { responses: [{ chunks: ["done"], usage: spend }] }, {}))
      const before = LogSeek.parsed.count
      const events = yield* second.provide(Effect.gen(function*() {
        const engine = yield* SessionEngine
        yield* engine.resolvePermission({ sessionId, toolCallId: "w1", decision: "allow" })
        return yield* collect(engine.resumeTurn({ sessionId }))
      }))
      const parsed = LogSeek.parsed.count - before
      yield* second.stop
      // The resumed turn's usage is still the whole turn's: 600 before the restart, 600 after.
      expect(events.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final", usage: { inputTokens: 1000, outputTokens: 200 } } })
      // Hydration reads every line once; the spend read only the turn's (and a bounded seek), not every line again.
      // (main: 1,460 lines parsed of a 729-line log; now 828.)
      expect(parsed, `${parsed} lines parsed of a ${lines}-line log`).toBeLessThan(lines * 1.5)
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("a per-turn budget is stored in turn.started (none: the field is absent)", () =>
    Effect.gen(function*() {
      const dataDir = NodePath.join(NodeFs.realpathSync(yield* tempDir), "data")
      const engine = yield* process(engineOn(dataDir, { responses: [{ chunks: ["one"] }, { chunks: ["two"] }] }, {}))
      const started = yield* engine.provide(Effect.gen(function*() {
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd: dataDir, client: "test" })
        yield* collect(engine.runTurn({ sessionId, userMessage: "a", budget: { maxTokens: 1000, maxSteps: 3 } }))
        yield* collect(engine.runTurn({ sessionId, userMessage: "b" }))
        return (yield* collect(engine.replaySession({ sessionId }))).filter((e) => e.type === "turn.started").map((e) => e.payload)
      }))
      yield* engine.stop
      expect(started).toEqual([{ promptPreview: "a", budget: { maxTokens: 1000, maxSteps: 3 } }, { promptPreview: "b" }])
    }).pipe(Effect.provide(NodeContext.layer)))
})
