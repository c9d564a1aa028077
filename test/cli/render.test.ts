/**
 * The renderer never writes a raw control character (issue 8, item 10): not from the model's text,
 * not from a tool's output in an old log written before output was escaped, not from a call's
 * arguments. Tab and newline pass; a carriage return (which would hide the line before it) is dropped.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Render from "../../src/cli/Render.js"
import type { AgentEvent } from "../../src/index.js"

const envelope = { id: "evt", sessionId: "sess_1", turnId: "turn_1", timestamp: "2026-11-30T00:00:00.000Z" }

describe("Render", () => {
  it("escapes control characters in every text it writes, during run and replay", () => {
    const events = [
      { ...envelope, sequence: 2, type: "model.delta", payload: { text: "\u001b]0;owned\u0007a\tb\r\nc\u009b2J" } },
      { ...envelope, sequence: 3, type: "model.tool_call_requested", payload: { toolCallId: "c1", tool: "shell", args: { command: "echo \u001b[31mred" } } },
      { ...envelope, sequence: 4, type: "tool.completed", payload: { toolCallId: "c1", result: "x\u0000y\u001b[2J\nmore" } },
      { ...envelope, sequence: 5, type: "tool.failed", payload: { toolCallId: "c1", errorCode: "tool_error", message: "bad\u001b[H" } }
    ] as unknown as ReadonlyArray<AgentEvent.AgentEvent>
    for (const transcript of [false, true]) {
      let written = ""
      const render = Render.make({ out: (t) => (written += t), err: (t) => (written += t) }, { transcript })
      for (const event of events) render.event(event)
      expect(written).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/)
      expect(written).toContain("\\x1b]0;owned\\x07a\tb\nc\\x9b2J")
      expect(written).toContain("shell echo \\x1b[31mred")
      expect(written).toContain("x\\x00y\\x1b[2J (+1 line)")
    }
  })
})
