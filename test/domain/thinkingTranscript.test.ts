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
})
