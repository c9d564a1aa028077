/**
 * Round 7 of the hostile wire: streams a broken or hostile model endpoint can send, through each
 * official SDK against the local wire server, each checked to end in a typed, auditable log (one
 * end, every call closed, every event of its type's shape, no stack trace and no runtime path in
 * any event): fields of shapes the API never sends, an event that is `null`, usage missing or not
 * a count, nesting 100,000 deep, arguments that are JSON but no object, streams without their end,
 * tool names with control and bidi characters, repeated writes of one file, paths that reach
 * outside cwd through encodings.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { type AgentEvent, AgentEvent as AgentEventSchema } from "../../src/domain/AgentEvent.js"
import * as SessionEngineModule from "../../src/engine/SessionEngine.js"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import * as IdGenerator from "../../src/services/IdGenerator.js"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"
import { collect, expectWellFormedLog } from "../helpers.js"
import * as ProviderTurns from "./providerTurns.js"
import * as WireStreams from "./wireStreams.js"

const server = WireStreams.serverForTests()
const { anthropic, openai } = WireStreams.vendorLayers(() => server)
const { a, deltasOf, engine, o, replay, sse, turn } = WireStreams

/** No stack frame, no module path, no path of this machine in what a turn stored. */
const expectNoInternals = (events: ReadonlyArray<AgentEvent>) =>
  expect(JSON.stringify(events)).not.toMatch(/node_modules|node:internal|\bat .*:\d+:\d+|\/work\/wt|\/src\/|\.ts:\d+|RangeError|Maximum call stack/)

/** Every event decodes as its type says (a delta's text a string, a call's id and name strings). */
const expectSchemaValid = (events: ReadonlyArray<AgentEvent>) => {
  for (const e of events) expect(Either.isRight(Schema.decodeUnknownEither(AgentEventSchema)(e)), JSON.stringify(e)).toBe(true)
}

const failedCodes = (events: ReadonlyArray<AgentEvent>) =>
  events.flatMap((e) => (e.type === "tool.failed" ? [(e.payload as { errorCode: string }).errorCode] : []))

const openaiCalls = (...calls: ReadonlyArray<{ readonly name?: string; readonly arguments: string }>) =>
  sse([
    o.chunk({ role: "assistant", content: "" }),
    ...calls.map((call, index) => o.chunk({ tool_calls: [{ index, id: `call_${index}`, type: "function", function: { name: call.name ?? "read_file", arguments: call.arguments } }] })),
    o.chunk({}, "tool_calls"),
    o.usage
  ], true)

const anthropicCalls = (...calls: ReadonlyArray<{ readonly name?: string; readonly arguments: string }>) =>
  sse([
    a.start,
    ...calls.flatMap((call, index) => [
      { type: "content_block_start", index, content_block: { type: "tool_use", id: `toolu_${index}`, name: call.name ?? "read_file", input: {} } },
      { type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: call.arguments } },
      { type: "content_block_stop", index }
    ]),
    ...a.end("tool_use")
  ])

/** The real workspace tools (their schemas refuse what the model sent wrong). */
const workspace = () => WorkspaceTools.layer().pipe(Layer.provide(NodeContext.layer))

const vendors = [
  { name: "anthropic", layer: anthropic, calls: anthropicCalls, answer: a.answer },
  { name: "openai", layer: openai, calls: openaiCalls, answer: o.answer }
]

describe("arguments that are JSON but not an object", () => {
  for (const vendor of vendors) {
    it.effect(`${vendor.name}: an array, a string, a number, null, true — each call fails invalid_arguments, each sent back as an object`, () =>
      Effect.gen(function*() {
        const bodies = ["[\"a.txt\"]", "\"a.txt\"", "42", "null", "true"]
        server.respond(vendor.calls(...bodies.map((args) => ({ arguments: args }))), vendor.answer())
        const { events, sessionId } = yield* turn("go")
        expect(failedCodes(events)).toEqual(bodies.map(() => "invalid_arguments"))
        expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
        expectWellFormedLog(yield* replay(sessionId))
        expectNoInternals(events)
        const next = server.received[1]!.body
        const inputs = vendor.name === "anthropic"
          ? next.messages[1].content.filter((b: { type: string }) => b.type === "tool_use").map((b: { input: unknown }) => b.input)
          : next.messages[1].tool_calls.map((c: { function: { arguments: string } }) => JSON.parse(c.function.arguments))
        expect(inputs).toEqual(bodies.map(() => ({})))
      }).pipe(Effect.provide(engine(vendor.layer, {}, workspace))))
  }
})

describe("nesting as deep as a stream can carry", () => {
  const deep = (n: number) => `${"[".repeat(n)}${"]".repeat(n)}`
  it.effect("openai: arguments with a key nested 100,000 levels deep beside a valid path — invalid_arguments, the log well formed", () =>
    Effect.gen(function*() {
      server.respond(openaiCalls({ arguments: `{"path":"a.txt","x":${deep(100_000)}}` }), o.answer())
      const { events, sessionId } = yield* turn("go")
      expect(failedCodes(events)).toEqual(["invalid_arguments"])
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
      expectWellFormedLog(yield* replay(sessionId))
      expectNoInternals(events)
    }).pipe(Effect.provide(engine(openai, {}, workspace))))

  for (const vendor of vendors) {
    it.effect(`${vendor.name}: an error event whose message nests 100,000 deep — a typed failure, no stack in any event`, () =>
      Effect.gen(function*() {
        const error = vendor.name === "anthropic"
          ? `event: error\ndata: {"type":"error","error":{"type":"api_error","message":${deep(100_000)}}}\n\n`
          : `data: {"error":{"message":${deep(100_000)},"type":"server_error","param":null,"code":null}}\n\n`
        const failing = { status: 200, headers: { "content-type": "text/event-stream" }, body: error }
        server.respond(failing, failing, failing, failing, failing)
        const events = yield* ProviderTurns.turnWithRetries("explain")
        expect(events.at(-1)!.payload).toMatchObject({ stopReason: "error" })
        expectNoInternals(events)
        // The code (and so the retries) the same error event gets when shallow: on main the SDK's
        // message building overflowed the stack, which read as `unknown`, not retried.
        const shallow = { ...failing, body: error.replace(deep(100_000), `"overloaded, try again"`) }
        server.reset()
        server.respond(shallow, shallow, shallow, shallow, shallow)
        const shallowEvents = yield* ProviderTurns.turnWithRetries("explain")
        const codes = (turn: ReadonlyArray<AgentEvent>) =>
          turn.flatMap((e) => e.type === "model.retry" || e.type === "turn.completed" ? [(e.payload as { errorCode?: string }).errorCode] : [])
        expect(codes(shallowEvents).at(-1)).toBe("server")
        expect(codes(events)).toEqual(codes(shallowEvents))
        expect(JSON.stringify(events)).not.toMatch(/call stack|RangeError/)
      }).pipe(Effect.provide(engine(vendor.layer))))

    it.effect(`${vendor.name}: usage and an unknown field nested 100,000 deep — the turn final with its text`, () =>
      Effect.gen(function*() {
        const deepUsage = vendor.name === "anthropic"
          ? sse([{ ...a.start, message: { ...a.start.message, usage: { input_tokens: 10, output_tokens: 1, x: "DEEP" } } }, ...a.text(0, "done"), { type: "message_delta", delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: 5, x: "DEEP" } }, { type: "message_stop" }])
          : sse([o.chunk({ role: "assistant", content: "done", x: "DEEP" }), o.chunk({}, "stop"), { ...o.usage, usage: { ...o.usage.usage, x: "DEEP" } }], true)
        server.respond({ ...deepUsage, body: deepUsage.body.replaceAll("\"DEEP\"", deep(100_000)) })
        const events = yield* ProviderTurns.turnWithRetries("explain")
        expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
        expect(deltasOf(events).join("")).toBe("done")
      }).pipe(Effect.provide(engine(vendor.layer))))
  }
})

describe("events of shapes the API never sends", () => {
  /** The turn answered `done` in one response; every event decodes as its type says (a delta's text a string, a call's id and name strings). */
  const expectFinalDone = (events: ReadonlyArray<AgentEvent>) => {
    expectSchemaValid(events)
    expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
    expect(deltasOf(events).join("")).toBe("done")
    expect(events.filter((e) => e.type === "model.retry")).toEqual([])
    expectNoInternals(events)
  }
  const text = (t: unknown) => ({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: t } })
  const anthropicCases: ReadonlyArray<readonly [string, ReadonlyArray<Record<string, unknown>>]> = [
    ["message_start without its message", [{ type: "message_start" }, ...a.text(0, "done"), ...a.end("end_turn")]],
    ["message_delta without usage", [a.start, ...a.text(0, "done"), { type: "message_delta", delta: { stop_reason: "end_turn" } }, { type: "message_stop" }]],
    ["message_delta without its delta", [a.start, ...a.text(0, "done"), { type: "message_delta", usage: { output_tokens: 5 } }, { type: "message_stop" }]],
    ["content_block_start without its block", [a.start, { type: "content_block_start", index: 0 }, text("done"), { type: "content_block_stop", index: 0 }, ...a.end("end_turn")]],
    ["content_block_delta without its delta", [a.start, ...a.text(0, "done"), { type: "content_block_delta", index: 0 }, ...a.end("end_turn")]],
    ["a text_delta whose text is a number", [a.start, ...a.text(0, "done"), text(42), ...a.end("end_turn")]],
    ["a text_delta whose text is null", [a.start, ...a.text(0, "done"), text(null), ...a.end("end_turn")]],
  ]
  for (const [name, events] of anthropicCases) {
    it.effect(`anthropic: ${name} — what it cannot carry is dropped: the turn ends final with the text, every event of its type's shape`, () =>
      Effect.gen(function*() {
        server.respond(sse(events), a.answer())
        expectFinalDone(yield* ProviderTurns.turnWithRetries("go"))
      }).pipe(Effect.provide(engine(anthropic, {}, workspace))))
  }
  const openaiCases: ReadonlyArray<readonly [string, unknown]> = [
    ["tool_calls that is an object", { tool_calls: { index: 0 } }],
    ["a tool_calls item that is null", { tool_calls: [null] }],
    ["content that is a number", { content: 42 }],
    ["content that is an object", { content: { text: "x" } }],
    ["a refusal that is an object", { refusal: { x: 1 } }]
  ]
  for (const [name, delta] of openaiCases) {
    it.effect(`openai: ${name} — what it cannot carry is dropped: the turn ends final with the text, every event of its type's shape`, () =>
      Effect.gen(function*() {
        server.respond(sse([o.chunk({ role: "assistant", content: "done" }), o.chunk(delta), o.chunk({}, "stop"), o.usage], true), o.answer())
        expectFinalDone(yield* ProviderTurns.turnWithRetries("go"))
      }).pipe(Effect.provide(engine(openai, {}, workspace))))
  }
})

describe("an event that is JSON null", () => {
  for (const vendor of vendors) {
    // The Anthropic SDK hands on only the events it knows by name.
    const nullEvent = `${vendor.name === "anthropic" ? "event: content_block_delta\n" : ""}data: null\n\n`
    const text = vendor.name === "anthropic"
      ? sse([a.start, { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }, { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Half" } }])
      : sse([o.chunk({ role: "assistant", content: "Half" })])
    it.effect(`${vendor.name}: before any text — the response fails server (the endpoint's fault, not the engine's), retried: the answer the retry's`, () =>
      Effect.gen(function*() {
        server.respond({ status: 200, headers: { "content-type": "text/event-stream" }, body: nullEvent }, vendor.answer())
        const events = yield* ProviderTurns.turnWithRetries("go")
        expect(events.filter((e) => e.type === "model.retry").map((e) => e.payload)).toMatchObject([{ errorCode: "server" }])
        expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
        expect(deltasOf(events).join("")).toBe("done")
        expectNoInternals(events)
      }).pipe(Effect.provide(engine(vendor.layer))))

    it.effect(`${vendor.name}: after some text — the turn ends server, the text stored once`, () =>
      Effect.gen(function*() {
        server.respond({ ...text, body: text.body + nullEvent }, vendor.answer())
        const { events, sessionId } = yield* turn("go")
        expect(events.at(-1)!.payload).toMatchObject({ stopReason: "error", errorCode: "server" })
        expect(deltasOf(events)).toEqual(["Half"])
        expectNoInternals(events)
        expectWellFormedLog(yield* replay(sessionId))
      }).pipe(Effect.provide(engine(vendor.layer))))
  }
})

describe("usage that is not a count, or not there", () => {
  for (const vendor of vendors) {
    for (const value of ["NaN", "Infinity", -0, [], {}]) {
      it.effect(`${vendor.name}: usage ${JSON.stringify(value)} — the turn final, every stored count a non-negative integer`, () =>
        Effect.gen(function*() {
          const body = vendor.name === "anthropic"
            ? sse([{ ...a.start, message: { ...a.start.message, usage: { input_tokens: value, output_tokens: value } } }, ...a.text(0, "done"), { type: "message_delta", delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: value } }, { type: "message_stop" }])
            : sse([o.chunk({ role: "assistant", content: "done" }), o.chunk({}, "stop"), { ...o.usage, usage: { prompt_tokens: value, completion_tokens: value, total_tokens: value } }], true)
          server.respond(body)
          const { events, sessionId } = yield* turn("go")
          expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
          for (const e of yield* replay(sessionId)) {
            const usage = (e.payload as { usage?: Record<string, unknown> }).usage
            for (const count of Object.values(usage ?? {})) expect(Number.isSafeInteger(count) && (count as number) >= 0).toBe(true)
          }
        }).pipe(Effect.provide(engine(vendor.layer))))
    }
    it.effect(`${vendor.name}: no usage at all — the turn final with its text`, () =>
      Effect.gen(function*() {
        const { usage: _, ...message } = a.start.message
        const body = vendor.name === "anthropic"
          ? sse([{ ...a.start, message }, ...a.text(0, "done"), { type: "message_delta", delta: { stop_reason: "end_turn", stop_sequence: null } }, { type: "message_stop" }])
          : sse([o.chunk({ role: "assistant", content: "done" }), o.chunk({}, "stop")], true)
        server.respond(body)
        const { events } = yield* turn("go")
        expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
        expect(deltasOf(events).join("")).toBe("done")
      }).pipe(Effect.provide(engine(vendor.layer))))
  }
})

describe("a stream that ends without its end", () => {
  it.effect("openai: a whole call and no finish_reason, no [DONE] — the call is not run; the request is sent again", () =>
    Effect.gen(function*() {
      const cut = sse([o.chunk({ role: "assistant", content: "" }), o.chunk({ tool_calls: [{ index: 0, id: "call_0", type: "function", function: { name: "read_file", arguments: "{\"path\":\"a.txt\"}" } }] })])
      server.respond(cut, o.answer())
      const events = yield* ProviderTurns.turnWithRetries("go")
      expect(events.filter((e) => e.type === "tool.started")).toEqual([])
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
    }).pipe(Effect.provide(engine(openai))))

  it.effect("anthropic: a whole call, its block stopped, and no message_delta or message_stop — stored, never run, closed network; the turn ends network", () =>
    Effect.gen(function*() {
      const cut = sse([a.start, ...a.tool(0, "toolu_1", { path: "a.txt" })])
      server.respond(cut, a.answer())
      const { events, sessionId } = yield* turn("go")
      expect(events.filter((e) => e.type === "tool.started")).toEqual([])
      expect(failedCodes(events)).toEqual(["network"])
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "error", errorCode: "network" })
      expectWellFormedLog(yield* replay(sessionId))
    }).pipe(Effect.provide(engine(anthropic))))

  for (const vendor of vendors) {
    it.effect(`${vendor.name}: an event stream with no events at all — a typed failure or a retry, never a silent empty answer`, () =>
      Effect.gen(function*() {
        const empty = { status: 200, headers: { "content-type": "text/event-stream" }, body: "" }
        server.respond(empty, vendor.answer())
        const events = yield* ProviderTurns.turnWithRetries("go")
        expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
        expect(deltasOf(events).join("")).toBe("done")
      }).pipe(Effect.provide(engine(vendor.layer))))

    it.effect(`${vendor.name}: a 200 with a whole non-streamed response as JSON (a proxy that ignores stream) — its text, or a typed failure, never a silent empty answer`, () =>
      Effect.gen(function*() {
        const message = vendor.name === "anthropic"
          ? { id: "msg_1", type: "message", role: "assistant", model: "claude-sonnet-4-5", content: [{ type: "text", text: "done" }], stop_reason: "end_turn", stop_sequence: null, usage: { input_tokens: 10, output_tokens: 1 } }
          : { id: "chatcmpl-1", object: "chat.completion", created: 1, model: "gpt-4.1-mini", choices: [{ index: 0, message: { role: "assistant", content: "done" }, finish_reason: "stop" }], usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } }
        const json = { status: 200, headers: { "content-type": "application/json" }, body: JSON.stringify(message) }
        server.respond(json, json, json, json, json)
        const events = yield* ProviderTurns.turnWithRetries("go")
        // The SDK reads the body as an event stream and finds no event in it: the response ended early.
        expect(events.at(-1)!.payload).toMatchObject({ stopReason: "error", errorCode: "server" })
        expect(deltasOf(events)).toEqual([])
        expectNoInternals(events)
      }).pipe(Effect.provide(engine(vendor.layer))))
  }

  it.effect("openai: chunks after [DONE] — no part of the response", () =>
    Effect.gen(function*() {
      const answer = o.answer()
      server.respond({ ...answer, body: answer.body + sse([o.chunk({ content: " and more" }), o.chunk({}, "stop")], true).body })
      const { events } = yield* turn("go")
      expect(deltasOf(events).join("")).toBe("done")
    }).pipe(Effect.provide(engine(openai))))

  it.effect("anthropic: an error event inside a tool call's arguments — the call neither run nor left open", () =>
    Effect.gen(function*() {
      const broken = sse([
        a.start,
        ...a.text(0, "Reading"),
        { type: "content_block_start", index: 1, content_block: { type: "tool_use", id: "toolu_1", name: "read_file", input: {} } },
        { type: "content_block_delta", index: 1, delta: { type: "input_json_delta", partial_json: "{\"path\":\"a." } },
        { type: "error", error: { type: "api_error", message: "Internal server error" } }
      ])
      server.respond(broken, a.answer())
      const { events, sessionId } = yield* turn("go")
      expect(events.filter((e) => e.type === "tool.started" || e.type === "model.tool_call_requested")).toEqual([])
      expect(deltasOf(events)).toEqual(["Reading"])
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "error", errorCode: "server" })
      expectWellFormedLog(yield* replay(sessionId))
    }).pipe(Effect.provide(engine(anthropic))))
})

describe("tool names a vendor never sends", () => {
  it.effect("openai: control characters, a carriage return, a bidi override — unknown_tool, the message the model and the user read shows them escaped", () =>
    Effect.gen(function*() {
      const names = ["read_file\u001b]0;owned\u0007\r", "\u202eelif_daer", "read_file\u2066x"]
      server.respond(openaiCalls(...names.map((name) => ({ name, arguments: "{}" }))), o.answer())
      const { events, sessionId } = yield* turn("go")
      expect(failedCodes(events)).toEqual(["unknown_tool", "unknown_tool", "unknown_tool"])
      for (const e of events.filter((e) => e.type === "tool.failed")) {
        expect((e.payload as { message: string }).message).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/)
      }
      expectWellFormedLog(yield* replay(sessionId))
    }).pipe(Effect.provide(engine(openai, {}, workspace))))

  const unnamed = [
    {
      name: "anthropic: a tool_use block with no id, no name and arguments a number",
      layer: anthropic,
      response: () => sse([a.start, { type: "content_block_start", index: 0, content_block: { type: "tool_use", input: {} } }, { type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: 7 } }, { type: "content_block_stop", index: 0 }, ...a.end("tool_use")]),
      answer: a.answer
    },
    {
      name: "openai: a call whose id is a number, name an object and arguments a number",
      layer: openai,
      response: () => sse([o.chunk({ role: "assistant", content: "" }), o.chunk({ tool_calls: [{ index: 0, id: 5, type: "function", function: { name: {}, arguments: 7 } }] }), o.chunk({}, "tool_calls"), o.usage], true),
      answer: o.answer
    }
  ]
  for (const c of unnamed) {
    it.effect(`${c.name} — a call of no tool, under an id of its own, failing typed`, () =>
      Effect.gen(function*() {
        server.respond(c.response(), c.answer())
        const { events, sessionId } = yield* turn("go")
        expectSchemaValid(events)
        expect(failedCodes(events)).toEqual(["unknown_tool"])
        expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
        expectWellFormedLog(yield* replay(sessionId))
      }).pipe(Effect.provide(engine(c.layer, {}, workspace))))
  }
})

describe("writes and paths", () => {
  const tempWorkspace = () => {
    const dir = realpathSync(mkdtempSync(join(tmpdir(), "hostile-model-wire-")))
    mkdirSync(join(dir, "ws"))
    mkdirSync(join(dir, "out"))
    writeFileSync(join(dir, "ws", "a.txt"), "alpha\n")
    writeFileSync(join(dir, "out", "secret.txt"), "SECRET-OUTSIDE\n")
    return dir
  }
  /** A turn that denies every permission it is asked. */
  const deniedTurn = (cwd: string) =>
    Effect.gen(function*() {
      const agent = yield* SessionEngine
      const { sessionId } = yield* agent.createSession({ cwd, client: "test" })
      const events = yield* agent.runTurn({ sessionId, userMessage: "go" }).pipe(
        Stream.tap((e) =>
          e.type === "permission.resolved" && e.payload.decision === "ask"
            ? Effect.fork(agent.resolvePermission({ sessionId, toolCallId: e.payload.toolCallId, decision: "deny" }))
            : Effect.void
        ),
        collect
      )
      return { events, sessionId }
    })

  it.effect("anthropic: 40 writes of one file in one response — each runs whole, one after another: the file is the last one's", () =>
    Effect.gen(function*() {
      const dir = tempWorkspace()
      const contents = Array.from({ length: 40 }, (_, i) => `version ${i}\n`.repeat(1000))
      server.respond(anthropicCalls(...contents.map((content) => ({ name: "write_file", arguments: JSON.stringify({ path: "a.txt", content }) }))), a.answer())
      const { events, sessionId } = yield* turn("go", undefined, join(dir, "ws"))
      expect(events.filter((e) => e.type === "tool.completed")).toHaveLength(40)
      expect(readFileSync(join(dir, "ws", "a.txt"), "utf8")).toBe(contents.at(-1))
      expectWellFormedLog(yield* replay(sessionId))
    }).pipe(Effect.provide(engine(anthropic, {}, workspace))))

  it.effect("openai: paths that reach outside through encodings — each asked (and denied) or not found; the outside file in no event and no request", () =>
    Effect.gen(function*() {
      const dir = tempWorkspace()
      const outside = join(dir, "out", "secret.txt")
      const paths = [
        "%2e%2e/out/secret.txt",
        "..%2fout%2fsecret.txt",
        "\uff0e\uff0e/out/secret.txt",
        "\u2024\u2024/out/secret.txt",
        "..\\out\\secret.txt",
        `file://${outside}`,
        `/proc/self/cwd/../out/secret.txt`,
        `/proc/self/root${outside}`,
        `/dev/fd/../../..${outside}`,
        `.//..//out//secret.txt`,
        `./a.txt/../../out/secret.txt`,
        `~/../../..${outside}`,
        `${join(dir, "ws")}/../out/secret.txt`
      ]
      server.respond(openaiCalls(...paths.map((path) => ({ arguments: JSON.stringify({ path }) }))), o.answer())
      const { events, sessionId } = yield* deniedTurn(join(dir, "ws"))
      expect(JSON.stringify(events)).not.toContain("SECRET-OUTSIDE")
      expect(JSON.stringify(server.received[1]!.body)).not.toContain("SECRET-OUTSIDE")
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
      expectWellFormedLog(yield* replay(sessionId))
    }).pipe(Effect.provide(SessionEngineModule.layer().pipe(
      Layer.provide(MemoryEventStore.layer),
      Layer.provide(IdGenerator.layerSequential),
      Layer.provide(openai()),
      Layer.provide(Layer.mergeAll(workspace(), PermissionPolicy.layer({})))
    ))))
})
