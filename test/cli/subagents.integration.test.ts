/**
 * Subagents through the built CLI, a real subprocess: `run --subagents` offers the task tool; a
 * child's ask is asked in the parent's terminal, labelled with the child's task, answered once and
 * recorded in the child's log; `--max-tokens` stops the whole tree with `budget_exceeded`; a
 * subagent waiting when the process is killed is answered and resumed after it, through its parent.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import { expectWellFormedLog } from "../helpers.js"
import { run, start } from "./subprocess.js"

const dir = realpathSync(mkdtempSync(join(tmpdir(), "effect-agent-subagents-")))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const logs = (dataDir: string): Array<ReadonlyArray<AgentEvent>> =>
  readdirSync(join(dataDir, "sessions")).filter((f) => f.endsWith(".jsonl")).map((f) =>
    readFileSync(join(dataDir, "sessions", f), "utf8").trim().split("\n").slice(1).map((line) => JSON.parse(line) as AgentEvent)
  )

const setup = (name: string, script: unknown) => {
  const cwd = join(dir, name)
  mkdirSync(join(cwd, "docs"), { recursive: true })
  const file = join(dir, `${name}.json`)
  writeFileSync(file, JSON.stringify(script))
  return { cwd, script: file, dataDir: join(dir, `${name}-data`) }
}

describe("effect-agent run --subagents", () => {
  it("a subagent's ask is asked in the terminal, labelled with its task; y runs it; the child's log records the answer", async () => {
    const { cwd, dataDir, script } = setup("ask", {
      responses: [
        { toolCalls: [{ tool: "task", args: { description: "write the notes", prompt: "child: write", cwd: "docs" } }] },
        { chunks: ["Delegated."] }
      ],
      subagents: {
        "child: write": [
          { toolCalls: [{ tool: "write_file", args: { path: "notes.txt", content: "from the child\n" } }] },
          { chunks: ["Wrote the notes."] }
        ]
      }
    })
    const running = start(["run", "please delegate", "--subagents", "--script", script, "--data-dir", dataDir], { cwd })
    running.child.stdin!.end("y\n")
    const finished = await running.done
    expect(finished.code).toBe(0)
    expect(finished.stdout).toBe("Delegated.\n")
    expect(finished.stderr).toMatch(/Subagent "write the notes" \(sess_[^)]+\) asks: allow write_file notes\.txt\? \[y\]es \/ \[n\]o \/ \[a\]lways:/)
    expect(finished.stderr).toContain("↳ subagent")
    expect(readFileSync(join(cwd, "docs", "notes.txt"), "utf8")).toBe("from the child\n")
    const all = logs(dataDir)
    expect(all).toHaveLength(2)
    for (const log of all) expectWellFormedLog(log)
    const child = all.find((log) => (log[0] as AgentEvent & { payload: { parent?: unknown } }).payload.parent !== undefined)!
    const decisions = child.filter((e) => e.type === "permission.resolved").map((e) => [(e.payload as { decision: string }).decision, (e.payload as { actor: string }).actor])
    expect(decisions).toEqual([["ask", "policy"], ["allow", "user"]])
    // Asked once: the question appears once.
    expect(finished.stderr.match(/asks: allow/g)).toHaveLength(1)
  })

  // The child's first response uses 3,100 tokens and is the tree's second model request: past either limit.
  it.each([["--max-tokens", "2000"], ["--max-steps", "2"]])("%s %s stops the tree: the child and the parent end budget_exceeded, and the exit code says the turn failed", async (flag, limit) => {
    const { cwd, dataDir, script } = setup(`budget${flag}`, {
      responses: [
        { toolCalls: [{ tool: "task", args: { description: "spend", prompt: "child: spend" } }] },
        { chunks: ["never"] }
      ],
      subagents: {
        "child: spend": [
          { toolCalls: [{ tool: "list_dir", args: { path: "." } }], usage: { inputTokens: 3000, outputTokens: 100 } },
          { chunks: ["never"] }
        ]
      }
    })
    const running = start(["run", "spend a lot", "--subagents", flag, limit, "--script", script, "--data-dir", dataDir], { cwd })
    running.child.stdin!.end()
    const finished = await running.done
    expect(finished.code).not.toBe(0)
    expect(finished.stderr).toContain("[turn ended with an error: budget_exceeded]")
    const ends = logs(dataDir).map((log) => log.at(-1)!).map((e) => (e.payload as { errorCode?: string }).errorCode)
    expect(ends).toEqual(["budget_exceeded", "budget_exceeded"])
  })

  it("--max-subagents 1: the turn's second task call fails subagents_exceeded before any session, and the turn goes on", async () => {
    const { cwd, dataDir, script } = setup("fan", {
      responses: [
        { toolCalls: [{ tool: "task", args: { description: "first", prompt: "child: first" } }] },
        { toolCalls: [{ tool: "task", args: { description: "second", prompt: "child: second" } }] },
        { chunks: ["done myself"] }
      ],
      subagents: { "child: first": [{ chunks: ["first done"] }], "child: second": [{ chunks: ["second done"] }] }
    })
    const running = start(["run", "fan out", "--subagents", "--max-subagents", "1", "--script", script, "--data-dir", dataDir], { cwd })
    running.child.stdin!.end()
    const finished = await running.done
    expect(finished.code).toBe(0)
    expect(finished.stderr).toContain("✗ subagents_exceeded")
    expect(logs(dataDir)).toHaveLength(2)
  })

  it.each(["--max-steps", "--max-subagents"])("%s 0 is refused before anything runs, naming the flag (run and serve)", async (flag) => {
    const { cwd, dataDir, script } = setup(`zero${flag}`, { responses: [] })
    for (const command of [["run", "x"], ["serve", "--port", "0"]]) {
      const finished = await run([...command, "--subagents", flag, "0", "--script", script, "--data-dir", dataDir], { cwd })
      // 1: the command could not run (a bad flag).
      expect(finished.code).toBe(1)
      expect(finished.stderr).toContain(`${flag} takes a positive number`)
    }
  })

  it("export-script records the subagents' responses too: the cassette replays parent and child alike", async () => {
    const { cwd, dataDir, script } = setup("cassette", {
      responses: [
        { chunks: ["Asking a helper."], toolCalls: [{ tool: "task", args: { description: "read", prompt: "child: read docs", cwd: "docs" } }] },
        { chunks: ["The helper says: listed."] }
      ],
      subagents: {
        "child: read docs": [
          { toolCalls: [{ tool: "list_dir", args: { path: "." } }], usage: { inputTokens: 12, outputTokens: 3 } },
          { chunks: ["listed"], usage: { inputTokens: 20, outputTokens: 2 } }
        ]
      }
    })
    const first = start(["run", "look at the docs", "--subagents", "--script", script, "--data-dir", dataDir], { cwd })
    first.child.stdin!.end()
    expect((await first.done).code).toBe(0)
    const parent = logs(dataDir).find((log) => (log[0]!.payload as { parent?: unknown }).parent === undefined)!
    const exported = start(["export-script", parent[0]!.sessionId, "--data-dir", dataDir], { cwd })
    const cassette = JSON.parse((await exported.done).stdout) as { responses: Array<unknown>; subagents?: Record<string, Array<unknown>> }
    expect(Object.keys(cassette.subagents ?? {})).toEqual(["child: read docs"])
    expect(cassette.subagents!["child: read docs"]).toHaveLength(2)
    const file = join(dir, "cassette-replay.json")
    writeFileSync(file, JSON.stringify(cassette))
    const replayData = join(dir, "cassette-replay-data")
    const again = start(["run", "look at the docs", "--subagents", "--script", file, "--data-dir", replayData], { cwd })
    again.child.stdin!.end()
    const replayed = await again.done
    expect(replayed.code).toBe(0)
    expect(replayed.stdout).toBe("Asking a helper.\nThe helper says: listed.\n")
    // The same logs but for ids and times: types and payloads line up, the child's included.
    const shape = (log: ReadonlyArray<AgentEvent>) => log.map((e) => e.type)
    expect(logs(replayData).map(shape).sort()).toEqual(logs(dataDir).map(shape).sort())
  })

  it("SIGKILL while a subagent waits for approval: the parent stays paused on it; pending lists the ask, approve resumes the tree through the parent, which ends with the child's answer", async () => {
    const { cwd, dataDir, script } = setup("crash", {
      responses: [
        { toolCalls: [{ tool: "task", args: { description: "write", prompt: "child: write it" }, id: "task_1" }] },
        { chunks: ["never"] }
      ],
      subagents: {
        "child: write it": [
          // Ids of their own: the scripted model's default ids start again in each process.
          { toolCalls: [{ tool: "write_file", args: { path: "x.txt", content: "x" }, id: "w_x" }] }
        ]
      }
    })
    const first = start(["run", "delegate the write", "--subagents", "--script", script, "--data-dir", dataDir], { cwd })
    await first.waitForStderr(/asks: allow write_file x\.txt\?/)
    first.child.kill("SIGKILL")
    await first.done
    const before = logs(dataDir)
    const child = before.find((log) => (log[0]!.payload as { parent?: unknown }).parent !== undefined)!
    const parent = before.find((log) => log !== child)!
    const childId = child[0]!.sessionId
    const parentId = parent[0]!.sessionId
    // A new process's scripted model starts its lists again: the rest of the story, as it goes on.
    const rest = join(dir, "crash-rest.json")
    writeFileSync(rest, JSON.stringify({
      responses: [{ chunks: ["The child wrote both."] }],
      subagents: { "child: write it": [{ toolCalls: [{ tool: "write_file", args: { path: "y.txt", content: "y" }, id: "w_y" }] }, { chunks: ["wrote x and y"] }] }
    }))
    // The parent is paused on its subagent, not a crash's: a new turn is refused, nothing is repaired.
    const busy = start(["run", "go on", "--session", parentId, "--subagents", "--script", rest, "--data-dir", dataDir], { cwd })
    busy.child.stdin!.end()
    expect((await busy.done).code).not.toBe(0)
    const pending = start(["pending", parentId, "--data-dir", dataDir], { cwd })
    const listed = await pending.done
    expect(listed.stdout).toContain(`${parentId}  w_x  write_file x.txt`)
    // Approved on the subagent's session, as `pending` lists it there too: the parent resumes and drives it.
    const approve = start(["approve", childId, "w_x", "--subagents", "--script", rest, "--data-dir", dataDir], { cwd })
    approve.child.stdin!.end("y\n")
    const approved = await approve.done
    expect(approved.code).toBe(0)
    expect(approved.stderr).toMatch(/Subagent "write" \(sess_[^)]+\) asks: allow write_file y\.txt\?/)
    expect(approved.stdout).toBe("The child wrote both.\n")
    const after = logs(dataDir)
    for (const log of after) expectWellFormedLog(log)
    const parentAfter = after.find((log) => log[0]!.sessionId === parentId)!
    expect(parentAfter.filter((e) => e.type === "turn.completed").map((e) => (e.payload as { stopReason: string }).stopReason)).toEqual(["final"])
    expect(parentAfter.filter((e) => e.type === "tool.completed").map((e) => (e.payload as { result: string }).result)).toEqual(["wrote x and y"])
    const childAfter = after.find((log) => log[0]!.sessionId === childId)!
    // Both writes ran once, each answered by the user, neither `subagent/orphaned`.
    expect(readFileSync(join(cwd, "x.txt"), "utf8")).toBe("x")
    expect(readFileSync(join(cwd, "y.txt"), "utf8")).toBe("y")
    expect(childAfter.filter((e) => e.type === "permission.resolved").map((e) => (e.payload as { policy?: string; actor: string }).policy ?? (e.payload as { actor: string }).actor))
      .toEqual(["default/write", "user", "default/write", "user"])
    expect(childAfter.filter((e) => e.type === "tool.completed")).toHaveLength(2)
  })

  it("chat --session on a parent a kill left paused on its subagent: the subagent's question is asked, labelled; y resumes the tree to its end", async () => {
    const { cwd, dataDir, script } = setup("chat-crash", {
      responses: [{ toolCalls: [{ tool: "task", args: { description: "write", prompt: "child: write it" }, id: "task_1" }] }],
      subagents: { "child: write it": [{ toolCalls: [{ tool: "write_file", args: { path: "z.txt", content: "z" }, id: "w_z" }] }] }
    })
    const first = start(["run", "delegate the write", "--subagents", "--script", script, "--data-dir", dataDir], { cwd })
    await first.waitForStderr(/asks: allow write_file z\.txt\?/)
    first.child.kill("SIGKILL")
    await first.done
    const parentId = logs(dataDir).find((log) => (log[0]!.payload as { parent?: unknown }).parent === undefined)![0]!.sessionId
    const rest = join(dir, "chat-crash-rest.json")
    writeFileSync(rest, JSON.stringify({ responses: [{ chunks: ["Parent done."] }], subagents: { "child: write it": [{ chunks: ["wrote z"] }] } }))
    const chat = start(["chat", "--session", parentId, "--subagents", "--script", rest, "--data-dir", dataDir], { cwd })
    await chat.waitForStderr(/Subagent "write" \(sess_[^)]+\) asks: allow write_file z\.txt\?/)
    chat.child.stdin!.write("y\n")
    await chat.waitForStdout(/Parent done\.\n/)
    chat.child.stdin!.end()
    expect((await chat.done).code).toBe(0)
    expect(readFileSync(join(cwd, "z.txt"), "utf8")).toBe("z")
    const all = logs(dataDir)
    for (const log of all) expectWellFormedLog(log)
    const parent = all.find((log) => log[0]!.sessionId === parentId)!
    expect(parent.filter((e) => e.type === "tool.completed").map((e) => (e.payload as { result: string }).result)).toEqual(["wrote z"])
    expect(parent.filter((e) => e.type === "turn.completed").map((e) => (e.payload as { stopReason: string }).stopReason)).toEqual(["final"])
  })

  it("chat --subagents: a subagent's question is asked inline and the next line answers it, on the subagent's session", async () => {
    const { cwd, dataDir, script } = setup("chat", {
      responses: [
        { toolCalls: [{ tool: "task", args: { description: "make a file", prompt: "child: make" } }] },
        { chunks: ["Delegated."] }
      ],
      subagents: { "child: make": [{ toolCalls: [{ tool: "write_file", args: { path: "made.txt", content: "made\n" } }] }, { chunks: ["Made."] }] }
    })
    const chat = start(["chat", "--subagents", "--script", script, "--data-dir", dataDir], { cwd })
    chat.child.stdin!.write("delegate the file\n")
    await chat.waitForStderr(/Subagent "make a file" \(sess_[^)]+\) asks: allow write_file made\.txt\? \[y\]es \/ \[n\]o \/ \[a\]lways: /)
    chat.child.stdin!.write("y\n")
    await chat.waitForStdout(/Delegated\.\n/)
    chat.child.stdin!.end()
    const finished = await chat.done
    expect(finished.code).toBe(0)
    expect(readFileSync(join(cwd, "made.txt"), "utf8")).toBe("made\n")
    const all = logs(dataDir)
    for (const log of all) expectWellFormedLog(log)
    const parent = all.find((log) => (log[0]!.payload as { parent?: unknown }).parent === undefined)!
    // The answer was not a steer of the parent's turn.
    expect(parent.filter((e) => e.type === "turn.steered")).toEqual([])
    const child = all.find((log) => log !== parent)!
    expect(child.filter((e) => e.type === "permission.resolved").map((e) => (e.payload as { actor: string }).actor)).toEqual(["policy", "user"])
  })

  it("without --subagents the model is offered no task tool", async () => {
    const { cwd, dataDir, script } = setup("off", {
      responses: [{ toolCalls: [{ tool: "task", args: { description: "x", prompt: "y" } }] }, { chunks: ["ok"] }]
    })
    const running = start(["run", "try", "--script", script, "--data-dir", dataDir], { cwd })
    running.child.stdin!.end()
    const finished = await running.done
    expect(finished.code).toBe(0)
    expect(finished.stderr).toContain("✗ unknown_tool")
    expect(logs(dataDir)).toHaveLength(1)
  })
})
