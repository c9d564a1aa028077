/**
 * A hostile model's output on the user's terminal, through the built CLI: the scripted model sends
 * every kind of terminal control there is — CSI (clear the screen, move the cursor), OSC 52 (write
 * the clipboard), OSC 8 (a hyperlink), OSC 0 (the window's title), C1 controls (U+009B is CSI), a
 * `\r` that would overwrite the approval question's line, bidi overrides — in its text, a tool's
 * name, a command shown for approval and a file's content shown as a diff. None reaches the
 * terminal raw (`run`, `replay`, `replay --json`, `sessions`); the question shows each visibly
 * escaped; the log keeps the text as it came.
 */
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { expectWellFormedLog } from "../helpers.js"
import { folders, replayLog, run, runClosed, sessionIdIn } from "./subprocess.js"

const { folder } = folders("hostile-terminal")

/** Every control a terminal acts on, as a hostile model would write them. */
const hostile = [
  "\u001b[2J\u001b[H", // CSI: clear the screen, cursor home
  "\u001b]52;c;cm0gLXJmIH4K\u0007", // OSC 52: write the clipboard
  "\u001b]8;;https://evil.example\u001b\\docs\u001b]8;;\u001b\\", // OSC 8: a hyperlink
  "\u001b]0;owned\u0007", // OSC 0: the window's title
  "\u009b2J\u009d0;t\u009c", // C1 CSI, OSC, ST
  "\u007f\u0000\u0008" // DEL, NUL, backspace
].join(" ")

/** What a terminal would act on: C0 controls but newline and tab, DEL, C1, and a carriage return. */
const raw = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/

describe("a hostile model's output on the terminal", () => {
  it("run, replay, replay --json and sessions print no raw control; the approval question shows them escaped; the log keeps them", async () => {
    const cwd = folder("all")
    // (No NUL, nor the `;` of an OSC: a command holding either fails or is denied before it is
    // asked about. The path of a write is asked about whatever it holds.)
    const printable = hostile.replace("\u0000", "")
    const command = `echo safe\r\u001b[2Kls \u009b2J \u001b[1A\u202e\u2066txt.exe`
    const path = `notes${printable}\r.txt`
    writeFileSync(join(cwd, "script.json"), JSON.stringify({
      responses: [
        {
          chunks: [`text ${hostile}\tand\nlines\r`, "\u001b", "[2J", "\u009b"],
          toolCalls: [
            { tool: "shell", args: { command } },
            { tool: "write_file", args: { path, content: `line ${hostile}\r\n` } },
            { tool: `shell${hostile}`, args: { command: "ls" } }
          ]
        },
        { chunks: [`done ${hostile}`] }
      ]
    }))
    const dataDir = join(cwd, "data")
    const done = await runClosed(cwd, ["run", `title ${printable}`, "--script", "script.json", "--data-dir", dataDir])
    expect(done.code).toBe(0)
    const sessionId = sessionIdIn(done.stderr)!
    const texts = [done.stdout, done.stderr]
    // The approval question: the whole command, quoted, every control visible, the \r that would hide `echo safe` included.
    const question = done.stderr.split("\n").find((line) => line.includes("Allow shell"))!
    expect(question).toContain("\"echo safe\\r\\u001b[2Kls \\u009b2J \\u001b[1A\\u202e\\u2066txt.exe\"?")
    expect(done.stderr).toContain("Allow write_file \"notes\\u001b[2J\\u001b[H \\u001b]52;c;cm0gLXJmIH4K\\u0007 \\u001b]8;;https://evil.example\\u001b\\\\docs")
    expect(done.stderr).toContain("\\u007f\\b\\r.txt\"?")
    expect(done.stderr).toContain("+ line \\x1b[2J")
    expect(done.stdout).toContain("text \\x1b[2J\\x1b[H")
    expect(done.stdout).toContain("\\x9b2J\\x9d0;t\\x9c")
    // Newlines and tabs stay what they are.
    expect(done.stdout).toContain("\tand\nlines")

    const replayed = await run(["replay", sessionId, "--data-dir", dataDir])
    const json = await run(["replay", sessionId, "--json", "--data-dir", dataDir])
    const listed = await run(["sessions", "--data-dir", dataDir])
    texts.push(replayed.stdout, replayed.stderr, json.stdout, listed.stdout, listed.stderr)
    expect(replayed.stdout).toContain("text \\x1b[2J")
    for (const text of texts) expect(text).not.toMatch(raw)

    // The log keeps what the model sent.
    const log = await replayLog(sessionId, ["--data-dir", dataDir])
    expectWellFormedLog(log)
    const deltas = log.flatMap((e) => (e.type === "model.delta" ? [e.payload.text] : [])).join("")
    expect(deltas).toContain(`text ${hostile}\tand\nlines\r`)
    expect(log.find((e) => e.type === "model.tool_call_requested")!.payload).toMatchObject({ args: { command } })
  })
})
