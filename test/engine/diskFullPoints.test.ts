/**
 * A full disk from each append of a turn on, until it frees: the turn's stream fails with a typed
 * `EventStoreFailure` (so does an approval whose answer cannot be stored), nothing emitted is
 * missing from the log, and once the disk frees the session goes on — the open turn closed
 * `event_store_failure`, or a paused one resumed — with the tool run at most once.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import { EventStoreFailure } from "../../src/domain/Errors.js"
import * as SessionState from "../../src/domain/SessionState.js"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import { EventStore } from "../../src/services/EventStore.js"
import { collect, engineLayer, expectWellFormedLog, testTools, turnAllowingAsks } from "../helpers.js"

/** A memory store whose disk is full from the `from`th append on, until `free()`. */
const fillingAt = (from: number) => {
  let appends = 0
  let full = false
  const refuse = (sessionId: string) => new EventStoreFailure({ reason: "disk_full", operation: "append", sessionId, detail: "simulated: no space left on device" })
  const layer = Layer.effect(
    EventStore,
    Effect.map(EventStore, (store) => ({
      ...store,
      append: (event: AgentEvent) =>
        Effect.suspend(() => (full ||= ++appends >= from) ? Effect.fail(refuse(event.sessionId)) : store.append(event)),
      appendAll: (events: ReadonlyArray<AgentEvent>) =>
        Effect.suspend(() => {
          appends += events.length
          return (full ||= appends >= from) ? Effect.fail(refuse(events[0]?.sessionId ?? "")) : store.appendAll(events)
        })
    }))
  ).pipe(Layer.provide(MemoryEventStore.layer))
  return { layer, free: () => void (full = false, appends = -Infinity) }
}

const engineOn = (store: Layer.Layer<EventStore>, runs: { count: number }) =>
  engineLayer(store, { responses: [{ chunks: ["Saving."], toolCalls: [{ tool: "save", args: { file: "a" } }] }, { chunks: ["Saved."] }, { chunks: ["Next."] }, { chunks: ["More."] }] }).pipe(
    Layer.provideMerge(testTools({ save: { risk: "write", run: () => Effect.sync(() => ({ result: `saved (${++runs.count})` })) } })),
    Layer.provideMerge(PermissionPolicy.layer())
  )

describe("a full disk from each append of a turn on", () => {
  // 1 session.created … 13 turn.completed: the turn of test/engine/crashPoints.integration.test.ts.
  for (let from = 2; from <= 13; from++) {
    it.effect(`from append ${from}: a typed failure, nothing acknowledged lost, the session goes on once the disk frees`, () => {
      const runs = { count: 0 }
      const disk = fillingAt(from)
      return Effect.gen(function*() {
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
        const emitted: Array<AgentEvent> = []
        const answers: Array<Either.Either<void, { readonly _tag: string }>> = []
        const result = yield* engine.runTurn({ sessionId, userMessage: "save a" }).pipe(
          Stream.tap((e) =>
            Effect.zipRight(
              Effect.sync(() => emitted.push(e)),
              e.type === "permission.resolved" && e.payload.decision === "ask"
                ? Effect.fork(Effect.flatMap(Effect.either(engine.resolvePermission({ sessionId, toolCallId: e.payload.toolCallId, decision: "allow" })), (a) => Effect.sync(() => answers.push(a))))
                : Effect.void
            )
          ),
          Stream.runDrain,
          Effect.either
        )
        expect(Either.isLeft(result) && result.left._tag).toBe("EventStoreFailure")
        for (const answer of answers) if (Either.isLeft(answer)) expect(answer.left._tag).toBe("EventStoreFailure")
        const stored = yield* collect(engine.replaySession({ sessionId }))
        // Every event emitted was stored, in order; nothing after the failure.
        expect(stored.slice(1)).toEqual(emitted)
        expect(stored.length).toBeLessThan(from)
        // Still full: the next turn fails typed too, and appends nothing.
        const stillFull = yield* Effect.either(collect(engine.runTurn({ sessionId, userMessage: "next" })))
        expect(Either.isLeft(stillFull) && stillFull.left._tag).toMatch(/^(EventStoreFailure|TurnInProgress)$/)
        expect(yield* collect(engine.replaySession({ sessionId }))).toEqual(stored)

        disk.free()
        const state = yield* engine.sessionState({ sessionId })
        if (SessionState.isPaused(state)) {
          for (const call of yield* engine.pendingApprovals({ sessionId })) {
            yield* engine.resolvePermission({ sessionId, toolCallId: call.toolCallId, decision: "allow" })
          }
          const resumed = yield* collect(engine.resumeTurn({ sessionId }))
          expect(resumed.at(-1)?.payload).toEqual({ stopReason: "final" })
        }
        const ranBefore = runs.count
        // The model's script goes on where the failed turn left it: the next turn may be the one that asks.
        const next = yield* turnAllowingAsks(sessionId, "next")
        expect(next.at(-1)?.payload).toEqual({ stopReason: "final" })
        const log = yield* collect(engine.replaySession({ sessionId }))
        expectWellFormedLog(log)
        expect(log.slice(0, stored.length)).toEqual(stored)
        const started = stored.some((e) => e.type === "tool.started")
        expect(ranBefore).toBe(started || SessionState.isPaused(state) ? 1 : 0)
        if (state.openTurn !== undefined && !SessionState.isPaused(state)) {
          expect(log.find((e) => e.type === "turn.completed")?.payload).toEqual({ stopReason: "error", errorCode: "event_store_failure" })
        }
      }).pipe(Effect.provide(engineOn(disk.layer, runs)))
    })
  }
})
