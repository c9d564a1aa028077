/**
 * Durable sessions: any engine picks a session up from the log alone — its transcript, a turn a
 * crash left open (repaired), a turn paused on an approval (resumed).
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as Exit from "effect/Exit"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import * as SessionState from "../../src/domain/SessionState.js"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import { FakeModel } from "../../src/layers/FakeModelProvider.js"
import type * as FakeModelProvider from "../../src/layers/FakeModelProvider.js"
import * as JsonlEventStore from "../../src/layers/JsonlEventStore.js"
import * as SqliteEventStore from "../../src/layers/SqliteEventStore.js"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import { EventStore } from "../../src/services/EventStore.js"
import { collect, engineLayer, expectWellFormedLog, tempDir, testTools, typesOf } from "../helpers.js"

/** An engine on the JSONL store in `dataDir`, with one write tool and the default policy (writes ask). */
const engineOn = (dataDir: string, script: FakeModelProvider.Options, runs: { count: number } = { count: 0 }) =>
  engineLayer(JsonlEventStore.layer({ dataDir }), script).pipe(
    Layer.provideMerge(testTools({
      save: { risk: "write", run: () => Effect.sync(() => ({ result: `saved (${++runs.count})` })) },
      look: { run: () => Effect.succeed({ result: "looked" }) }
    })),
    Layer.provideMerge(PermissionPolicy.layer()),
    Layer.provideMerge(NodeContext.layer)
  )

/** Builds a layer in its own scope, so a test can stop one "process" and start another on the same data. */
const process = <A, E>(layer: Layer.Layer<A, E>): Effect.Effect<{
  readonly provide: <X, Y, R>(effect: Effect.Effect<X, Y, R>) => Effect.Effect<X, Y | E, Exclude<R, A>>
  readonly stop: Effect.Effect<void>
}, E> =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const context = yield* Layer.buildWithScope(layer, scope)
    return { provide: <X, Y, R>(effect: Effect.Effect<X, Y, R>) => Effect.provide(effect, context), stop: Scope.close(scope, Exit.void) }
  })

const replay = (sessionId: string) => Effect.flatMap(SessionEngine, (e) => collect(e.replaySession({ sessionId })))

describe("durable sessions", () => {
  it.scoped("a second process continuing a session sends the model the whole transcript, tool results included", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      const first = yield* process(engineOn(dataDir, { responses: [{ chunks: ["Looking."], toolCalls: [{ tool: "look", args: { at: "x" } }] }, { chunks: ["Seen it."] }] }))
      const sessionId = yield* first.provide(Effect.gen(function*() {
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
        yield* collect(engine.runTurn({ sessionId, userMessage: "look at x" }))
        return sessionId
      }))
      yield* first.stop

      const second = yield* process(engineOn(dataDir, { responses: [{ chunks: ["Again."] }] }))
      yield* second.provide(Effect.gen(function*() {
        const engine = yield* SessionEngine
        const events = yield* collect(engine.runTurn({ sessionId, userMessage: "and now?" }))
        expect(events[0]).toMatchObject({ type: "turn.started", sequence: 13 })
        const [request] = yield* (yield* FakeModel).requests
        expect(request!.messages).toEqual([
          { role: "user", content: "look at x" },
          { role: "assistant", content: "Looking.", toolCalls: [{ toolCallId: "call_1", tool: "look", args: { at: "x" } }] },
          { role: "tool", toolCallId: "call_1", tool: "look", content: "looked", isError: false },
          { role: "assistant", content: "Seen it.", toolCalls: [] },
          { role: "user", content: "and now?" }
        ])
        expectWellFormedLog(yield* replay(sessionId))
      }))
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("a turn a crash left open is closed on first use, by appending; the model sees the repaired result", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      // The log of a process that died while a tool ran.
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
          { ...turn, id: "e6", sequence: 6, type: "permission.requested", payload: { toolCallId: "c1", tool: "look", risk: "read" } },
          { ...turn, id: "e7", sequence: 7, type: "permission.resolved", payload: { toolCallId: "c1", decision: "allow", actor: "policy", policy: "p" } },
          { ...turn, id: "e8", sequence: 8, type: "tool.started", payload: { toolCallId: "c1", tool: "look", args: {} } }
        ]
        for (const event of events) yield* store.append(event)
      }).pipe(Effect.provide(JsonlEventStore.layer({ dataDir })))

      yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        // Reading does not repair: only a write does.
        expect((yield* engine.sessionState({ sessionId: "sess_crashed" })).openTurn?.turnId).toBe("turn_a")
        expect(yield* replay("sess_crashed")).toHaveLength(8)
        yield* collect(engine.runTurn({ sessionId: "sess_crashed", userMessage: "what happened?" }))
        const log = yield* replay("sess_crashed")
        expect(log.slice(8, 11).map((e) => [e.type, e.payload])).toEqual([
          ["tool.failed", { toolCallId: "c1", errorCode: "interrupted", message: "The tool call did not finish: interrupted." }],
          ["turn.completed", { stopReason: "error", errorCode: "interrupted" }],
          ["turn.started", { promptPreview: "what happened?" }]
        ])
        expectWellFormedLog(log)
        const [request] = yield* (yield* FakeModel).requests
        expect(request!.messages.slice(1, 3)).toEqual([
          { role: "assistant", content: "Running.", toolCalls: [{ toolCallId: "c1", tool: "look", args: {} }] },
          { role: "tool", toolCallId: "c1", tool: "look", content: "The tool call did not finish: interrupted.", isError: true }
        ])
      }).pipe(Effect.provide(engineOn(dataDir, {})))
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("a turn paused on ask survives the process: approve from a new one, resume, the tool runs once", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      const runs = { count: 0 }
      const script = { responses: [{ chunks: ["Saving."], toolCalls: [{ tool: "save", args: { file: "a" } }] }, { chunks: ["Saved."] }] }
      const first = yield* process(engineOn(dataDir, script, runs))
      const { asked, sessionId } = yield* first.provide(Effect.gen(function*() {
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
        const asked = yield* Deferred.make<string>()
        yield* engine.runTurn({ sessionId, userMessage: "save a" }).pipe(
          Stream.tap((e) => e.type === "permission.resolved" && e.payload.decision === "ask" ? Deferred.succeed(asked, e.payload.toolCallId) : Effect.void),
          Stream.runDrain,
          Effect.forkDaemon
        )
        return { asked: yield* Deferred.await(asked), sessionId }
      }))
      // The process stops while the call waits: the turn stays paused in the log, nothing is closed.
      yield* first.stop
      const second = yield* process(engineOn(dataDir, { responses: [{ chunks: ["Saved."] }] }, runs))
      yield* second.provide(Effect.gen(function*() {
        const engine = yield* SessionEngine
        const paused = yield* replay(sessionId)
        expect(paused.at(-1)).toMatchObject({ type: "permission.resolved", payload: { decision: "ask" } })
        expect((yield* engine.pendingApprovals({ sessionId })).map((c) => c.toolCallId)).toEqual([asked])
        const busy = yield* Effect.either(collect(engine.runTurn({ sessionId, userMessage: "something else" })))
        expect(Either.isLeft(busy) && busy.left).toMatchObject({ _tag: "TurnInProgress", turnId: "turn_1" })

        yield* engine.resolvePermission({ sessionId, toolCallId: asked, decision: "allow" })
        const resumed = yield* collect(engine.resumeTurn({ sessionId }))
        expect(typesOf(resumed)).toEqual(["tool.started", "tool.completed", "model.delta", "turn.completed"])
        expect(resumed.at(-1)!.payload).toEqual({ stopReason: "final" })
        expect(runs.count).toBe(1)
        const log = yield* replay(sessionId)
        expect(log.filter((e) => e.type === "permission.resolved").map((e) => e.payload)).toEqual([
          { toolCallId: asked, decision: "ask", policy: "default/write", actor: "policy" },
          { toolCallId: asked, decision: "allow", actor: "user" }
        ])
        expectWellFormedLog(log)
        const again = yield* Effect.either(collect(engine.resumeTurn({ sessionId })))
        expect(Either.isLeft(again) && again.left._tag).toBe("NothingToResume")
      }))
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("resumeTurn first, then the answer: the resumed turn waits for it; a paused turn can also be cancelled", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      const runs = { count: 0 }
      const pausedSession = (running: Effect.Effect.Success<ReturnType<typeof process<SessionEngine, never>>>) =>
        running.provide(Effect.gen(function*() {
          const engine = yield* SessionEngine
          const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
          const asked = yield* Deferred.make<string>()
          yield* engine.runTurn({ sessionId, userMessage: "save" }).pipe(
            Stream.tap((e) => e.type === "permission.resolved" && e.payload.decision === "ask" ? Deferred.succeed(asked, e.payload.toolCallId) : Effect.void),
            Stream.runDrain,
            Effect.forkDaemon
          )
          return { sessionId, toolCallId: yield* Deferred.await(asked) }
        }))
      const script = { responses: [1, 2].flatMap(() => [{ toolCalls: [{ tool: "save", args: {} }] }]) }
      const first = yield* process(engineOn(dataDir, script, runs))
      const a = yield* pausedSession(first)
      const b = yield* pausedSession(first)
      yield* first.stop

      const second = yield* process(engineOn(dataDir, { responses: [{ chunks: ["done"] }] }, runs))
      yield* second.provide(Effect.gen(function*() {
        const engine = yield* SessionEngine
        yield* engine.sessionState({ sessionId: a.sessionId })
        const resumed = yield* Effect.fork(collect(engine.resumeTurn({ sessionId: a.sessionId })))
        // Let the forked stream start its driver (it registers the wait before anything else); the answer then goes to it.
        yield* Effect.repeatN(Effect.yieldNow(), 20)
        yield* engine.resolvePermission({ sessionId: a.sessionId, toolCallId: a.toolCallId, decision: "deny" })
        const events = yield* Fiber.join(resumed)
        expect(events.map((e) => e.type)).toEqual(["permission.resolved", "tool.failed", "model.delta", "turn.completed"])
        expect(runs.count).toBe(0)

        yield* engine.cancelTurn({ sessionId: b.sessionId })
        const log = yield* replay(b.sessionId)
        expect(log.slice(-2).map((e) => [e.type, e.payload])).toEqual([
          ["tool.failed", { toolCallId: b.toolCallId, errorCode: "cancelled", message: "The tool call did not finish: cancelled." }],
          ["turn.completed", { stopReason: "cancelled" }]
        ])
        expectWellFormedLog(log)
        expectWellFormedLog(yield* replay(a.sessionId))
      }))
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("a log edited into an impossible order is a typed error naming the sequence", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      yield* Effect.gen(function*() {
        const store = yield* EventStore
        const base = { sessionId: "sess_edited", timestamp: "2026-01-01T00:00:00.000Z" }
        yield* store.append({ ...base, id: "e1", sequence: 1, type: "session.created", payload: { cwd: "/w", client: "cli" } })
        yield* store.append({ ...base, turnId: "t1", id: "e2", sequence: 2, type: "model.delta", payload: { text: "no turn started" } })
      }).pipe(Effect.provide(JsonlEventStore.layer({ dataDir })))
      yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        const result = yield* Effect.either(collect(engine.runTurn({ sessionId: "sess_edited", userMessage: "hi" })))
        expect(Either.isLeft(result) && result.left).toMatchObject({ _tag: "EventStoreFailure", reason: "corrupt", sequence: 2 })
        expect(Either.isLeft(result) && result.left.message).toContain("model.delta of turn t1, which is not the open turn")
        // Replay still shows the log as it is.
        expect(yield* replay("sess_edited")).toHaveLength(2)
      }).pipe(Effect.provide(engineOn(dataDir, {})))
    }).pipe(Effect.provide(NodeContext.layer)))

  for (const kind of ["jsonl", "sqlite"] as const) {
    it.scoped(`one writer per session (${kind}): while a turn runs, a second engine gets SessionBusy and closes nothing; it goes on once the first stops`, () =>
      Effect.gen(function*() {
        const dir = yield* tempDir
        const store = kind === "sqlite" ? SqliteEventStore.layer({ filename: `${dir}/shared.sqlite` }) : JsonlEventStore.layer({ dataDir: dir })
        const engineOn = (script: FakeModelProvider.Options) => engineLayer(store, script).pipe(Layer.provideMerge(NodeContext.layer))
        // The first engine's second answer never comes (the test clock does not move): its turn stays open, running.
        const a = yield* process(engineOn({ responses: [{ chunks: ["from a"] }, { chunks: ["slow"], delay: "1 hour" }] }))
        const b = yield* process(engineOn({ responses: [{ chunks: ["from b"] }] }))
        const { running, sessionId, slowTurn } = yield* a.provide(Effect.gen(function*() {
          const engine = yield* SessionEngine
          const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
          yield* collect(engine.runTurn({ sessionId, userMessage: "one" }))
          const turnStarted = yield* Deferred.make<string>()
          const running = yield* engine.runTurn({ sessionId, userMessage: "slow" }).pipe(
            Stream.tap((e) => e.type === "turn.started" ? Deferred.succeed(turnStarted, e.turnId) : Effect.void),
            collect,
            Effect.fork
          )
          return { running, sessionId, slowTurn: yield* Deferred.await(turnStarted) }
        }))
        yield* b.provide(Effect.gen(function*() {
          const engine = yield* SessionEngine
          const busy = yield* Effect.either(collect(engine.runTurn({ sessionId, userMessage: "two, elsewhere" })))
          expect(Either.isLeft(busy) && busy.left).toMatchObject({ _tag: "SessionBusy", sessionId })
          expect(Either.isLeft(busy) && busy.left.message).toMatch(/is busy \(SessionBusy\): it is driven by pid \d+ on host /)
          // Before writer locks, this engine closed the running turn as if its process had crashed.
          const log = yield* replay(sessionId)
          expect(log.filter((e) => e.type === "turn.completed" && e.turnId === slowTurn)).toEqual([])
          expect(log.filter((e) => e.type === "user.message").map((e) => e.payload.content)).toEqual(["one", "slow"])
          expect((yield* engine.sessionState({ sessionId })).openTurn?.turnId).toBe(slowTurn)
        }))
        // The first engine's turn ends as it would have (cancelled by its caller), then the engine shuts down.
        yield* Fiber.interrupt(running)
        yield* a.stop
        yield* b.provide(Effect.gen(function*() {
          const engine = yield* SessionEngine
          const events = yield* collect(engine.runTurn({ sessionId, userMessage: "two, now" }))
          expect(events.at(-1)!.payload).toEqual({ stopReason: "final" })
          const log = yield* replay(sessionId)
          expectWellFormedLog(log)
          expect(log.filter((e) => e.type === "turn.completed").map((e) => e.payload.stopReason)).toEqual(["final", "cancelled", "final"])
          expect(log.filter((e) => e.type === "user.message").map((e) => e.payload.content)).toEqual(["one", "slow", "two, now"])
        }))
      }).pipe(Effect.provide(NodeContext.layer)))
  }

  it("SessionState.isPaused: waiting, or answered by the user and not yet gone on", () => {
    const state = (status: SessionState.ToolCallStatus, decidedBy?: "policy" | "user") =>
      ({ openTurn: { toolCalls: [{ toolCallId: "c", tool: "t", args: {}, status, ...(decidedBy ? { decidedBy } : {}) }] } }) as unknown as SessionState.SessionState
    expect(SessionState.isPaused(state("awaiting_approval"))).toBe(true)
    expect(SessionState.isPaused(state("allowed", "user"))).toBe(true)
    expect(SessionState.isPaused(state("allowed", "policy"))).toBe(false)
    expect(SessionState.isPaused(state("running", "user"))).toBe(false)
  })
})
