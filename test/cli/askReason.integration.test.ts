/**
 * An approval question says why the user's own rule did not cover the call: `--allow 'shell:sed *'`
 * never allows `sed -i …` (a wildcard never stands for an invocation that writes or runs another
 * program), and a user who only read "Allow shell sed -i …?" could not tell why, nor what to write
 * instead. Through the built CLI, answering on stdin; the stored events keep their shape.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { expectWellFormedLog } from "../helpers.js"
import { replayLog, start } from "./subprocess.js"

const dir = mkdtempSync(join(tmpdir(), "effect-agent-askreason-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const sessionOf = (stderr: string) => /session (\S+)/.exec(stderr)?.[1]

/** A project whose model runs `sed -i s/a/b/ f.txt` once, then answers "done". */
const project = (name: string) => {
  const cwd = join(dir, name)
  mkdirSync(cwd, { recursive: true })
  writeFileSync(join(cwd, "f.txt"), "a\n")
  const script = join(cwd, "script.json")
  const call = { tool: "shell", args: { command: "sed -i s/a/b/ f.txt" } }
  writeFileSync(script, JSON.stringify({ responses: [{ chunks: ["Working."], toolCalls: [call] }, { chunks: ["done"] }] }))
  return { cwd, script, dataDir: join(cwd, "data") }
}

const answering = async (args: ReadonlyArray<string>, cwd: string, input: string) => {
  const running = start(args, { cwd })
  running.child.stdin!.end(input)
  return running.done
}

const logOf = (sessionId: string, dataDir: string) => replayLog(sessionId, ["--data-dir", dataDir])

describe("an ask names the rule that did not cover the call", () => {
  it("run --allow 'shell:sed *': the question says why sed -i is asked and what to allow instead", async () => {
    const p = project("sed")
    const done = await answering(["run", "edit it", "--script", p.script, "--data-dir", p.dataDir, "--allow", "shell:sed *"], p.cwd, "y\n")
    expect(done.code).toBe(0)
    expect(done.stderr).toContain(
      "  Allow shell sed -i s/a/b/ f.txt? (your rule --allow shell:sed * does not cover it: a rule's wildcard never stands for a command " +
        "that could write or run another program, or whose options are not all known reads (here sed -i s/a/b/ f.txt); " +
        "allow it with --allow 'shell:sed -i s/a/b/ f.txt' or answer here) [y]es / [n]o / [a]lways: "
    )
    expect(readFileSync(join(p.cwd, "f.txt"), "utf8")).toBe("b\n")
    // The events are what they were: the ask's reason is the terminal's, not the log's.
    const log = await logOf(sessionOf(done.stderr)!, p.dataDir)
    expectWellFormedLog(log)
    const resolved = log.filter((e) => e.type === "permission.resolved").map((e) => e.payload)
    expect(resolved).toEqual([
      { toolCallId: expect.any(String), decision: "ask", policy: "default/command", actor: "policy" },
      { toolCallId: expect.any(String), decision: "allow", actor: "user" }
    ])
    const requested = log.find((e) => e.type === "permission.requested")!.payload
    expect(Object.keys(requested).sort()).toEqual(["risk", "tool", "toolCallId"])
  })

  it("chat --allow 'shell:sed *': the inline question says the same, and y answers it", async () => {
    const p = project("chat")
    const chat = start(["chat", "--script", p.script, "--data-dir", p.dataDir, "--allow", "shell:sed *"], { cwd: p.cwd })
    chat.child.stdin!.write("edit it\n")
    await chat.waitForStderr(/Allow shell sed -i s\/a\/b\/ f\.txt\? \(your rule --allow shell:sed \* does not cover it: .*; allow it with --allow 'shell:sed -i s\/a\/b\/ f\.txt' or answer here\) \[y\]es/)
    chat.child.stdin!.write("y\n")
    await chat.waitForStdout(/done\n/)
    chat.child.stdin!.end()
    const finished = await chat.done
    expect(finished.code).toBe(0)
    expect(readFileSync(join(p.cwd, "f.txt"), "utf8")).toBe("b\n")
  })

  it("the rule the question suggests allows the call without asking", async () => {
    const p = project("suggested")
    const done = await answering(["run", "edit it", "--script", p.script, "--data-dir", p.dataDir, "--allow", "shell:sed -i s/a/b/ f.txt"], p.cwd, "")
    expect(done.code).toBe(0)
    expect(done.stderr).not.toContain("[y]es")
    expect(readFileSync(join(p.cwd, "f.txt"), "utf8")).toBe("b\n")
  })

  it("run --subagents: a subagent's question says it too (it carried no reason before)", async () => {
    const p = project("subagent")
    const call = { tool: "shell", args: { command: "sed -i s/a/b/ f.txt" } }
    writeFileSync(p.script, JSON.stringify({
      responses: [{ toolCalls: [{ tool: "task", args: { description: "edit f", prompt: "child: edit" } }] }, { chunks: ["Delegated."] }],
      subagents: { "child: edit": [{ toolCalls: [call] }, { chunks: ["Edited."] }] }
    }))
    const done = await answering(["run", "delegate", "--subagents", "--script", p.script, "--data-dir", p.dataDir, "--allow", "shell:sed *"], p.cwd, "y\n")
    expect(done.code).toBe(0)
    expect(done.stderr).toMatch(
      /Subagent "edit f" \(sess_[^)]+\) asks: allow shell sed -i s\/a\/b\/ f\.txt\? \(your rule --allow shell:sed \* does not cover it: .*; allow it with --allow 'shell:sed -i s\/a\/b\/ f\.txt' or answer here\) \[y\]es/
    )
    expect(readFileSync(join(p.cwd, "f.txt"), "utf8")).toBe("b\n")
  })

  /** A `run` left waiting on the question about `sed -i`, its process killed: the session's id. */
  const leftWaiting = async (p: ReturnType<typeof project>) => {
    const first = start(["run", "edit it", "--script", p.script, "--data-dir", p.dataDir, "--allow", "shell:sed *"], { cwd: p.cwd })
    await first.waitForStderr(/Allow shell sed -i s\/a\/b\/ f\.txt\?/)
    first.child.kill("SIGKILL")
    const sessionId = sessionOf((await first.done).stderr)!
    // The model of the next process: what comes after the call.
    const rest = join(p.cwd, "rest.json")
    writeFileSync(rest, JSON.stringify({ responses: [{ chunks: ["done"] }] }))
    return { sessionId, rest }
  }

  it("chat --session on a turn a stopped process left waiting: the question asked again says why too (it carried no reason before)", async () => {
    const p = project("chat-again")
    const { rest, sessionId } = await leftWaiting(p)
    const chat = start(["chat", "--session", sessionId, "--script", rest, "--data-dir", p.dataDir, "--allow", "shell:sed *"], { cwd: p.cwd })
    await chat.waitForStderr(
      /left waiting for your approval[\s\S]*Allow shell sed -i s\/a\/b\/ f\.txt\? \(your rule --allow shell:sed \* does not cover it: .*; allow it with --allow 'shell:sed -i s\/a\/b\/ f\.txt' or answer here\) \[y\]es/
    )
    chat.child.stdin!.end("y\n")
    const finished = await chat.done
    expect(finished.code).toBe(0)
    expect(finished.stdout).toBe("done\n")
    expect(readFileSync(join(p.cwd, "f.txt"), "utf8")).toBe("b\n")
  })

  it("chat --continue without the rule: the same ask, asked again with no reason (the rule it named is not given now)", async () => {
    const p = project("chat-again-norule")
    const { rest } = await leftWaiting(p)
    const chat = start(["chat", "--continue", "--script", rest, "--data-dir", p.dataDir], { cwd: p.cwd })
    await chat.waitForStderr(/left waiting for your approval[\s\S]*Allow shell sed -i s\/a\/b\/ f\.txt\? \[y\]es/)
    chat.child.stdin!.end("n\n")
    const finished = await chat.done
    expect(finished.code).toBe(0)
    expect(finished.stderr).not.toContain("does not cover")
    expect(readFileSync(join(p.cwd, "f.txt"), "utf8")).toBe("a\n")
  })

  it("an ask no rule came near says nothing about rules", async () => {
    const p = project("norule")
    const done = await answering(["run", "edit it", "--script", p.script, "--data-dir", p.dataDir, "--allow", "shell:ls *"], p.cwd, "n\n")
    expect(done.code).toBe(0)
    expect(done.stderr).toContain("Allow shell sed -i s/a/b/ f.txt? [y]es / [n]o / [a]lways:")
    expect(done.stderr).not.toContain("does not cover")
    expect(readFileSync(join(p.cwd, "f.txt"), "utf8")).toBe("a\n")
  })
})
