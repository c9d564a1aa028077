import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as HashMap from "effect/HashMap"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import * as Tracer from "effect/Tracer"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import { collect, engineLayer, expectWellFormedLog, memoryEngine, testTools } from "../helpers.js"

/** A tracer that keeps every span the default tracer makes, to read names and attributes after the turn. */
const recordingTracer = Effect.map(Effect.tracer, (base) => {
  const spans: Array<Tracer.Span> = []
  const tracer = Tracer.make({
    span: (...args) => {
      const span = base.span(...args)
      spans.push(span)
      return span
    },
    context: base.context
  })
  return { tracer, spans }
})

const attributesOf = (spans: ReadonlyArray<Tracer.Span>, name: string) =>
  spans.filter((s) => s.name === name).map((s) => Object.fromEntries(s.attributes))

describe("observability", () => {
  it.effect("a cancel runs in a span of its own, a child of the caller's, ended when the cancel returns", () =>
    Effect.gen(function*() {
      const { spans, tracer } = yield* recordingTracer
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      yield* engine.cancelTurn({ sessionId }).pipe(Effect.withSpan("caller"), Effect.withTracer(tracer))
      const cancel = spans.filter((s) => s.name === "SessionEngine.cancelTurn")
      expect(cancel).toHaveLength(1)
      expect(cancel[0]!.status._tag).toBe("Ended")
      expect(Option.getOrUndefined(cancel[0]!.parent)?.spanId).toBe(spans.find((s) => s.name === "caller")!.spanId)
    }).pipe(Effect.provide(engineLayer(MemoryEventStore.layer, { responses: [] }))))

  it.effect("a turn with a tool call yields spans for the step, the model request, the permission decision, the tool run and each store append", () =>
    Effect.gen(function*() {
      const { spans, tracer } = yield* recordingTracer
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      const events = yield* collect(engine.runTurn({ sessionId, userMessage: "look" })).pipe(Effect.withTracer(tracer))
      expect(events.at(-1)!.payload).toEqual({ stopReason: "final" })
      const turnId = (events[0] as { readonly turnId: string }).turnId
      const ids = { sessionId, turnId }
      expect(attributesOf(spans, "TurnDriver.step")).toEqual([{ ...ids, step: 1 }, { ...ids, step: 2 }])
      expect(attributesOf(spans, "ModelResponse.request")).toEqual([
        { ...ids, attempt: 1, provider: "fake", model: "scripted" },
        { ...ids, attempt: 1, provider: "fake", model: "scripted" }
      ])
      expect(attributesOf(spans, "ToolPhase.decide")).toEqual([
        { ...ids, toolCallId: "call_1", tool: "look", decision: "allow", policy: expect.any(String) }
      ])
      expect(attributesOf(spans, "ToolPhase.execute")).toEqual([{ ...ids, toolCallId: "call_1", tool: "look" }])
      // Every event of the turn went through an append span, a batch counted once.
      const appends = attributesOf(spans, "LiveSession.append")
      expect(appends.every((a) => a.sessionId === sessionId && a.turnId === turnId)).toBe(true)
      expect(appends.reduce((n, a) => n + (a.events as number), 0)).toBe(events.length)
      // The engine's spans are children of the turn's span, itself a child of the caller's.
      const runTurn = spans.find((s) => s.name === "SessionEngine.runTurn")!
      const turn = spans.find((s) => s.name === "TurnDriver.run")!
      const step = spans.find((s) => s.name === "TurnDriver.step")!
      const parentOf = (span: Tracer.Span) => Option.getOrUndefined(span.parent)?.spanId
      expect(parentOf(turn)).toBe(runTurn.spanId)
      expect(Object.fromEntries(turn.attributes)).toEqual({ ...ids, work: "New" })
      expect(spans.filter((s) => s.name === "TurnDriver.step").map(parentOf)).toEqual([turn.spanId, turn.spanId])
      expect(parentOf(spans.find((s) => s.name === "ToolPhase.execute")!)).toBe(step.spanId)
    }).pipe(Effect.provide(
      engineLayer(MemoryEventStore.layer, { responses: [{ toolCalls: [{ tool: "look", args: {} }] }, { chunks: ["seen"] }] }).pipe(
        Layer.provideMerge(testTools({ look: { run: () => Effect.succeed({ result: "a tree" }) } })),
        Layer.provideMerge(PermissionPolicy.layer({ mode: "bypass" }))
      )
    )))

  it.effect("a cancelled turn ends its spans, its closing append is the turn's child, and the next turn's spans hang from its own caller", () =>
    Effect.gen(function*() {
      const { spans, tracer } = yield* recordingTracer
      const logs: Array<{ message: unknown; annotations: Record<string, unknown> }> = []
      const logger = Logger.make(({ annotations, message }) => {
        logs.push({ message, annotations: Object.fromEntries(HashMap.toEntries(annotations)) })
      })
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      const first = yield* engine.runTurn({ sessionId, userMessage: "count" }).pipe(
        Stream.tap((event) => event.type === "model.delta" && event.payload.text === "b" ? engine.cancelTurn({ sessionId }) : Effect.void),
        collect,
        Effect.withTracer(tracer),
        Effect.provide(Logger.replace(Logger.defaultLogger, logger)),
        Effect.fork
      )
      yield* TestClock.adjust("1 second")
      expect((yield* Fiber.join(first)).at(-1)!.payload).toEqual({ stopReason: "cancelled" })
      const second = yield* engine.runTurn({ sessionId, userMessage: "again" }).pipe(
        collect,
        Effect.withTracer(tracer),
        Effect.provide(Logger.replace(Logger.defaultLogger, logger)),
        Effect.fork
      )
      yield* TestClock.adjust("1 second")
      const again = yield* Fiber.join(second)
      expect(again.at(-1)!.payload).toEqual({ stopReason: "final" })
      const parentOf = (span: Tracer.Span) => Option.getOrUndefined(span.parent)?.spanId
      const turns = spans.filter((s) => s.name === "TurnDriver.run")
      const callers = spans.filter((s) => s.name === "SessionEngine.runTurn")
      expect(turns).toHaveLength(2)
      expect(turns.map(parentOf)).toEqual(callers.map((s) => s.spanId))
      // Every span made ended: none is left open by the cancel.
      expect(spans.filter((s) => s.status._tag !== "Ended").map((s) => s.name)).toEqual([])
      // The appends of each turn — the cancelled one's closing batch included — are below that turn's span.
      const byId = new Map(spans.map((s) => [s.spanId, s]))
      const below = (span: Tracer.Span, ancestor: Tracer.Span): boolean => {
        const parent = byId.get(parentOf(span) ?? "")
        return parent !== undefined && (parent === ancestor || below(parent, ancestor))
      }
      const appendsOf = (turn: Tracer.Span) => {
        const turnId = Object.fromEntries(turn.attributes).turnId
        return spans.filter((s) => s.name === "LiveSession.append" && s.attributes.get("turnId") === turnId)
      }
      for (const turn of turns) {
        expect(appendsOf(turn).length).toBeGreaterThan(0)
        expect(appendsOf(turn).every((append) => below(append, turn))).toBe(true)
      }
      // The cancelled turn's step and model request ended interrupted, as Effect.withSpan ends them.
      const firstTurnId = Object.fromEntries(turns[0]!.attributes).turnId
      for (const name of ["TurnDriver.step", "ModelResponse.request"]) {
        const cut = spans.filter((s) => s.name === name && s.attributes.get("turnId") === firstTurnId)
        expect(cut.map((s) => s.status._tag === "Ended" && Exit.isInterrupted(s.status.exit))).toEqual([true])
      }
      // Logs of the run name the turn they come from.
      for (const log of logs.filter((l) => l.annotations.turnId !== undefined)) expect(log.annotations.sessionId).toBe(sessionId)
    }).pipe(Effect.provide(memoryEngine({ responses: [{ chunks: ["a", "b", "c", "d"], delay: 100 }, { chunks: ["ok"] }] }))))

  it.effect("a final answer cut by the model's token limit says so in turn.completed and in an annotated warning", () =>
    Effect.gen(function*() {
      const logs: Array<{ message: unknown; annotations: Record<string, unknown> }> = []
      const logger = Logger.make(({ annotations, message }) => {
        logs.push({ message, annotations: Object.fromEntries(HashMap.toEntries(annotations)) })
      })
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      const events = yield* collect(engine.runTurn({ sessionId, userMessage: "write a lot" })).pipe(
        Effect.provide(Logger.replace(Logger.defaultLogger, logger))
      )
      expect(events.at(-1)!.payload).toEqual({ stopReason: "final", finishReason: "length" })
      const cut = logs.find((l) => String(l.message).includes("cut short"))
      expect(cut?.annotations).toMatchObject({ sessionId, turnId: (events[0] as { readonly turnId: string }).turnId, finishReason: "length" })
      // Annotations say where a log comes from; messages carry no hand-written prefix.
      expect(logs.filter((l) => String(l.message).startsWith("effect-agent:"))).toEqual([])
      // A turn ended normally has no finishReason: old logs and goldens keep their meaning.
      const next = yield* collect(engine.runTurn({ sessionId, userMessage: "again" }))
      expect(next.at(-1)!.payload).toEqual({ stopReason: "final" })
      expectWellFormedLog(yield* collect(engine.replaySession({ sessionId })))
    }).pipe(Effect.provide(memoryEngine({ responses: [{ chunks: ["Once upon a"], finishReason: "length" }, { chunks: ["ok"] }] }))))
})

describe("observability of a watch", () => {
  it.effect("watchSession has one span for the whole watch, ended when the watch ends; an unknown session's ends failed", () =>
    Effect.gen(function*() {
      const { spans, tracer } = yield* recordingTracer
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      yield* collect(engine.runTurn({ sessionId, userMessage: "hi" }))
      const watched = yield* Stream.runCollect(Stream.take(engine.watchSession({ sessionId }), 3)).pipe(Effect.withTracer(tracer))
      expect(Array.from(watched).map((e) => e.sequence)).toEqual([1, 2, 3])
      const watches = spans.filter((s) => s.name === "SessionEngine.watchSession")
      expect(watches.map((s) => [Object.fromEntries(s.attributes), s.status._tag])).toEqual([[{ sessionId }, "Ended"]])
      expect(Exit.isSuccess((watches[0]!.status as Extract<Tracer.SpanStatus, { _tag: "Ended" }>).exit)).toBe(true)

      const unknown = yield* Stream.runCollect(engine.watchSession({ sessionId: "sess_01M8W3QN8TTW24BHQC0Q1TEJN5" })).pipe(Effect.withTracer(tracer), Effect.flip)
      expect(unknown._tag).toBe("SessionNotFound")
      const failed = spans.filter((s) => s.name === "SessionEngine.watchSession")[1]!
      expect(failed.status._tag).toBe("Ended")
      expect(Exit.isFailure((failed.status as Extract<Tracer.SpanStatus, { _tag: "Ended" }>).exit)).toBe(true)
    }).pipe(Effect.provide(memoryEngine({ responses: [{ chunks: ["hello"] }] }))))
})
