/**
 * The renderer never writes a raw control character (issue 8, item 10): not from the model's text,
 * not from a tool's output in an old log written before output was escaped, not from a call's
 * arguments. Tab and newline pass; a carriage return (which would hide the line before it) is dropped.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Render from "../../src/cli/Render.js"
import * as SessionView from "../../src/domain/SessionView.js"
import type { AgentEvent } from "../../src/index.js"

const envelope = { id: "evt", sessionId: "sess_1", turnId: "turn_1", timestamp: "2026-11-30T00:00:00.000Z" }

describe("Render", () => {
  it("a turn the model refused says so, even with no text at all (the CLI and the viewer); a cut answer too", () => {
    const ended = (finishReason?: string) =>
      [
        { ...envelope, sequence: 2, type: "turn.started", payload: { promptPreview: "x" } },
        { ...envelope, sequence: 3, type: "turn.completed", payload: { stopReason: "final", ...(finishReason === undefined ? {} : { finishReason }) } }
      ] as unknown as ReadonlyArray<AgentEvent.AgentEvent>
    const shown = (finishReason?: string) => {
      let written = ""
      const render = Render.make({ out: (t) => (written += t), err: (t) => (written += t) }, { transcript: false })
      for (const event of ended(finishReason)) render.event(event)
      return written
    }
    expect(shown("content_filter")).toContain("[the model refused to answer (content_filter)]")
    expect(shown("length")).toContain("[the answer was cut at the output limit (length)]")
    expect(shown()).not.toMatch(/refused|cut at/)
    expect(SessionView.fold(ended("content_filter")).turns[0]!.end).toMatchObject({ stopReason: "final", finishReason: "content_filter" })
  })

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

  it("the approval question shows the whole call, one line, quoted with bidi and invisible format characters escaped when they are there; the call's note stays short", () => {
    const hidden = `git commit -m "${"fix ".repeat(30)}" --amend --no-verify`
    expect(Render.approvalQuestion({ tool: "shell", args: { command: hidden } })).toBe(`  Allow shell ${hidden}?`)
    expect(Render.approvalQuestion({ tool: "shell", args: { command: "echo \"x\u202e ;y\u2066\" a\u200bb\nc\td" } })).toBe("  Allow shell \"echo \\\"x\\u202e ;y\\u2066\\\" a\\u200bb\\nc\\td\"?")
    const args = { to: "a@example.com", body: "x".repeat(200), bcc: "collect@example.net" }
    expect(Render.approvalQuestion({ tool: "mcp__mail__send", args })).toBe(`  Allow mcp__mail__send ${JSON.stringify(args)}?`)
    expect(Render.approvalQuestion({ tool: "mcp__ops__run", args: { command: "uptime", host: "production" } })).toBe(`  Allow mcp__ops__run {"command":"uptime","host":"production"}?`)
    // Why a rule of the user's did not cover it, and the flag that would, quoted for a shell (or no flag, for a line one cannot carry).
    const reason = "your rule --allow shell:sed * does not cover it"
    expect(Render.approvalQuestion({ tool: "shell", args: { command: "sed -i 's/a/b/' f.txt" } }, { reason, allowCommand: "sed -i 's/a/b/' f.txt" })).toBe(
      `  Allow shell sed -i 's/a/b/' f.txt? (${reason}; allow it with --allow 'shell:sed -i '\\''s/a/b/'\\'' f.txt' or answer here)`
    )
    expect(Render.approvalQuestion({ tool: "shell", args: { command: "sed -i s/a/b/ f\u202e.txt" } }, { reason: "r\u202e", allowCommand: "sed -i s/a/b/ f\u202e.txt" })).toBe(
      "  Allow shell \"sed -i s/a/b/ f\\u202e.txt\"? (r\\u202e; allow it with a rule that spells the command out, or answer here)"
    )
    expect(Render.describeCall({ tool: "shell", args: { command: hidden } }).length).toBeLessThan(90)
    expect(Render.describeCall({ tool: "shell", args: { command: "cat a\u202eb" } })).toBe("shell cat a\\u202eb")
  })

  it("an edit shows its diff under the call during run and chat (lines shared at both ends left out; coloured on a terminal); a write its content; escaped; long ones cut", () => {
    const requested = (sequence: number, tool: string, args: unknown) =>
      ({ ...envelope, sequence, type: "model.tool_call_requested", payload: { toolCallId: `c${sequence}`, tool, args } }) as unknown as AgentEvent.AgentEvent
    let err = ""
    const render = Render.make({ out: () => {}, err: (t) => (err += t) }, { transcript: false })
    render.event(requested(2, "edit_file", { path: "a.ts", oldString: "import x\nlet a = 1\nexport { a }", newString: "import x\nconst a = 1\nexport { a }" }))
    expect(err).toBe("  ⚙ edit_file a.ts\n      - let a = 1\n      + const a = 1\n")
    err = ""
    render.event(requested(3, "write_file", { path: "b.txt", content: Array.from({ length: 20 }, (_, i) => `line ${i}\u001b[2J`).join("\n") + "\n" }))
    const lines = err.trimEnd().split("\n")
    expect(lines[1]).toBe("      + line 0\\x1b[2J")
    expect(lines).toHaveLength(1 + 12 + 1)
    expect(lines.at(-1)).toBe("      … 8 more lines")
    // One line of 2 MB is cut to its first 400 characters, the rest counted (it was printed whole).
    err = ""
    render.event(requested(6, "write_file", { path: "c.txt", content: "y".repeat(2_000_000) }))
    expect(err).toBe(`  ⚙ write_file c.txt\n      + ${"y".repeat(398)} … (1999602 more characters)\n`)
    // Arguments that are not an edit's: the call line alone.
    err = ""
    render.event(requested(4, "edit_file", { path: "a.ts", oldString: 3 }))
    expect(err).toBe("  ⚙ edit_file a.ts\n")
    let coloured = ""
    Render.make({ out: () => {}, err: (t) => (coloured += t) }, { transcript: false, color: true }).event(requested(5, "edit_file", { path: "a", oldString: "x", newString: "y" }))
    expect(coloured).toBe("  ⚙ edit_file a\n\u001b[31m      - x\u001b[39m\n\u001b[32m      + y\u001b[39m\n")
    // replay's transcript keeps to the conversation.
    let transcript = ""
    Render.make({ out: (t) => (transcript += t), err: (t) => (transcript += t) }, { transcript: true }).event(requested(6, "edit_file", { path: "a", oldString: "x", newString: "y" }))
    expect(transcript).toBe("  ⚙ edit_file a\n")
  })

  it("a turn whose request the provider refused as invalid says its images are left out from then on; not one without images", () => {
    const image = { blob: "ab".repeat(32), mediaType: "image/png", bytes: 67 }
    const turn = (turnId: string, images: ReadonlyArray<unknown> | undefined, errorCode: string) => [
      { ...envelope, turnId, sequence: 2, type: "user.message", payload: { content: "look", ...(images === undefined ? {} : { images }) } },
      { ...envelope, turnId, sequence: 3, type: "turn.completed", payload: { stopReason: "error", errorCode } }
    ] as unknown as ReadonlyArray<AgentEvent.AgentEvent>
    const rendered = (events: ReadonlyArray<AgentEvent.AgentEvent>) => {
      let err = ""
      const render = Render.make({ out: () => {}, err: (t) => (err += t) }, { transcript: false })
      for (const event of events) render.event(event)
      return err
    }
    expect(rendered(turn("turn_1", [image, image], "invalid_request"))).toContain("[the provider refused the turn's request: its 2 images are left out of later requests; attach or read them again to send them]")
    expect(rendered(turn("turn_1", undefined, "invalid_request"))).toBe("[turn ended with an error: invalid_request]\n")
    expect(rendered(turn("turn_1", [image], "overloaded"))).toBe("[turn ended with an error: overloaded]\n")
    // Images of an earlier turn are not this turn's.
    expect(rendered([...turn("turn_1", [image], "overloaded"), ...turn("turn_2", undefined, "invalid_request")])).not.toContain("left out")
  })
  it("a subagent's question shows its session id escaped (a log's, when a session is resumed)", () => {
    const question = Render.subagentQuestion({
      childSessionId: "sess_\u001b]0;owned\u0007",
      childToolCallId: "c1",
      description: "look",
      tool: "shell",
      args: { command: "ls" }
    } as unknown as AgentEvent.PayloadOf<"subagent.asked">)
    expect(question).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/)
    expect(question).toContain("(sess_\\x1b]0;owned\\x07) asks")
  })
  it("a subagent's question says where a link leads, as the parent's own does (outsidePaths)", () => {
    const asked: AgentEvent.PayloadOf<"subagent.asked"> = {
      toolCallId: "t1",
      childSessionId: "sess_c",
      childToolCallId: "c1",
      description: "tidy",
      tool: "write_file",
      args: { path: "shared/child.txt", content: "x" },
      risk: "write",
      outsidePaths: ["/tmp/outside/child.txt"]
    }
    expect(Render.subagentQuestion(asked)).toContain("(outside the working directory: /tmp/outside/child.txt)?")
    const { outsidePaths: _, ...old } = asked
    expect(Render.subagentQuestion(old)).not.toContain("outside")
  })
})
