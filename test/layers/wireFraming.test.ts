/**
 * A vendor's stream as TCP delivers it, through each official SDK against the local wire server:
 * one SSE event split across many socket writes (inside a multi-byte character, inside `\r\n`), many
 * events in one write, CRLF or LF line endings, comments, pings and keep-alive blank lines; a
 * connection closed or reset mid-event; error events in each vendor's form; and a 200 whose body is
 * not an event stream at all (a proxy's HTML page, a JSON error body).
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import { expectWellFormedLog } from "../helpers.js"
import * as ProviderTurns from "./providerTurns.js"
import * as WireServer from "./WireServer.js"
import * as WireStreams from "./wireStreams.js"

let server: WireServer.WireServer
beforeAll(async () => {
  server = await WireServer.start()
})
afterAll(() => server.close())
beforeEach(() => server.reset())

const { anthropic, effectAiAnthropic, openai } = WireStreams.vendorLayers(() => server)
const { a, deltasOf, engine, o, replay, sse, turn } = WireStreams

/** Deltas a tokenizer can cut anywhere: emoji (a surrogate pair, 4 bytes; a ZWJ sequence), CJK (3 bytes), a line break, a lone `\r`. */
const hostileDeltas = ["Hello 👋🏽", " 你好，世界", "\r\n", "👩‍👩‍👧 ok", "é\u0301 ", "\n—end"]

/** A body's bytes as one write each. */
const byteByByte = (body: string): ReadonlyArray<Uint8Array> => [...Buffer.from(body, "utf8")].map((byte) => Uint8Array.of(byte))

/** The body with every line ended by `\r\n` (SSE allows CRLF, LF or CR). */
const crlf = (body: string) => body.replace(/\n/g, "\r\n")

/** A streamed response written as these pieces (and ended, or reset after the last). */
const written = (pieces: ReadonlyArray<string | Uint8Array>, end: "end" | "reset" = "end"): WireServer.Recording => ({
  status: 200,
  headers: { "content-type": "text/event-stream" },
  body: "",
  pieces,
  end
})

/** The SSE a vendor may put between events: a comment, a keep-alive blank line, Anthropic's `ping` event. */
const noise = (vendor: "anthropic" | "openai") =>
  `: ping\n\n\n${vendor === "anthropic" ? "event: ping\ndata: {\"type\": \"ping\"}\n\n" : ": keep-alive\n\n"}`

const vendors = [
  {
    name: "anthropic",
    layer: anthropic,
    text: (deltas: ReadonlyArray<string>) =>
      sse([a.start, { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }, ...deltas.map((text) => ({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text } }))]).body,
    end: sse([{ type: "content_block_stop", index: 0 }, ...a.end("end_turn")]).body,
    noise: noise("anthropic"),
    reset: "network",
    answer: a.answer
  },
  {
    name: "effect-ai (Anthropic)",
    layer: effectAiAnthropic,
    text: (deltas: ReadonlyArray<string>) =>
      sse([a.start, { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }, ...deltas.map((text) => ({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text } }))]).body,
    end: sse([{ type: "content_block_stop", index: 0 }, ...a.end("end_turn")]).body,
    noise: noise("anthropic"),
    // @effect/ai keeps a broken body read as an HttpResponseError `Decode` without its cause (the
    // socket's error): the bridge cannot tell it from a body it could not read, `server` — retried all the same.
    reset: "server",
    answer: a.answer
  },
  {
    name: "openai",
    layer: openai,
    text: (deltas: ReadonlyArray<string>) => sse([o.chunk({ role: "assistant", content: "" }), ...deltas.map((content) => o.chunk({ content }))]).body,
    end: sse([o.chunk({}, "stop"), o.usage], true).body,
    noise: noise("openai"),
    reset: "network",
    answer: o.answer
  }
]

/** The text of a stream with `noise` after every event. */
const noisy = (body: string, noise: string) => body.split("\n\n").filter((e) => e !== "").map((e) => `${e}\n\n${noise}`).join("")

const finalText = (events: ReadonlyArray<AgentEvent>) => {
  expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
  return deltasOf(events).join("")
}

describe("a stream as TCP delivers it", () => {
  for (const vendor of vendors) {
    it.effect(`${vendor.name}: every byte its own write, CRLF line endings, comments and pings between events — the text exact`, () =>
      Effect.gen(function*() {
        server.respond(written(byteByByte(crlf(noisy(vendor.text(hostileDeltas) + vendor.end, vendor.noise)))))
        const { events, sessionId } = yield* turn("greet")
        expect(finalText(events)).toBe(hostileDeltas.join(""))
        expectWellFormedLog(yield* replay(sessionId))
      }).pipe(Effect.provide(engine(vendor.layer))))

    it.effect(`${vendor.name}: every byte its own write, LF line endings — the text exact`, () =>
      Effect.gen(function*() {
        server.respond(written(byteByByte(vendor.text(hostileDeltas) + vendor.end)))
        const { events } = yield* turn("greet")
        expect(finalText(events)).toBe(hostileDeltas.join(""))
      }).pipe(Effect.provide(engine(vendor.layer))))

    it.effect(`${vendor.name}: the connection closed cleanly inside an event, after text — a network failure, the text before it stored exactly`, () =>
      Effect.gen(function*() {
        const whole = vendor.text(hostileDeltas.slice(0, 2))
        const next = vendor.text(["never shown"]).split("\n\n").filter((e) => e !== "").at(-1)!
        server.respond(written(byteByByte(whole + next.slice(0, next.length - 9))), vendor.answer())
        const events = yield* ProviderTurns.turnWithRetries("greet")
        expect(events.at(-1)!.payload).toEqual({ stopReason: "error", errorCode: "network" })
        expect(deltasOf(events).join("")).toBe(hostileDeltas.slice(0, 2).join(""))
        expect(server.received).toHaveLength(1)
      }).pipe(Effect.provide(engine(vendor.layer))))

    it.effect(`${vendor.name}: the connection reset inside an event, after text — the turn ends with a retryable error, the text before it stored exactly`, () =>
      Effect.gen(function*() {
        const whole = vendor.text(hostileDeltas.slice(0, 2))
        server.respond(written([whole, whole.split("\n\n")[1]!.slice(0, 20)], "reset"), vendor.answer())
        const events = yield* ProviderTurns.turnWithRetries("greet")
        expect(events.at(-1)!.payload).toEqual({ stopReason: "error", errorCode: vendor.reset })
        expect(deltasOf(events).join("")).toBe(hostileDeltas.slice(0, 2).join(""))
        expect(server.received).toHaveLength(1)
      }).pipe(Effect.provide(engine(vendor.layer))))

    it.effect(`${vendor.name}: the connection reset inside the first event — retried, the answer the retry's`, () =>
      Effect.gen(function*() {
        server.respond(written([vendor.text([]).slice(0, 30)], "reset"), vendor.answer())
        const events = yield* ProviderTurns.turnWithRetries("greet")
        expect(events.filter((e) => e.type === "model.retry").map((e) => e.payload)).toMatchObject([{ errorCode: vendor.reset }])
        expect(finalText(events)).toBe("done")
      }).pipe(Effect.provide(engine(vendor.layer))))
  }
})

/** Every other event's lines ended CRLF, the rest LF, all in one write. */
const mixedEndings = (body: string) => body.split("\n\n").map((e, i) => (i % 2 === 0 ? crlf(e + "\n\n") : e + "\n\n")).join("")

describe("line endings that switch between CRLF and LF within one stream", () => {
  for (const vendor of vendors.filter((v) => v.name === "anthropic" || v.name === "openai")) {
    it.effect(`${vendor.name}: the whole response in one write — the text exact`, () =>
      Effect.gen(function*() {
        server.respond(written([mixedEndings(noisy(vendor.text(hostileDeltas) + vendor.end, vendor.noise))]))
        const { events } = yield* turn("greet")
        expect(finalText(events)).toBe(hostileDeltas.join(""))
      }).pipe(Effect.provide(engine(vendor.layer))))
  }

  // @effect/experimental's SSE parser (under @effect/ai-anthropic) misreads a stream whose lines
  // switch from CRLF to LF: it joins two events' data. Not ours to fix; what the bridge must do is
  // fail typed, never end on a short answer.
  it.effect("effect-ai (Anthropic): @effect/experimental joins two events — a typed failure, retried, never a short final answer", () =>
    Effect.gen(function*() {
      const vendor = vendors.find((v) => v.name.startsWith("effect-ai"))!
      server.respond(written([mixedEndings(noisy(vendor.text(hostileDeltas) + vendor.end, vendor.noise))]), vendor.answer())
      const events = yield* ProviderTurns.turnWithRetries("greet")
      expect(events.filter((e) => e.type === "model.retry").map((e) => e.payload)).toMatchObject([{ errorCode: "server" }])
      expect(finalText(events)).toBe("done")
    }).pipe(Effect.provide(engine(effectAiAnthropic))))
})
