/**
 * Usage, cost and budgets: an unpriced model under maxCost, the engine's budget with a turn's own, spend
 * kept by a close without a running driver, the budget recorded for a resume, OpenAI cache reads
 * counted once, prices by the model that answered, a fork's totals.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import * as Task from "../../src/domain/Task.js"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import type { Options } from "../../src/engine/SessionEngine.js"
import type * as FakeModelProvider from "../../src/layers/FakeModelProvider.js"
import * as JsonlEventStore from "../../src/layers/JsonlEventStore.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import { EventStore } from "../../src/services/EventStore.js"
import { collect, engineLayer, engineProcess, tempDir, testTools } from "../helpers.js"

const tools = testTools({
  save: { risk: "write", run: () => Effect.succeed({ result: "saved" }) },
  look: { run: () => Effect.succeed({ result: "looked" }) }
})
const engineOnDir = (dataDir: string, script: FakeModelProvider.Options, options: Options = {}) =>
  engineLayer(JsonlEventStore.layer({ dataDir }), script, options).pipe(
    Layer.provideMerge(tools),
    Layer.provideMerge(PermissionPolicy.layer()),
    Layer.provideMerge(NodeContext.layer)
  )
const memEngine = (script: FakeModelProvider.Options, options: Options = {}) =>
  engineLayer(MemoryEventStore.layer, script, options).pipe(
    Layer.provideMerge(tools),
    Layer.provideMerge(PermissionPolicy.layer())
  )

/** A session whose turn a first process ran to an approval it asks for, then stopped: the turn paused in the log. */
const pausedOnApproval = (layer: ReturnType<typeof engineOnDir>) =>
  Effect.gen(function*() {
    const first = yield* engineProcess(layer)
    const sessionId = yield* first.provide(Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      const asked = yield* Deferred.make<void>()
      yield* engine.runTurn({ sessionId, userMessage: "go" }).pipe(
        Stream.tap((e: AgentEvent) => e.type === "permission.resolved" && e.payload.decision === "ask" ? Deferred.succeed(asked, undefined) : Effect.void),
        Stream.runDrain, Effect.forkDaemon)
      yield* Deferred.await(asked)
      return sessionId
    }))
    yield* first.stop
    return sessionId
  })

const spend = { inputTokens: 100_000, outputTokens: 1_000 }
const look = (id: string) => ({ toolCalls: [{ tool: "look", args: {}, id }], usage: spend })

describe("usage and budgets", () => {
  it.effect("maxCost $0.01 on a priced model: the turn stops at the first step past it", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      const events = yield* collect(engine.runTurn({ sessionId, userMessage: "go", budget: { maxCost: 0.01 } }))
      expect(events.filter((e) => e.type === "model.usage")).toHaveLength(1)
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "error", errorCode: "budget_exceeded" })
    }).pipe(Effect.provide(memEngine({ provider: "anthropic", model: "claude-sonnet-4-5", responses: [look("l1"), look("l2"), look("l3"), { chunks: ["done"], usage: spend }] }))))

  // Until December 2026 a model with no price (the CLI's default Anthropic model was one) added nothing to the cost: the cap never tripped.
  it.effect("maxCost on a model with no price: the turn is refused, naming the model and `prices`; the engine's maxCost too", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      const own = yield* Effect.flip(collect(engine.runTurn({ sessionId, userMessage: "go", budget: { maxCost: 0.01 } })))
      expect(own).toMatchObject({ _tag: "InvalidInput", field: "budget" })
      expect(own.message).toContain("claude-unreleased-9")
      expect(own.message).toContain("prices")
      expect(yield* collect(engine.replaySession({ sessionId }))).toHaveLength(1)
      // Without maxCost the model runs as before.
      const events = yield* collect(engine.runTurn({ sessionId, userMessage: "go", budget: { maxSteps: 1 } }))
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "error", errorCode: "budget_exceeded", cost: null, costUnknown: "claude-unreleased-9" })
    }).pipe(Effect.provide(memEngine({ provider: "anthropic", model: "claude-unreleased-9", responses: [look("l1"), { chunks: ["done"], usage: spend }] }))))

  it.effect("the engine's maxCost on a model with no price: refused too", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      const refused = yield* Effect.flip(collect(engine.runTurn({ sessionId, userMessage: "go" })))
      expect(refused).toMatchObject({ _tag: "InvalidInput", field: "budget" })
    }).pipe(Effect.provide(memEngine({ provider: "anthropic", model: "claude-unreleased-9", responses: [{ chunks: ["done"], usage: spend }] }, { budget: { maxCost: 1 } }))))

  // Until December 2026 the engine let a `maxCost` turn start on the scripted model (it spends nothing to count), and the
  // step check then counted its reported usage as unpriced: over any cap after the first response.
  it.effect("maxCost on the scripted `fake` provider reporting usage: the turn runs to its end; maxTokens still counts", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      const events = yield* collect(engine.runTurn({ sessionId, userMessage: "go", budget: { maxCost: 0.01 } }))
      expect(events.filter((e) => e.type === "model.usage")).toHaveLength(3)
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
      const capped = yield* collect(engine.runTurn({ sessionId, userMessage: "again", budget: { maxCost: 0.01, maxTokens: 150_000 } }))
      expect(capped.at(-1)!.payload).toMatchObject({ stopReason: "error", errorCode: "budget_exceeded" })
    }).pipe(Effect.provide(memEngine({ responses: [look("l1"), look("l2"), { chunks: ["done"], usage: spend }, look("l3"), look("l4"), { chunks: ["done"], usage: spend }] }))))

  it.effect("a price in the engine's `prices` for that model: the cap counts it", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      const events = yield* collect(engine.runTurn({ sessionId, userMessage: "go", budget: { maxCost: 0.01 } }))
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "error", errorCode: "budget_exceeded" })
    }).pipe(Effect.provide(memEngine({ provider: "anthropic", model: "claude-unreleased-9", responses: [look("l1"), look("l2"), { chunks: ["done"], usage: spend }] }, { prices: { "claude-unreleased-9": { input: 3, output: 15 } } }))))

  it.scoped("a turn paused on an approval, cancelled by a later process: its spend reaches the session's totals", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      const sessionId = yield* pausedOnApproval(engineOnDir(dataDir, { provider: "anthropic", model: "claude-sonnet-4-5", responses: [{ toolCalls: [{ tool: "save", args: {}, id: "w1" }], usage: spend }] }))
      const second = yield* engineProcess(engineOnDir(dataDir, {}))
      yield* second.provide(Effect.gen(function*() {
        const engine = yield* SessionEngine
        yield* engine.cancelTurn({ sessionId })
        const log = yield* collect(engine.replaySession({ sessionId }))
        const state = yield* engine.sessionState({ sessionId })
        expect(log.at(-1)!.payload).toMatchObject({ stopReason: "cancelled", usage: spend })
        expect(state.totals?.usage).toEqual(spend)
      }))
      yield* second.stop
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("a turn a crash left open after a response with usage: the repair's turn.completed keeps the spend", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      yield* Effect.gen(function*() {
        const store = yield* EventStore
        const base = { sessionId: "sess_crashed", timestamp: "2026-01-01T00:00:00.000Z" }
        const turn = { ...base, turnId: "turn_a" }
        const events: ReadonlyArray<AgentEvent> = [
          { ...base, id: "e1", sequence: 1, type: "session.created", payload: { cwd: "/work", client: "cli" } },
          { ...turn, id: "e2", sequence: 2, type: "turn.started", payload: { promptPreview: "run it" } },
          { ...turn, id: "e3", sequence: 3, type: "user.message", payload: { content: "run it" } },
          { ...turn, id: "e4", sequence: 4, type: "model.delta", payload: { text: "Running." } },
          { ...turn, id: "e5", sequence: 5, type: "model.tool_call_requested", payload: { toolCallId: "c1", tool: "look", args: {} } },
          { ...turn, id: "e6", sequence: 6, type: "model.usage", payload: { usage: spend, provider: "anthropic", model: "claude-sonnet-4-5" } },
          { ...turn, id: "e7", sequence: 7, type: "permission.requested", payload: { toolCallId: "c1", tool: "look", risk: "read" } },
          { ...turn, id: "e8", sequence: 8, type: "permission.resolved", payload: { toolCallId: "c1", decision: "allow", actor: "policy", policy: "p" } },
          { ...turn, id: "e9", sequence: 9, type: "tool.started", payload: { toolCallId: "c1", tool: "look", args: {} } }
        ] as any
        for (const event of events) yield* store.append(event)
      }).pipe(Effect.provide(JsonlEventStore.layer({ dataDir })))
      const p = yield* engineProcess(engineOnDir(dataDir, { provider: "anthropic", model: "claude-sonnet-4-5", responses: [{ chunks: ["ok"] }] }))
      yield* p.provide(Effect.gen(function*() {
        const engine = yield* SessionEngine
        yield* collect(engine.runTurn({ sessionId: "sess_crashed", userMessage: "what happened?" }))
        const log = yield* collect(engine.replaySession({ sessionId: "sess_crashed" }))
        const repaired = log.find((e) => e.type === "turn.completed")!
        const state = yield* engine.sessionState({ sessionId: "sess_crashed" })
        // sonnet-4-5: 100k × $3/M + 1k × $15/M = $0.315
        expect(repaired.payload).toMatchObject({ stopReason: "error", errorCode: "interrupted", usage: spend, cost: 0.315 })
        expect(state.totals).toMatchObject({ usage: spend, cost: 0.315 })
      }))
      yield* p.stop
    }).pipe(Effect.provide(NodeContext.layer)))

  it.effect("maxTokens 3000 on OpenAI usage (2140 prompt incl. 1920 cached + 5 out = 2145 tokens a request): a second request is allowed", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      const events = yield* collect(engine.runTurn({ sessionId, userMessage: "go", budget: { maxTokens: 3000 } }))
      expect(events.filter((e) => e.type === "model.usage").length).toBe(2)
    }).pipe(Effect.provide(memEngine({ provider: "openai", model: "gpt-4.1-mini", responses: [
      { toolCalls: [{ tool: "look", args: {}, id: "l1" }], usage: { inputTokens: 2140, outputTokens: 5, cacheReadTokens: 1920 } },
      { toolCalls: [{ tool: "look", args: {}, id: "l2" }], usage: { inputTokens: 2140, outputTokens: 5, cacheReadTokens: 1920 } },
      { chunks: ["done"], usage: { inputTokens: 2140, outputTokens: 5, cacheReadTokens: 1920 } }
    ] }))))

  // Documented (docs/sessions.md): a fork's log holds its source's turns, so its totals count them; a sum over a listing counts them twice.
  it.effect("a fork's totals are its log's: its source's turns up to the fork included", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      yield* collect(engine.runTurn({ sessionId, userMessage: "go" }))
      const fork = yield* engine.forkSession({ sessionId })
      const listed = yield* engine.listSessions
      const source = listed.find((s) => s.sessionId === sessionId)!
      expect(source).toMatchObject({ usage: spend, cost: 0.315 })
      expect(listed.find((s) => s.sessionId === fork.sessionId)).toMatchObject({ usage: source.usage, cost: source.cost })
    }).pipe(Effect.provide(memEngine({ provider: "anthropic", model: "claude-sonnet-4-5", responses: [{ chunks: ["hi"], usage: spend }] }))))

  it.scoped("a paused turn resumed by a process on another model: its cost prices each response at the model that answered (model.usage.model)", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      const sessionId = yield* pausedOnApproval(engineOnDir(dataDir, { provider: "anthropic", model: "claude-opus-4-1", responses: [{ toolCalls: [{ tool: "save", args: {}, id: "w1" }], usage: spend }] }))
      const second = yield* engineProcess(engineOnDir(dataDir, { provider: "anthropic", model: "claude-haiku-4-5", responses: [{ chunks: ["done"], usage: { inputTokens: 0, outputTokens: 0 } }] }))
      yield* second.provide(Effect.gen(function*() {
        const engine = yield* SessionEngine
        yield* engine.resolvePermission({ sessionId, toolCallId: "w1", decision: "allow" })
        const events = yield* collect(engine.resumeTurn({ sessionId }))
        // opus-4-1: 100k × $15/M + 1k × $75/M = $1.575; the haiku response used nothing.
        expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final", cost: 1.575 })
      }))
      yield* second.stop
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("maxCost 1 on a turn paused after an opus response ($1.575), resumed on haiku: the check prices it at opus, as the record does", () =>
    Effect.gen(function*() {
      // At haiku's price the opus response was $0.105, under the cap: the check let the turn go on
      // while the turn's own record said $1.575.
      const dataDir = yield* tempDir
      const sessionId = yield* pausedOnApproval(engineOnDir(dataDir, { provider: "anthropic", model: "claude-opus-4-1", responses: [{ toolCalls: [{ tool: "save", args: {}, id: "w1" }], usage: spend }] }, { budget: { maxCost: 1 } }))
      const second = yield* engineProcess(engineOnDir(dataDir, { provider: "anthropic", model: "claude-haiku-4-5", responses: [look("l1"), { chunks: ["done"], usage: spend }] }))
      yield* second.provide(Effect.gen(function*() {
        const engine = yield* SessionEngine
        yield* engine.resolvePermission({ sessionId, toolCallId: "w1", decision: "allow" })
        const events = yield* collect(engine.resumeTurn({ sessionId }))
        expect(events.at(-1)!.payload).toMatchObject({ errorCode: "budget_exceeded", cost: 1.575 })
      }))
      yield* second.stop
    }).pipe(Effect.provide(NodeContext.layer)))

  it("two budgets as one: each limit the smaller, a limit only one sets kept", () => {
    expect(Task.tighter({ maxSteps: 50 }, { maxCost: 0.01 })).toEqual({ maxSteps: 50, maxCost: 0.01 })
    expect(Task.tighter({ maxCost: 5, maxTokens: 10 }, { maxCost: 0.5, maxTokens: 100 })).toEqual({ maxCost: 0.5, maxTokens: 10 })
    expect(Task.tighter(undefined, { maxSteps: 3 })).toEqual({ maxSteps: 3 })
    expect(Task.tighter({ maxSteps: 3 }, undefined)).toEqual({ maxSteps: 3 })
    expect(Task.tighter(undefined, undefined)).toBeUndefined()
  })

  it.effect("the engine's budget is stored in the turn's `turn.started`, tightened by the turn's own; no budget, no field", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      const events = yield* collect(engine.runTurn({ sessionId, userMessage: "go", budget: { maxSteps: 50, maxCost: 9 } }))
      expect(events.find((e) => e.type === "turn.started")!.payload).toEqual({ promptPreview: "go", budget: { maxCost: 2, maxSteps: 50 } })
    }).pipe(Effect.provide(memEngine({ provider: "anthropic", model: "claude-sonnet-4-5", responses: [{ chunks: ["done"], usage: spend }] }, { budget: { maxCost: 2 } }))))

  it.effect("the engine's budget (serve --max-cost 0.01) and a turn's own budget {maxSteps: 50}: the cost cap still holds", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      const events = yield* collect(engine.runTurn({ sessionId, userMessage: "go", budget: { maxSteps: 50 } }))
      const end = events.at(-1)!.payload as Record<string, unknown>
      expect(end).toMatchObject({ errorCode: "budget_exceeded" })
    }).pipe(Effect.provide(memEngine({ provider: "anthropic", model: "claude-sonnet-4-5", responses: [look("l1"), look("l2"), look("l3"), { chunks: ["done"], usage: spend }] }, { budget: { maxCost: 0.01 } }))))

  it.scoped("run --max-cost 0.5 pauses on an approval; approve (a process without --max-cost) resumes it: the cap still holds", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      const sessionId = yield* pausedOnApproval(engineOnDir(dataDir, { provider: "anthropic", model: "claude-sonnet-4-5", responses: [{ toolCalls: [{ tool: "save", args: {}, id: "w1" }], usage: spend }] }, { budget: { maxCost: 0.5 } }))
      const second = yield* engineProcess(engineOnDir(dataDir, { provider: "anthropic", model: "claude-sonnet-4-5", responses: [look("l1"), look("l2"), look("l3"), { chunks: ["done"], usage: spend }] }))
      yield* second.provide(Effect.gen(function*() {
        const engine = yield* SessionEngine
        yield* engine.resolvePermission({ sessionId, toolCallId: "w1", decision: "allow" })
        const events = yield* collect(engine.resumeTurn({ sessionId }))
        const end = events.at(-1)!.payload as any
        expect(end).toMatchObject({ errorCode: "budget_exceeded" })
      }))
      yield* second.stop
    }).pipe(Effect.provide(NodeContext.layer)))
})
