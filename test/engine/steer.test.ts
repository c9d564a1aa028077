import { describe, expect, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import { NoTurnInProgress } from "../../src/index.js"
import * as Transcript from "../../src/domain/Transcript.js"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import { FakeModel } from "../../src/layers/FakeModelProvider.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import { PermissionEngine } from "../../src/services/PermissionEngine.js"
import { collect, engineLayer, expectWellFormedLog, testTools, typesOf } from "../helpers.js"

const allowAll = Layer.succeed(PermissionEngine, { decide: () => Effect.succeed({ decision: "allow" as const, policy: "test" }) })

/** A tool that runs until the test opens its gate, and says when it has started. */
const gatedTool = (started: Deferred.Deferred<void>, gate: Deferred.Deferred<void>) =>
  testTools({
    wait: { run: () => Deferred.succeed(started, undefined).pipe(Effect.zipRight(Deferred.await(gate)), Effect.as({ result: "waited" })) }
  })

const script = { responses: [{ toolCalls: [{ tool: "wait", args: {} }] }, { chunks: ["done"] }] }

describe("steer", () => {
  it.effect("a steer during a tool run is stored after the tool results and before the next request, in arrival order", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const gate = yield* Deferred.make<void>()
      yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
        const turn = yield* collect(engine.runTurn({ sessionId, userMessage: "go" })).pipe(Effect.fork)
        yield* Deferred.await(started)
        yield* engine.steer({ sessionId, message: "use tabs" })
        yield* engine.steer({ sessionId, message: "and be brief" })
        yield* Deferred.succeed(gate, undefined)
        const emitted = yield* Fiber.join(turn)
        expect(typesOf(emitted)).toEqual([
          "turn.started",
          "user.message",
          "context.built",
          "model.tool_call_requested",
          "permission.requested",
          "permission.resolved",
          "tool.started",
          "tool.completed",
          "turn.steered",
          "turn.steered",
          "model.delta",
          "turn.completed"
        ])
        expect(emitted.filter((e) => e.type === "turn.steered").map((e) => e.payload)).toEqual([{ content: "use tabs" }, { content: "and be brief" }])
        // The second request carried the steers as user messages, after the tool result.
        const requests = yield* Effect.flatMap(FakeModel, (m) => m.requests)
        expect(requests).toHaveLength(2)
        expect(requests[1]!.messages.slice(-3)).toEqual([
          { role: "tool", toolCallId: "call_1", tool: "wait", content: "waited", isError: false },
          { role: "user", content: "use tabs" },
          { role: "user", content: "and be brief" }
        ])
        const log = yield* collect(engine.replaySession({ sessionId }))
        expectWellFormedLog(log)
        // Replay gives the same conversation the model saw.
        expect(Transcript.messages(Transcript.replay(log)).slice(0, 5)).toEqual(requests[1]!.messages)
      }).pipe(Effect.provide(engineLayer(MemoryEventStore.layer, script).pipe(Layer.provideMerge(gatedTool(started, gate)), Layer.provideMerge(allowAll))))
    }))

  it.effect("a steer with no running turn fails NoTurnInProgress; an empty one InvalidInput; nothing is stored", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      const idle = yield* Effect.flip(engine.steer({ sessionId, message: "hello" }))
      expect(idle).toBeInstanceOf(NoTurnInProgress)
      expect(idle._tag).toBe("NoTurnInProgress")
      yield* collect(engine.runTurn({ sessionId, userMessage: "hi" }))
      expect((yield* Effect.flip(engine.steer({ sessionId, message: "late" })))._tag).toBe("NoTurnInProgress")
      expect((yield* Effect.flip(engine.steer({ sessionId, message: "  " })))._tag).toBe("InvalidInput")
      expect((yield* Effect.flip(engine.steer({ sessionId: "session_nope", message: "x" })))._tag).toBe("SessionNotFound")
      const log = yield* collect(engine.replaySession({ sessionId }))
      expect(log.some((e) => e.type === "turn.steered")).toBe(false)
    }).pipe(Effect.provide(engineLayer(MemoryEventStore.layer, { responses: [{ chunks: ["ok"] }] }))))

  it.effect("a steer once the turn has decided how it ends is refused (NoTurnInProgress), never silently dropped", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      const refused: Array<string> = []
      yield* collect(engine.runTurn({ sessionId, userMessage: "go" }).pipe(
        Stream.tap((e) =>
          e.type === "turn.completed"
            ? Effect.flip(engine.steer({ sessionId, message: "too late" })).pipe(Effect.map((error) => refused.push(error._tag)))
            : Effect.void
        )
      ))
      expect(refused).toEqual(["NoTurnInProgress"])
    }).pipe(Effect.provide(engineLayer(MemoryEventStore.layer, { responses: [{ chunks: ["ok"] }] }))))

  it.effect("a steer that comes while the model gives its final answer makes one more step", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      const emitted = yield* collect(engine.runTurn({ sessionId, userMessage: "go" }).pipe(
        Stream.tap((e) => e.type === "model.delta" && e.payload.text === "first" ? engine.steer({ sessionId, message: "more" }) : Effect.void)
      ))
      expect(typesOf(emitted)).toEqual(["turn.started", "user.message", "model.delta", "turn.steered", "model.delta", "turn.completed"])
      expect(emitted.at(-1)!.payload).toMatchObject({ stopReason: "final" })
    }).pipe(Effect.provide(engineLayer(MemoryEventStore.layer, { responses: [{ chunks: ["first"] }, { chunks: ["second"] }] }))))
})
