/**
 * What a turn's budget and its usage totals count (review50): a response's usage counts as the
 * events store it — a count that is NaN, negative or missing (an OpenAI-compatible server leaving
 * out `completion_tokens`) is 0, so the turn's total stays the sum of its `model.usage` and the
 * budget still trips — and the compactions inside the turn (their summaries are model requests too)
 * count against the budget of the turn, and of the turn above a subagent that compacts.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import type { AgentEvent, Usage } from "../../src/domain/AgentEvent.js"
import { summaryInstruction } from "../../src/domain/Compaction.js"
import * as SessionState from "../../src/domain/SessionState.js"
import * as SessionEngine from "../../src/engine/SessionEngine.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as TaskTool from "../../src/layers/TaskTool.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"
import * as IdGenerator from "../../src/services/IdGenerator.js"
import * as ModelProvider from "../../src/services/ModelProvider.js"
import { collect, expectWellFormedLog, tempDir } from "../helpers.js"
import { ofType } from "./subagentEngine.js"

/** The engine over `stream` as its model (any chunks, unchecked), on a memory store, with the workspace tools (and `task`). */
const engineOver = (
  stream: ModelProvider.ModelProvider["Type"]["stream"],
  options: SessionEngine.Options = {},
  maxContextTokens = 128_000
) =>
  SessionEngine.layer(options).pipe(
    Layer.provideMerge(MemoryEventStore.layer),
    Layer.provide(Layer.succeed(ModelProvider.ModelProvider, ModelProvider.ModelProvider.of({
      capabilities: { provider: "fake", model: "budgeted", maxContextTokens },
      stream
    }))),
    Layer.provide(IdGenerator.layerSequential),
    Layer.provideMerge(TaskTool.layer.pipe(Layer.provide(WorkspaceTools.layer().pipe(Layer.provide(NodeContext.layer))))),
    Layer.provideMerge(PermissionPolicy.layer({ mode: "bypass" }))
  )

const chunks = (pieces: ReadonlyArray<unknown>) => Stream.fromIterable(pieces as ReadonlyArray<ModelProvider.ModelChunk>)
const readA = (id: string, usage: unknown) => chunks([ModelProvider.toolCall(id, "read_file", { path: "a.txt" }), { _tag: "Finish", reason: "tool_calls", usage }])

/** A working directory with `a.txt` of `lines` lines. */
const workspace = (lines: number) =>
  Effect.map(tempDir, (dir) => {
    const cwd = NodeFs.realpathSync(dir)
    NodeFs.writeFileSync(NodePath.join(cwd, "a.txt"), "a\n".repeat(lines))
    return cwd
  })

const usages = (events: ReadonlyArray<AgentEvent>) => ofType(events, "model.usage").map((e) => e.payload.usage)
const sumOf = (all: ReadonlyArray<Usage>, key: "inputTokens" | "outputTokens") => all.reduce((total, usage) => total + usage[key], 0)

describe("a turn's usage total", () => {
  const hostile: ReadonlyArray<readonly [string, unknown]> = [
    ["a negative input count", { inputTokens: -1e9, outputTokens: 0 }],
    ["a NaN input count", { inputTokens: Number.NaN, outputTokens: 0 }],
    ["no output count (an OpenAI-compatible server without completion_tokens)", { inputTokens: 900 }],
    ["a count that is a string", { inputTokens: "900", outputTokens: 0 }]
  ]
  for (const [name, first] of hostile) {
    it.scoped(`a first response reporting ${name}: the turn's total is the sum of its model.usage, and maxTokens 1000 still ends it`, () =>
      Effect.gen(function*() {
        const cwd = yield* workspace(1)
        let requests = 0
        yield* Effect.gen(function*() {
          const engine = yield* SessionEngine.SessionEngine
          const { sessionId } = yield* engine.createSession({ cwd, client: "test" })
          const events = yield* collect(engine.runTurn({ sessionId, userMessage: "spend", budget: { maxTokens: 1000 } }))
          const reported = usages(events)
          expect(reported).toHaveLength(2)
          const completed = ofType(events, "turn.completed")[0]!.payload
          expect(completed).toMatchObject({ stopReason: "error", errorCode: "budget_exceeded" })
          const total = { inputTokens: sumOf(reported, "inputTokens"), outputTokens: sumOf(reported, "outputTokens") }
          expect(total.inputTokens + total.outputTokens).toBeGreaterThan(1000)
          expect(completed.usage).toEqual(total)
          // Priced (1 dollar a million tokens either way): the cost is of the same total.
          expect(completed.cost).toBe((total.inputTokens + total.outputTokens) / 1_000_000)
          const state = yield* engine.sessionState({ sessionId })
          expect(state.totals?.usage).toEqual(total)
          expectWellFormedLog(yield* collect(engine.replaySession({ sessionId })))
        }).pipe(Effect.provide(engineOver(
          () => ++requests === 1 ? readA("c1", first) : readA(`c${requests}`, { inputTokens: 900, outputTokens: 200 }),
          { prices: { budgeted: { input: 1, output: 1 } } }
        )))
      }).pipe(Effect.provide(NodeContext.layer)))
  }

  it.scoped("a summary reporting a NaN count, then a second usage: what compactSession returns is what session.compacted stores", () =>
    Effect.gen(function*() {
      const cwd = yield* workspace(1)
      yield* Effect.gen(function*() {
        const engine = yield* SessionEngine.SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd, client: "test" })
        yield* collect(engine.runTurn({ sessionId, userMessage: "one" }))
        yield* collect(engine.runTurn({ sessionId, userMessage: "two" }))
        const result = yield* engine.compactSession({ sessionId })
        const stored = ofType(yield* collect(engine.replaySession({ sessionId })), "session.compacted")[0]!.payload
        expect(stored.usage).toEqual({ inputTokens: 5, outputTokens: 1 })
        expect(result.usage).toEqual(stored.usage)
        expect(result.cost).toBe(stored.cost)
      }).pipe(Effect.provide(engineOver(
        (request) =>
          request.system === summaryInstruction
            ? chunks([
              ModelProvider.textDelta("summary"),
              { _tag: "Finish", reason: "stop", usage: { inputTokens: Number.NaN } },
              { _tag: "Finish", reason: "stop", usage: { inputTokens: 5, outputTokens: 1 } }
            ])
            : chunks([ModelProvider.textDelta("fine"), ModelProvider.finish("stop")]),
        { prices: { budgeted: { input: 1, output: 1 } } }
      )))
    }).pipe(Effect.provide(NodeContext.layer)))
})

describe("compactions and the budget", () => {
  const summarySpent = { inputTokens: 50_000, outputTokens: 100 }
  /** A summary that costs 50,100 tokens. */
  const summary = [ModelProvider.textDelta("summary"), ModelProvider.finish("stop", summarySpent)]
  /** A summary request that costs as much and returns no text: the compaction fails `empty_summary`. */
  const emptySummary = [ModelProvider.finish("stop", summarySpent)]
  /** A summary answers `summaryChunks`; every other request reads `a.txt` (20 tokens) until its `done`-th. */
  const spender = (
    done: (request: ModelProvider.ModelRequest, n: number) => Stream.Stream<ModelProvider.ModelChunk> | undefined,
    summaryChunks: ReadonlyArray<ModelProvider.ModelChunk> = summary
  ) => {
    let n = 0
    return (request: ModelProvider.ModelRequest) => {
      if (request.system === summaryInstruction) return chunks(summaryChunks)
      n++
      return done(request, n) ?? readA(`c${n}`, { inputTokens: 10, outputTokens: 10 })
    }
  }
  const compacting = { compaction: { threshold: 0.05, keepRecentTokens: 10 } }

  it.scoped("a compaction inside a turn counts against its maxTokens: the turn ends budget_exceeded; turn.completed.usage stays its responses'", () =>
    Effect.gen(function*() {
      const cwd = yield* workspace(2000)
      yield* Effect.gen(function*() {
        const engine = yield* SessionEngine.SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd, client: "test" })
        yield* collect(engine.runTurn({ sessionId, userMessage: "warm up" }))
        const events = yield* collect(engine.runTurn({ sessionId, userMessage: "spend", budget: { maxTokens: 1000 } }))
        // The compaction came before the first request: the second step never made its request.
        expect(ofType(events, "session.compacted")).toHaveLength(1)
        expect(usages(events)).toHaveLength(1)
        const completed = ofType(events, "turn.completed")[0]!.payload
        expect(completed).toMatchObject({ stopReason: "error", errorCode: "budget_exceeded" })
        // The session's totals count the compaction on its own: the turn's total is its responses'.
        const reported = usages(events)
        expect(completed.usage).toEqual({ inputTokens: sumOf(reported, "inputTokens"), outputTokens: sumOf(reported, "outputTokens") })
        expectWellFormedLog(yield* collect(engine.replaySession({ sessionId })))
      }).pipe(Effect.provide(engineOver(spender((_, n) => n === 3 ? chunks([ModelProvider.textDelta("done"), ModelProvider.finish("stop")]) : undefined), compacting, 20_000)))
    }).pipe(Effect.provide(NodeContext.layer)))

  // A summary request spent is spent whether it gave a summary or came back empty (compaction.failed {empty_summary}).
  for (const [ending, summaryChunks] of [["session.compacted", summary], ["compaction.failed", emptySummary]] as const) {
    it.scoped(`a subagent's compaction (${ending}) counts against its parent's budget: the child and the parent end budget_exceeded`, () =>
      Effect.gen(function*() {
        const cwd = yield* workspace(2000)
        yield* Effect.gen(function*() {
          const engine = yield* SessionEngine.SessionEngine
          const { sessionId } = yield* engine.createSession({ cwd, client: "test" })
          const events = yield* collect(engine.runTurn({ sessionId, userMessage: "delegate", budget: { maxTokens: 1000 } }))
          const [completed] = ofType(events, "subagent.completed")
          expect(completed?.payload).toMatchObject({ outcome: "error", errorCode: "budget_exceeded" })
          // What the tree used, as the parent's log shows it, has the child's summary in it.
          expect(completed!.payload).toMatchObject({ steps: 2, usage: { inputTokens: 50_020, outputTokens: 120 } })
          expect(events.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "error", errorCode: "budget_exceeded" } })
          const child = yield* collect(engine.replaySession({ sessionId: completed!.payload.childSessionId }))
          // Its compaction came in its second step: the third never made its request.
          expect(ofType(child, ending).map((e) => e.payload.usage)).toEqual([summarySpent])
          expect(ofType(child, "model.usage")).toHaveLength(2)
          expect(child.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "error", errorCode: "budget_exceeded" } })
          expectWellFormedLog(child)
          expectWellFormedLog(yield* collect(engine.replaySession({ sessionId })))
        }).pipe(Effect.provide(engineOver(
          spender((request, n) => {
            // The child's task, or the summary that took its place.
            const isChild = request.messages.some((m) => m.role === "user" && (m.content === "child: read" || m.content.includes("summary")))
            if (isChild) return n >= 8 ? chunks([ModelProvider.textDelta("read"), ModelProvider.finish("stop")]) : undefined
            return n === 1
              ? chunks([ModelProvider.toolCall("t1", "task", { description: "read", prompt: "child: read" }), ModelProvider.finish("tool_calls", { inputTokens: 10, outputTokens: 10 })])
              : chunks([ModelProvider.textDelta("done"), ModelProvider.finish("stop")])
          }, summaryChunks),
          compacting,
          20_000
        )))
      }).pipe(Effect.provide(NodeContext.layer)))
  }

  it.scoped("a compaction that fails after its summary request returned (empty_summary) counts as one that succeeds: compaction.failed carries its usage and cost, the turn's budget and the session's totals count it, replayed as live", () =>
    Effect.gen(function*() {
      const cwd = yield* workspace(2000)
      yield* Effect.gen(function*() {
        const engine = yield* SessionEngine.SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd, client: "test" })
        yield* collect(engine.runTurn({ sessionId, userMessage: "warm up" }))
        const events = yield* collect(engine.runTurn({ sessionId, userMessage: "spend", budget: { maxTokens: 1000 } }))
        // The failed compaction came before the first request: the second step never made its request.
        const failed = ofType(events, "compaction.failed")
        expect(failed.map((e) => e.payload)).toEqual([
          { compactionId: expect.any(String), errorCode: "empty_summary", usage: summarySpent, cost: 50_100 / 1_000_000 }
        ])
        expect(usages(events)).toHaveLength(1)
        const completed = ofType(events, "turn.completed")[0]!.payload
        expect(completed).toMatchObject({ stopReason: "error", errorCode: "budget_exceeded" })
        const reported = usages(events)
        expect(completed.usage).toEqual({ inputTokens: sumOf(reported, "inputTokens"), outputTokens: sumOf(reported, "outputTokens") })
        // The session's totals: every turn's, and every summary request's, the failed ones too.
        const log = yield* collect(engine.replaySession({ sessionId }))
        expectWellFormedLog(log)
        const spent = [
          ...ofType(log, "turn.completed").map((e) => e.payload.usage!),
          ...ofType(log, "compaction.failed").map((e) => e.payload.usage!)
        ]
        expect(ofType(log, "compaction.failed").length).toBeGreaterThan(1)
        const total = { inputTokens: sumOf(spent, "inputTokens"), outputTokens: sumOf(spent, "outputTokens") }
        const live = yield* engine.sessionState({ sessionId })
        expect(live.totals).toEqual({ usage: total, cost: (total.inputTokens + total.outputTokens) / 1_000_000 })
        expect(Either.getOrThrow(SessionState.replay(log))).toEqual(live)
        const [listed] = yield* engine.listSessions
        expect(listed).toMatchObject({ usage: total, cost: live.totals!.cost })
      }).pipe(Effect.provide(engineOver(
        spender((_, n) => n === 3 || n === 6 ? chunks([ModelProvider.textDelta("done"), ModelProvider.finish("stop")]) : undefined, emptySummary),
        { ...compacting, prices: { budgeted: { input: 1, output: 1 } } },
        20_000
      )))
    }).pipe(Effect.provide(NodeContext.layer)))
})
