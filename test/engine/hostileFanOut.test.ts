/**
 * A model that fans out: a hundred `task` calls in one step, each subagent asking for more. One
 * user turn's tree starts at most `maxSubagents` subagent sessions in all (default: the engine's
 * `maxToolCalls`, 100); every call past it is refused before any session is made, as a typed
 * `tool.failed {errorCode: "subagents_exceeded"}` the model reads, and every log stays well formed.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as TestClock from "effect/TestClock"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import { type Options, SessionEngine } from "../../src/engine/SessionEngine.js"
import type * as FakeModelProvider from "../../src/layers/FakeModelProvider.js"
import { FakeModel } from "../../src/layers/FakeModelProvider.js"
import { collect, expectWellFormedLog, tempDir } from "../helpers.js"
import { ofType, withTools } from "./subagentEngine.js"

const task = (prompt: string, id: string) => ({ tool: "task", args: { description: "fan out", prompt }, id })

/**
 * The top session asks for `wide` tasks in one step; each of those subagents asks for `deep` more
 * (its own script, so that concurrent children do not share one), which answer at once.
 */
const fanOut = (wide: number, deep: number): FakeModelProvider.Options => ({
  responses: [{ toolCalls: Array.from({ length: wide }, (_, i) => task(`fan ${i}`, `t${i}`)) }, { chunks: ["top done"] }],
  subagents: Object.fromEntries(Array.from({ length: wide }, (_, i) => [
    `fan ${i}`,
    [{ toolCalls: Array.from({ length: deep }, (_, j) => task("leaf", `l${j}`)) }, { chunks: [`child ${i} done`] }]
  ]))
})

/** Every session's log, checked well formed, and what the whole tree did. */
const treeOf = Effect.gen(function*() {
  const engine = yield* SessionEngine
  const sessions = yield* engine.listSessions
  const events: Array<AgentEvent> = []
  for (const s of sessions) {
    const log = yield* collect(engine.replaySession({ sessionId: s.sessionId }))
    expectWellFormedLog(log)
    events.push(...log)
  }
  return { sessions: sessions.length, events }
})

const fanOutTurn = (model: FakeModelProvider.Options, options: Options) =>
  Effect.gen(function*() {
    const cwd = yield* tempDir
    return yield* Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd, client: "test" })
      const turn = yield* collect(engine.runTurn({ sessionId, userMessage: "fan out" }))
      return { turn, tree: yield* treeOf }
    }).pipe(Effect.provide(withTools(model, options)))
  }).pipe(Effect.provide(NodeContext.layer))

describe("a model that fans out", () => {
  it.scoped("a hundred tasks each asking for two more: the tree starts 100 subagents (maxToolCalls' default), the rest fail subagents_exceeded", () =>
    Effect.gen(function*() {
      const { tree, turn } = yield* fanOutTurn(fanOut(100, 2), {})
      expect(turn.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
      // 1 top session + 100 subagents, not the 1 + 100 + 200 the model asked for.
      expect(tree.sessions).toBe(101)
      expect(ofType(tree.events, "subagent.started")).toHaveLength(100)
      const refused = ofType(tree.events, "tool.failed").filter((e) => e.payload.errorCode === "subagents_exceeded")
      // Every task call but the 100 that started one, at either depth.
      expect(refused).toHaveLength(ofType(tree.events, "model.tool_call_requested").length - 100)
      expect(refused[0]!.payload.message).toBe("This turn has started its 100 subagents, the most one turn may; do the rest yourself.")
    }), 120_000)

  it.scoped("maxSubagents is settable: 5 in all, across both depths; the top turn still ends with its answer", () =>
    Effect.gen(function*() {
      const { tree, turn } = yield* fanOutTurn(fanOut(10, 10), { maxSubagents: 5 })
      expect(turn.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
      expect(tree.sessions).toBe(6)
      expect(ofType(tree.events, "subagent.started")).toHaveLength(5)
      // Every task call but the 5 that started one was refused before any session was made.
      const requested = ofType(tree.events, "model.tool_call_requested").length
      expect(ofType(tree.events, "tool.failed").filter((e) => e.payload.errorCode === "subagents_exceeded")).toHaveLength(requested - 5)
    }), 120_000)

  it.scoped("a rewind or a compaction asked while a subagent runs: refused on the parent and on the child (TurnInProgress); the tree ends as it would", () =>
    Effect.gen(function*() {
      const cwd = yield* tempDir
      yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd, client: "test" })
        yield* collect(engine.runTurn({ sessionId, userMessage: "first" }))
        const point = (yield* collect(engine.replaySession({ sessionId }))).at(-1)!.sequence
        const turn = yield* Effect.fork(collect(engine.runTurn({ sessionId, userMessage: "delegate" })))
        // Until the child's turn is open (its answer waits on the test clock, which does not move here).
        let child: string | undefined
        while (child === undefined) {
          yield* Effect.yieldNow()
          const others = (yield* engine.listSessions).filter((s) => s.sessionId !== sessionId)
          if (others.length > 0 && (yield* engine.sessionState({ sessionId: others[0]!.sessionId })).openTurn !== undefined) child = others[0]!.sessionId
        }
        for (const id of [sessionId, child]) {
          expect(yield* Effect.flip(engine.rewindSession({ sessionId: id, toSequence: id === sessionId ? point : 1 }))).toMatchObject({ _tag: "TurnInProgress" })
          expect(yield* Effect.flip(engine.compactSession({ sessionId: id, keepRecentTokens: 0 }))).toMatchObject({ _tag: "TurnInProgress" })
        }
        while ((yield* Fiber.poll(turn))._tag === "None") {
          yield* TestClock.adjust("1 second")
          yield* Effect.yieldNow()
        }
        const events = yield* Fiber.join(turn)
        expect(events.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
        const log = yield* collect(engine.replaySession({ sessionId }))
        expectWellFormedLog(log)
        expect(log.filter((e) => e.type.startsWith("compaction.") || e.type === "session.rewound")).toEqual([])
        expectWellFormedLog(yield* collect(engine.replaySession({ sessionId: child! })))
      }).pipe(Effect.provide(withTools({
        responses: [{ chunks: ["hello"] }, { toolCalls: [task("slow", "t")] }, { chunks: ["delegated"] }],
        subagents: { slow: [{ chunks: ["slow answer"], delay: "1 second" }] }
      })))
    }).pipe(Effect.provide(NodeContext.layer)), 120_000)

  it.scoped("budget.maxSteps counts the model requests of the whole tree: two subagents of three steps each under a budget of 4 end budget_exceeded, and so does the parent", () =>
    Effect.gen(function*() {
      const cwd = yield* tempDir
      yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd, client: "test" })
        const turn = yield* collect(engine.runTurn({ sessionId, userMessage: "fan out", budget: { maxSteps: 4 } }))
        expect(turn.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "error", errorCode: "budget_exceeded" } })
        const tree = yield* treeOf
        // The model was asked 4 times in all, the parent's first request included.
        expect(yield* (yield* FakeModel).requests).toHaveLength(4)
        expect(ofType(tree.events, "subagent.completed").map((e) => e.payload.errorCode)).toEqual(["budget_exceeded", "budget_exceeded"])
      }).pipe(Effect.provide(withTools({
        responses: [{ toolCalls: [task("walk 0", "t0"), task("walk 1", "t1")] }, { chunks: ["never asked"] }],
        subagents: Object.fromEntries([0, 1].map((i) => [`walk ${i}`, [
          { toolCalls: [{ tool: "list_dir", args: {}, id: "a" }] },
          { toolCalls: [{ tool: "list_dir", args: {}, id: "b" }] },
          { chunks: ["walked"] }
        ]]))
      })))
    }).pipe(Effect.provide(NodeContext.layer)), 120_000)

  it.scoped("budget.maxSteps holds for a turn without subagents, and one that is not a positive number is InvalidInput", () =>
    Effect.gen(function*() {
      const cwd = yield* tempDir
      yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd, client: "test" })
        expect(yield* Effect.flip(collect(engine.runTurn({ sessionId, userMessage: "x", budget: { maxSteps: 0 } })))).toMatchObject({ _tag: "InvalidInput", field: "budget" })
        const turn = yield* collect(engine.runTurn({ sessionId, userMessage: "loop", budget: { maxSteps: 3 } }))
        expect(yield* (yield* FakeModel).requests).toHaveLength(3)
        expect(turn.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "error", errorCode: "budget_exceeded" } })
      }).pipe(Effect.provide(withTools({ responses: Array.from({ length: 10 }, (_, i) => ({ toolCalls: [{ tool: "list_dir", args: {}, id: `l${i}` }] })) })))
    }).pipe(Effect.provide(NodeContext.layer)), 120_000)
})
