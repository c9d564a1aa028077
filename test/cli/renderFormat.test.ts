/**
 * Bidi controls and invisible format characters reach the terminal escaped wherever a model's or a
 * tool's text is shown, not only in the approval question: an edit's diff under its call (the
 * change the user approves; Trojan Source reorders a line so that it reads as another), the model's
 * prose and a tool's result were written with U+202E as it came. The log keeps the text as it came.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Render from "../../src/cli/Render.js"
import type { AgentEvent } from "../../src/index.js"

const envelope = { id: "evt", sessionId: "sess_1", turnId: "turn_1", timestamp: "2026-11-30T00:00:00.000Z" }
const event = (sequence: number, type: string, payload: unknown) => ({ ...envelope, sequence, type, payload }) as unknown as AgentEvent.AgentEvent
const format = /[\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/

describe("format characters on the terminal", () => {
  it("an edit's diff shows them escaped, coloured or not", () => {
    for (const color of [false, true]) {
      let err = ""
      Render.make({ out: () => {}, err: (t) => (err += t) }, { transcript: false, color })
        .event(event(1, "model.tool_call_requested", { toolCallId: "c1", tool: "edit_file", args: { path: "a", oldString: "x", newString: "if (admin\u202e \u2066) {" } }))
      expect(err).not.toMatch(format)
      expect(err).toContain("+ if (admin\\u202e \\u2066) {")
    }
  })

  it("the model's prose and the transcript show them escaped", () => {
    for (const transcript of [false, true]) {
      let written = ""
      const render = Render.make({ out: (t) => (written += t), err: (t) => (written += t) }, { transcript })
      render.event(event(1, "user.message", { content: "hi\u202e" }))
      render.event(event(2, "model.delta", { text: "run `rm -rf ~\u202e/cod.txt`\u200b" }))
      expect(written).not.toMatch(format)
      expect(written).toContain("run `rm -rf ~\\u202e/cod.txt`\\u200b")
    }
  })
})
