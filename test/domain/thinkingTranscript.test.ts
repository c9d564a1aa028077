/**
 * Thinking in the transcript: `model.thinking_delta` / `model.thinking_block` fold into the response's
 * entry (immutable `reduce`, the `Held` replay and the engine's `LiveTranscript` agree), the request's
 * assistant message carries the blocks that can be sent back (signed or redacted) and only those, a
 * log without thinking renders as it did, the state folds thinking deltas as it folds text deltas,
 * and a compaction that keeps the entry keeps its thinking. The Anthropic adapter sends a model only
 * its own blocks.
 */
import { describe, expect, it } from "vitest"
import * as Either from "effect/Either"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import * as SessionState from "../../src/domain/SessionState.js"
import * as SessionView from "../../src/domain/SessionView.js"
import * as Transcript from "../../src/domain/Transcript.js"
import { LiveTranscript } from "../../src/engine/LiveTranscript.js"
import * as AnthropicModelProvider from "../../src/layers/AnthropicModelProvider.js"

const log = (thinking: boolean): Array<AgentEvent> => {
  const events: Array<{ type: string; turnId?: string; payload: object }> = [
    { type: "session.created", payload: { cwd: "/w", client: "test" } },
    { type: "turn.started", turnId: "t1", payload: { promptPreview: "go" } },
    { type: "user.message", turnId: "t1", payload: { content: "go" } },
    ...(thinking
      ? [
        { type: "model.thinking_delta", turnId: "t1", payload: { text: "first " } },
        { type: "model.thinking_delta", turnId: "t1", payload: { text: "thought" } },
        { type: "model.thinking_block", turnId: "t1", payload: { provider: "anthropic", model: "m", signature: "sig" } },
        { type: "model.thinking_block", turnId: "t1", payload: { provider: "anthropic", model: "m", redacted: "data" } },
        // Cut before its end: shown, never sent.
        { type: "model.thinking_delta", turnId: "t1", payload: { text: "unsigned" } }
      ]
      : []),
    { type: "model.delta", turnId: "t1", payload: { text: "reading" } },
    { type: "model.tool_call_requested", turnId: "t1", payload: { toolCallId: "c1", tool: "read_file", args: { path: "a" } } },
    { type: "permission.requested", turnId: "t1", payload: { toolCallId: "c1", tool: "read_file", risk: "read" } },
    { type: "permission.resolved", turnId: "t1", payload: { toolCallId: "c1", decision: "allow", actor: "policy" } },
    { type: "tool.started", turnId: "t1", payload: { toolCallId: "c1", tool: "read_file", args: { path: "a" } } },
    { type: "tool.completed", turnId: "t1", payload: { toolCallId: "c1", result: "ok" } },
    { type: "model.delta", turnId: "t1", payload: { text: "done" } },
    { type: "turn.completed", turnId: "t1", payload: { stopReason: "final" } }
  ]
  return events.map((e, i) => ({ id: `evt_${i + 1}`, sessionId: "sess_1", sequence: i + 1, timestamp: "t", ...e }) as unknown as AgentEvent)
}

const signed = { text: "first thought", provider: "anthropic", model: "m", signature: "sig" }
const redacted = { text: "", provider: "anthropic", model: "m", redacted: "data" }

describe("thinking in the transcript", () => {
  it("reduce, replay and the live transcript agree; the request carries the signed and redacted blocks, not the unsigned one", () => {
    const events = log(true)
    const reduced = events.reduce(Transcript.reduce, Transcript.empty)
    const replayed = Transcript.replay(events)
    expect(replayed).toEqual(reduced)
    expect(LiveTranscript.of(events).snapshot()).toEqual(reduced)
    const assistant = replayed.entries[1]
    expect(assistant?.role === "assistant" ? assistant.thinking : undefined).toEqual([signed, redacted, { text: "unsigned" }])
    const messages = Transcript.messages(replayed)
    expect(messages[1]).toEqual({
      role: "assistant",
      content: "reading",
      toolCalls: [{ toolCallId: "c1", tool: "read_file", args: { path: "a" } }],
      thinking: [signed, redacted]
    })
    expect(LiveTranscript.of(events).rendered()).toEqual(Transcript.rendered(replayed))
    // Counted in the request's size (the token estimate), as it is sent.
    expect(Transcript.rendered(replayed).jsonLength).toBe(JSON.stringify(messages).length)
  })

  it("a log without thinking renders exactly as before: no thinking key anywhere", () => {
    const rendered = Transcript.rendered(Transcript.replay(log(false)))
    expect(JSON.stringify(rendered.messages)).not.toContain("thinking")
    expect(Transcript.replay(log(false)).entries.some((e) => "thinking" in e)).toBe(false)
  })

  it("the state folds thinking deltas as text deltas; the view shows thinking as an item of its own", () => {
    const events = log(true)
    const folder = new SessionState.Folder(Either.getOrThrow(SessionState.replay(events.slice(0, 3)))!)
    for (const event of events.slice(3)) folder.add(event)
    expect(folder.state).toEqual(Either.getOrThrow(SessionState.replay(events)))
    const view = events.reduce((v, e) => SessionView.step(v, e), SessionView.empty())
    const items = view.turns.flatMap((turn) => turn.items)
    expect(items.filter((item) => item.kind === "thinking")).toEqual([{ kind: "thinking", text: "first thoughtunsigned" }])
  })

  it("a compaction that keeps the entry keeps its thinking", () => {
    const events = log(true)
    const compacted = Transcript.compacted(Transcript.replay(events), { compactionId: "k", summary: "s", firstKeptSequence: 4, sequence: 99 })
    const assistant = compacted.entries[1]
    expect(assistant?.role === "assistant" ? assistant.thinking?.slice(0, 2) : undefined).toEqual([signed, redacted])
  })

  it("the Anthropic adapter sends a model its own blocks first, and another model's none", () => {
    const messages = Transcript.messages(Transcript.replay(log(true)))
    const own = AnthropicModelProvider.toMessages(messages, undefined, [], "m")
    expect(own[1]!.content).toEqual([
      { type: "thinking", thinking: "first thought", signature: "sig" },
      { type: "redacted_thinking", data: "data" },
      { type: "text", text: "reading" },
      { type: "tool_use", id: "c1", name: "read_file", input: { path: "a" } }
    ])
    const other = AnthropicModelProvider.toMessages(messages, undefined, [], "another")
    expect((other[1]!.content as Array<{ type: string }>).map((b) => b.type)).toEqual(["text", "tool_use"])
  })

  it("interleaved thinking keeps its place: reduce, replay and the live transcript agree, and a compaction keeps it", () => {
    // [T1, text, T2, tool_use]: T2 ended after the text and before the call.
    const events = log(false).flatMap((e) =>
      e.type !== "model.delta" || e.payload.text !== "reading" ? [e] : [
        { ...e, type: "model.thinking_block", payload: { provider: "anthropic", model: "m", signature: "sig-1" } },
        e,
        { ...e, type: "model.thinking_delta", payload: { text: "second" } },
        { ...e, type: "model.thinking_block", payload: { provider: "anthropic", model: "m", signature: "sig-2" } }
      ] as Array<AgentEvent>
    ).map((e, i) => ({ ...e, sequence: i + 1 }) as AgentEvent)
    const reduced = events.reduce(Transcript.reduce, Transcript.empty)
    expect(Transcript.replay(events)).toEqual(reduced)
    expect(LiveTranscript.of(events).snapshot()).toEqual(reduced)
    expect(LiveTranscript.of(events).rendered()).toEqual(Transcript.rendered(reduced))
    const assistant = reduced.entries[1]
    // The first block opens the response: no place, as every block of a log from before had none.
    expect(assistant?.role === "assistant" ? assistant.thinking : undefined).toEqual([
      { text: "", provider: "anthropic", model: "m", signature: "sig-1" },
      { text: "second", provider: "anthropic", model: "m", signature: "sig-2", at: { text: "reading".length, calls: 0 } }
    ])
    const compacted = Transcript.compacted(reduced, { compactionId: "k", summary: "s", firstKeptSequence: 4, sequence: 99 })
    expect(compacted.entries[1]).toEqual(assistant)
    expect(AnthropicModelProvider.toMessages(Transcript.messages(reduced), undefined, [], "m")[1]!.content).toEqual([
      { type: "thinking", thinking: "", signature: "sig-1" },
      { type: "text", text: "reading" },
      { type: "thinking", thinking: "second", signature: "sig-2" },
      { type: "tool_use", id: "c1", name: "read_file", input: { path: "a" } }
    ])
  })

  it("a place is counted among the calls sent: a call left without a result is not sent, and a block after it moves up", () => {
    const messages = Transcript.messagesOf({
      role: "assistant",
      turnId: "t1",
      content: "",
      toolCalls: [
        { toolCallId: "c1", tool: "read_file", args: {} },
        { toolCallId: "c2", tool: "read_file", args: {}, result: { content: "ok", isError: false } }
      ],
      thinking: [{ text: "after c1", provider: "anthropic", model: "m", signature: "s", at: { text: 0, calls: 1 } }]
    })
    expect(AnthropicModelProvider.toMessages(messages, undefined, [], "m")[0]!.content).toEqual([
      { type: "thinking", thinking: "after c1", signature: "s" },
      { type: "tool_use", id: "c2", name: "read_file", input: {} }
    ])
  })

  it("blocks without a place (a message made before places were kept, or by an embedder) go first, as before", () => {
    const message: Transcript.Message = {
      role: "assistant",
      content: "reading",
      toolCalls: [{ toolCallId: "c1", tool: "read_file", args: {} }],
      thinking: [signed, { ...signed, text: "second", signature: "sig-2" }]
    }
    expect(AnthropicModelProvider.toMessages([message], undefined, [], "m")[0]!.content).toEqual([
      { type: "thinking", thinking: "first thought", signature: "sig" },
      { type: "thinking", thinking: "second", signature: "sig-2" },
      { type: "text", text: "reading" },
      { type: "tool_use", id: "c1", name: "read_file", input: {} }
    ])
  })
})

describe("text split by thinking", () => {
  it("a piece of only white space between two blocks is left out (the Messages API refuses a text block of white space); the text around stays", () => {
    const block = (signature: string, text: number) => ({ text: signature, provider: "anthropic", model: "m", signature, at: { text, calls: 0 } })
    const message = { content: "Look.\n\n", toolCalls: [{ toolCallId: "c1", tool: "read_file", args: { path: "a" } }] }
    const order = Transcript.inResponseOrder(message, [block("T2", 5), block("T3", 7)], {
      thinking: (b) => [`thinking:${b.signature}`],
      text: (text) => `text:${JSON.stringify(text)}`,
      call: (call) => `call:${call.toolCallId}`
    })
    expect(order).toEqual(["text:\"Look.\"", "thinking:T2", "thinking:T3", "call:c1"])
  })
})
