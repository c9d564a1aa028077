/**
 * Cassettes: a session recorded through a real SDK (against the local wire server) becomes a script;
 * the scripted model replays it with the same ids and clock, and the log comes out the same.
 */
import { readFileSync } from "node:fs"
import { resolve } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import * as SessionEngineModule from "../../src/engine/SessionEngine.js"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import * as AnthropicModelProvider from "../../src/layers/AnthropicModelProvider.js"
import * as Cassette from "../../src/layers/Cassette.js"
import * as FakeModelProvider from "../../src/layers/FakeModelProvider.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import type { ModelProvider } from "../../src/services/ModelProvider.js"
import * as IdGenerator from "../../src/services/IdGenerator.js"
import { ToolFailure } from "../../src/services/ToolRouter.js"
import { collect, expectWellFormedLog, testTools } from "../helpers.js"
import * as WireServer from "./WireServer.js"

let server: WireServer.WireServer
beforeAll(async () => {
  server = await WireServer.start()
})
afterAll(() => server.close())

// Deterministic tools: the replay must get the same results as the recording.
const tools = testTools({
  read_file: { run: () => Effect.succeed({ result: "contents of src/index.ts" }) },
  grep: { run: () => Effect.fail(new ToolFailure({ errorCode: "io_error", message: "src: Permission denied" })) }
})

const engine = (model: Layer.Layer<ModelProvider>) =>
  SessionEngineModule.layer().pipe(
    Layer.provide(MemoryEventStore.layer),
    Layer.provide(IdGenerator.layerSequential),
    Layer.provide(model),
    Layer.provide(Layer.mergeAll(tools, PermissionPolicy.layer({ mode: "bypass" })))
  )

/** Two turns — a retried 429, two tool calls and an answer; then an answer cut by an error mid-stream. */
const session = Effect.gen(function*() {
  const agent = yield* SessionEngine
  const { sessionId } = yield* agent.createSession({ cwd: "/work", client: "test" })
  const turn = (userMessage: string) =>
    agent.runTurn({ sessionId, userMessage }).pipe(
      Stream.tap((e) => (e.type === "model.retry" ? TestClock.adjust(e.payload.delayMs) : Effect.void)),
      collect
    )
  yield* turn("find the TODOs")
  yield* turn("and now?")
  return yield* collect(agent.replaySession({ sessionId }))
})

describe("Cassette", () => {
  it.effect("a session recorded through the Anthropic SDK replays through the scripted model to the same log", () =>
    Effect.gen(function*() {
      server.respond(...["rate-limited", "tool-calls", "text", "error-mid-stream"].map((n) => WireServer.recording("anthropic", n)))
      const recorded = yield* session.pipe(
        Effect.provide(engine(AnthropicModelProvider.layer({ apiKey: Redacted.make("sk-ant-test"), baseURL: server.url })))
      )
      expectWellFormedLog(recorded)
      const types = recorded.map((e) => e.type)
      expect(types).toContain("model.retry")
      expect(types.filter((t) => t === "model.tool_call_requested")).toHaveLength(2)
      expect(recorded.at(-1)!.payload).toMatchObject({ stopReason: "error" })

      // Through JSON, as `effect-agent export-script` writes it.
      const script = JSON.parse(JSON.stringify(Cassette.fromEvents(recorded))) as FakeModelProvider.Script
      expect(script.responses.map((r) => r.failure?.reason ?? "answer")).toEqual(["rate_limited", "answer", "answer", "overloaded"])
      const replayed = yield* session.pipe(Effect.provide(engine(FakeModelProvider.layer(script))))
      const shape = (events: ReadonlyArray<AgentEvent>) => events.map((e) => ({ sequence: e.sequence, turnId: "turnId" in e ? e.turnId : undefined, type: e.type, payload: e.payload }))
      expect(shape(replayed)).toEqual(shape(recorded))
      // Ids too; time is one clock run on from the recording, so only the spacing of timestamps is compared.
      const withoutTime = (events: ReadonlyArray<AgentEvent>) => events.map(({ timestamp: _, ...rest }) => rest)
      const spacing = (events: ReadonlyArray<AgentEvent>) => events.map((e) => Date.parse(e.timestamp) - Date.parse(events[0]!.timestamp))
      expect(replayed.map((e) => e.type)).toEqual(recorded.map((e) => e.type))
      expect(withoutTime(replayed)).toEqual(withoutTime(recorded))
      expect(spacing(replayed)).toEqual(spacing(recorded))
    }))

  it("reads responses, retries, failures and usage from the log alone", () => {
    const at = (sequence: number, type: string, payload: unknown, turnId = "turn_1") =>
      ({ id: `e${sequence}`, sessionId: "s", turnId, sequence, timestamp: "2026-01-01T00:00:00.000Z", type, payload }) as AgentEvent
    const script = Cassette.fromEvents([
      { id: "e1", sessionId: "s", sequence: 1, timestamp: "2026-01-01T00:00:00.000Z", type: "session.created", payload: { cwd: "/w", client: "test" } },
      at(2, "turn.started", { promptPreview: "hi" }),
      at(3, "user.message", { content: "hi" }),
      at(4, "model.retry", { attempt: 1, delayMs: 1200, errorCode: "overloaded" }),
      at(5, "model.delta", { text: "a" }),
      at(6, "model.tool_call_requested", { toolCallId: "t1", tool: "grep", args: { pattern: "x" } }),
      at(7, "permission.requested", { toolCallId: "t1", tool: "grep", risk: "read" }),
      at(8, "permission.resolved", { toolCallId: "t1", decision: "allow", actor: "policy", policy: "p" }),
      at(9, "tool.started", { toolCallId: "t1", tool: "grep", args: { pattern: "x" } }),
      at(10, "tool.completed", { toolCallId: "t1", result: "none" }),
      at(11, "model.delta", { text: "b" }),
      at(12, "model.delta", { text: "c" }),
      at(13, "turn.completed", { stopReason: "error", errorCode: "network", usage: { inputTokens: 5, outputTokens: 2 } }),
      at(14, "turn.started", { promptPreview: "long" }, "turn_2"),
      at(15, "user.message", { content: "long" }, "turn_2"),
      at(16, "turn.completed", { stopReason: "error", errorCode: "context_overflow" }, "turn_2"),
      at(17, "turn.started", { promptPreview: "x" }, "turn_3"),
      at(18, "user.message", { content: "x" }, "turn_3"),
      at(19, "turn.completed", { stopReason: "error", errorCode: "authentication" }, "turn_3")
    ])
    expect(script.responses).toEqual([
      { failure: { reason: "overloaded", retryDelayMs: 1200 } },
      { chunks: ["a"], toolCalls: [{ tool: "grep", args: { pattern: "x" }, id: "t1" }] },
      { chunks: ["b", "c"], failure: { reason: "network", afterChunks: 2 }, usage: { inputTokens: 5, outputTokens: 2 } },
      { failure: { reason: "authentication" } }
    ])
  })
})

describe("Cassette with images", () => {
  const png = new Uint8Array(readFileSync(resolve(import.meta.dirname, "../../fixtures/images/photo.png")))
  const imageSession = Effect.gen(function*() {
    const agent = yield* SessionEngine
    const { sessionId } = yield* agent.createSession({ cwd: "/work", client: "test" })
    yield* collect(agent.runTurn({ sessionId, userMessage: "what is this?", images: [{ data: png }] }))
    yield* collect(agent.runTurn({ sessionId, userMessage: "and now?" }))
    return yield* collect(agent.replaySession({ sessionId }))
  })

  it.effect("a session with an image, recorded through the Anthropic SDK, replays to the same log; the script says the model takes images", () =>
    Effect.gen(function*() {
      server.respond(...["text", "text"].map((n) => WireServer.recording("anthropic", n)))
      const recorded = yield* imageSession.pipe(
        Effect.provide(engine(AnthropicModelProvider.layer({ apiKey: Redacted.make("sk-ant-test"), baseURL: server.url })))
      )
      expect(recorded.find((e) => e.type === "user.message")!.payload).toHaveProperty("images")
      const script = JSON.parse(JSON.stringify(Cassette.fromEvents(recorded))) as FakeModelProvider.Script
      expect(script.images).toBe(true)
      let seen: ReadonlyArray<unknown> = []
      const replayed = yield* Effect.gen(function*() {
        const log = yield* imageSession
        seen = yield* Effect.flatMap(FakeModelProvider.FakeModel, (model) => model.requests)
        return log
      }).pipe(Effect.provide(SessionEngineModule.layer().pipe(
        Layer.provide(MemoryEventStore.layer),
        Layer.provide(IdGenerator.layerSequential),
        Layer.provideMerge(FakeModelProvider.layer({ ...script, record: true })),
        Layer.provide(Layer.mergeAll(tools, PermissionPolicy.layer({ mode: "bypass" })))
      )))
      const withoutTime = (events: ReadonlyArray<AgentEvent>) => events.map(({ timestamp: _, ...rest }) => rest)
      expect(replayed.map((e) => e.type)).toEqual(recorded.map((e) => e.type))
      expect(withoutTime(replayed)).toEqual(withoutTime(recorded))
      expect(seen).toHaveLength(2)
      // The replayed requests carry the image's bytes, read back from the blob area, in both turns.
      for (const request of seen as ReadonlyArray<{ images?: ReadonlyMap<string, Uint8Array> }>) {
        expect(Array.from(request.images!.values()).map((b) => b.byteLength)).toEqual([png.byteLength])
      }
      // A log without images makes a script without the flag, as before.
      expect(Cassette.fromEvents(recorded.filter((e) => e.type !== "user.message"))).not.toHaveProperty("images")
    }))
})
