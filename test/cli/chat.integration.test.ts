/**
 * `effect-agent chat` as a real subprocess: piped stdin (each line a message, a line during a turn
 * steers it, `>>` queues a follow-up, approvals answered inline, end of input waits and exits 0),
 * and on a pseudo-terminal (util-linux `script`): Ctrl+C cancels the running turn, then leaves at
 * the idle prompt.
 */
import { spawn } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import type { AgentEvent, FakeModelProvider } from "../../src/index.js"
import { expectWellFormedLog } from "../helpers.js"
import { binPath, isolatedConfigDir, run, start } from "./subprocess.js"
import { ownedByTest } from "../processes.js"

const dir = mkdtempSync(join(tmpdir(), "effect-agent-chat-"))
const dataDir = join(dir, "data")
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const events = (stdout: string): Array<AgentEvent.AgentEvent> =>
  stdout.trim().split("\n").map((line) => JSON.parse(line) as AgentEvent.AgentEvent)
const sessionOf = (stderr: string) => /session (sess_\S+)/.exec(stderr)?.[1]
const replay = async (sessionId: string) => {
  const log = events((await run(["replay", sessionId, "--json", "--data-dir", dataDir])).stdout)
  expectWellFormedLog(log)
  return log
}
const turnsOf = (log: ReadonlyArray<AgentEvent.AgentEvent>) => log.filter((e) => e.type === "turn.started")

/** A working directory with a script for the fake model (and a file the model's requests are recorded to). */
const setup = (name: string, responses: ReadonlyArray<FakeModelProvider.ScriptedResponse>) => {
  const cwd = join(dir, name)
  mkdirSync(cwd, { recursive: true })
  const script = join(cwd, "script.json")
  const requests = join(cwd, "requests.jsonl")
  writeFileSync(script, JSON.stringify({ responses }))
  // A tool call that runs until the test says so (by creating `go`): a turn that is surely still running.
  writeFileSync(join(cwd, "wait.sh"), "while [ ! -e go ]; do sleep 0.05; done\necho released\n")
  return { cwd, script, requests }
}
const waitingShell = { toolCalls: [{ tool: "shell", args: { command: "sh wait.sh" } }] }

describe("effect-agent chat, piped stdin (subprocess)", () => {
  it("each line is a message: two lines, two turns of one session; end of input exits 0; --session continues it", async () => {
    const chat = start(["chat", "--data-dir", dataDir], { cwd: dir })
    chat.child.stdin!.write("one\n")
    await chat.waitForStdout(/Echo: one\n/)
    chat.child.stdin!.write("two\n")
    await chat.waitForStdout(/Echo: two\n/)
    chat.child.stdin!.end()
    const finished = await chat.done
    expect(finished.code).toBe(0)
    // The answer alone on stdout: no prompt, no notes.
    expect(finished.stdout).toBe("Echo: one\nEcho: two\n")
    const sessionId = sessionOf(finished.stderr)!
    expect(finished.stderr).toContain(`--session ${sessionId}`)
    const log = await replay(sessionId)
    expect(turnsOf(log)).toHaveLength(2)
    expect(log.filter((e) => e.type === "user.message").map((e) => e.payload.content)).toEqual(["one", "two"])

    const again = start(["chat", "--session", sessionId, "--data-dir", dataDir], { cwd: dir })
    again.child.stdin!.end("three\n")
    const continued = await again.done
    expect(continued.code).toBe(0)
    expect(continued.stdout).toBe("Echo: three\n")
    expect(turnsOf(await replay(sessionId))).toHaveLength(3)
  })

  it("a line during a running turn steers it (turn.steered after the tool's result, in the next request); >> queues a follow-up that runs as its own turn; /drop drops the queue", async () => {
    const { cwd, requests, script } = setup("steer", [waitingShell, { chunks: ["steered answer"] }, { chunks: ["follow-up done"] }])
    const chat = start(["chat", "--script", script, "--record-requests", requests, "--allow", "shell:sh wait.sh", "--data-dir", dataDir], { cwd })
    chat.child.stdin!.write("start the work\n")
    await chat.waitForStderr(/⚙ shell sh wait\.sh/)
    chat.child.stdin!.write("also mention the weather\n")
    await chat.waitForStderr(/\[steering the running turn\]/)
    chat.child.stdin!.write(">> never mind this one\n")
    await chat.waitForStderr(/queued as follow-up fup_/)
    chat.child.stdin!.write("/drop\n")
    await chat.waitForStderr(/\[dropped 1 queued follow-up\]/)
    chat.child.stdin!.write(">> then tidy up\n")
    await chat.waitForStderr(/queued as follow-up fup_[\s\S]*queued as follow-up fup_/)
    writeFileSync(join(cwd, "go"), "")
    await chat.waitForStdout(/follow-up done/)
    chat.child.stdin!.end()
    const finished = await chat.done
    expect(finished.code).toBe(0)
    expect(finished.stdout).toBe("steered answer\nfollow-up done\n")
    expect(finished.stderr).toContain("[follow-up: then tidy up]")

    const log = await replay(sessionOf(finished.stderr)!)
    const [first, second] = turnsOf(log)
    expect(turnsOf(log)).toHaveLength(2)
    const inFirst = log.filter((e) => "turnId" in e && e.turnId === first!.turnId).map((e) => e.type)
    // The steer lands at the step boundary: after the tool's result, before the next request's answer.
    expect(inFirst.indexOf("turn.steered")).toBeGreaterThan(inFirst.indexOf("tool.completed"))
    expect(inFirst.indexOf("turn.steered")).toBeLessThan(inFirst.indexOf("model.delta"))
    expect(log.find((e) => e.type === "turn.steered")!.payload).toEqual({ content: "also mention the weather" })
    const [dropped, queued] = log.filter((e) => e.type === "followup.queued")
    expect(log.find((e) => e.type === "followup.dropped")!.payload).toEqual({ queueIds: [(dropped!.payload as { queueId: string }).queueId] })
    expect(queued!.payload).toMatchObject({ content: "then tidy up" })
    expect(queued!.sequence).toBeLessThan(log.find((e) => e.type === "turn.completed")!.sequence)
    expect(second!.payload).toMatchObject({ queueId: (queued!.payload as { queueId: string }).queueId })
    // The model read the steer as a user message, right after the tool's result.
    const sent = readFileSync(requests, "utf8").trim().split("\n").map((line) => JSON.parse(line) as { messages: Array<{ role: string; content: string }> })
    expect(sent[1]!.messages.slice(-2)).toMatchObject([{ role: "tool", content: "released\n" }, { role: "user", content: "also mention the weather" }])
  })

  it("approvals are asked inline: while a question is open the next line answers it (not a steer); end of input answers no", async () => {
    const writeCall = (path: string) => ({ toolCalls: [{ tool: "write_file", args: { path, content: "x\n" } }] })
    const { cwd, script } = setup("approve", [writeCall("yes.txt"), { chunks: ["wrote it"] }, writeCall("no.txt"), { chunks: ["did not"] }])
    const chat = start(["chat", "--script", script, "--data-dir", dataDir], { cwd })
    chat.child.stdin!.write("write yes.txt\n")
    await chat.waitForStderr(/Allow write_file yes\.txt\? \[y\]es \/ \[n\]o \/ \[a\]lways: /)
    chat.child.stdin!.write("y\n")
    await chat.waitForStdout(/wrote it\n/)
    chat.child.stdin!.write("write no.txt\n")
    await chat.waitForStderr(/Allow write_file no\.txt\?/)
    // The input ends with the question open: the answer is no, and the turn finishes before the exit.
    chat.child.stdin!.end()
    const finished = await chat.done
    expect(finished.code).toBe(0)
    expect(finished.stdout).toBe("wrote it\ndid not\n")
    expect(existsSync(join(cwd, "yes.txt"))).toBe(true)
    expect(existsSync(join(cwd, "no.txt"))).toBe(false)
    const log = await replay(sessionOf(finished.stderr)!)
    expect(log.filter((e) => e.type === "turn.steered")).toEqual([])
    expect(log.filter((e) => e.type === "permission.resolved" && e.payload.actor === "user").map((e) => e.payload)).toMatchObject([
      { decision: "allow" },
      { decision: "deny" }
    ])
    expect(turnsOf(log)).toHaveLength(2)
    expect(log.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
  })
})

describe("effect-agent chat --session on a turn left waiting (subprocess)", () => {
  it("a process that died with a question open: chat asks it, then the turn goes on", async () => {
    const { cwd, script } = setup("resume", [{ toolCalls: [{ tool: "write_file", args: { path: "late.txt", content: "x\n" } }] }, { chunks: ["written late"] }])
    const first = start(["run", "write late.txt", "--script", script, "--data-dir", dataDir], { cwd })
    await first.waitForStderr(/Allow write_file late\.txt\?/)
    first.child.kill("SIGKILL")
    const sessionId = sessionOf((await first.done).stderr)!

    // The model of the new process: what comes after the call.
    const rest = join(cwd, "rest.json")
    writeFileSync(rest, JSON.stringify({ responses: [{ chunks: ["written late"] }] }))
    const chat = start(["chat", "--session", sessionId, "--script", rest, "--data-dir", dataDir], { cwd })
    await chat.waitForStderr(/left waiting for your approval[\s\S]*Allow write_file late\.txt\? \[y\]es/)
    chat.child.stdin!.end("y\n")
    const finished = await chat.done
    expect(finished.code).toBe(0)
    expect(finished.stdout).toBe("written late\n")
    expect(readFileSync(join(cwd, "late.txt"), "utf8")).toBe("x\n")
    const log = await replay(sessionId)
    expect(turnsOf(log)).toHaveLength(1)
    expect(log.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
  })
})

/** The CLI on a pseudo-terminal: util-linux `script` gives it one, and passes our bytes on as keystrokes. */
const startOnTerminal = (args: ReadonlyArray<string>, cwd: string, env: Record<string, string> = {}) => {
  const quote = (arg: string) => `'${arg.replace(/'/g, "'\\''")}'`
  const command = [process.execPath, binPath, ...args].map(quote).join(" ")
  const child = ownedByTest(spawn("script", ["-qfec", command, "/dev/null"], { cwd, env: { ...process.env, NO_COLOR: "", NODE_OPTIONS: "", EFFECT_AGENT_CONFIG_DIR: isolatedConfigDir(), ...env }, stdio: ["pipe", "pipe", "pipe"] }))
  let screen = ""
  const waiters: Array<() => void> = []
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
    screen += chunk
    for (const wake of waiters.splice(0)) wake()
  })
  const done = new Promise<{ code: number | null; screen: string }>((resolve) => child.on("close", (code) => resolve({ code, screen })))
  const waitFor = async (pattern: RegExp, from = 0): Promise<number> => {
    for (;;) {
      const at = screen.slice(from).search(pattern)
      if (at >= 0) return from + at
      const closed = await Promise.race([new Promise<false>((resolve) => waiters.push(() => resolve(false))), done.then(() => true)])
      if (closed && screen.slice(from).search(pattern) < 0) throw new Error(`the CLI exited before showing ${pattern}: ${JSON.stringify(screen)}`)
    }
  }
  return { child, done, waitFor, screen: () => screen, type: (keys: string) => child.stdin.write(keys) }
}

/**
 * What a terminal shows after `bytes`: the rows of text, as a (small) terminal applies them —
 * printable characters at the cursor, CR, LF, and the cursor moves and erasures readline uses
 * (CSI G, A, B, C, D, J, K); styles (CSI m) and other sequences change nothing visible here.
 */
const screenRows = (bytes: string): Array<string> => {
  const rows: Array<Array<string>> = [[]]
  let row = 0
  let col = 0
  const line = () => (rows[row] ??= [])
  for (let i = 0; i < bytes.length; i++) {
    const c = bytes[i]!
    if (c === "\u001b") {
      const csi = /^\u001b\[([0-9;?]*)([A-Za-z])/.exec(bytes.slice(i))
      if (csi === null) continue
      i += csi[0].length - 1
      const n = csi[1] === "" ? undefined : Number(csi[1]!.split(";")[0])
      switch (csi[2]) {
        case "G": col = (n ?? 1) - 1; break
        case "A": row = Math.max(0, row - (n ?? 1)); break
        case "B": row += n ?? 1; break
        case "C": col += n ?? 1; break
        case "D": col = Math.max(0, col - (n ?? 1)); break
        case "K": line().length = Math.min(line().length, col); break
        case "J": line().length = Math.min(line().length, col); rows.length = row + 1; break
      }
      continue
    }
    if (c === "\r") col = 0
    else if (c === "\n") { row++; col = 0; line() }
    else if (c >= " ") { const l = line(); while (l.length < col) l.push(" "); l[col++] = c }
  }
  return rows.map((r) => (r ?? []).join("").trimEnd())
}

describe("effect-agent chat on a terminal (script -qfec, a pty)", () => {
  it("the answer as Markdown: styled headings, bold, code and lists; plain text with NO_COLOR", async () => {
    const answer = ["# Plan\n\nSome **bold** and `code` here.\n", "```ts\nconst x = **1**\n```\n", "- item one\n"]
    for (const noColor of [false, true]) {
      const { cwd, script } = setup(noColor ? "pty-md-plain" : "pty-md", [{ chunks: answer }])
      const chat = startOnTerminal(["chat", "--script", script, "--data-dir", dataDir], cwd, noColor ? { NO_COLOR: "1" } : {})
      await chat.waitFor(/› /)
      chat.type("show some markdown\r")
      await chat.waitFor(/item one/)
      // The answer's last line can be on the screen before its turn has ended: `/exit` waits for the
      // turn, then leaves. (Two Ctrl+C's raced: the first left at once if the turn had ended, and the
      // second, reaching a terminal no longer in raw mode, was a SIGINT to the exiting process — 130.)
      chat.type("/exit\r")
      const { code, screen } = await chat.done
      expect(code).toBe(0)
      const shown = screen.slice(screen.indexOf("show some markdown"))
      if (noColor) {
        expect(shown).toContain("Some **bold** and `code` here.")
        expect(shown).toContain("- item one")
        // eslint-disable-next-line no-control-regex
        expect(shown).not.toMatch(/\u001b\[(1|3|4|9|33|36)m/)
      } else {
        expect(shown).toContain("\u001b[1m\u001b[4mPlan\u001b[24m\u001b[22m")
        expect(shown).toContain("Some \u001b[1mbold\u001b[22m and \u001b[36mcode\u001b[39m here.")
        expect(shown).not.toContain("**bold**")
        expect(shown).toContain("\u001b[33mconst x = **1**\u001b[39m")
        expect(shown).toContain("\u001b[36m•\u001b[39m item one")
      }
    }
  })

  it("a half-typed line is drawn again under the streaming answer, never mixed into it; Enter then steers with it", async () => {
    const lines = Array.from({ length: 14 }, (_, i) => `answer line ${i}\n`)
    const { cwd, script } = setup("pty-typing", [{ chunks: lines, delay: 120 }, { chunks: ["after the steer\n"] }])
    const chat = startOnTerminal(["chat", "--script", script, "--data-dir", dataDir], cwd)
    await chat.waitFor(/› /)
    chat.type("go\r")
    const early = await chat.waitFor(/answer line 2/)
    chat.type("half")
    const later = await chat.waitFor(/answer line 9/, early)
    chat.type(" typed")
    await chat.waitFor(/answer line 11/, later)
    chat.type("\r")
    await chat.waitFor(/after the steer/, later)
    // The steered turn may still be ending: `/exit` waits for it (a Ctrl+C then would cancel it and stay).
    chat.type("/exit\r")
    const { code, screen } = await chat.done
    expect(code).toBe(0)
    const rows = screenRows(screen)
    // Every line of the answer is a row of its own, whole: nothing typed landed inside one.
    for (let i = 0; i < 14; i++) expect(rows, `answer line ${i}`).toContain(`answer line ${i}`)
    expect(rows.filter((r) => /half/.test(r) && !/^› half/.test(r))).toEqual([])
    const sessionId = sessionOf(screen)!
    const log = await replay(sessionId)
    expect(log.filter((e) => e.type === "turn.steered").map((e) => e.payload.content)).toEqual(["half typed"])
  })

  it("Ctrl+C cancels the running turn (turn.completed {cancelled}); Ctrl+C at the idle prompt leaves, exit 0", async () => {
    const { cwd, script } = setup("pty", [waitingShell])
    const chat = startOnTerminal(["chat", "--script", script, "--allow", "shell:sh wait.sh", "--data-dir", dataDir], cwd)
    await chat.waitFor(/› /)
    chat.type("start the work\r")
    const running = await chat.waitFor(/⚙ shell sh wait\.sh/)
    chat.type("\x03")
    const cancelled = await chat.waitFor(/\[turn cancelled\]/, running)
    // Back at the idle prompt.
    await chat.waitFor(/› /, cancelled)
    chat.type("\x03")
    const finished = await chat.done
    expect(finished.code).toBe(0)
    const log = await replay(sessionOf(finished.screen)!)
    expect(turnsOf(log)).toHaveLength(1)
    expect(log.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "cancelled" } })
  })

  it("/exit waits for the running turn; Ctrl+C meanwhile cancels it, and the chat leaves, exit 0", async () => {
    const { cwd, script } = setup("pty-exit", [waitingShell])
    const chat = startOnTerminal(["chat", "--script", script, "--allow", "shell:sh wait.sh", "--data-dir", dataDir], cwd)
    await chat.waitFor(/› /)
    chat.type("start the work\r")
    const running = await chat.waitFor(/⚙ shell sh wait\.sh/)
    chat.type("/exit\r")
    await chat.waitFor(/\[waiting for the running turn/, running)
    chat.type("\x03")
    const finished = await chat.done
    expect(finished.code).toBe(0)
    expect(finished.screen).toContain("[turn cancelled]")
    const log = await replay(sessionOf(finished.screen)!)
    expect(log.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "cancelled" } })
  })
})

describe("effect-agent chat: commands, --continue and --resume", () => {
  it("an unknown /command is an error and sends nothing; // sends a message that starts with /; a path is a message", async () => {
    const cwd = join(dir, "slash")
    mkdirSync(cwd, { recursive: true })
    const chat = start(["chat", "--data-dir", dataDir], { cwd })
    chat.child.stdin!.write("/exti\n")
    // Review 59c: the typo got no hint.
    await chat.waitForStderr(/unknown command \/exti \(did you mean \/exit\? \/help lists the commands/)
    chat.child.stdin!.write("//exti is a typo\n")
    await chat.waitForStdout(/Echo: \/exti is a typo\n/)
    chat.child.stdin!.end("/etc/hosts is a file\n")
    const finished = await chat.done
    expect(finished.code).toBe(0)
    const log = await replay(sessionOf(finished.stderr)!)
    expect(log.filter((e) => e.type === "user.message").map((e) => e.payload.content)).toEqual(["/exti is a typo", "/etc/hosts is a file"])
  })

  it("--continue goes back into the most recently active session of this directory; none there is exit 1, saying so", async () => {
    const here = join(dir, "continue-here")
    const elsewhere = join(dir, "continue-elsewhere")
    mkdirSync(here, { recursive: true })
    mkdirSync(elsewhere, { recursive: true })
    const none = await run(["chat", "--continue", "--data-dir", dataDir], { cwd: here })
    expect(none.code).toBe(1)
    expect(none.stderr).toMatch(/no session in .*continue-here to continue/)

    const older = await run(["run", "older", "--data-dir", dataDir], { cwd: here })
    const newer = await run(["run", "newer", "--data-dir", dataDir], { cwd: here })
    await run(["run", "other directory", "--data-dir", dataDir], { cwd: elsewhere })
    const newerId = sessionOf(newer.stderr)!
    expect(sessionOf(older.stderr)).not.toBe(newerId)

    const chat = start(["chat", "--continue", "--data-dir", dataDir], { cwd: here })
    chat.child.stdin!.end("again\n")
    const finished = await chat.done
    expect(finished.code).toBe(0)
    expect(finished.stderr).toContain(`session ${newerId}`)
    expect((await replay(newerId)).filter((e) => e.type === "user.message").map((e) => e.payload.content)).toEqual(["newer", "again"])

    const both = await run(["chat", "--continue", "--session", newerId, "--data-dir", dataDir], { cwd: here })
    expect(both.code).toBe(1)
    expect(both.stderr).toContain("give one")
  })

  it("--resume without a terminal is exit 1, pointing to --continue", async () => {
    const resumed = await run(["chat", "--resume", "--data-dir", dataDir], { cwd: dir })
    expect(resumed.code).toBe(1)
    expect(resumed.stderr).toContain("--resume asks which session on a terminal")
  })

  it("--resume on a terminal lists this directory's sessions with their titles and continues the one chosen", async () => {
    const cwd = join(dir, "resume")
    mkdirSync(cwd, { recursive: true })
    const first = sessionOf((await run(["run", "the first conversation", "--data-dir", dataDir], { cwd })).stderr)!
    const second = sessionOf((await run(["run", "the second conversation\nits second line", "--data-dir", dataDir], { cwd })).stderr)!
    // A title the user gave wins over the first message.
    expect((await run(["sessions", "rename", second, "Second, renamed", "--data-dir", dataDir])).code).toBe(0)
    const chat = startOnTerminal(["chat", "--resume", "--data-dir", dataDir], cwd)
    const listed = await chat.waitFor(/Resume which\?/)
    // Newest first: the first conversation is number 2.
    expect(chat.screen().slice(0, listed)).toMatch(/1\. Second, renamed[\s\S]*2\. the first conversation/)
    chat.type("2\r")
    await chat.waitFor(new RegExp(`session ${first}`), listed)
    await chat.waitFor(/› /, listed)
    chat.type("picked up again\r")
    await chat.waitFor(/Echo: picked up again/, listed)
    chat.type("\x03")
    expect((await chat.done).code).toBe(0)
    expect((await replay(first)).filter((e) => e.type === "user.message").map((e) => e.payload.content)).toEqual(["the first conversation", "picked up again"])
  })
})
