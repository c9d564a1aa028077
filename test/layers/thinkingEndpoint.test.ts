/**
 * An endpoint that turns extended thinking on by itself: its response has signed `thinking` blocks
 * before a `tool_use`, and it refuses a next request that has the call and its result but not the
 * thinking. The Anthropic adapter and the `@effect/ai` bridge store the thinking and send it back, so
 * the turn goes on; a refusal all the same (the request lost it: a summary, another model) ends the
 * turn with a typed failure whose log line says why and what to do.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as HashMap from "effect/HashMap"
import * as Logger from "effect/Logger"
import { expectWellFormedLog } from "../helpers.js"
import * as WireStreams from "./wireStreams.js"

const server = WireStreams.serverForTests()

const { anthropic, effectAiAnthropic } = WireStreams.vendorLayers(() => server)
const { a, sse } = WireStreams

const thought = "SECRET-THOUGHT"

/** Thinking with its signature, then a call: what an endpoint with thinking on answers. */
const thinkingThenCall = () =>
  sse([
    a.start,
    { type: "content_block_start", index: 0, content_block: { type: "thinking", thinking: "", signature: "" } },
    { type: "content_block_delta", index: 0, delta: { type: "thinking_delta", thinking: thought } },
    { type: "content_block_delta", index: 0, delta: { type: "signature_delta", signature: "EqQBCkYIARgCKkD-signature" } },
    { type: "content_block_stop", index: 0 },
    { type: "content_block_start", index: 1, content_block: { type: "redacted_thinking", data: "REDACTED-DATA" } },
    { type: "content_block_stop", index: 1 },
    ...a.tool(2, "toolu_1", { path: "a" }),
    ...a.end("tool_use")
  ])

/** Anthropic's answer to a request whose last assistant message starts with `tool_use` while thinking is on. */
const thinkingRequired = {
  status: 400,
  headers: { "content-type": "application/json", "request-id": "req_1" },
  body: JSON.stringify({
    type: "error",
    error: {
      type: "invalid_request_error",
      message: "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`. When `thinking` is enabled, " +
        "a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). " +
        "We recommend you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`."
    },
    request_id: "req_1"
  })
}

describe("an endpoint that turns thinking on by itself, then wants the thinking back", () => {
  for (const vendor of [{ name: "anthropic", layer: anthropic }, { name: "effect-ai (Anthropic)", layer: effectAiAnthropic }]) {
    it.effect(`${vendor.name}: the thinking is stored and sent back, signed, before the call; the turn ends final`, () =>
      Effect.gen(function*() {
        server.respond(thinkingThenCall(), a.answer())
        const { events, sessionId } = yield* WireStreams.turn("read a")
        expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
        expect(events.filter((e) => e.type === "model.thinking_delta").map((e) => e.payload)).toEqual([{ text: thought }])
        const assistant = server.received[1]!.body.messages.find((m: { role: string }) => m.role === "assistant")
        expect(assistant.content[0]).toEqual({ type: "thinking", thinking: thought, signature: "EqQBCkYIARgCKkD-signature" })
        expect(assistant.content[1]).toEqual({ type: "redacted_thinking", data: "REDACTED-DATA" })
        expect(assistant.content[2]).toMatchObject({ type: "tool_use", id: "toolu_1" })
        expectWellFormedLog(yield* WireStreams.replay(sessionId))
      }).pipe(Effect.provide(WireStreams.engine(vendor.layer))))

    it.effect(`${vendor.name}: a request refused for want of thinking (a summary took it) ends invalid_request, the log line naming thinking`, () =>
      Effect.gen(function*() {
        const warnings: Array<string> = []
        const capture = Logger.replace(Logger.defaultLogger, Logger.make(({ annotations, message }) => {
          warnings.push(`${JSON.stringify(message)} ${HashMap.toEntries(annotations).map(([k, v]) => `${k}=${String(v)}`).join(" ")}`)
        }))
        server.respond(thinkingThenCall(), thinkingRequired)
        const { events, sessionId } = yield* WireStreams.turn("read a").pipe(Effect.provide(capture))
        expect(events.at(-1)!.payload).toMatchObject({ stopReason: "error", errorCode: "invalid_request" })
        expect(events.filter((e) => e.type === "tool.completed").map((e) => e.payload.toolCallId)).toEqual(["toolu_1"])
        expect(server.received).toHaveLength(2)
        const failed = warnings.filter((line) => line.includes("model provider failed"))
        expect(failed).toHaveLength(1)
        expect(failed[0]).toMatch(/extended thinking on/)
        expect(failed[0]).toMatch(/turn thinking off at the endpoint/)
        expect(failed[0]).not.toContain(thought)
        expectWellFormedLog(yield* WireStreams.replay(sessionId))
      }).pipe(Effect.provide(WireStreams.engine(vendor.layer))))
  }
})
