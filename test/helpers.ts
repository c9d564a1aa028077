/**
 * Shared test helpers: engine layers on real stores with deterministic ids and time, and the one
 * log checker every test uses.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as FileSystem from "@effect/platform/FileSystem"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import type * as Stream from "effect/Stream"
import * as Chunk from "effect/Chunk"
import * as StreamM from "effect/Stream"
import { expect } from "vitest"
import type { AgentEvent, Risk } from "../src/domain/AgentEvent.js"
import type { Json } from "../src/domain/Json.js"
import { type ToolContext, ToolFailure, type ToolOutput, ToolRouter } from "../src/services/ToolRouter.js"
import * as SessionEngine from "../src/engine/SessionEngine.js"
import * as FakeModelProvider from "../src/layers/FakeModelProvider.js"
import * as JsonlEventStore from "../src/layers/JsonlEventStore.js"
import * as MemoryEventStore from "../src/layers/MemoryEventStore.js"
import { EventStore as EventStoreTag, type EventStore } from "../src/services/EventStore.js"
import { EventStoreFailure } from "../src/domain/Errors.js"
import * as IdGenerator from "../src/services/IdGenerator.js"

/** The value of a `Right`; throws (failing the test) on a `Left`. */
export const right = <A, E>(either: Either.Either<A, E>): A => {
  if (Either.isLeft(either)) throw new Error(`expected Right, got ${JSON.stringify(either.left)}`)
  return either.right
}

/** The message of a `Left`'s error; throws (failing the test) on a `Right`. */
export const leftMessage = <A, E extends { readonly message: string }>(either: Either.Either<A, E>): string => {
  if (Either.isRight(either)) throw new Error(`expected Left, got ${JSON.stringify(either.right)}`)
  return either.left.message
}

/** A temporary directory, removed when the scope closes. */
export const tempDir = Effect.flatMap(FileSystem.FileSystem, (fs) => fs.makeTempDirectoryScoped({ prefix: "effect-agent-test-" }))

/** The engine on the given store and scripted model, with sequential ids. */
export const engineLayer = <E, R>(
  store: Layer.Layer<EventStore, E, R>,
  model: FakeModelProvider.Options = {},
  options: SessionEngine.Options = {}
) =>
  SessionEngine.layer(options).pipe(
    Layer.provideMerge(store),
    Layer.provideMerge(FakeModelProvider.layer({ record: true, ...model })),
    Layer.provideMerge(IdGenerator.layerSequential)
  )

/** The engine on a memory store. */
export const memoryEngine = (model: FakeModelProvider.Options = {}) => engineLayer(MemoryEventStore.layer, model)

/** The engine on a JSONL store in `dataDir`. */
export const jsonlEngine = (dataDir: string, model: FakeModelProvider.Options = {}) =>
  engineLayer(JsonlEventStore.layer({ dataDir }), model).pipe(Layer.provideMerge(NodeContext.layer))

/** Collects a stream into an array. */
/** Runs a turn, allowing every asked call as the user; the emitted events. */
export const turnAllowingAsks = (sessionId: string, userMessage: string) =>
  Effect.flatMap(SessionEngine.SessionEngine, (engine) =>
    engine.runTurn({ sessionId, userMessage }).pipe(
      StreamM.tap((e) =>
        e.type === "permission.resolved" && e.payload.decision === "ask"
          ? Effect.fork(engine.resolvePermission({ sessionId, toolCallId: e.payload.toolCallId, decision: "allow" }))
          : Effect.void
      ),
      collect
    ))

export const collect = <A, E, R>(stream: Stream.Stream<A, E, R>) => Effect.map(StreamM.runCollect(stream), Chunk.toReadonlyArray)

/** The event types of a log, for compact assertions. */
export const typesOf = (events: ReadonlyArray<AgentEvent>) => events.map((e) => e.type)

/**
 * The one log checker: sequences 1..n without gaps, one session, every turn closed exactly once
 * before the next starts, every tool call closed exactly once before its turn completes.
 */
export const expectWellFormedLog = (events: ReadonlyArray<AgentEvent>, options: { readonly allowOpenTurn?: boolean } = {}) => {
  expect(events.length).toBeGreaterThan(0)
  expect(events[0]!.type).toBe("session.created")
  const sessionId = events[0]!.sessionId
  let openTurn: string | undefined
  const openCalls = new Set<string>()
  const closedCalls = new Set<string>()
  // Every compaction ends exactly once (session.compacted or compaction.failed), one at a time.
  let openCompaction: string | undefined
  events.forEach((event, index) => {
    expect(event.sequence, `sequence at index ${index}`).toBe(index + 1)
    expect(event.sessionId).toBe(sessionId)
    if (event.type === "session.created") {
      expect(index).toBe(0)
      return
    }
    if (event.type === "compaction.started") {
      expect(openCompaction, `compaction ${event.payload.compactionId} started while ${openCompaction} open`).toBeUndefined()
      openCompaction = event.payload.compactionId
    } else if (event.type === "session.compacted" || event.type === "compaction.failed") {
      expect(event.payload.compactionId, `${event.type} at ${event.sequence} ends no open compaction`).toBe(openCompaction)
      openCompaction = undefined
    }
    // Session-level events (follow-ups, a fork's mark, a manual compaction) belong to no turn.
    if (!("turnId" in event) || event.turnId === undefined) return
    if (event.type === "turn.started") {
      expect(openTurn, `turn ${event.turnId} started while ${openTurn} open`).toBeUndefined()
      openTurn = event.turnId
      return
    }
    expect(event.turnId, `${event.type} at ${event.sequence} outside its turn`).toBe(openTurn)
    switch (event.type) {
      case "model.tool_call_requested":
        expect(openCalls.has(event.payload.toolCallId) || closedCalls.has(event.payload.toolCallId)).toBe(false)
        openCalls.add(event.payload.toolCallId)
        break
      case "tool.completed":
      case "tool.failed":
        expect(openCalls.has(event.payload.toolCallId), `${event.type} closes ${event.payload.toolCallId} twice or unopened`).toBe(true)
        openCalls.delete(event.payload.toolCallId)
        closedCalls.add(event.payload.toolCallId)
        break
      case "turn.completed":
        expect([...openCalls], `open calls at turn.completed ${event.sequence}`).toEqual([])
        expect(openCompaction, `compaction open at turn.completed ${event.sequence}`).toBeUndefined()
        openTurn = undefined
        break
    }
  })
  if (options.allowOpenTurn !== true) {
    expect(openTurn, "a turn is left open").toBeUndefined()
    expect(openCompaction, "a compaction is left open").toBeUndefined()
  }
}

/**
 * A real store wrapped so that the appends numbered in `failing` (1-based, counting every append)
 * fail with a store failure, as a full disk or a lost connection would.
 */
export const failingStore = <E, R>(inner: Layer.Layer<EventStore, E, R>, failing: ReadonlyArray<number>) =>
  Layer.effect(
    EventStoreTag,
    Effect.gen(function*() {
      const store = yield* EventStoreTag
      let appends = 0
      return {
        ...store,
        append: (event: AgentEvent) =>
          Effect.suspend(() =>
            failing.includes(++appends)
              ? Effect.fail(new EventStoreFailure({ reason: "disk_full", operation: "append", sessionId: event.sessionId, detail: "simulated: no space left on device" }))
              : store.append(event)
          ),
        // A batch counts as one append per event; it fails as a whole when any of its events would.
        appendAll: (events: ReadonlyArray<AgentEvent>) =>
          Effect.suspend(() => {
            const first = appends + 1
            appends += events.length
            return failing.some((n) => n >= first && n <= appends)
              ? Effect.fail(new EventStoreFailure({ reason: "disk_full", operation: "append", sessionId: events[0]?.sessionId ?? "", detail: "simulated: no space left on device" }))
              : store.appendAll(events)
          })
      }
    })
  ).pipe(Layer.provide(inner))

/** A tool for tests: what it does when run, and how it presents itself to the permission engine. */
export interface TestTool {
  readonly run: (args: Json, context: ToolContext) => Effect.Effect<ToolOutput, ToolFailure>
  readonly risk?: Risk
  readonly sequential?: boolean
}

/** A tool router of test tools (no argument schema: any JSON object is valid). */
export const testTools = (tools: Record<string, TestTool>) =>
  Layer.succeed(ToolRouter, {
    definitions: Object.entries(tools).map(([name, tool]) => ({
      name,
      description: `test tool ${name}`,
      inputSchema: { type: "object" },
      sequential: tool.sequential === true
    })),
    prepare: (call) => {
      const tool = tools[call.tool]
      return tool === undefined
        ? Effect.fail(new ToolFailure({ errorCode: "unknown_tool", message: `no tool ${call.tool}` }))
        : Effect.succeed({ ...call, risk: tool.risk ?? "read", sequential: tool.sequential === true, paths: [], scope: call.tool, input: call.args })
    },
    execute: (call, context) => tools[call.tool]!.run(call.args, context)
  })

/**
 * A "process": `layer` (an engine) built in a scope of its own, stopped when the test says — what
 * a restart test runs one after another over the same data.
 */
export const engineProcess = <A, E>(layer: Layer.Layer<A, E>) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const context = yield* Layer.buildWithScope(layer, scope)
    return {
      provide: <X, Y, R>(effect: Effect.Effect<X, Y, R>) => Effect.provide(effect, context),
      stop: Scope.close(scope, Exit.void)
    }
  })
