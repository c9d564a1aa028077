/**
 * A turn's budget through a runner (review62b): `POST /sessions/:id/turns` with `budget` under
 * `serve --cluster` reaches the owner's engine, as under plain `serve` — it is checked there
 * (`InvalidInput`, a 400 on the wire), stored in `turn.started` and holds the turn to it. The routed
 * engine's `runTurn` carries it the same way.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import type { AgentEvent } from "../../src/index.js"
import { freshDatabaseUrl } from "../postgres.js"
import { runnerInProcess } from "./inProcess.js"

const poll = Schedule.spaced(Duration.millis(50))

describe("a turn's budget through a runner", () => {
  it.live("Turns.start and runTurn carry the budget to the owner: checked, stored and holding the turn to it", () =>
    Effect.gen(function*() {
      const url = yield* freshDatabaseUrl("budget")
      const { engine, turns } = yield* runnerInProcess(url, { shardsPerGroup: 4, shardLockTtl: Duration.seconds(3) }, [
        // Without a budget, a turn of two steps (the call, then the answer); the second is the next turn's.
        { toolCalls: [{ tool: "note", args: { text: "one" } }] },
        { chunks: ["streamed"] }
      ])
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      const events = Effect.map(Stream.runCollect(engine.replaySession({ sessionId })), Chunk.toReadonlyArray)

      // A bad budget is refused on the owner, as the engine refuses it, and starts nothing.
      expect(yield* Effect.flip(turns.start(sessionId, "x", [], { maxTokens: -1 }))).toMatchObject({ _tag: "InvalidInput", field: "budget" })
      expect((yield* events).filter((e) => e.type === "turn.started")).toEqual([])

      // One step allowed: the turn stops at the first step boundary, budget_exceeded.
      const turnId = yield* turns.start(sessionId, "go", [], { maxSteps: 1 })
      const [call] = yield* engine.pendingApprovals({ sessionId }).pipe(
        Effect.filterOrFail((calls) => calls.length > 0),
        Effect.retry({ schedule: poll, times: 400 })
      )
      yield* engine.resolvePermission({ sessionId, toolCallId: call!.toolCallId, decision: "allow" })
      const log = yield* events.pipe(
        Effect.filterOrFail((log) => log.some((e) => e.type === "turn.completed" && e.turnId === turnId)),
        Effect.retry({ schedule: poll, times: 400 })
      )
      const started = log.find((e): e is typeof AgentEvent.TurnStarted.Type => e.type === "turn.started" && e.turnId === turnId)
      const completed = log.find((e): e is typeof AgentEvent.TurnCompleted.Type => e.type === "turn.completed" && e.turnId === turnId)
      expect(started?.payload.budget).toEqual({ maxSteps: 1 })
      expect(completed?.payload).toMatchObject({ stopReason: "error", errorCode: "budget_exceeded" })
      expect(log.filter((e) => e.type === "model.tool_call_requested" && e.turnId === turnId)).toHaveLength(1)

      // The routed engine's runTurn: the same budget reaches the owner.
      const streamed = Chunk.toReadonlyArray(yield* Stream.runCollect(engine.runTurn({ sessionId, userMessage: "again", budget: { maxCost: 5 } })))
      expect(streamed.find((e) => e.type === "turn.started")).toMatchObject({ payload: { budget: { maxCost: 5 } } })
      expect(yield* Effect.flip(Stream.runDrain(engine.runTurn({ sessionId, userMessage: "bad", budget: { maxSteps: 0 } })))).toMatchObject({ _tag: "InvalidInput", field: "budget" })
    }).pipe(Effect.scoped, Effect.orDie), { timeout: 90_000 })
})
