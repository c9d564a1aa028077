/**
 * A crash at every append point of a turn, on each durable store. The turn: text, a write call that
 * asks, the user's allow, the tool's run, a final answer. "Process one" runs it on a store that keeps
 * only its first `k` events (the disk saw nothing after the crash), then stops; "process two" opens
 * the same data: the session loads, replay shows exactly those `k` events, the open turn is closed
 * the way the contract names (a started call `interrupted`, never run again; a call still waiting
 * on its answer, or answered and not started, resumed), and the next turn runs.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Scope from "effect/Scope"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import * as SessionState from "../../src/domain/SessionState.js"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import * as JsonlEventStore from "../../src/layers/JsonlEventStore.js"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as PostgresEventStore from "../../src/layers/PostgresEventStore.js"
import * as SqliteEventStore from "../../src/layers/SqliteEventStore.js"
import { EventStore } from "../../src/services/EventStore.js"
import { collect, engineLayer, expectWellFormedLog, tempDir, testTools, turnAllowingAsks } from "../helpers.js"
import { freshSchemaUrl } from "../postgres.js"

/** The store, keeping only its first `kept` events: every later append "succeeds" and stores nothing, as after a crash. */
const crashingAfter = (inner: Layer.Layer<EventStore, unknown>, kept: number) =>
  Layer.effect(
    EventStore,
    Effect.map(EventStore, (store) => {
      let appended = 0
      return {
        ...store,
        append: (event: AgentEvent) => Effect.suspend(() => ++appended <= kept ? store.append(event) : Effect.void),
        appendAll: (events: ReadonlyArray<AgentEvent>) =>
          Effect.suspend(() => {
            const room = Math.max(0, kept - appended)
            appended += events.length
            return store.appendAll(events.slice(0, room))
          })
      }
    })
  ).pipe(Layer.provide(inner))

const engineOn = (store: Layer.Layer<EventStore, unknown>, responses: number, runs: { count: number }, calls = 1) =>
  engineLayer(store, { responses: Array.from({ length: responses }, (_, i) => i < calls ? { chunks: ["Saving."], toolCalls: [{ tool: "save", args: { file: "a" } }] } : { chunks: ["Saved."] }) }).pipe(
    Layer.provideMerge(testTools({ save: { risk: "write", run: () => Effect.sync(() => ({ result: `saved (${++runs.count})` })) } })),
    Layer.provideMerge(PermissionPolicy.layer()),
    Layer.provideMerge(NodeContext.layer)
  )

/** Builds a layer in its own scope: a "process" that can be stopped while another opens the same data. */
const started = <A, E>(layer: Layer.Layer<A, E>) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const context = yield* Layer.buildWithScope(layer, scope)
    return { provide: <X, Y, R>(effect: Effect.Effect<X, Y, R>) => Effect.provide(effect, context), stop: Scope.close(scope, Exit.void) }
  })

/** Each durable store, fresh (its data in a new folder or schema). */
const stores: ReadonlyArray<[string, Effect.Effect<Layer.Layer<EventStore, unknown>, never, Scope.Scope | NodeContext.NodeContext>]> = [
  ["jsonl", Effect.map(Effect.orDie(tempDir), (dataDir) => JsonlEventStore.layer({ dataDir }).pipe(Layer.provide(NodeContext.layer)))],
  ["sqlite", Effect.map(Effect.orDie(tempDir), (dir) => SqliteEventStore.layer({ filename: `${dir}/events.sqlite` }).pipe(Layer.provide(NodeContext.layer)))],
  ["postgres", Effect.map(freshSchemaUrl("crash"), (url) => PostgresEventStore.layer({ url: Redacted.make(url) }))]
]

/** What the whole turn appends when nothing crashes (session.created included). */
const wholeTurn = Effect.gen(function*() {
  const runs = { count: 0 }
  const store = yield* stores[0]![1]
  return yield* Effect.gen(function*() {
    const { sessionId } = yield* (yield* SessionEngine).createSession({ cwd: "/work", client: "test" })
    return yield* turnAllowingAsks(sessionId, "save a")
  }).pipe(Effect.provide(engineOn(store, 2, runs)))
}).pipe(Effect.scoped, Effect.provide(NodeContext.layer))

describe("a crash right after each append of a turn", () => {
  for (const [kind, makeStore] of stores) {
    it.scoped(`${kind}: the next process loads, closes or resumes the turn as the contract says, never runs a started tool again`, () =>
      Effect.gen(function*() {
        const total = (yield* wholeTurn).length + 1
        for (let kept = 1; kept <= total; kept++) {
          const store = yield* makeStore
          const first = yield* started(engineOn(crashingAfter(store, kept), 2, { count: 0 }))
          const { emitted, sessionId } = yield* first.provide(Effect.gen(function*() {
            const session = yield* (yield* SessionEngine).createSession({ cwd: "/work", client: "test" })
            return { sessionId: session.sessionId, emitted: yield* turnAllowingAsks(session.sessionId, "save a") }
          }))
          yield* first.stop
          // The turn's events are 2..total: the one at `kept` is the last on disk.
          expect(emitted).toHaveLength(total - 1)
          const at = `crash after ${kept} (${kept === 1 ? "session.created" : emitted[kept - 2]!.type})`

          const runs = { count: 0 }
          const second = yield* started(engineOn(store, 3, runs, 0))
          yield* second.provide(Effect.gen(function*() {
            const engine = yield* SessionEngine
            const stored = yield* collect(engine.replaySession({ sessionId }))
            expect(stored, at).toHaveLength(kept)
            expect(stored.slice(1), at).toEqual(emitted.slice(0, kept - 1))
            const state = yield* engine.sessionState({ sessionId })
            if (SessionState.isPaused(state)) {
              // Waiting on the user's answer, or answered and not yet started: a pause, not a crash.
              const busy = yield* Effect.either(collect(engine.runTurn({ sessionId, userMessage: "next" })))
              expect(Either.isLeft(busy) && busy.left._tag, at).toBe("TurnInProgress")
              for (const call of yield* engine.pendingApprovals({ sessionId })) {
                yield* engine.resolvePermission({ sessionId, toolCallId: call.toolCallId, decision: "allow" })
              }
              const resumed = yield* collect(engine.resumeTurn({ sessionId }))
              expect(resumed.at(-1)?.payload, at).toEqual({ stopReason: "final" })
              expect(runs.count, at).toBe(1)
            } else {
              const next = yield* collect(engine.runTurn({ sessionId, userMessage: "next" }))
              expect(next.at(-1)?.payload, at).toEqual({ stopReason: "final" })
              expect(runs.count, `${at}: the tool runs again`).toBe(0)
              const log = yield* collect(engine.replaySession({ sessionId }))
              const openTurn = state.openTurn !== undefined
              const repair = log.slice(kept, log.length - next.length)
              if (!openTurn) expect(repair, at).toEqual([])
              else {
                expect(repair.at(-1)?.payload, at).toEqual({ stopReason: "error", errorCode: "interrupted" })
                // A call requested and not finished (started or not) is reported, and the model sees it did not finish.
                const unfinished = stored.some((e) => e.type === "model.tool_call_requested") && !stored.some((e) => e.type === "tool.completed")
                expect(repair.filter((e) => e.type === "tool.failed").map((e) => e.payload), at).toEqual(
                  unfinished ? [{ toolCallId: "call_1", errorCode: "interrupted", message: "The tool call did not finish: interrupted." }] : []
                )
              }
            }
            expectWellFormedLog(yield* collect(engine.replaySession({ sessionId })))
          }))
          yield* second.stop
        }
      }).pipe(Effect.provide(NodeContext.layer)), 120_000)
  }
})
