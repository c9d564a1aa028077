/**
 * `effect-agent serve --subagents`: a subagent's session follows the settings of the session that
 * started it. The server decides each session with the settings of its cwd, and a subagent's cwd may
 * be a folder inside its parent's: its calls were decided with that folder's settings (none), so a
 * project trusted in Accept edits had every edit of a subagent working in `sub/` asked.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { type Running, run, start } from "../cli/subprocess.js"
import { liveUntil } from "./harness.js"

const dir = mkdtempSync(join(tmpdir(), "effect-agent-serve-subagent-"))
const running: Array<Running> = []
afterAll(() => {
  for (const r of running) r.child.kill("SIGKILL")
  rmSync(dir, { recursive: true, force: true })
})

describe("effect-agent serve --subagents", () => {
  it("a subagent working in a folder of a project trusted in Accept edits: its edit is decided with the project's settings, not asked", async () => {
    const cwd = join(dir, "project")
    mkdirSync(join(cwd, ".effect-agent"), { recursive: true })
    mkdirSync(join(cwd, "sub"))
    writeFileSync(join(cwd, ".effect-agent", "settings.json"), `{"mode":"acceptEdits"}`)
    expect((await run(["trust", "--yes"], { cwd })).code).toBe(0)
    const script = join(dir, "script.json")
    writeFileSync(script, JSON.stringify({
      responses: [{ toolCalls: [{ tool: "task", args: { description: "write it", prompt: "child: write", cwd: "sub" } }] }, { chunks: ["Delegated."] }],
      subagents: { "child: write": [{ toolCalls: [{ tool: "write_file", args: { path: "x.txt", content: "from the child\n" } }] }, { chunks: ["Written."] }] }
    }))
    const server = start(["serve", "--port", "0", "--subagents", "--script", script, "--data-dir", join(dir, "data")], { cwd })
    running.push(server)
    let stderr = ""
    server.child.stderr!.on("data", (chunk: string) => (stderr += chunk))
    await server.waitForStderr(/viewer \(this URL works once, within 10 minutes\): \S+\n/)
    const url = /listening on (http:\/\/\S+)/.exec(stderr)![1]!
    const token = /token: (\S+)/.exec(stderr)![1]!
    const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" }

    const session = (await (await fetch(`${url}/sessions`, { method: "POST", headers, body: JSON.stringify({ cwd }) })).json()) as { sessionId: string }
    expect((await fetch(`${url}/sessions/${session.sessionId}/turns`, { method: "POST", headers, body: JSON.stringify({ message: "delegate" }) })).status).toBe(202)
    // Until the turn ends, or the subagent's call asks.
    const events = await liveUntil(`${url}/sessions/${session.sessionId}/live`, { token }, (e) => e.type === "turn.completed" || e.type === "subagent.asked")
    expect(events.filter((e) => e.type === "subagent.asked")).toEqual([])
    expect(events.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
    expect(readFileSync(join(cwd, "sub", "x.txt"), "utf8")).toBe("from the child\n")
    server.child.kill("SIGINT")
    await server.done
  })
})
