/**
 * A data dir that came with a repository (`.effect-agent/` in a clone): its logs' ids are any
 * strings the author wrote. `effect-agent pending` printed a waiting call's `toolCallId` as it was,
 * and `repair` the session and turn ids of the lines it dropped: a log saying
 * `call_\x1b]0;PWNED\x07…` retitled the window of whoever ran either there (OSC 52 would have
 * written their clipboard). Both lines are now made safe for the terminal.
 */
import { execFileSync } from "node:child_process"
import { lstatSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it, onTestFinished } from "vitest"
import { run, scratch, start } from "./subprocess.js"

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

/**
 * `repair` read a log by name, through a link and blocking: a clone's `sessions/<id>.jsonl` that is
 * a link to another project's log had that log copied into the clone's data dir (the link renamed to
 * `.bak`), and a named pipe there held `repair` in open(2) for good (a first SIGTERM and Ctrl+C
 * included). It now opens a log as every read does: never through a link, never waiting on a pipe.
 */
describe("repair: a log that is not a regular file", () => {
  it("a link to another project's log is not followed, and nothing is written", async () => {
    const cwd = clone("repair-link")
    const elsewhere = join(dir, "other-project-log.jsonl")
    // A log repair would rewrite: a second `session.created` is dropped.
    const other = logOf("sess_l", [["session.created", undefined, { cwd: "/secret", client: "cli" }], ["session.created", undefined, { cwd: "/secret", client: "cli" }]])
    writeFileSync(elsewhere, other)
    const log = join(cwd, ".effect-agent", "sessions", "sess_l.jsonl")
    symlinkSync(elsewhere, log)
    const repaired = await run(["repair", "sess_l"], { cwd })
    expect(repaired.code).not.toBe(0)
    expect(repaired.stderr).toContain("a link, not a log")
    expect(lstatSync(log).isSymbolicLink()).toBe(true)
    expect(readFileSync(elsewhere, "utf8")).toBe(other)
    expect(readdirSync(join(cwd, ".effect-agent", "sessions")).filter((f) => f.startsWith("sess_l.jsonl.")).sort()).toEqual(["sess_l.jsonl.lock"])
  })

  it("a named pipe is refused at once, without a writer", async () => {
    const cwd = clone("repair-fifo")
    const log = join(cwd, ".effect-agent", "sessions", "sess_p.jsonl")
    execFileSync("mkfifo", [log])
    const running = start(["repair", "sess_p"], { cwd })
    // Killed however the test ends (on the old code it never ends by itself).
    onTestFinished(() => void running.child.kill("SIGKILL"))
    // The gate: the CLI ends on its own; on the old code it waited in open(2) for a writer that never comes.
    const finished = await running.done
    expect(finished.code).not.toBe(0)
    expect(finished.stderr).toContain("not a regular file")
  })
})

/**
 * `replay --json` and `export-script` wrote what `JSON.stringify` leaves raw: DEL and the C1 controls
 * (U+0080–U+009F), which a terminal taking C1 from UTF-8 reads as CSI (U+009B) or OSC (U+009D). They
 * are now `\u00XX` escapes: the same JSON values.
 */
describe("JSON output of a clone's log", () => {
  it("carries no C1 control raw, and parses to the same text", async () => {
    const cwd = clone("json-c1")
    const text = "look\u009b2J\u009d0;PWNED\u009c\u007f"
    writeFileSync(
      join(cwd, ".effect-agent", "sessions", "sess_j.jsonl"),
      logOf("sess_j", [
        ["session.created", undefined, { cwd, client: "cli" }],
        ["turn.started", "turn_1", { promptPreview: "hi" }],
        ["user.message", "turn_1", { content: "hi" }],
        ["model.delta", "turn_1", { text }],
        ["turn.completed", "turn_1", { stopReason: "final" }]
      ])
    )
    const replayed = await run(["replay", "sess_j", "--json"], { cwd })
    expect(replayed.code, replayed.stderr).toBe(0)
    expect(replayed.stdout).not.toMatch(/[\x7f-\x9f]/)
    const events = replayed.stdout.trim().split("\n").map((line) => JSON.parse(line) as { type: string; payload: { text?: string } })
    expect(events.find((e) => e.type === "model.delta")?.payload.text).toBe(text)
    const exported = await run(["export-script", "sess_j"], { cwd })
    expect(exported.code, exported.stderr).toBe(0)
    expect(exported.stdout).not.toMatch(/[\x7f-\x9f]/)
    expect(exported.stdout).toContain("\\u009b2J")
  })
})

/**
 * `export-script` follows a log's subagents (`subagent.started {childSessionId}`) to their logs:
 * a log naming itself, or two naming each other, were followed for good — the CLI never ended and
 * its memory grew. Each session is read once now.
 */
describe("export-script: subagents that lead back", () => {
  it("a log naming itself or its parent as a subagent ends", async () => {
    const cwd = clone("export-cycle")
    const withChild = (sessionId: string, child: string) =>
      logOf(sessionId, [
        ["session.created", undefined, { cwd, client: "cli" }],
        ["turn.started", "turn_1", { promptPreview: "hi" }],
        ["user.message", "turn_1", { content: `hi from ${sessionId}` }],
        ["subagent.started", "turn_1", { toolCallId: "c1", childSessionId: child, description: "d", cwd, mode: "inherit" }],
        ["turn.completed", "turn_1", { stopReason: "final" }]
      ])
    writeFileSync(join(cwd, ".effect-agent", "sessions", "sess_self.jsonl"), withChild("sess_self", "sess_self"))
    writeFileSync(join(cwd, ".effect-agent", "sessions", "sess_p.jsonl"), withChild("sess_p", "sess_c"))
    writeFileSync(join(cwd, ".effect-agent", "sessions", "sess_c.jsonl"), withChild("sess_c", "sess_p"))
    for (const sessionId of ["sess_self", "sess_p"]) {
      const running = start(["export-script", sessionId], { cwd })
      onTestFinished(() => void running.child.kill("SIGKILL"))
      // The gate: the CLI ends by itself (on the old code it never did).
      const finished = await running.done
      expect(finished.code, finished.stderr).toBe(0)
      expect(() => JSON.parse(finished.stdout)).not.toThrow()
    }
  })
})

/**
 * `pending <id>` follows the subagents a session's open `task` calls wait on, to 8 levels: a log
 * whose twenty open calls each named the session itself was 20^8 reads (eight such calls took a
 * minute). Each session is followed once now.
 */
describe("pending: open task calls that name their own session", () => {
  it("ends", async () => {
    const cwd = clone("pending-fanout")
    const calls = Array.from({ length: 20 }, (_, i) => `c${i}`)
    const args = { description: "d", prompt: "p" }
    writeFileSync(
      join(cwd, ".effect-agent", "sessions", "sess_f.jsonl"),
      logOf("sess_f", [
        ["session.created", undefined, { cwd, client: "cli" }],
        ["turn.started", "turn_1", { promptPreview: "hi" }],
        ["user.message", "turn_1", { content: "hi" }],
        ...calls.map((toolCallId) => ["model.tool_call_requested", "turn_1", { toolCallId, tool: "task", args }] as const),
        ...calls.flatMap((toolCallId) => [
          ["permission.requested", "turn_1", { toolCallId, tool: "task", risk: "read" }] as const,
          ["permission.resolved", "turn_1", { toolCallId, decision: "allow", policy: "p", actor: "policy" }] as const,
          ["tool.started", "turn_1", { toolCallId, tool: "task", args }] as const,
          ["subagent.started", "turn_1", { toolCallId, childSessionId: "sess_f", description: "d", cwd, mode: "inherit" }] as const
        ])
      ])
    )
    const running = start(["pending", "sess_f"], { cwd })
    onTestFinished(() => void running.child.kill("SIGKILL"))
    // The gate: the CLI ends by itself.
    const finished = await running.done
    expect(finished.code, finished.stderr).toBe(0)
    expect(finished.stderr).toContain("No tool calls are waiting for approval.")
  })
})
