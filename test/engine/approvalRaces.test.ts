/**
 * Races around an approval, each step put in place by a gate in the store (never a sleep): a cancel
 * between the user's answer and the tool's start, and an answer while the turn is being cancelled.
 * Each has one outcome: the turn ends `cancelled`, the call `tool.failed {cancelled}`, the tool never
 * runs, and the log stays well formed; a late answer fails `ApprovalNotPending` or is refused, never
 * stored after the call's close.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import { EventStore } from "../../src/services/EventStore.js"
import { collect, engineLayer, expectWellFormedLog, testTools } from "../helpers.js"

/** A memory store that holds the append of the first event matching `at` (before storing it) until released. */
const gated = (at: (event: AgentEvent) => boolean) =>
  Effect.gen(function*() {
    const reached = yield* Deferred.make<void>()
    const release = yield* Deferred.make<void>()
    let armed = true
    const hold = (events: ReadonlyArray<AgentEvent>) =>
      Effect.suspend(() => {
        if (!armed || !events.some(at)) return Effect.void
        armed = false
        return Effect.zipRight(Deferred.succeed(reached, undefined), Deferred.await(release))
      })
    const layer = Layer.effect(
      EventStore,
      Effect.map(EventStore, (store) => ({
        ...store,
        append: (event: AgentEvent) => Effect.zipRight(hold([event]), store.append(event)),
        appendAll: (events: ReadonlyArray<AgentEvent>) => Effect.zipRight(hold(events), store.appendAll(events))
      }))
    ).pipe(Layer.provide(MemoryEventStore.layer))
    return { layer, reached: Deferred.await(reached), release: Deferred.succeed(release, undefined) }
  })

const engineOn = (store: Layer.Layer<EventStore>, runs: { count: number }) =>
  engineLayer(store, { responses: [{ chunks: ["Saving."], toolCalls: [{ tool: "save", args: { file: "a" } }] }, { chunks: ["Next."] }] }).pipe(
    Layer.provideMerge(testTools({ save: { risk: "write", run: () => Effect.sync(() => ({ result: `saved (${++runs.count})` })) } })),
    Layer.provideMerge(PermissionPolicy.layer())
  )

const isAsk = (e: AgentEvent) => e.type === "permission.resolved" && e.payload.decision === "ask"

/** Starts the turn and waits for its ask; the running turn's fiber and the asked call. */
const askedTurn = (sessionId: string) =>
  Effect.gen(function*() {
    const engine = yield* SessionEngine
    const asked = yield* Deferred.make<string>()
    const turn = yield* engine.runTurn({ sessionId, userMessage: "save a" }).pipe(
      Stream.tap((e) => isAsk(e) && e.type === "permission.resolved" ? Deferred.succeed(asked, e.payload.toolCallId) : Effect.void),
      collect,
      Effect.either,
      Effect.fork
    )
    return { turn, toolCallId: yield* Deferred.await(asked) }
  })

/** The one outcome both races must have: cancelled, the call closed `cancelled`, nothing run, and the session goes on. */
const expectCancelledCleanly = (sessionId: string, runs: { count: number }, startStored = false) =>
  Effect.gen(function*() {
    const engine = yield* SessionEngine
    const log = yield* collect(engine.replaySession({ sessionId }))
    expectWellFormedLog(log)
    expect(runs.count).toBe(0)
    // A start whose append had begun is stored (an append is not cut half way), and the call still never runs.
    expect(log.some((e) => e.type === "tool.started")).toBe(startStored)
    expect(log.filter((e) => e.type === "tool.failed").map((e) => e.payload.errorCode)).toEqual(["cancelled"])
    expect(log.at(-1)?.payload).toEqual({ stopReason: "cancelled" })
    const next = yield* collect(engine.runTurn({ sessionId, userMessage: "next" }))
    expect(next.at(-1)?.payload).toEqual({ stopReason: "final" })
  })

describe("races around an approval", () => {
  const cancels: ReadonlyArray<readonly [string, (e: AgentEvent) => boolean, boolean]> = [
    ["a cancel while the answer is being stored: cancelled, the tool never runs", (e) => e.type === "permission.resolved" && e.payload.actor === "user", false],
    // `tool.started` is stored whole (an append is never cut half way) before the call is closed.
    ["a cancel after the answer is stored, while the tool's start is being stored: cancelled, the tool never runs", (e) => e.type === "tool.started", true]
  ]
  for (const [name, gatedOn, started] of cancels) {
    it.effect(name, () => {
      const runs = { count: 0 }
      return Effect.gen(function*() {
        const gate = yield* gated(gatedOn)
        return yield* Effect.gen(function*() {
          const engine = yield* SessionEngine
          const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
          const { turn, toolCallId } = yield* askedTurn(sessionId)
          const answer = yield* Effect.fork(Effect.either(engine.resolvePermission({ sessionId, toolCallId, decision: "allow" })))
          yield* gate.reached
          const cancel = yield* Effect.fork(engine.cancelTurn({ sessionId }))
          // The cancel is requested (its interruption delivered) before the gated event is stored.
          yield* Effect.repeatN(Effect.yieldNow(), 50)
          yield* gate.release
          yield* Fiber.join(cancel)
          yield* Fiber.join(answer)
          yield* Fiber.join(turn)
          yield* expectCancelledCleanly(sessionId, runs, started)
        }).pipe(Effect.provide(engineOn(gate.layer, runs)))
      })
    })
  }

  it.effect("an answer while the turn is being cancelled: refused or ignored, never stored after the call's close; the tool never runs", () => {
    const runs = { count: 0 }
    return Effect.gen(function*() {
      const gate = yield* gated((e) => e.type === "tool.failed")
      return yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
        const { turn, toolCallId } = yield* askedTurn(sessionId)
        const cancel = yield* Effect.fork(engine.cancelTurn({ sessionId }))
        yield* gate.reached
        const answer = yield* Effect.fork(Effect.either(engine.resolvePermission({ sessionId, toolCallId, decision: "allow" })))
        yield* Effect.repeatN(Effect.yieldNow(), 50)
        yield* gate.release
        yield* Fiber.join(cancel)
        const answered = yield* Fiber.join(answer)
        if (Either.isLeft(answered)) expect(answered.left._tag).toBe("ApprovalNotPending")
        yield* Fiber.join(turn)
        yield* expectCancelledCleanly(sessionId, runs)
      }).pipe(Effect.provide(engineOn(gate.layer, runs)))
    })
  })
})
