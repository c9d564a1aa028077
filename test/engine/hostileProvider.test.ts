/**
 * A `ModelProvider` written wrong (the port is public: an embedder's or a third party's adapter),
 * handing the engine chunks its type does not allow — text that is no string, a call whose id or
 * name is no string or whose arguments are no JSON, usage counts that are NaN, negative or
 * fractional, a finish reason no one knows, a chunk of no known tag. The engine stores what came
 * before such a chunk, nothing of it or after it, and ends the turn `error` / `server` (as the SDK
 * adapters end one on an unreadable vendor event); the log on disk replays, and the session goes on.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import * as NodePath from "node:path"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import * as ChunkShape from "../../src/engine/ChunkShape.js"
import * as ModelResponse from "../../src/engine/ModelResponse.js"
import * as SessionEngine from "../../src/engine/SessionEngine.js"
import * as JsonlEventStore from "../../src/layers/JsonlEventStore.js"
import * as IdGenerator from "../../src/services/IdGenerator.js"
import * as ModelProvider from "../../src/services/ModelProvider.js"
import { collect, expectWellFormedLog, tempDir, typesOf } from "../helpers.js"

/** A provider answering its n-th request (from 0) with `answers[n]`'s chunks, as they are (no check). */
const provider = (answers: ReadonlyArray<ReadonlyArray<unknown>>) =>
  Layer.sync(ModelProvider.ModelProvider, () => {
    let requests = 0
    return ModelProvider.ModelProvider.of({
      capabilities: { provider: "fake", model: "written-wrong", maxContextTokens: 128_000 },
      stream: () => Stream.fromIterable((answers[requests++] ?? []) as ReadonlyArray<ModelProvider.ModelChunk>)
    })
  })

const good = [ModelProvider.textDelta("fine"), ModelProvider.finish("stop")]

/**
 * `script` on a fresh session of a fresh JSONL store whose model answers `answers` (each one
 * request), then well-formed responses; what it returns, and the session as read back from disk.
 */
const onSession = <A, E>(
  answers: ReadonlyArray<ReadonlyArray<unknown>>,
  script: (engine: SessionEngine.SessionEngine.Service, sessionId: string) => Effect.Effect<A, E>,
  options: SessionEngine.Options = { retry: Schedule.stop }
) =>
  Effect.gen(function*() {
    const dataDir = NodePath.join(yield* tempDir, "data")
    return yield* Effect.gen(function*() {
      const engine = yield* SessionEngine.SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      const result = yield* script(engine, sessionId)
      const replayed = yield* collect(engine.replaySession({ sessionId }))
      expectWellFormedLog(replayed)
      return { result, replayed }
    }).pipe(Effect.provide(
      SessionEngine.layer(options).pipe(
        Layer.provideMerge(JsonlEventStore.layer({ dataDir })),
        Layer.provide(provider([...answers, good, good])),
        Layer.provide(IdGenerator.layerSequential),
        Layer.provide(NodeContext.layer)
      )
    ))
  }).pipe(Effect.provide(NodeContext.layer))

/** Two turns: the first answered by `first`, the second by a well-formed response. */
const twoTurns = (first: ReadonlyArray<ReadonlyArray<unknown>>, options?: SessionEngine.Options) =>
  Effect.map(
    onSession(first, (engine, sessionId) =>
      Effect.all({
        turn1: collect(engine.runTurn({ sessionId, userMessage: "one" })),
        turn2: collect(engine.runTurn({ sessionId, userMessage: "two" }))
      }), options),
    ({ replayed, result }) => ({ ...result, replayed })
  )

const deltaTexts = (events: ReadonlyArray<AgentEvent>) => events.flatMap((e) => e.type === "model.delta" ? [e.payload.text] : [])

/** Chunks no adapter may hand over, each with what is wrong with it. */
const wrong: ReadonlyArray<readonly [string, unknown]> = [
  ["a delta whose text is a number", { _tag: "TextDelta", text: 42 }],
  ["a delta with no text", { _tag: "TextDelta" }],
  ["a delta whose text is an object", { _tag: "TextDelta", text: { toString: () => "x" } }],
  ["a call whose id is a number", { _tag: "ToolCall", toolCallId: 7, tool: "list_dir", args: {} }],
  ["a call with no name", { _tag: "ToolCall", toolCallId: "c1", args: {} }],
  ["a call whose arguments are a BigInt", { _tag: "ToolCall", toolCallId: "c1", tool: "list_dir", args: { n: 1n } }],
  ["a call whose arguments hold a function", { _tag: "ToolCall", toolCallId: "c1", tool: "list_dir", args: { f: () => 1 } }],
  ["a call whose arguments hold NaN", { _tag: "ToolCall", toolCallId: "c1", tool: "list_dir", args: { n: Number.NaN } }],
  ["a call with no arguments", { _tag: "ToolCall", toolCallId: "c1", tool: "list_dir" }],
  ["usage that is null", { _tag: "Finish", reason: "stop", usage: null }],
  ["usage that is no object", { _tag: "Finish", reason: "stop", usage: 12 }],
  ["a finish reason no one knows", { _tag: "Finish", reason: "end_turn" }],
  ["a chunk of an unknown tag", { _tag: "Image", data: "…" }],
  ["a chunk that is null", null],
  ["a chunk that is a string", "text"],
  // Getters that throw (an embedder's adapter, a Proxy): an unreadable chunk, not a crashed turn.
  ["a delta whose text getter throws", { _tag: "TextDelta", get text(): string { throw new Error("boom at /secret/path") } }],
  ["a chunk whose every field throws (a Proxy)", new Proxy({}, { get: () => { throw new Error("boom") } })],
  ["a call whose arguments getter throws", { _tag: "ToolCall", toolCallId: "c1", tool: "list_dir", get args(): unknown { throw new Error("boom") } }],
  ["a call whose arguments hold a getter that throws", { _tag: "ToolCall", toolCallId: "c1", tool: "list_dir", args: { get path(): string { throw new Error("boom") } } }],
  ["a finish whose usage count getter throws", { _tag: "Finish", reason: "stop", usage: { outputTokens: 1, get inputTokens(): number { throw new Error("boom") } } }]
]

describe("a model provider written wrong", () => {
  for (const [name, chunk] of wrong) {
    it.scoped(`${name}: what came before it stored, nothing of it or after it; the turn ends error/server; the log replays; the session goes on`, () =>
      Effect.gen(function*() {
        const { replayed, turn1, turn2 } = yield* twoTurns([[ModelProvider.textDelta("before "), chunk, ModelProvider.textDelta("after"), ModelProvider.finish("stop")]])
        expect(deltaTexts(turn1)).toEqual(["before "])
        expect(typesOf(turn1)).not.toContain("model.tool_call_requested")
        expect(typesOf(turn1)).not.toContain("model.usage")
        expect(turn1.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "error", errorCode: "server" } })
        expect(turn1.at(-1)!.payload).not.toHaveProperty("usage")
        expect(JSON.stringify(turn1)).not.toMatch(/boom|secret|at .*\.ts/)
        expect(turn2.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
        expect(deltaTexts(turn2)).toEqual(["fine"])
        expect(replayed.length).toBe(turn1.at(-1)!.sequence + turn2.length)
      }))
  }

  it.scoped("such a chunk after a well-formed call in the same response: the stored call is closed, never run, the turn ends error/server", () =>
    Effect.gen(function*() {
      const { replayed, turn1, turn2 } = yield* twoTurns([[
        ModelProvider.toolCall("c1", "list_dir", { path: "." }),
        { _tag: "TextDelta", text: 42 },
        ModelProvider.finish("tool_calls")
      ]])
      const requested = turn1.filter((e) => e.type === "model.tool_call_requested")
      expect(requested.map((e) => e.payload)).toMatchObject([{ toolCallId: "c1", tool: "list_dir" }])
      expect(typesOf(turn1)).not.toContain("tool.started")
      expect(turn1.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "error", errorCode: "server" } })
      expect(turn2.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
      expectWellFormedLog(replayed)
    }))

  it.scoped("such a chunk before anything was stored: the request is sent again, as after a server's failure", () =>
    Effect.gen(function*() {
      const { turn1 } = yield* twoTurns([[{ _tag: "TextDelta", text: 1 }], good], { retry: Schedule.recurs(1) })
      expect(turn1.filter((e) => e.type === "model.retry").map((e) => e.payload)).toEqual([{ attempt: 1, delayMs: 0, errorCode: "server" }])
      expect(deltaTexts(turn1)).toEqual(["fine"])
      expect(turn1.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
    }))

  it.scoped("a well-formed response in every shape the type allows is stored as it is", () =>
    Effect.gen(function*() {
      const { turn1 } = yield* twoTurns([[
        ModelProvider.textDelta(""),
        ModelProvider.textDelta("ok"),
        ModelProvider.finish("other", { inputTokens: 0, outputTokens: 2, cacheReadTokens: 0, cacheWriteTokens: 1 })
      ]])
      expect(deltaTexts(turn1)).toEqual(["ok"])
      expect(turn1.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final", usage: { inputTokens: 0, outputTokens: 2 } } })
    }))

  it.scoped("usage counts that are NaN, infinite, negative, fractional or no number: stored as counts, the turn keeps its answer (EventDraft.usageOf)", () =>
    Effect.gen(function*() {
      const { replayed, turn1 } = yield* twoTurns([[
        ModelProvider.textDelta("ok"),
        { _tag: "Finish", reason: "stop", usage: { inputTokens: Number.NaN, outputTokens: 2.6, cacheReadTokens: -3, cacheWriteTokens: "7" } },
        { _tag: "Finish", reason: "stop", usage: { inputTokens: Number.POSITIVE_INFINITY, outputTokens: 1 } }
      ]])
      expect(turn1.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
      for (const e of replayed) {
        const usage = (e.payload as { usage?: Record<string, unknown> }).usage
        for (const count of Object.values(usage ?? {})) expect(Number.isSafeInteger(count) && (count as number) >= 0).toBe(true)
      }
    }))

  it.scoped("usage with keys beyond the counts (__proto__, constructor, 10,000 more): only the counts are kept, in the total and the events", () =>
    Effect.gen(function*() {
      const hostile: Record<string, unknown> = JSON.parse(`{"inputTokens": 1, "outputTokens": 2, "__proto__": {"polluted": 1}, "constructor": {"prototype": 1}}`)
      for (let i = 0; i < 10_000; i++) hostile[`k${i}`] = i
      const total = ModelResponse.addUsage(undefined, hostile as never)
      expect(Object.keys(total!)).toEqual(["inputTokens", "outputTokens"])
      expect(Object.getPrototypeOf(total)).toBe(Object.prototype)
      expect(Object.keys(ModelResponse.addUsage(hostile as never, undefined)!)).toEqual(["inputTokens", "outputTokens"])
      const { turn1 } = yield* twoTurns([[ModelProvider.textDelta("ok"), { _tag: "Finish", reason: "stop", usage: hostile }]])
      for (const e of turn1) {
        const usage = (e.payload as { usage?: object }).usage
        if (usage !== undefined) expect(Object.keys(usage)).toEqual(["inputTokens", "outputTokens"])
      }
      expect(turn1.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final", usage: { inputTokens: 1, outputTokens: 2 } } })
    }))

  for (const [name, chunk] of [wrong[0]!, wrong[9]!, wrong[13]!, wrong[15]!, wrong[16]!, wrong[18]!]) {
    it.scoped(`${name} in a compaction's summary: the compaction fails server, the context unchanged; the log replays; the session goes on`, () =>
      Effect.gen(function*() {
        const { result } = yield* onSession([good, good, [ModelProvider.textDelta("summary"), chunk, ModelProvider.finish("stop")]], (engine, sessionId) =>
          Effect.gen(function*() {
            yield* collect(engine.runTurn({ sessionId, userMessage: "one" }))
            yield* collect(engine.runTurn({ sessionId, userMessage: "two" }))
            const compacted = yield* Effect.either(engine.compactSession({ sessionId, keepRecentTokens: 0 }))
            const after = yield* collect(engine.runTurn({ sessionId, userMessage: "three" }))
            return { compacted, after }
          }))
        expect(result.compacted).toMatchObject({ _tag: "Left", left: { _tag: "CompactionFailed", errorCode: "server" } })
        expect(result.after.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
      }))
  }
})

describe("a call's arguments holding `undefined` (an optional field left unset, common in JS)", () => {
  it.scoped("are stored and run as JSON.stringify would send them: the property dropped, in an array null; the turn goes on", () =>
    Effect.gen(function*() {
      // On main the call was refused as not JSON: the turn ended error/server.
      const args = { path: ".", limit: undefined, nested: { a: undefined, b: [undefined, 1] } }
      const { replayed, turn1 } = yield* twoTurns([[{ _tag: "ToolCall", toolCallId: "c1", tool: "list_dir", args }, ModelProvider.finish("tool_calls")]])
      const requested = replayed.filter((e) => e.type === "model.tool_call_requested").map((e) => e.payload.args)
      expect(requested).toEqual([JSON.parse(JSON.stringify(args))])
      expect(JSON.stringify(requested[0])).toBe(`{"path":".","nested":{"b":[null,1]}}`)
      // The call is answered (this session has no tools: `unknown_tool`) and the model asked again.
      expect(typesOf(turn1)).toContain("tool.failed")
      expect(turn1.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
    }))

  it("the copy has no key for an `undefined` property (a getter answering undefined, read once) and null for an array's", () => {
    let reads = 0
    const copy = ChunkShape.callArguments({ a: 1, get b() { reads++; return undefined }, c: [undefined, , 2], d: undefined })
    expect(copy).toEqual({ a: 1, c: [null, null, 2] })
    expect(Object.keys(copy as object)).toEqual(["a", "c"])
    expect(reads).toBe(1)
    // The arguments themselves `undefined` stay refused: a call with no arguments is not `{}`.
    expect(ChunkShape.callArguments(undefined)).toBeUndefined()
  })
})

describe("a call's arguments that answer otherwise when read again (a Proxy)", () => {
  it.scoped("are read once, into plain data: the stored call and the call that runs have the first answer", () =>
    Effect.gen(function*() {
      // On main the arguments were kept as the provider's object: checked, then serialised by the
      // store and decoded by the tool, each read answering anew — stored and run could differ from what was checked.
      let reads = 0
      const args = new Proxy({ path: "." }, {
        get: (target, key, receiver) => key === "path" ? (reads++ === 0 ? "." : "/elsewhere") : Reflect.get(target, key, receiver),
        getOwnPropertyDescriptor: (target, key) =>
          key === "path" ? { value: reads++ === 0 ? "." : "/elsewhere", writable: true, enumerable: true, configurable: true } : Reflect.getOwnPropertyDescriptor(target, key)
      })
      const { replayed, turn1 } = yield* twoTurns([[{ _tag: "ToolCall", toolCallId: "c1", tool: "list_dir", args }, ModelProvider.finish("tool_calls")]])
      const requested = replayed.filter((e) => e.type === "model.tool_call_requested")
      expect(requested.map((e) => e.payload.args)).toEqual([{ path: "." }])
      expect(Object.getPrototypeOf(turn1.find((e) => e.type === "model.tool_call_requested")!.payload.args)).toBe(Object.prototype)
      expect(JSON.stringify(turn1)).not.toContain("/elsewhere")
      expect(reads).toBe(1)
    }))

  it("the copy is the JSON it was: keys in order, `__proto__` an own key, too deep replaced, NaN and shared objects refused", () => {
    const parsed = JSON.parse(`{"b": 1, "__proto__": {"polluted": true}, "a": [1, "x", null, {"c": false}]}`)
    const copy = ChunkShape.callArguments(parsed)
    expect(JSON.stringify(copy)).toBe(JSON.stringify(parsed))
    expect(copy).not.toBe(parsed)
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype)
    let deep: unknown = "x"
    for (let i = 0; i < 100_000; i++) deep = { a: deep }
    expect(ChunkShape.callArguments(deep)).toMatch(/nested more than 64 levels deep/)
    const shared = { x: 1 }
    expect(ChunkShape.callArguments({ a: shared, b: shared })).toBeUndefined()
    expect(ChunkShape.callArguments({ a: [Number.NaN] })).toBeUndefined()
    expect(ChunkShape.callArguments(undefined)).toBeUndefined()
  })
})
