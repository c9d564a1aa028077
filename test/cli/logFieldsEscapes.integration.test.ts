/**
 * A data dir that came with a repository (`.effect-agent/` in a clone): its logs' ids are any
 * strings the author wrote. `effect-agent pending` printed a waiting call's `toolCallId` as it was,
 * and `repair` the session and turn ids of the lines it dropped: a log saying
 * `call_\x1b]0;PWNED\x07…` retitled the window of whoever ran either there (OSC 52 would have
 * written their clipboard). Both lines are now made safe for the terminal.
 */
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { run, scratch } from "./subprocess.js"

const { dir } = scratch("log-fields-escapes")

const hostile = "\x1b]0;PWNED\x07\x1b[2J"

const logOf = (sessionId: string, events: ReadonlyArray<readonly [string, string | undefined, Record<string, unknown>] | Record<string, unknown>>) =>
  [
    { format: "effect-agent/events", version: 1 },
    ...events.map((e, i) =>
      Array.isArray(e)
        ? { id: `evt_${i + 1}`, sessionId, ...(e[1] === undefined ? {} : { turnId: e[1] }), sequence: i + 1, timestamp: "2026-01-01T00:00:00.000Z", type: e[0], payload: e[2] }
        : e
    )
  ].map((line) => JSON.stringify(line)).join("\n") + "\n"

const clone = (name: string) => {
  const cwd = join(dir, name)
  mkdirSync(join(cwd, ".effect-agent", "sessions"), { recursive: true })
  return cwd
}

const raw = (text: string) => expect(text).not.toMatch(/[\x07\x1b]/)

describe("a clone's log: its ids reach the terminal escaped", () => {
  it("pending: a waiting call's id", async () => {
    const cwd = clone("pending")
    const toolCallId = `call_${hostile}`
    writeFileSync(
      join(cwd, ".effect-agent", "sessions", "sess_a.jsonl"),
      logOf("sess_a", [
        ["session.created", undefined, { cwd, client: "cli" }],
        ["turn.started", "turn_1", { promptPreview: "hi" }],
        ["user.message", "turn_1", { content: "hi" }],
        ["model.tool_call_requested", "turn_1", { toolCallId, tool: "shell", args: { command: "ls" } }],
        ["permission.requested", "turn_1", { toolCallId, tool: "shell", risk: "read" }],
        ["permission.resolved", "turn_1", { toolCallId, decision: "ask", policy: "default-ask", actor: "policy" }]
      ])
    )
    for (const args of [["pending"], ["pending", "sess_a"]]) {
      const listed = await run(args, { cwd })
      expect(listed.code).toBe(0)
      raw(listed.stdout)
      expect(listed.stdout).toContain("sess_a  call_\\x1b]0;PWNED\\x07")
    }
  })

  it("repair: the ids of the lines it drops", async () => {
    const cwd = clone("repair")
    const created = ["session.created", undefined, { cwd, client: "cli" }] as const
    writeFileSync(
      join(cwd, ".effect-agent", "sessions", "sess_r.jsonl"),
      logOf("sess_r", [
        created,
        { id: "evt_2", sessionId: `sess_${hostile}`, sequence: 2, timestamp: "2026-01-01T00:00:00.000Z", type: "session.titled", payload: { title: "x" } }
      ])
    )
    const repaired = await run(["repair", "sess_r"], { cwd })
    expect(repaired.code).toBe(0)
    raw(repaired.stdout)
    raw(repaired.stderr)
    expect(repaired.stderr).toContain("event of another session (sess_\\x1b]0;PWNED\\x07")
  })
})
