/**
 * A hostile or merely unusual model stream, through each official SDK against the local wire
 * server (streams written here in the vendors' shapes): what the engine stores, what the user sees,
 * and — the part a vendor holds against the session for good — what the next request sends back.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as HashMap from "effect/HashMap"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { mkdtempSync, realpathSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"
import * as OpenAiModelProvider from "../../src/layers/OpenAiModelProvider.js"
import * as Support from "../../src/layers/providers/Support.js"
import { expectWellFormedLog } from "../helpers.js"
import * as ProviderTurns from "./providerTurns.js"
import * as WireStreams from "./wireStreams.js"

const server = WireStreams.serverForTests()

const { anthropic, effectAiAnthropic, openai } = WireStreams.vendorLayers(() => server)
const { a, deltasOf, engine, o, replay, sse, turn } = WireStreams

/**
 * The calls a request sends back, each with the result it pairs with, as the vendor reads them —
 * Anthropic's `tool_use` blocks and `tool_result`s, OpenAI's `tool_calls` and `tool` messages — after
 * checking what both vendors refuse the request for: a repeated id, one not `^[A-Za-z0-9_-]{1,40}$`,
 * a result for no call.
 */
const pairedCalls = (body: any): Array<{ readonly id: string; readonly input: unknown; readonly result: string }> => {
  const calls: Array<{ id: string; input: unknown }> = []
  const results = new Map<string, string>()
  for (const message of body.messages) {
    for (const block of Array.isArray(message.content) ? message.content : []) {
      if (block.type === "tool_use") calls.push({ id: block.id, input: block.input })
      if (block.type === "tool_result") results.set(block.tool_use_id, block.content)
    }
    for (const call of message.tool_calls ?? []) calls.push({ id: call.id, input: JSON.parse(call.function.arguments) })
    if (message.role === "tool") results.set(message.tool_call_id, message.content)
  }
  const ids = calls.map((c) => c.id)
  expect(new Set(ids).size, `ids repeated: ${ids.join(", ")}`).toBe(ids.length)
  for (const id of ids) expect(id).toMatch(/^[A-Za-z0-9_-]{1,40}$/)
  for (const id of results.keys()) expect(ids).toContain(id)
  return calls.map((c) => ({ ...c, result: results.get(c.id)! }))
}

/** The ids of the calls a turn stored, in order, and those of its completed ones. */
const callIds = (events: ReadonlyArray<AgentEvent>, type: "model.tool_call_requested" | "tool.completed") =>
  events.flatMap((e) => (e.type === type ? [(e.payload as { toolCallId: string }).toolCallId] : []))


describe("tool call ids a vendor would refuse to see again", () => {
  it.effect("anthropic: two tool_use blocks with one id in a response — both run, each under its own id; the next request pairs each with its result", () =>
    Effect.gen(function*() {
      server.respond(a.response(a.tool(0, "toolu_same", { path: "a" }), a.tool(1, "toolu_same", { path: "b" }))("tool_use"), a.answer())
      const { events, sessionId } = yield* turn("read a and b")
      expect(callIds(events, "model.tool_call_requested")).toEqual(["toolu_same", "toolu_same_1"])
      expect(callIds(events, "tool.completed")).toEqual(["toolu_same", "toolu_same_1"])
      expect(pairedCalls(server.received[1]!.body)).toEqual([
        { id: "toolu_same", input: { path: "a" }, result: "contents of {\"path\":\"a\"}" },
        { id: "toolu_same_1", input: { path: "b" }, result: "contents of {\"path\":\"b\"}" }
      ])
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
      expectWellFormedLog(yield* replay(sessionId))
    }).pipe(Effect.provide(engine(anthropic))))

  it.effect("anthropic: a call with the id of a call of an earlier turn — stored under another; every later request has unique ids", () =>
    Effect.gen(function*() {
      server.respond(
        a.response(a.tool(0, "toolu_again", { path: "a" }))("tool_use"),
        a.answer(),
        a.response(a.tool(0, "toolu_again", { path: "b" }))("tool_use"),
        a.answer(),
        a.answer()
      )
      const { sessionId } = yield* turn("read a")
      const second = yield* turn("read b", sessionId)
      expect(callIds(second.events, "tool.completed")).toEqual(["toolu_again_1"])
      expect(pairedCalls(server.received[3]!.body).map((c) => [c.id, c.result])).toEqual([
        ["toolu_again", "contents of {\"path\":\"a\"}"],
        ["toolu_again_1", "contents of {\"path\":\"b\"}"]
      ])
      // And the turn after: its request still has them unique.
      yield* turn("and?", sessionId)
      pairedCalls(server.received[4]!.body)
      expectWellFormedLog(yield* replay(sessionId))
    }).pipe(Effect.provide(engine(anthropic))))

  it.effect("anthropic: an empty id and one of 10 KB — stored under ids both vendors take", () =>
    Effect.gen(function*() {
      const long = "toolu_" + "x".repeat(10 * 1024)
      server.respond(a.response(a.tool(0, "", { path: "a" }), a.tool(1, long, { path: "b" }), a.tool(2, "toolu_ok", { path: "c" }))("tool_use"), a.answer())
      const { events } = yield* turn("read three")
      expect(callIds(events, "tool.completed")).toEqual(["call_1", "call_2", "toolu_ok"])
      expect(pairedCalls(server.received[1]!.body).map((c) => c.result)).toEqual(["a", "b", "c"].map((p) => `contents of {"path":"${p}"}`))
      expect(JSON.stringify(events)).not.toContain("x".repeat(200))
    }).pipe(Effect.provide(engine(anthropic))))

  it.effect("openai: a compatible server that sends no ids — each step's calls (call_0 from the adapter) get ids of their own", () =>
    Effect.gen(function*() {
      server.respond(o.calls({ args: { path: "a" } }), o.calls({ args: { path: "b" } }, { args: { path: "c" } }), o.answer())
      const { events, sessionId } = yield* turn("read them")
      expect(callIds(events, "tool.completed")).toEqual(["call_0", "call_0_1", "call_1"])
      expect(pairedCalls(server.received[2]!.body).map((c) => [c.id, c.result])).toEqual([
        ["call_0", "contents of {\"path\":\"a\"}"],
        ["call_0_1", "contents of {\"path\":\"b\"}"],
        ["call_1", "contents of {\"path\":\"c\"}"]
      ])
      expectWellFormedLog(yield* replay(sessionId))
    }).pipe(Effect.provide(engine(openai))))

  it.effect("openai: two calls with one id in a response — both run under ids of their own", () =>
    Effect.gen(function*() {
      server.respond(o.calls({ id: "call_same", args: { path: "a" } }, { id: "call_same", args: { path: "b" } }), o.answer())
      const { events } = yield* turn("read a and b")
      expect(callIds(events, "tool.completed")).toEqual(["call_same", "call_same_1"])
      expect(pairedCalls(server.received[1]!.body).map((c) => c.result)).toEqual(["contents of {\"path\":\"a\"}", "contents of {\"path\":\"b\"}"])
    }).pipe(Effect.provide(engine(openai))))
})

/**
 * A connection closed before the vendor's end of the response (Anthropic `message_stop`, OpenAI a
 * `finish_reason`): both SDKs read it as a plain end of the stream, and the adapters took it for the
 * response — the turn ended `final` on half an answer.
 */
describe("a stream cut before the vendor's end of the response", () => {
  const vendors = [
    {
      name: "anthropic",
      layer: anthropic,
      cut: (text: string) => sse([a.start, { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }, ...(text === "" ? [] : [{ type: "content_block_delta", index: 0, delta: { type: "text_delta", text } }])]),
      cutCall: () => sse([a.start, { type: "content_block_start", index: 0, content_block: { type: "tool_use", id: "toolu_cut", name: "read_file", input: {} } }, { type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: "{\"path\": \"a" } }]),
      answer: a.answer
    },
    {
      name: "effect-ai (Anthropic)",
      layer: effectAiAnthropic,
      cut: (text: string) => sse([a.start, { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }, ...(text === "" ? [] : [{ type: "content_block_delta", index: 0, delta: { type: "text_delta", text } }])]),
      cutCall: () => sse([a.start, { type: "content_block_start", index: 0, content_block: { type: "tool_use", id: "toolu_cut", name: "read_file", input: {} } }, { type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: "{\"path\": \"a" } }]),
      answer: a.answer
    },
    {
      name: "openai",
      layer: openai,
      cut: (text: string) => sse([o.chunk({ role: "assistant", content: "" }), ...(text === "" ? [] : [o.chunk({ content: text })])]),
      cutCall: () => sse([o.chunk({ role: "assistant", content: "" }), o.chunk({ tool_calls: [{ index: 0, id: "call_cut", type: "function", function: { name: "read_file", arguments: "{\"path\": \"a" } }] })]),
      answer: o.answer
    }
  ]
  for (const vendor of vendors) {
    it.effect(`${vendor.name}: after some text — the turn ends with a network error, the text stored once, nothing sent again`, () =>
      Effect.gen(function*() {
        server.respond(vendor.cut("Half an ans"), vendor.answer())
        const { events, sessionId } = yield* turn("explain")
        expect(events.at(-1)!.payload).toMatchObject({ stopReason: "error", errorCode: "network" })
        expect(deltasOf(events)).toEqual(["Half an ans"])
        expect(server.received).toHaveLength(1)
        expectWellFormedLog(yield* replay(sessionId))
      }).pipe(Effect.provide(engine(vendor.layer))))

    it.effect(`${vendor.name}: before anything was stored — retried, and the answer is the retry's alone`, () =>
      Effect.gen(function*() {
        server.respond(vendor.cut(""), vendor.answer())
        const events = yield* ProviderTurns.turnWithRetries("explain")
        expect(events.filter((e) => e.type === "model.retry").map((e) => e.payload)).toMatchObject([{ errorCode: "network" }])
        expect(deltasOf(events)).toEqual(["done"])
        expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
      }).pipe(Effect.provide(engine(vendor.layer))))

    it.effect(`${vendor.name}: inside a tool call's arguments — the call is neither stored nor run; the request is sent again`, () =>
      Effect.gen(function*() {
        server.respond(vendor.cutCall(), vendor.answer())
        const events = yield* ProviderTurns.turnWithRetries("read a")
        expect(events.some((e) => e.type === "model.tool_call_requested" || e.type === "tool.started")).toBe(false)
        expect(events.filter((e) => e.type === "model.retry").map((e) => e.payload)).toMatchObject([{ errorCode: "network" }])
        expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
      }).pipe(Effect.provide(engine(vendor.layer))))
  }
})

describe("anthropic: events after message_stop", () => {
  it.effect("are no part of the response: not shown, not stored, not sent back", () =>
    Effect.gen(function*() {
      const whole = a.answer()
      server.respond({ ...whole, body: whole.body + sse([{ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: " and more" } }, a.start]).body }, a.answer())
      const { events, sessionId } = yield* turn("hello")
      expect(deltasOf(events)).toEqual(["done"])
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
      yield* turn("again", sessionId)
      expect(JSON.stringify(server.received[1]!.body)).not.toContain("and more")
    }).pipe(Effect.provide(engine(anthropic))))
})

describe("anthropic: a block started again at the index of a tool block never stopped", () => {
  it.effect("the first call is not lost: it is stored and closed, and goes back with its result", () =>
    Effect.gen(function*() {
      server.respond(sse([
        a.start,
        { type: "content_block_start", index: 0, content_block: { type: "tool_use", id: "toolu_first", name: "read_file", input: {} } },
        { type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: "{\"path\": \"a" } },
        ...a.tool(0, "toolu_second", { path: "b" }),
        ...a.end("tool_use")
      ]), a.answer())
      const { events, sessionId } = yield* turn("read")
      expect(callIds(events, "model.tool_call_requested")).toEqual(["toolu_first", "toolu_second"])
      const closed = (id: string) => events.filter((e) => (e.type === "tool.completed" || e.type === "tool.failed") && (e.payload as { toolCallId: string }).toolCallId === id)
      expect(closed("toolu_first")).toHaveLength(1)
      expect(closed("toolu_second")).toHaveLength(1)
      // The first was never whole: not run as if it were (its arguments are the text that came).
      expect(events.find((e) => e.type === "model.tool_call_requested")!.payload).toMatchObject({ args: "{\"path\": \"a" })
      expect(pairedCalls(server.received[1]!.body).map((c) => c.id)).toEqual(["toolu_first", "toolu_second"])
      expectWellFormedLog(yield* replay(sessionId))
    }).pipe(Effect.provide(engine(anthropic))))
})

describe("openai: a refusal", () => {
  it.effect("its words are the answer the user sees and the next request carries; the turn says content_filter", () =>
    Effect.gen(function*() {
      server.respond(
        sse([o.chunk({ role: "assistant", content: null, refusal: "" }), o.chunk({ refusal: "I can't help" }), o.chunk({ refusal: " with that." }), o.chunk({}, "stop"), o.usage], true),
        o.answer()
      )
      const { events, sessionId } = yield* turn("something it refuses")
      expect(deltasOf(events).join("")).toBe("I can't help with that.")
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final", finishReason: "content_filter" })
      yield* turn("why?", sessionId)
      expect(server.received[1]!.body.messages).toContainEqual({ role: "assistant", content: "I can't help with that." })
    }).pipe(Effect.provide(engine(openai))))
})

/**
 * A lone surrogate: JSON carries it (`"\ud83d"`) and the log keeps it as it came
 * (test/engine/hostileText.integration.test.ts), but Anthropic refuses a request holding one (400
 * `no low surrogate in string`) — the next request of the session and every later one.
 */
describe("a lone surrogate in what the model sent", () => {
  const anthropicResponse = () => a.response(a.text(0, "smile \ud83d"))("end_turn")
  for (
    const vendor of [
      { name: "anthropic", layer: anthropic, response: anthropicResponse, answer: a.answer },
      { name: "openai", layer: openai, response: () => sse([o.chunk({ role: "assistant", content: "smile \ud83d" }), o.chunk({}, "stop"), o.usage], true), answer: o.answer },
      // The bridge's prompt too (it was sent as it came).
      { name: "effect-ai (Anthropic)", layer: effectAiAnthropic, response: anthropicResponse, answer: a.answer }
    ]
  ) {
    it.effect(`${vendor.name}: one never completed is stored as it came, and sent as U+FFFD`, () =>
      Effect.gen(function*() {
        server.respond(vendor.response(), vendor.answer())
        const { events, sessionId } = yield* turn("hi")
        expect(deltasOf(events).join("")).toBe("smile \ud83d")
        yield* turn("again", sessionId)
        const sent = JSON.stringify(server.received[1]!.body)
        expect(sent).toContain("smile \uFFFD")
        expect(sent).not.toMatch(/\\ud83d/i)
      }).pipe(Effect.provide(engine(vendor.layer))))
  }

  it.effect("anthropic: a pair split across two deltas reaches the log and the next request whole", () =>
    Effect.gen(function*() {
      server.respond(sse([a.start, { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }, { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "smile \ud83d" } }, { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "\ude00!" } }, { type: "content_block_stop", index: 0 }, ...a.end("end_turn")]), a.answer())
      const { events, sessionId } = yield* turn("hi")
      expect(deltasOf(events).join("")).toBe("smile \u{1F600}!")
      yield* turn("again", sessionId)
      expect(JSON.stringify(server.received[1]!.body)).toContain("smile \u{1F600}!")
    }).pipe(Effect.provide(engine(anthropic))))
})

describe("anthropic: blocks and deltas the adapter does not take", () => {
  it.effect("thinking, redacted thinking, a server tool's use and result, citations: the text is the answer, no call of ours is made, the turn ends final", () =>
    Effect.gen(function*() {
      server.respond(sse([
        a.start,
        { type: "content_block_start", index: 0, content_block: { type: "thinking", thinking: "", signature: "" } },
        { type: "content_block_delta", index: 0, delta: { type: "thinking_delta", thinking: "secret plan" } },
        { type: "content_block_delta", index: 0, delta: { type: "signature_delta", signature: "sig" } },
        { type: "content_block_stop", index: 0 },
        { type: "content_block_start", index: 1, content_block: { type: "redacted_thinking", data: "opaque" } },
        { type: "content_block_stop", index: 1 },
        { type: "content_block_start", index: 2, content_block: { type: "server_tool_use", id: "srvtoolu_1", name: "web_search", input: {} } },
        { type: "content_block_delta", index: 2, delta: { type: "input_json_delta", partial_json: "{\"query\": \"x\"}" } },
        { type: "content_block_stop", index: 2 },
        { type: "content_block_start", index: 3, content_block: { type: "web_search_tool_result", tool_use_id: "srvtoolu_1", content: [] } },
        { type: "content_block_stop", index: 3 },
        ...a.text(4, "The answer."),
        { type: "content_block_delta", index: 4, delta: { type: "citations_delta", citation: { type: "web_search_result_location", url: "https://example.com", title: "t", encrypted_index: "e", cited_text: "c" } } },
        ...a.end("end_turn")
      ]))
      const { events } = yield* turn("search")
      expect(deltasOf(events)).toEqual(["The answer."])
      expect(events.some((e) => e.type === "model.tool_call_requested")).toBe(false)
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
    }).pipe(Effect.provide(engine(anthropic))))
})

/** The failures of a turn's calls. */
const failedWith = (events: ReadonlyArray<AgentEvent>) => events.flatMap((e) => (e.type === "tool.failed" ? [e.payload as { errorCode: string; message: string }] : []))

/** How each call a turn stored was closed: its id to the errorCode it failed with, or "completed". */
const closings = (events: ReadonlyArray<AgentEvent>) => {
  const closed = new Map<string, string>()
  for (const e of events) {
    if (e.type === "tool.completed") closed.set((e.payload as { toolCallId: string }).toolCallId, "completed")
    if (e.type === "tool.failed") closed.set((e.payload as { toolCallId: string }).toolCallId, (e.payload as { errorCode: string }).errorCode)
  }
  return closed
}

/**
 * More tool calls in one response than a turn allows. Every call was stored (10,000
 * `model.tool_call_requested` and as many `tool.failed`) before the step's check ended the turn;
 * now the calls up to the first past the limit are stored, and the rest never are.
 */
describe("more tool calls in one response than a turn allows", () => {
  it.effect("anthropic: 10,000 tool_use blocks — 101 stored (maxToolCalls 100, and the one past it), each closed max_steps; none run", () =>
    Effect.gen(function*() {
      const blocks = Array.from({ length: 10_000 }, (_, i) => a.tool(i, `toolu_${i}`, { path: `f${i}` }))
      server.respond(a.response(...blocks)("tool_use"), a.answer())
      const { events, sessionId } = yield* turn("read them all")
      const stored = callIds(events, "model.tool_call_requested")
      expect(stored).toHaveLength(101)
      expect(stored.at(-1)).toBe("toolu_100")
      const closed = closings(events)
      expect(closed.size).toBe(101)
      expect(new Set(closed.values())).toEqual(new Set(["max_steps"]))
      expect(events.some((e) => e.type === "tool.started")).toBe(false)
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "error", errorCode: "max_steps" })
      expectWellFormedLog(yield* replay(sessionId))
      // The session goes on, and what the next request sends back pairs every stored call with its result.
      yield* turn("and now?", sessionId)
      expect(pairedCalls(server.received[1]!.body)).toHaveLength(101)
    }).pipe(Effect.provide(engine(anthropic))), 120_000)

  it.effect("openai: 5,000 calls (handed on at the response's end) — the adapter holds at most 4,096", () =>
    Effect.gen(function*() {
      server.respond(sse([
        o.chunk({ role: "assistant", content: "" }),
        ...Array.from({ length: 5_000 }, (_, index) => o.chunk({ tool_calls: [{ index, id: `call_${index}`, type: "function", function: { name: "read_file", arguments: "{}" } }] })),
        o.chunk({}, "tool_calls"),
        o.usage
      ], true))
      const { events, sessionId } = yield* turn("read them all")
      expect(callIds(events, "model.tool_call_requested")).toHaveLength(4_096)
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "error", errorCode: "max_steps" })
      expectWellFormedLog(yield* replay(sessionId))
      // (maxSteps 1: the calls are stored and closed, not run.)
    }).pipe(Effect.provide(engine(openai, { maxToolCalls: 10_000, maxSteps: 1 }))), 120_000)

  // The adapter's own stream, without the wire: 18 MB through the SDK and the local server made this
  // test take minutes when the file's other tests had run before it.
  it.effect("openai: six calls of 3 Mi characters each — past 16 Mi in all, the rest of the arguments are dropped (the call gets the note no schema takes)", () =>
    Effect.gen(function*() {
      const big = JSON.stringify({ path: "p".repeat(3 * 1024 * 1024) })
      const chunks = Array.from({ length: 6 }, (_, index) => o.chunk({ tool_calls: [{ index, id: `call_${index}`, type: "function", function: { name: "read_file", arguments: big } }] }))
      const out = yield* Stream.runCollect(OpenAiModelProvider.toChunks(Stream.fromIterable([...chunks, o.chunk({}, "tool_calls")] as ReadonlyArray<any>)))
      const args = Chunk.toReadonlyArray(out).flatMap((c) => (c._tag === "ToolCall" ? [c.args] : []))
      // (Compared as text: a failing comparison of 3 MB strings would take vitest minutes to show.)
      expect(args.slice(0, 5).every((a) => JSON.stringify(a) === big)).toBe(true)
      expect(args[5]).toEqual(expect.stringContaining("were not kept"))
    }))

  it.effect("openai: a second step that passes the turn's limit — the calls up to the first past it are stored", () =>
    Effect.gen(function*() {
      const calls = (from: number, n: number) => Array.from({ length: n }, (_, i) => ({ id: `call_${from + i}`, args: { path: `f${from + i}` } }))
      server.respond(o.calls(...calls(0, 3)), o.calls(...calls(3, 50)), o.answer())
      const { events, sessionId } = yield* turn("read")
      expect(callIds(events, "tool.completed")).toEqual(["call_0", "call_1", "call_2"])
      // maxToolCalls 5: three ran, the next three are stored (the third is past the limit), the other 47 never were.
      expect(callIds(events, "model.tool_call_requested")).toEqual(["call_0", "call_1", "call_2", "call_3", "call_4", "call_5"])
      expect([...closings(events)].filter(([, how]) => how === "max_steps").map(([id]) => id)).toEqual(["call_3", "call_4", "call_5"])
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "error", errorCode: "max_steps" })
      expectWellFormedLog(yield* replay(sessionId))
    }).pipe(Effect.provide(engine(openai, { maxToolCalls: 5 }))))
})

/**
 * A response without end: an endpoint a `baseURL` points at is held to no vendor's output limit, and
 * every delta became an event (10 million one-character deltas: 10 million events, about 2 GB of
 * log) and part of the transcript. `maxResponse` bounds a response's text; past it the request is
 * aborted and the turn ends `response_too_large`, what was stored kept and the session usable.
 */
describe("a response larger than a response may be", () => {
  const textDeltas = (n: number) => Array.from({ length: n }, () => ({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "x" } }))

  it.effect("anthropic: more deltas than maxResponse.deltas, then a stall — the first ones stored, the request aborted, the turn ends response_too_large", () =>
    Effect.gen(function*() {
      const stalled = sse([a.start, { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }, ...textDeltas(2_000)])
      server.respond({ ...stalled, body: stalled.body + ": stall\n\n" }, a.answer())
      const { events, sessionId } = yield* turn("talk")
      expect(deltasOf(events).join("")).toBe("x".repeat(1_000))
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "error", errorCode: "response_too_large" })
      // The stalled connection was closed by the client, not left open.
      // (Waited for on the event loop: the test's clock is a TestClock.)
      while (server.clientClosed() === 0) yield* Effect.promise(() => new Promise((done) => setTimeout(done, 10)))
      expectWellFormedLog(yield* replay(sessionId))
      const next = yield* turn("shorter, please", sessionId)
      expect(next.events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
    }).pipe(Effect.provide(engine(anthropic, { maxResponse: { deltas: 1_000 } }))))

  it.effect("anthropic: tool_use blocks without end, then a stall — past maxResponse.deltas the request is aborted; the calls stored are closed", () =>
    Effect.gen(function*() {
      const blocks = Array.from({ length: 3_000 }, (_, i) => a.tool(i, `toolu_${i}`, { path: `f${i}` }))
      const stalled = sse([a.start, ...blocks.flat()])
      server.respond({ ...stalled, body: stalled.body + ": stall\n\n" })
      const { events, sessionId } = yield* turn("read forever")
      expect(callIds(events, "model.tool_call_requested")).toHaveLength(101)
      expect(new Set(closings(events).values())).toEqual(new Set(["response_too_large"]))
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "error", errorCode: "response_too_large" })
      while (server.clientClosed() === 0) yield* Effect.promise(() => new Promise((done) => setTimeout(done, 10)))
      expectWellFormedLog(yield* replay(sessionId))
    }).pipe(Effect.provide(engine(anthropic, { maxResponse: { deltas: 1_000 } }))))

  it.effect("openai: one delta past the default 4 Mi characters — not stored, the turn ends response_too_large; its tool call stored before is closed", () =>
    Effect.gen(function*() {
      server.respond(sse([
        o.chunk({ role: "assistant", content: "" }),
        o.chunk({ tool_calls: [{ index: 0, id: "call_a", type: "function", function: { name: "read_file", arguments: "{\"path\":\"a\"}" } }] }),
        o.chunk({ content: "before " }),
        o.chunk({ content: "y".repeat(4 * 1024 * 1024) }),
        o.chunk({}, "stop"),
        o.usage
      ], true))
      const { events, sessionId } = yield* turn("talk")
      expect(deltasOf(events)).toEqual(["before "])
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "error", errorCode: "response_too_large" })
      expect(events.some((e) => e.type === "tool.started")).toBe(false)
      expectWellFormedLog(yield* replay(sessionId))
    }).pipe(Effect.provide(engine(openai))))
})

/**
 * A hostile model's tool calls, through the workspace's own tools: arguments nested 100,000 deep,
 * 50 MB of them, a `__proto__` key, a name of 10 KB or with control characters. Each fails its call
 * with a typed result the model reads; the turn and the session go on.
 */
describe("a hostile model's tool calls", () => {
  const workspace = () => WorkspaceTools.layer().pipe(Layer.provide(NodeContext.layer))
  const cwd = () => {
    const dir = realpathSync(mkdtempSync(join(tmpdir(), "hostile-calls-")))
    writeFileSync(join(dir, "a.txt"), "alpha")
    return dir
  }
  const call = (name: string, ...pieces: ReadonlyArray<string>) => [
    { type: "content_block_start", index: 0, content_block: { type: "tool_use", id: "toolu_h", name, input: {} } },
    ...pieces.map((partial_json) => ({ type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json } })),
    { type: "content_block_stop", index: 0 }
  ]

  const cases = [
    { name: "arguments nested 100,000 levels deep", tool: "read_file", pieces: [`{"path":${"[".repeat(100_000)}${"]".repeat(100_000)}}`], errorCode: "invalid_arguments" },
    { name: "50 MB of arguments, in 1 MB pieces", tool: "read_file", pieces: [`{"path":"${"a".repeat(1024 * 1024 - 9)}`, ...Array.from({ length: 49 }, () => "a".repeat(1024 * 1024)), `"}`], errorCode: "invalid_arguments" },
    { name: "a __proto__ key", tool: "read_file", pieces: [`{"path":"a.txt","__proto__":{"polluted":true}}`], errorCode: "invalid_arguments" },
    { name: "a tool name of 10 KB", tool: `read_file${"x".repeat(10 * 1024)}`, pieces: [`{"path":"a.txt"}`], errorCode: "unknown_tool" },
    { name: "a tool name with control characters", tool: "read_file\u001b]0;owned\u0007\r", pieces: [`{"path":"a.txt"}`], errorCode: "unknown_tool" }
  ]
  for (const c of cases) {
    it.effect(`anthropic: ${c.name} — the call fails ${c.errorCode}, the model reads why, the session goes on`, () =>
      Effect.gen(function*() {
        server.respond(sse([a.start, ...call(c.tool, ...c.pieces), ...a.end("tool_use")]), a.answer(), a.answer())
        const { events, sessionId } = yield* turn("go", undefined, cwd())
        const [failed] = failedWith(events)
        expect(failed!.errorCode).toBe(c.errorCode)
        // What the model is told is a few lines, not the arguments or the name over again.
        expect(failed!.message.length).toBeLessThan(2_000)
        expect(({} as Record<string, unknown>).polluted).toBeUndefined()
        expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
        expect(JSON.stringify(events).length).toBeLessThan(5 * 1024 * 1024)
        expectWellFormedLog(yield* replay(sessionId))
        // The next request pairs the call with its result, under a name and input the vendors take.
        const [sent] = pairedCalls(server.received[1]!.body)
        expect(sent!.result).toContain(c.errorCode === "unknown_tool" ? "no tool named" : "")
        const use = server.received[1]!.body.messages[1].content.find((b: { type: string }) => b.type === "tool_use")
        expect(use.name).toMatch(/^[A-Za-z0-9_-]{1,64}$/)
        const next = yield* turn("and now?", sessionId)
        expect(next.events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
      }).pipe(Effect.provide(engine(anthropic, {}, workspace))), 60_000)
  }

  it.effect("openai: names no vendor takes (empty, a space, 100 characters) — each sent back under one it takes, paired with its result", () =>
    Effect.gen(function*() {
      const names = ["", "read file", "r".repeat(100), "read.file"]
      server.respond(
        sse([
          o.chunk({ role: "assistant", content: "" }),
          ...names.map((name, index) => o.chunk({ tool_calls: [{ index, id: `call_${index}`, type: "function", function: { name, arguments: "{}" } }] })),
          o.chunk({}, "tool_calls"),
          o.usage
        ], true),
        o.answer()
      )
      const { events, sessionId } = yield* turn("go")
      expect(failedWith(events).map((f) => f.errorCode)).toEqual(["unknown_tool", "unknown_tool", "unknown_tool", "unknown_tool"])
      const sent: Array<string> = server.received[1]!.body.messages[1].tool_calls.map((c: { function: { name: string } }) => c.function.name)
      for (const name of sent) expect(name).toMatch(/^[A-Za-z0-9_-]{1,64}$/)
      // Never a real tool's name (`read file` was sent as `read_file`: a call of read_file that never
      // ran as one), nor another call's: each its own, the same in the next request.
      const tools: Array<string> = server.received[1]!.body.tools.map((t: { function: { name: string } }) => t.function.name)
      expect(tools).toContain("read_file")
      for (const name of sent) expect(tools).not.toContain(name)
      expect(new Set(sent).size).toBe(4)
      expect(sent[1]).toMatch(/^read_file_[0-9a-f]{8}$/)
      expect(sent[2]).toMatch(/^r{55}_[0-9a-f]{8}$/)
      expect(pairedCalls(server.received[1]!.body)).toHaveLength(4)
      server.respond(o.answer())
      yield* turn("again", sessionId)
      expect(server.received[2]!.body.messages[1].tool_calls.map((c: { function: { name: string } }) => c.function.name)).toEqual(sent)
    }).pipe(Effect.provide(engine(openai))))

  it.effect("anthropic: a name no vendor takes is never sent as a real tool's name, nor as a name another call came with", () =>
    Effect.gen(function*() {
      // The name `read file` is sent under, called as it is by another call: the renamed one takes another.
      const taken = Support.sentToolNames([], [])("read file")
      server.respond(sse([
        a.start,
        ...a.tool(0, "toolu_1", { path: "a" }, "read file"),
        ...a.tool(1, "toolu_2", { path: "a" }, "read_file"),
        ...a.tool(2, "toolu_3", { path: "a" }, taken),
        ...a.end("tool_use")
      ]), a.answer())
      const { events, sessionId } = yield* turn("go")
      expect(closings(events).get("toolu_2")).toBe("completed")
      const uses = server.received[1]!.body.messages[1].content.filter((b: { type: string }) => b.type === "tool_use")
      const names: Array<string> = uses.map((b: { name: string }) => b.name)
      expect(names[1]).toBe("read_file")
      expect(names[2]).toBe(taken)
      expect(names[0]).toMatch(/^read_file_[0-9a-f]{8}_2$/)
      expect(new Set(names).size).toBe(3)
      pairedCalls(server.received[1]!.body)
      expectWellFormedLog(yield* replay(sessionId))
    }).pipe(Effect.provide(engine(anthropic))))
})

describe("wire items a vendor never sends", () => {
  it.effect("openai: a call's id and name given again in every piece, the id changed — one call, under its first id and its name", () =>
    Effect.gen(function*() {
      const piece = (id: string, args: string) => o.chunk({ tool_calls: [{ index: 0, id, type: "function", function: { name: "read_file", arguments: args } }] })
      server.respond(sse([o.chunk({ role: "assistant", content: "" }), piece("call_first", "{\"pa"), piece("call_other", "th\":\"a\"}"), o.chunk({}, "tool_calls"), o.usage], true), o.answer())
      const { events, sessionId } = yield* turn("read a")
      expect(events.filter((e) => e.type === "model.tool_call_requested").map((e) => e.payload)).toEqual([
        { toolCallId: "call_first", tool: "read_file", args: { path: "a" } }
      ])
      expect(callIds(events, "tool.completed")).toEqual(["call_first"])
      expectWellFormedLog(yield* replay(sessionId))
    }).pipe(Effect.provide(engine(openai))))

  it.effect("anthropic: a second message_start before the first message ended — its blocks are the response's; a call cut by it is closed; the turn ends well", () =>
    Effect.gen(function*() {
      server.respond(sse([
        a.start,
        ...a.text(0, "first "),
        { type: "content_block_start", index: 1, content_block: { type: "tool_use", id: "toolu_cut", name: "read_file", input: {} } },
        { type: "content_block_delta", index: 1, delta: { type: "input_json_delta", partial_json: "{\"path\": \"a" } },
        { ...a.start, message: { ...a.start.message, id: "msg_2", usage: { input_tokens: 3, output_tokens: 1 } } },
        ...a.text(0, "second"),
        ...a.tool(1, "toolu_whole", { path: "b" }),
        ...a.end("tool_use")
      ]), a.answer())
      const { events, sessionId } = yield* turn("hi")
      expect(deltasOf(events)).toEqual(["first ", "second", "done"])
      const closed = closings(events)
      expect([...closed.keys()].sort()).toEqual(["toolu_cut", "toolu_whole"])
      expect(closed.get("toolu_whole")).toBe("completed")
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
      expectWellFormedLog(yield* replay(sessionId))
      pairedCalls(server.received[1]!.body)
    }).pipe(Effect.provide(engine(anthropic))))

  it.effect("anthropic: deltas and stops for an index never started — text is text, arguments and stops for no block are dropped", () =>
    Effect.gen(function*() {
      server.respond(sse([
        a.start,
        { type: "content_block_delta", index: 7, delta: { type: "text_delta", text: "loose " } },
        { type: "content_block_delta", index: 8, delta: { type: "input_json_delta", partial_json: "{\"path\": \"x\"}" } },
        { type: "content_block_stop", index: 9 },
        ...a.text(0, "answer"),
        ...a.end("end_turn")
      ]))
      const { events, sessionId } = yield* turn("hi")
      expect(deltasOf(events).join("")).toBe("loose answer")
      expect(events.some((e) => e.type === "model.tool_call_requested")).toBe(false)
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
      expectWellFormedLog(yield* replay(sessionId))
    }).pipe(Effect.provide(engine(anthropic))))
})

/**
 * Round 4: what the real vendors send that the earlier rounds did not — extended thinking
 * interleaved with text and tool use, block and delta types newer than the adapter, refusals, an
 * `error` event mid-stream, ids that differ only in case or carry control characters.
 */
describe("anthropic: extended thinking with tool use", () => {
  const thinking = (index: number, text: string) => [
    { type: "content_block_start", index, content_block: { type: "thinking", thinking: "", signature: "" } },
    { type: "content_block_delta", index, delta: { type: "thinking_delta", thinking: text } },
    { type: "content_block_delta", index, delta: { type: "signature_delta", signature: "EqQBCgIYAhIM" } },
    { type: "content_block_stop", index }
  ]
  const redacted = (index: number) => [
    { type: "content_block_start", index, content_block: { type: "redacted_thinking", data: "EmwKAhgBEgy3va3pzix/LafPsn4a" } },
    { type: "content_block_stop", index }
  ]

  it.effect("thinking, text, tool_use, redacted thinking, tool_use: no thinking in the text, each call its own arguments, the next request with the blocks where they came", () =>
    Effect.gen(function*() {
      server.respond(
        a.response(thinking(0, "secret plan A"), a.text(1, "Reading both."), a.tool(2, "toolu_01", { path: "a" }), redacted(3), thinking(4, "secret plan B"), a.tool(5, "toolu_02", { path: "b" }))("tool_use"),
        a.response(thinking(0, "secret plan C"), a.text(1, "Both read."))("end_turn")
      )
      const { events, sessionId } = yield* turn("read a and b")
      expect(deltasOf(events)).toEqual(["Reading both.", "Both read."])
      expect(events.filter((e) => e.type === "model.tool_call_requested").map((e) => e.payload)).toEqual([
        { toolCallId: "toolu_01", tool: "read_file", args: { path: "a" } },
        { toolCallId: "toolu_02", tool: "read_file", args: { path: "b" } }
      ])
      // Thinking is its own events, never the answer's text.
      expect(events.filter((e) => e.type === "model.thinking_delta").map((e) => e.payload.text)).toEqual(["secret plan A", "secret plan B", "secret plan C"])
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
      // Not asked for (no budget), but sent back all the same, as received (each block among the text and calls where it came): an endpoint that thinks unasked wants them.
      const next = server.received[1]!.body
      expect(next.thinking).toBeUndefined()
      const assistant = next.messages.find((m: { role: string }) => m.role === "assistant")
      expect(assistant.content.map((b: { type: string; thinking?: string }) => b.thinking ?? b.type)).toEqual([
        "secret plan A",
        "text",
        "tool_use",
        "redacted_thinking",
        "secret plan B",
        "tool_use"
      ])
      expect(pairedCalls(next).map((c) => [c.id, c.result])).toEqual([
        ["toolu_01", "contents of {\"path\":\"a\"}"],
        ["toolu_02", "contents of {\"path\":\"b\"}"]
      ])
      expectWellFormedLog(yield* replay(sessionId))
    }).pipe(Effect.provide(engine(anthropic))))

  it.effect("deltas of one block type at another's index: thinking at a text or tool index is dropped, text at a thinking index is text", () =>
    Effect.gen(function*() {
      server.respond(sse([
        a.start,
        ...thinking(0, "plan").slice(0, 2),
        { type: "content_block_start", index: 1, content_block: { type: "tool_use", id: "toolu_x", name: "read_file", input: {} } },
        { type: "content_block_delta", index: 1, delta: { type: "thinking_delta", thinking: "leak" } },
        { type: "content_block_delta", index: 1, delta: { type: "input_json_delta", partial_json: "{\"path\":\"x\"}" } },
        { type: "content_block_delta", index: 1, delta: { type: "signature_delta", signature: "sig" } },
        { type: "content_block_stop", index: 1 },
        { type: "content_block_stop", index: 0 },
        ...a.end("tool_use")
      ]), a.answer())
      const { events } = yield* turn("read x")
      expect(events.find((e) => e.type === "model.tool_call_requested")!.payload).toEqual({ toolCallId: "toolu_x", tool: "read_file", args: { path: "x" } })
      // Thinking counts only in its own block: at a tool's index it is dropped, and a signature there signs nothing.
      expect(events.filter((e) => e.type === "model.thinking_delta").map((e) => e.payload.text)).toEqual(["plan"])
      expect(events.filter((e) => e.type === "model.thinking_block").map((e) => e.payload)).toEqual([{ provider: "anthropic", model: "claude-sonnet-5-5" }])
      expect(JSON.stringify(events)).not.toMatch(/leak|"sig"/)
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
    }).pipe(Effect.provide(engine(anthropic))))
})

describe("block, delta and event types newer than the adapter", () => {
  it.effect("anthropic: an unknown block with unknown deltas, an unknown event, citations between text deltas — the text intact, the turn final", () =>
    Effect.gen(function*() {
      server.respond(sse([
        a.start,
        { type: "content_block_start", index: 0, content_block: { type: "future_block", payload: { x: 1 } } },
        { type: "content_block_delta", index: 0, delta: { type: "future_delta", text: "not text" } },
        { type: "content_block_stop", index: 0 },
        { type: "future_event", detail: "x" },
        { type: "content_block_start", index: 1, content_block: { type: "text", text: "" } },
        { type: "content_block_delta", index: 1, delta: { type: "text_delta", text: "The answer" } },
        { type: "content_block_delta", index: 1, delta: { type: "citations_delta", citation: { type: "char_location", cited_text: "c", document_index: 0, document_title: "d", start_char_index: 0, end_char_index: 1 } } },
        { type: "content_block_delta", index: 1, delta: { type: "future_delta", text: "not text either" } },
        { type: "content_block_delta", index: 1, delta: { type: "text_delta", text: " is 42." } },
        { type: "content_block_stop", index: 1 },
        ...a.end("end_turn")
      ]))
      const { events } = yield* turn("cite")
      expect(deltasOf(events).join("")).toBe("The answer is 42.")
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
      expect(events.at(-1)!.payload).not.toHaveProperty("finishReason")
    }).pipe(Effect.provide(engine(anthropic))))

  it.effect("openai: unknown fields in a delta and an unknown choice field — the text intact, the turn final", () =>
    Effect.gen(function*() {
      server.respond(sse([
        o.chunk({ role: "assistant", content: "", reasoning_content: "secret" }),
        o.chunk({ content: "The answer", annotations: [{ type: "url_citation" }] }),
        o.chunk({ content: " is 42.", future_field: { x: 1 } }),
        o.chunk({}, "stop"),
        o.usage
      ], true))
      const { events } = yield* turn("cite")
      expect(deltasOf(events).join("")).toBe("The answer is 42.")
      expect(JSON.stringify(events)).not.toContain("secret")
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
    }).pipe(Effect.provide(engine(openai))))
})

describe("refusals", () => {
  it.effect("anthropic: stop_reason refusal after some text — the text stays, the turn says content_filter", () =>
    Effect.gen(function*() {
      server.respond(a.response(a.text(0, "I can't help with that."))("refusal"))
      const { events } = yield* turn("something it refuses")
      expect(deltasOf(events).join("")).toBe("I can't help with that.")
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final", finishReason: "content_filter" })
    }).pipe(Effect.provide(engine(anthropic))))

  it.effect("anthropic: stop_reason refusal with no text at all — the turn still says content_filter, not a silent final", () =>
    Effect.gen(function*() {
      server.respond(a.response()("refusal"))
      const { events } = yield* turn("something it refuses")
      expect(deltasOf(events)).toEqual([])
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final", finishReason: "content_filter" })
    }).pipe(Effect.provide(engine(anthropic))))

  it.effect("openai: a refusal with finish_reason content_filter — its words stay, the turn says content_filter", () =>
    Effect.gen(function*() {
      server.respond(sse([o.chunk({ role: "assistant", content: null }), o.chunk({ refusal: "No." }), o.chunk({}, "content_filter"), o.usage], true))
      const { events } = yield* turn("something it refuses")
      expect(deltasOf(events).join("")).toBe("No.")
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final", finishReason: "content_filter" })
    }).pipe(Effect.provide(engine(openai))))
})

describe("an error event mid-stream", () => {
  const anthropicError = (type: string) => ({ type: "error", error: { type, message: `${type} at /srv/app/node_modules/x.js:12` } })
  const openaiError = (type: string) => ({ error: { message: `${type} at /srv/app/x.py:12`, type, param: null, code: null } })
  const vendors = [
    {
      name: "anthropic",
      layer: anthropic,
      after: (text: string) => sse([a.start, { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }, ...(text === "" ? [] : [{ type: "content_block_delta", index: 0, delta: { type: "text_delta", text } }]), anthropicError("overloaded_error")]),
      errorCode: "overloaded",
      answer: a.answer
    },
    {
      name: "openai",
      layer: openai,
      after: (text: string) => sse([o.chunk({ role: "assistant", content: "" }), ...(text === "" ? [] : [o.chunk({ content: text })]), openaiError("server_error")]),
      errorCode: "server",
      answer: o.answer
    }
  ]
  for (const vendor of vendors) {
    it.effect(`${vendor.name}: after some text — the turn ends error ${vendor.errorCode}, the text stored once, no path in any event, nothing sent again`, () =>
      Effect.gen(function*() {
        server.respond(vendor.after("Half an ans"), vendor.answer())
        const events = yield* ProviderTurns.turnWithRetries("explain")
        expect(events.at(-1)!.payload).toEqual({ stopReason: "error", errorCode: vendor.errorCode })
        expect(deltasOf(events)).toEqual(["Half an ans"])
        expect(events.some((e) => e.type === "model.retry")).toBe(false)
        expect(server.received).toHaveLength(1)
        expect(JSON.stringify(events)).not.toMatch(/\/srv\/app|node_modules|\.py:|at .*:\d+/)
      }).pipe(Effect.provide(engine(vendor.layer))))

    it.effect(`${vendor.name}: before any text — retried once, the answer the retry's alone`, () =>
      Effect.gen(function*() {
        server.respond(vendor.after(""), vendor.answer())
        const events = yield* ProviderTurns.turnWithRetries("explain")
        expect(events.filter((e) => e.type === "model.retry").map((e) => e.payload)).toMatchObject([{ errorCode: vendor.errorCode }])
        expect(deltasOf(events)).toEqual(["done"])
        expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
        expect(JSON.stringify(events)).not.toMatch(/\/srv\/app/)
      }).pipe(Effect.provide(engine(vendor.layer))))
  }
})

describe("tool call ids that differ only in case, or carry control or bidi characters", () => {
  it.effect("anthropic: call_A and call_a are two calls, each with its own result, in the log and the next request", () =>
    Effect.gen(function*() {
      server.respond(a.response(a.tool(0, "call_A", { path: "upper" }), a.tool(1, "call_a", { path: "lower" }))("tool_use"), a.answer())
      const { events, sessionId } = yield* turn("read both")
      const results = new Map(events.flatMap((e) => e.type === "tool.completed" ? [[e.payload.toolCallId, e.payload.result] as const] : []))
      expect(results).toEqual(new Map([["call_A", "contents of {\"path\":\"upper\"}"], ["call_a", "contents of {\"path\":\"lower\"}"]]))
      expect(pairedCalls(server.received[1]!.body).map((c) => [c.id, c.result])).toEqual([
        ["call_A", "contents of {\"path\":\"upper\"}"],
        ["call_a", "contents of {\"path\":\"lower\"}"]
      ])
      expectWellFormedLog(yield* replay(sessionId))
    }).pipe(Effect.provide(engine(anthropic))))

  it.effect("anthropic: ids with an escape sequence or a bidi override — stored under ids of their own; the log line shows them escaped", () =>
    Effect.gen(function*() {
      const lines: Array<string> = []
      const capture = Logger.replace(Logger.defaultLogger, Logger.make(({ annotations, message }) => {
        lines.push(JSON.stringify(message) + " " + HashMap.toEntries(annotations).map(([k, v]) => `${k}=${String(v)}`).join(" "))
      }))
      const hostile = ["toolu_\u001b]0;owned\u0007", "toolu_\u202eevil", "toolu_\u001b[2J"]
      server.respond(a.response(...hostile.map((id, i) => a.tool(i, id, { path: `f${i}` })))("tool_use"), a.answer())
      const { events, sessionId } = yield* turn("read").pipe(Effect.provide(Layer.merge(capture, Logger.minimumLogLevel(LogLevel.Debug))))
      const ids = callIds(events, "tool.completed")
      expect(ids).toHaveLength(3)
      for (const id of ids) expect(id).toMatch(/^[A-Za-z0-9_-]{1,40}$/)
      expect(pairedCalls(server.received[1]!.body).map((c) => c.result)).toEqual(["f0", "f1", "f2"].map((p) => `contents of {"path":"${p}"}`))
      const renamed = lines.filter((l) => l.includes("stored under another"))
      expect(renamed).toHaveLength(3)
      for (const line of renamed) expect(line).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/)
      expect(renamed.join("\n")).toContain("toolu_\\u001b]0;owned\\u0007")
      expectWellFormedLog(yield* replay(sessionId))
    }).pipe(Effect.provide(engine(anthropic))))
})
