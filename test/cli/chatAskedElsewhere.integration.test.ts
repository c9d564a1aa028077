/**
 * `chat --session` on a session another live process drives, paused on the question that process
 * asked: chat asked it again, and its answer went nowhere (the resume was refused `session_busy`
 * after the question). As ACP's `session/load` does since mend59acp, chat now asks nothing, says
 * which process holds the question, and the first process's answer still runs the turn.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { start } from "./subprocess.js"

const dir = mkdtempSync(join(tmpdir(), "effect-agent-chat-elsewhere-"))
const dataDir = join(dir, "data")
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const sessionOf = (stderr: string) => /session (sess_\S+)/.exec(stderr)?.[1]

describe("chat --session on a turn another live process waits on (subprocess)", () => {
  it("asks nothing, names the process that holds the question; that process's answer runs the turn", async () => {
    const cwd = join(dir, "project")
    mkdirSync(cwd, { recursive: true })
    const script = join(cwd, "script.json")
    writeFileSync(script, JSON.stringify({ responses: [{ toolCalls: [{ tool: "write_file", args: { path: "f.txt", content: "first\n" } }] }, { chunks: ["done"] }] }))
    const first = start(["run", "write f.txt", "--script", script, "--data-dir", dataDir], { cwd })
    let firstStderr = ""
    first.child.stderr!.on("data", (chunk: string) => (firstStderr += chunk))
    await first.waitForStderr(/Allow write_file f\.txt\?/)
    const sessionId = sessionOf(firstStderr)!

    const rest = join(cwd, "rest.json")
    writeFileSync(rest, JSON.stringify({ responses: [{ chunks: ["not me"] }] }))
    const chat = start(["chat", "--session", sessionId, "--script", rest, "--data-dir", dataDir], { cwd })
    await chat.waitForStderr(/driven by pid \d+ on host /)
    chat.child.stdin!.end()
    const left = await chat.done
    expect(left.stderr).not.toMatch(/Allow write_file f\.txt\?/)
    expect(left.stderr).toContain(`driven by pid ${first.child.pid} on host`)

    first.child.stdin!.end("y\n")
    const finished = await first.done
    expect(finished.code).toBe(0)
    expect(finished.stdout).toBe("done\n")
    expect(readFileSync(join(cwd, "f.txt"), "utf8")).toBe("first\n")
    expect(finished.stderr).not.toContain("could not store the user's answer")
  })
})
