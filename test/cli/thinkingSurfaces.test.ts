/**
 * Thinking where it is shown: `run` gives one line per block on stderr (dimmed with color), never on
 * stdout with the answer; `replay` prints the whole of it in the transcript; ACP sends it as
 * `agent_thought_chunk` and never the signature; the viewer's fold keeps it apart from the answer.
 */
import { describe, expect, it } from "@effect/vitest"
import { AcpMapper } from "../../src/acp.js"
import * as Render from "../../src/cli/Render.js"
import * as SessionView from "../../src/domain/SessionView.js"
import type { AgentEvent } from "../../src/index.js"

const envelope = { id: "evt", sessionId: "sess_1", turnId: "turn_1", timestamp: "2026-11-30T00:00:00.000Z" }

const events = [
  { ...envelope, sequence: 2, type: "turn.started", payload: { promptPreview: "x" } },
  { ...envelope, sequence: 3, type: "model.thinking_delta", payload: { text: "first line\nsecond \u001b[2Jline" } },
  { ...envelope, sequence: 4, type: "model.thinking_block", payload: { provider: "anthropic", model: "m", signature: "SIGNATURE" } },
  { ...envelope, sequence: 5, type: "model.delta", payload: { text: "the answer" } },
  { ...envelope, sequence: 6, type: "turn.completed", payload: { stopReason: "final" } }
] as unknown as ReadonlyArray<AgentEvent.AgentEvent>

const rendered = (transcript: boolean, color = false, shown: ReadonlyArray<AgentEvent.AgentEvent> = events) => {
  const written = { out: "", err: "" }
  const render = Render.make({ out: (t) => (written.out += t), err: (t) => (written.err += t) }, { transcript, color })
  for (const event of shown) render.event(event)
  return written
}

describe("thinking on the surfaces", () => {
  it("run: one line on stderr per block, dimmed with color; stdout holds the answer alone", () => {
    const plain = rendered(false)
    expect(plain.out).toBe("the answer\n")
    expect(plain.err).toContain("  ✻ first line second")
    expect(plain.err).not.toContain("\u001b[2J")
    expect(rendered(false, true).err).toContain("\u001b[2m  ✻ first line second")
    expect(JSON.stringify(plain)).not.toContain("SIGNATURE")
  })

  it("replay: the whole thinking, each line marked, before the answer", () => {
    const { out } = rendered(true)
    expect(out.indexOf("  ✻ first line\n  ✻ second")).toBeGreaterThanOrEqual(0)
    expect(out.indexOf("✻")).toBeLessThan(out.indexOf("the answer"))
  })

  it("ACP: agent_thought_chunk for the thinking, nothing for the block's end", () => {
    const updates = events.flatMap((event) => AcpMapper.updatesOf(event, { cwd: "/", phase: "live", support: AcpMapper.baseline }))
    expect(updates).toContainEqual({ sessionUpdate: "agent_thought_chunk", content: { type: "text", text: "first line\nsecond \u001b[2Jline" } })
    expect(JSON.stringify(updates)).not.toContain("SIGNATURE")
  })

  it("the viewer's fold: a thinking item apart from the answer's text", () => {
    const turn = SessionView.fold(events).turns[0]!
    expect(turn.items.map((item) => item.kind)).toEqual(["thinking", "text"])
  })
})

describe("omitted display: signed blocks with no text", () => {
  const omitted = [
    { ...envelope, sequence: 2, type: "turn.started", payload: { promptPreview: "x" } },
    { ...envelope, sequence: 3, type: "model.thinking_block", payload: { provider: "anthropic", model: "m", signature: "SIGNATURE" } },
    { ...envelope, sequence: 4, type: "model.thinking_delta", payload: { text: "" } },
    { ...envelope, sequence: 5, type: "model.thinking_block", payload: { provider: "anthropic", model: "m", signature: "SIGNATURE2" } },
    { ...envelope, sequence: 6, type: "model.delta", payload: { text: "the answer" } },
    { ...envelope, sequence: 7, type: "turn.completed", payload: { stopReason: "final" } }
  ] as unknown as ReadonlyArray<AgentEvent.AgentEvent>

  it("run and replay show no empty ✻ line, ACP sends no thought chunk, the viewer no empty thinking item", () => {
    expect(rendered(false, true, omitted)).toEqual({ out: "the answer\n", err: "" })
    expect(rendered(true, false, omitted).out).not.toContain("✻")
    expect(omitted.flatMap((event) => AcpMapper.updatesOf(event, { cwd: "/", phase: "live", support: AcpMapper.baseline }))).toEqual([
      { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "the answer" } }
    ])
    expect(SessionView.fold(omitted).turns[0]!.items.map((item) => item.kind)).toEqual(["text"])
  })
})
