import { describe, expect, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import * as TestContext from "effect/TestContext"
import { AgentEvent, FakeModelProvider, IdGenerator, MemoryEventStore, PermissionPolicy, SessionEngine as Engine, TaskTool, Toolkit, ToolRouter } from "../../src/index.js"
const { SessionEngine } = Engine
import * as ContextBuilder from "../../src/services/ContextBuilder.js"
import type { SessionSummary } from "../../src/domain/Session.js"
import * as EventStore from "../../src/services/EventStore.js"
import { collect, typesOf } from "../helpers.js"

// What an embedder hits (review58a): a tool of its own named `task`, a scripted retry in a golden
// log, equal-priority context parts.

const agentWith = (tools: Layer.Layer<any, never, never>, responses: FakeModelProvider.Options["responses"]) =>
  Engine.layer().pipe(
    Layer.provide(MemoryEventStore.layer),
    Layer.provide(FakeModelProvider.layer({ responses })),
    Layer.provide(IdGenerator.layerSequential),
    Layer.provide(tools),
    Layer.provide(PermissionPolicy.layer({ mode: "default" }))
  )

describe("an embedder's own tool named task", () => {
  const ownTask = (ran: Array<string>) =>
    Toolkit.tool({
      name: "task",
      description: "Create a to-do item in our tracker",
      parameters: Schema.Struct({ title: Schema.String }),
      risk: "read",
      run: ({ title }) => Effect.sync(() => { ran.push(title); return `created to-do "${title}"` })
    })
  const script = [{ toolCalls: [{ tool: "task", args: { title: "buy milk" } }] }, { chunks: ["done"] }]

  it.effect("runs through its router: no subagent, no failure", () => {
    const ran: Array<string> = []
    return Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: process.cwd(), client: "test" })
      const events = yield* collect(engine.runTurn({ sessionId, userMessage: "add buy milk" }))
      expect(ran).toEqual(["buy milk"])
      expect(typesOf(events)).not.toContain("tool.failed")
      expect(events.find((e) => e.type === "tool.completed")?.payload).toMatchObject({ result: "created to-do \"buy milk\"" })
      expect((yield* engine.listSessions).length).toBe(1)
    }).pipe(Effect.provide(agentWith(Toolkit.layer([ownTask(ran)]), script)))
  })

  it.effect("the library's TaskTool still starts a subagent", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: process.cwd(), client: "test" })
      yield* collect(engine.runTurn({ sessionId, userMessage: "delegate" }))
      expect((yield* engine.listSessions).length).toBe(2)
    }).pipe(Effect.provide(agentWith(TaskTool.layer.pipe(Layer.provide(Toolkit.layer([]))), [
      { toolCalls: [{ tool: "task", args: { description: "look", prompt: "look around" } }] },
      { chunks: ["child answer"] },
      { chunks: ["done"] }
    ]))))
})

describe("a scripted retry in the testing guide's golden recipe", () => {
  const golden = Effect.gen(function*() {
    const engine = yield* SessionEngine
    const { sessionId } = yield* engine.createSession({ cwd: "/repo", client: "test" })
    const turn = yield* engine.runTurn({ sessionId, userMessage: "hi" }).pipe(Stream.runDrain, Effect.fork)
    yield* TestClock.adjust("1 minute")
    yield* Fiber.join(turn)
    const log = yield* engine.replaySession({ sessionId }).pipe(Stream.runCollect)
    return Chunk.toReadonlyArray(log).map(AgentEvent.encodeJson).join("\n") + "\n"
  }).pipe(
    Effect.provide(Engine.layer().pipe(
      Layer.provide(MemoryEventStore.layer),
      Layer.provide(FakeModelProvider.layer({ responses: [
        { failure: { reason: "rate_limited", afterChunks: 0 } },
        { chunks: ["Hello", " there"], delay: "1 second" }
      ] })),
      Layer.provide(IdGenerator.layerSequential)
    )),
    Effect.provide(TestContext.TestContext)
  )

  it("gives the same log twice in one process", async () => {
    const first = await Effect.runPromise(golden)
    const second = await Effect.runPromise(golden)
    expect(first).toContain("model.retry")
    expect(second).toBe(first)
  })
})

describe("orders that no locale changes", () => {
  // Code-unit order; a locale's collation would put "a" before "B", "_x" first, "ch" after "h" (cs-CZ), "aa" last (da-DK).
  const ids = ["b", "B", "a", "_x", "Z", "AA", "CH", "D", "T", "aa", "ch", "h"]
  const codeUnit = [...ids].sort()

  it("equal-priority prompt parts join in code-unit order of their ids", () => {
    const parts = ids.map((id) => ({ id, source: "base" as const, priority: 1, content: id }))
    expect(ContextBuilder.compose(parts).split("\n\n")).toEqual(codeUnit)
  })

  it("sessions active at the same time list in code-unit order of their ids", () => {
    const at = "2026-01-01T00:00:00.000Z"
    const summaries = ids.map((sessionId) => ({ sessionId, lastActivityAt: at }) as unknown as SessionSummary)
    expect([...summaries].sort(EventStore.byRecentActivity).map((s) => s.sessionId)).toEqual(codeUnit)
  })
})

describe("a router whose tool list grows in place", () => {
  it.effect("offers the tools it has at each request, not the ones it had first", () => {
    const defs: Array<ToolRouter.ToolDefinition> = [{ name: "ping", description: "ping", inputSchema: { type: "object", properties: {} }, sequential: false }]
    const router: ToolRouter.ToolRouter["Type"] = {
      get definitions() { return defs },
      prepare: (call) => Effect.fail(ToolRouter.unknownTool(call.tool)),
      execute: () => Effect.succeed({ result: "ok" })
    }
    return Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/repo", client: "test" })
      yield* collect(engine.runTurn({ sessionId, userMessage: "1" }))
      defs.push({ name: "pong", description: "pong", inputSchema: { type: "object", properties: {} }, sequential: false })
      yield* collect(engine.runTurn({ sessionId, userMessage: "2" }))
      defs[0] = { ...defs[0]!, description: "ping, renamed" }
      yield* collect(engine.runTurn({ sessionId, userMessage: "3" }))
      const requests = yield* (yield* FakeModelProvider.FakeModel).requests
      expect(requests.map((r) => r.tools.map((t) => t.name).join(","))).toEqual(["ping", "ping,pong", "ping,pong"])
      expect(requests[2]!.tools[0]!.description).toBe("ping, renamed")
    }).pipe(Effect.provide(Engine.layer().pipe(
      Layer.provide(MemoryEventStore.layer),
      Layer.provideMerge(FakeModelProvider.layer({ record: true, responses: [{ chunks: ["one"] }, { chunks: ["two"] }, { chunks: ["three"] }] })),
      Layer.provide(IdGenerator.layerSequential),
      Layer.provide(Layer.succeed(ToolRouter.ToolRouter, router)),
      Layer.provide(PermissionPolicy.layer({ mode: "default" }))
    )))
  })
})
