/**
 * Round 6 of the hostile wire: what a model streams into a tool call (JSON split anywhere, not JSON,
 * a tool not offered, an index that jumps, pieces after the end), stop reasons beyond the common
 * ones, HTTP errors with their headers (retry-after honoured and bounded, a key never in an event)
 * and a body that trickles: through each official SDK and the bridge against the local wire server.
 * Each ends in a typed outcome in the log, with what was valid kept.
 */
import * as AnthropicClient from "@effect/ai-anthropic/AnthropicClient"
import * as AnthropicLanguageModel from "@effect/ai-anthropic/AnthropicLanguageModel"
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { mkdtempSync, realpathSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import * as AnthropicModelProvider from "../../src/layers/AnthropicModelProvider.js"
import * as EffectAiModelProvider from "../../src/layers/EffectAiModelProvider.js"
import * as OpenAiModelProvider from "../../src/layers/OpenAiModelProvider.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"
import { expectWellFormedLog } from "../helpers.js"
import * as ProviderTurns from "./providerTurns.js"
import * as WireStreams from "./wireStreams.js"

const server = WireStreams.serverForTests()

const { anthropic, effectAiAnthropic, openai } = WireStreams.vendorLayers(() => server)
const { a, deltasOf, engine, o, replay, sse, turn } = WireStreams

/** The workspace's own tools (their schemas check the arguments), in a new folder holding a.txt. */
const workspace = () => WorkspaceTools.layer().pipe(Layer.provide(NodeContext.layer))
const cwd = () => {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "wire-outcomes-")))
  writeFileSync(join(dir, "a.txt"), "alpha")
  return dir
}

const ofType = <P>(events: ReadonlyArray<AgentEvent>, type: AgentEvent["type"]) => events.flatMap((e) => (e.type === type ? [e.payload as P] : []))

/** No runtime path, stack frame, page or key in any event. */
const expectClean = (events: ReadonlyArray<AgentEvent>) =>
  expect(JSON.stringify(events)).not.toMatch(/\/srv\/app|node_modules|at .*:\d+|<html|sk-secret/i)

/** A call's streamed argument pieces, in each vendor's shape. */
const callOf = {
  anthropic: (pieces: ReadonlyArray<string>, name = "read_file", index = 0, id = "toolu_1") => [
    { type: "content_block_start", index, content_block: { type: "tool_use", id, name, input: {} } },
    ...pieces.map((partial_json) => ({ type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json } })),
    { type: "content_block_stop", index }
  ],
  openai: (pieces: ReadonlyArray<string>, name = "read_file", index = 0, id = "call_1") =>
    pieces.map((args, i) => o.chunk({ tool_calls: [{ index, ...(i === 0 ? { id, type: "function", function: { name, arguments: args } } : { function: { arguments: args } }) }] }))
}

const vendors = [
  {
    name: "anthropic",
    layer: anthropic,
    calls: (...calls: ReadonlyArray<ReadonlyArray<Record<string, unknown>>>) => sse([a.start, ...calls.flat(), ...a.end("tool_use")]),
    call: callOf.anthropic,
    answer: a.answer
  },
  {
    name: "openai",
    layer: openai,
    calls: (...calls: ReadonlyArray<ReadonlyArray<Record<string, unknown>>>) =>
      sse([o.chunk({ role: "assistant", content: "" }), ...calls.flat(), o.chunk({}, "tool_calls"), o.usage], true),
    call: callOf.openai,
    answer: o.answer
  },
  {
    name: "effect-ai (Anthropic)",
    layer: effectAiAnthropic,
    calls: (...calls: ReadonlyArray<ReadonlyArray<Record<string, unknown>>>) => sse([a.start, ...calls.flat(), ...a.end("tool_use")]),
    call: callOf.anthropic,
    answer: a.answer
  }
]

describe("a tool call's arguments as a hostile model streams them", () => {
  for (const vendor of vendors) {
    it.effect(`${vendor.name}: JSON split inside a key, a \\u escape and a surrogate pair's escapes — one call, its arguments whole`, () =>
      Effect.gen(function*() {
        server.respond(vendor.calls(vendor.call([`{"pa`, `th":"\\u00`, `e9 \\ud83d`, `\\udc4b.txt"`, `}`])), vendor.answer())
        const { events, sessionId } = yield* turn("read it")
        expect(ofType<{ args: unknown }>(events, "model.tool_call_requested").map((c) => c.args)).toEqual([{ path: "é 👋.txt" }])
        expect(ofType<{ result: string }>(events, "tool.completed").map((c) => c.result)).toEqual([`contents of {"path":"é 👋.txt"}`])
        expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
        expectWellFormedLog(yield* replay(sessionId))
      }).pipe(Effect.provide(engine(vendor.layer))))
  }

  for (const vendor of vendors.filter((v) => !v.name.startsWith("effect-ai"))) {
    it.effect(`${vendor.name}: arguments that are not JSON — the call fails invalid_arguments, sent back as {} with the reason, the turn goes on`, () =>
      Effect.gen(function*() {
        server.respond(vendor.calls(vendor.call([`{"path": "a.txt"`, `,,}`])), vendor.answer())
        const { events, sessionId } = yield* turn("read it", undefined, cwd())
        expect(ofType<{ errorCode: string }>(events, "tool.failed").map((f) => f.errorCode)).toEqual(["invalid_arguments"])
        expect(events.some((e) => e.type === "permission.requested")).toBe(false)
        expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
        // Sent back as an object (both APIs take no other), the result saying what was wrong.
        const sent = JSON.stringify(server.received[1]!.body)
        expect(sent).toMatch(/"input":\{\}|"arguments":"\{\}"/)
        expectWellFormedLog(yield* replay(sessionId))
      }).pipe(Effect.provide(engine(vendor.layer, {}, workspace))))

    it.effect(`${vendor.name}: a tool the request did not offer — the call fails unknown_tool without permission events; the model reads why`, () =>
      Effect.gen(function*() {
        server.respond(vendor.calls(vendor.call([`{"path":"a.txt"}`], "read_secrets")), vendor.answer())
        const { events } = yield* turn("read it")
        expect(ofType<{ errorCode: string }>(events, "tool.failed").map((f) => f.errorCode)).toEqual(["unknown_tool"])
        expect(events.some((e) => e.type === "permission.requested" || e.type === "tool.started")).toBe(false)
        expect(JSON.stringify(server.received[1]!.body)).toContain("no tool read_secrets")
        expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
      }).pipe(Effect.provide(engine(vendor.layer))))

    it.effect(`${vendor.name}: indexes that jump (0, then 7) — two calls, each run once with its own arguments`, () =>
      Effect.gen(function*() {
        server.respond(vendor.calls(vendor.call([`{"path":"a"}`], "read_file", 0, "id_a"), vendor.call([`{"path":"b"}`], "read_file", 7, "id_b")), vendor.answer())
        const { events } = yield* turn("read both")
        expect(ofType<{ toolCallId: string; result: string }>(events, "tool.completed").map((c) => [c.toolCallId, c.result])).toEqual([
          ["id_a", `contents of {"path":"a"}`],
          ["id_b", `contents of {"path":"b"}`]
        ])
      }).pipe(Effect.provide(engine(vendor.layer))))
  }

  for (const vendor of vendors.filter((v) => v.name !== "anthropic")) {
    it.effect(`${vendor.name}: a 5 MB argument in 1 MB pieces (past the 4 Mi bound), beside a small call — not kept: it fails invalid_arguments, the small call runs, the log stays small`, () =>
      Effect.gen(function*() {
        const huge = [`{"path":"`, ...Array.from({ length: 5 }, () => "a".repeat(1024 * 1024)), `"}`]
        server.respond(vendor.calls(vendor.call([`{"path":"a.txt"}`], "read_file", 0, "id_a"), vendor.call(huge, "read_file", 1, "id_b")), vendor.answer())
        const { events, sessionId } = yield* turn("read", undefined, cwd())
        expect(ofType<{ toolCallId: string; errorCode: string }>(events, "tool.failed").map((f) => [f.toolCallId, f.errorCode])).toEqual([["id_b", "invalid_arguments"]])
        expect(ofType<{ toolCallId: string }>(events, "tool.completed").map((c) => c.toolCallId)).toEqual(["id_a"])
        expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
        expect(JSON.stringify(yield* replay(sessionId)).length).toBeLessThan(100_000)
      }).pipe(Effect.provide(engine(vendor.layer, {}, workspace))), 60_000)
  }

  it.effect("anthropic: argument pieces after the block's stop — the call is the one its stop closed", () =>
    Effect.gen(function*() {
      const late = { type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: `,"path":"/etc/passwd"}` } }
      server.respond(sse([a.start, ...callOf.anthropic([`{"path":"a"}`]), late, ...a.end("tool_use")]), a.answer())
      const { events } = yield* turn("read a")
      expect(ofType<{ args: unknown }>(events, "model.tool_call_requested").map((c) => c.args)).toEqual([{ path: "a" }])
    }).pipe(Effect.provide(engine(anthropic))))

  // OpenAI's stream has no event that closes a response but its end ([DONE], or the connection's
  // close): a compatible server may finish a choice on a chunk that still carries content. So what
  // comes after a finish_reason is the response's, as it came — pinned here.
  it.effect("openai: argument pieces and a new call after the finish_reason — taken as the response's: the first call's arguments no longer parse (invalid_arguments), the new call runs", () =>
    Effect.gen(function*() {
      server.respond(
        sse([
          o.chunk({ role: "assistant", content: "" }),
          ...callOf.openai([`{"path":"a.txt"}`]),
          o.chunk({}, "tool_calls"),
          o.chunk({ tool_calls: [{ index: 0, function: { arguments: `{"path":"/etc/passwd"}` } }] }),
          o.chunk({ tool_calls: [{ index: 1, id: "call_late", type: "function", function: { name: "read_file", arguments: `{"path":"a.txt"}` } }] }),
          o.usage
        ], true),
        o.answer()
      )
      const { events } = yield* turn("read a", undefined, cwd())
      expect(ofType<{ toolCallId: string; errorCode: string }>(events, "tool.failed").map((f) => [f.toolCallId, f.errorCode])).toEqual([["call_1", "invalid_arguments"]])
      expect(ofType<{ toolCallId: string }>(events, "tool.completed").map((c) => c.toolCallId)).toEqual(["call_late"])
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
    }).pipe(Effect.provide(engine(openai, {}, workspace))))
})

describe("stop reasons beyond the common ones", () => {
  const cases = [
    { reason: "model_context_window_exceeded", finishReason: "length" },
    { reason: "refusal", finishReason: "content_filter" },
    { reason: "pause_turn", finishReason: undefined }
  ]
  // The bridge's turn.completed says what the direct adapter's does (leftovers40: on main,
  // @effect/ai-anthropic's stream schema refused model_context_window_exceeded and the turn failed).
  for (const [name, layer] of [["anthropic", anthropic], ["effect-ai (Anthropic)", effectAiAnthropic]] as const) {
    for (const c of cases) {
      it.effect(`${name}: ${c.reason} after some text — the text kept, the turn final${c.finishReason === undefined ? "" : `, finishReason ${c.finishReason}`}`, () =>
        Effect.gen(function*() {
          server.respond(a.response(a.text(0, "Part of it"))(c.reason))
          const { events } = yield* turn("go")
          expect(deltasOf(events)).toEqual(["Part of it"])
          const completed = events.at(-1)!.payload as { stopReason: string; finishReason?: string }
          expect([completed.stopReason, completed.finishReason]).toEqual(["final", c.finishReason])
        }).pipe(Effect.provide(engine(layer))))
    }
  }

})

/**
 * A response the model's limit or a filter stopped, its last call named but given no argument text:
 * the call was cut before its first byte, not finished with none — never run as `{}` (list_dir would
 * run). Its arguments stay `""`, which no tool's schema takes.
 */
describe("a last call with no arguments in a response cut short", () => {
  const cases = [
    {
      name: "anthropic: model_context_window_exceeded",
      layer: anthropic,
      response: sse([a.start, ...callOf.anthropic([], "list_dir"), ...a.end("model_context_window_exceeded")]),
      answer: a.answer
    },
    { name: "anthropic: refusal", layer: anthropic, response: sse([a.start, ...callOf.anthropic([], "list_dir"), ...a.end("refusal")]), answer: a.answer },
    {
      name: "openai: content_filter",
      layer: openai,
      response: sse([o.chunk({ role: "assistant", content: "" }), ...callOf.openai([""], "list_dir"), o.chunk({}, "content_filter"), o.usage], true),
      answer: o.answer
    },
    {
      name: "effect-ai (Anthropic): model_context_window_exceeded",
      layer: effectAiAnthropic,
      response: sse([a.start, ...callOf.anthropic([], "list_dir"), ...a.end("model_context_window_exceeded")]),
      answer: a.answer
    },
    {
      name: "effect-ai (Anthropic): refusal",
      layer: effectAiAnthropic,
      response: sse([a.start, ...callOf.anthropic([], "list_dir"), ...a.end("refusal")]),
      answer: a.answer
    }
  ]
  for (const c of cases) {
    it.effect(`${c.name} — the call is not run`, () =>
      Effect.gen(function*() {
        server.respond(c.response, c.answer())
        const { events } = yield* turn("list", undefined, cwd())
        expect(ofType<{ tool: string }>(events, "model.tool_call_requested").map((call) => call.tool)).toEqual(["list_dir"])
        expect(events.some((e) => e.type === "tool.started")).toBe(false)
        expect(ofType(events, "tool.failed")).toHaveLength(1)
      }).pipe(Effect.provide(engine(c.layer, {}, workspace))))
  }
})

/** An error response with these headers and a body in the vendor's shape, naming the key it was sent. */
const errorResponse = (status: number, headers: Record<string, string>, type: string) => ({
  status,
  headers: { "content-type": "application/json", ...headers },
  body: JSON.stringify({ type: "error", error: { type, message: `${type}: Incorrect API key provided: sk-secret-123 at /srv/app/main.py:12` } })
})

const keyed = {
  anthropic: () => AnthropicModelProvider.layer({ apiKey: Redacted.make("sk-secret-123"), baseURL: server.url }),
  openai: () => OpenAiModelProvider.layer({ apiKey: Redacted.make("sk-secret-123"), baseURL: `${server.url}/v1` })
}

describe("HTTP errors and the headers that come with them", () => {
  for (const vendor of [{ name: "anthropic", layer: keyed.anthropic, answer: a.answer }, { name: "openai", layer: keyed.openai, answer: o.answer }]) {
    const retried = [
      { name: "429 with retry-after: 3", status: 429, headers: { "retry-after": "3" }, type: "rate_limit_error", errorCode: "rate_limited", delayMs: 3_000 },
      { name: "429 with retry-after-ms: 2500", status: 429, headers: { "retry-after-ms": "2500" }, type: "rate_limit_error", errorCode: "rate_limited", delayMs: 2_500 },
      { name: "529", status: 529, headers: {}, type: "overloaded_error", errorCode: "overloaded", delayMs: undefined }
    ]
    for (const c of retried) {
      it.effect(`${vendor.name}: ${c.name} — retried (${c.errorCode}), waiting at least what it asked, the key in no event`, () =>
        Effect.gen(function*() {
          server.respond(errorResponse(c.status, c.headers, c.type), vendor.answer())
          const events = yield* ProviderTurns.turnWithRetries("hi")
          const [retry] = ofType<{ errorCode: string; delayMs: number }>(events, "model.retry")
          expect(retry!.errorCode).toBe(c.errorCode)
          if (c.delayMs !== undefined) expect(retry!.delayMs).toBeGreaterThanOrEqual(c.delayMs)
          expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
          expectClean(events)
        }).pipe(Effect.provide(engine(vendor.layer))))
    }

    const final = [
      { name: "401", status: 401, headers: {}, type: "authentication_error", errorCode: "authentication" },
      { name: "413", status: 413, headers: {}, type: "request_too_large", errorCode: "invalid_request" },
      { name: "429 with a hostile retry-after: 999999", status: 429, headers: { "retry-after": "999999" }, type: "rate_limit_error", errorCode: "rate_limited" },
      { name: "429 with x-ratelimit-reset-requests: 6m0s only", status: 429, headers: { "x-ratelimit-reset-requests": "6m0s" }, type: "rate_limit_error", errorCode: "rate_limited" }
    ]
    for (const c of final) {
      const retries = c.name.includes("x-ratelimit")
      it.effect(`${vendor.name}: ${c.name} — ${retries ? "retried on the engine's own schedule" : "not retried"}, the turn ends ${c.errorCode}, the key in no event`, () =>
        Effect.gen(function*() {
          server.respond(...Array.from({ length: 6 }, () => errorResponse(c.status, c.headers, c.type)))
          const events = yield* ProviderTurns.turnWithRetries("hi")
          expect(events.at(-1)!.payload).toEqual({ stopReason: "error", errorCode: c.errorCode })
          const waits = ofType<{ delayMs: number }>(events, "model.retry").map((r) => r.delayMs)
          if (retries) {
            expect(waits).toHaveLength(4)
            for (const wait of waits) expect(wait).toBeLessThanOrEqual(30_000)
          } else expect(waits).toEqual([])
          expect(server.received).toHaveLength(waits.length + 1)
          expectClean(events)
        }).pipe(Effect.provide(engine(vendor.layer))))
    }
  }
})

/**
 * A slow-loris response: headers, then an event's bytes one at a time, never a whole event. The idle
 * timeout counts events, not bytes, so it fires on the real clock, typed `network`, and the request
 * is aborted. (What the server waits between bytes is its own pace; nothing here asserts a time.)
 */
describe("a body that trickles a byte at a time", () => {
  const trickle = (head: string) => ({
    status: 200,
    headers: { "content-type": "text/event-stream" },
    body: "",
    pieces: [head, ..."event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"" + "x".repeat(100_000)],
    // Twenty bytes within each idle timeout: bytes that make no event do not keep the stream alive.
    gapMs: 50
  })
  const anthropicHead = sse([a.start, { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }, { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Half" } }]).body
  const openaiHead = sse([o.chunk({ role: "assistant", content: "Half" })]).body
  const idle = { idleTimeout: "1 second" } as const
  const cases = [
    { name: "anthropic", layer: () => AnthropicModelProvider.layer({ apiKey: Redacted.make("k"), baseURL: server.url, ...idle }), head: anthropicHead },
    { name: "openai", layer: () => OpenAiModelProvider.layer({ apiKey: Redacted.make("k"), baseURL: `${server.url}/v1`, ...idle }), head: openaiHead },
    {
      name: "effect-ai (Anthropic)",
      layer: () =>
        EffectAiModelProvider.layer({ model: "claude-sonnet-4-5", ...idle }).pipe(
          Layer.provide(AnthropicLanguageModel.model("claude-sonnet-4-5")),
          Layer.provide(AnthropicClient.layer({ apiKey: Redacted.make("k"), apiUrl: server.url })),
          Layer.provide(FetchHttpClient.layer)
        ),
      head: anthropicHead
    }
  ]
  for (const c of cases) {
    it.live(`${c.name}: after some text — the idle timeout fires on the real clock: the turn ends network, the text kept, the connection closed`, () =>
      Effect.gen(function*() {
        const before = server.clientClosed()
        server.respond(trickle(c.head))
        const { events } = yield* turn("go")
        expect(events.at(-1)!.payload).toEqual({ stopReason: "error", errorCode: "network" })
        expect(deltasOf(events)).toEqual(["Half"])
        yield* ProviderTurns.untilClosed(server, before)
      }).pipe(Effect.provide(engine(c.layer))), 60_000)
  }
})

describe("the bridge: stop reasons and HTTP errors", () => {
  const bridge = (apiKey = "k") => () =>
    EffectAiModelProvider.layer({ model: "claude-sonnet-4-5" }).pipe(
      Layer.provide(AnthropicLanguageModel.model("claude-sonnet-4-5")),
      Layer.provide(AnthropicClient.layer({ apiKey: Redacted.make(apiKey), apiUrl: server.url })),
      Layer.provide(FetchHttpClient.layer)
    )
  // @effect/ai-anthropic's schema of a stop reason knows pause_turn but not the newer
  // model_context_window_exceeded nor any later one: it refuses the event (MalformedOutput). The
  // bridge reads a refusal of the stop reason alone as the vendor adapter reads the reason (before
  // leftovers40, `server`): the turn final, `length` for the context window, the text kept.
  const cases = [
    { reason: "pause_turn", outcome: { stopReason: "final" } },
    { reason: "model_context_window_exceeded", outcome: { stopReason: "final", finishReason: "length" } },
    { reason: "brand_new_reason", outcome: { stopReason: "final" } }
  ]
  for (const c of cases) {
    it.effect(`${c.reason} after some text — the turn ends ${c.outcome.stopReason}${"finishReason" in c.outcome ? ` (${c.outcome.finishReason})` : ""}, the text kept once`, () =>
      Effect.gen(function*() {
        server.respond(a.response(a.text(0, "Part of it"))(c.reason), a.answer())
        const events = yield* ProviderTurns.turnWithRetries("go")
        expect(events.at(-1)!.payload).toMatchObject(c.outcome)
        expect((events.at(-1)!.payload as { finishReason?: string }).finishReason).toBe("finishReason" in c.outcome ? c.outcome.finishReason : undefined)
        expect(deltasOf(events)).toEqual(["Part of it"])
        expect(server.received).toHaveLength(1)
      }).pipe(Effect.provide(engine(bridge()))))
  }
  it.effect("a refused stop reason in another kind of event (a text delta's) — the turn ends server, as any other refused event", () =>
    Effect.gen(function*() {
      const odd = { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "x", stop_reason: "model_context_window_exceeded" }, usage: "x" }
      server.respond(sse([a.start, ...a.text(0, "Hi"), { ...odd, index: "0" }]), a.answer())
      const events = yield* ProviderTurns.turnWithRetries("hi")
      expect(events.at(-1)!.payload).toEqual({ stopReason: "error", errorCode: "server" })
    }).pipe(Effect.provide(engine(bridge()))))
  // @effect/ai-anthropic's schema takes only safe non-negative integers as counts: any other
  // refuses the event (MalformedOutput), `server` — the text before it kept, no count stored. The
  // vendor adapters keep such a turn, with the counts made valid (hostileUsage.test.ts).
  for (const value of [-4, 1e300, "128", 1.5]) {
    it.effect(`usage counts of ${JSON.stringify(value)} at the end — refused by @effect/ai-anthropic's schema: the turn ends server, the text kept`, () =>
      Effect.gen(function*() {
        const end = [{ type: "message_delta", delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: value, cache_read_input_tokens: value } }, { type: "message_stop" }]
        server.respond(sse([a.start, ...a.text(0, "Hi"), ...end]), a.answer())
        const events = yield* ProviderTurns.turnWithRetries("hi")
        expect(events.at(-1)!.payload).toEqual({ stopReason: "error", errorCode: "server" })
        expect(deltasOf(events)).toEqual(["Hi"])
        expect(events.some((e) => e.type === "model.usage")).toBe(false)
      }).pipe(Effect.provide(engine(bridge()))))
  }

  it.effect("an overloaded_error event after some text — the turn ends overloaded, the text stored once, nothing sent again", () =>
    Effect.gen(function*() {
      const error = { type: "error", error: { type: "overloaded_error", message: "Overloaded at /srv/app/node_modules/x.js:12" } }
      server.respond(sse([a.start, { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }, { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Half" } }, error]), a.answer())
      const events = yield* ProviderTurns.turnWithRetries("hi")
      expect(events.at(-1)!.payload).toEqual({ stopReason: "error", errorCode: "overloaded" })
      expect(deltasOf(events)).toEqual(["Half"])
      expect(server.received).toHaveLength(1)
      expectClean(events)
    }).pipe(Effect.provide(engine(bridge()))))

  it.effect("text and a call after message_stop, a second message_start — no part of the response: the turn final on the first message's text", () =>
    Effect.gen(function*() {
      server.respond(sse([a.start, ...a.text(0, "First"), ...a.end("end_turn"), a.start, ...a.text(0, " after"), ...callOf.anthropic([`{"path":"x"}`], "read_file", 1), ...a.end("tool_use")]), a.answer())
      const { events } = yield* turn("hi")
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
      expect(deltasOf(events)).toEqual(["First"])
      expect(events.some((e) => e.type === "model.tool_call_requested")).toBe(false)
    }).pipe(Effect.provide(engine(bridge()))))

  it.effect("401 — not retried, authentication, the key in no event", () =>
    Effect.gen(function*() {
      server.respond(errorResponse(401, {}, "authentication_error"), a.answer())
      const events = yield* ProviderTurns.turnWithRetries("hi")
      expect(events.at(-1)!.payload).toEqual({ stopReason: "error", errorCode: "authentication" })
      expect(server.received).toHaveLength(1)
      expectClean(events)
    }).pipe(Effect.provide(engine(bridge("sk-secret-123")))))
  for (const c of [{ headers: { "retry-after": "3" }, delayMs: 3_000 }, { headers: { "retry-after-ms": "2500" }, delayMs: 2_500 }]) {
    it.effect(`429 with ${Object.keys(c.headers)[0]} — retried, waiting at least what it asked`, () =>
      Effect.gen(function*() {
        server.respond(errorResponse(429, c.headers, "rate_limit_error"), a.answer())
        const events = yield* ProviderTurns.turnWithRetries("hi")
        const [retry] = ofType<{ errorCode: string; delayMs: number }>(events, "model.retry")
        expect(retry!.errorCode).toBe("rate_limited")
        expect(retry!.delayMs).toBeGreaterThanOrEqual(c.delayMs)
        expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
      }).pipe(Effect.provide(engine(bridge()))))
  }
})
