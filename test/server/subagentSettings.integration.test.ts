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
import { run } from "../cli/subprocess.js"
import { steps } from "../steps.js"
import { liveUntil } from "./harness.js"
import { startServe } from "./serveProcess.js"

const dir = mkdtempSync(join(tmpdir(), "effect-agent-serve-subagent-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe("effect-agent serve --subagents", () => {
  // It hung once in a full run (the parent's task call missed its subagent's end: see
  // test/engine/turnSink.test.ts); a failure now prints where it waited (test/steps.ts).
  it("a subagent working in a folder of a project trusted in Accept edits: its edit is decided with the project's settings, not asked", async () => {
    const log = steps()
    const cwd = join(dir, "project")
    mkdirSync(join(cwd, ".effect-agent"), { recursive: true })
    mkdirSync(join(cwd, "sub"))
    writeFileSync(join(cwd, ".effect-agent", "settings.json"), `{"mode":"acceptEdits"}`)
    expect((await log.waiting("effect-agent trust --yes", run(["trust", "--yes"], { cwd }))).code).toBe(0)
    const script = join(dir, "script.json")
    writeFileSync(script, JSON.stringify({
      responses: [{ toolCalls: [{ tool: "task", args: { description: "write it", prompt: "child: write", cwd: "sub" } }] }, { chunks: ["Delegated."] }],
      subagents: { "child: write": [{ toolCalls: [{ tool: "write_file", args: { path: "x.txt", content: "from the child\n" } }] }, { chunks: ["Written."] }] }
    }))
    const { server, token, url } = await startServe(["--subagents", "--script", script, "--data-dir", join(dir, "data")], { cwd, steps: log })
    const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" }

    const created = await log.waiting("POST /sessions", fetch(`${url}/sessions`, { method: "POST", headers, body: JSON.stringify({ cwd }) }))
    const session = (await created.json()) as { sessionId: string }
    log.step(`session ${session.sessionId}`)
    const turn = await log.waiting("POST /turns", fetch(`${url}/sessions/${session.sessionId}/turns`, { method: "POST", headers, body: JSON.stringify({ message: "delegate" }) }))
    expect(turn.status).toBe(202)
    // Until the turn ends, or the subagent's call asks.
    const events = await log.waiting(
      "turn.completed or subagent.asked on /live",
      liveUntil(`${url}/sessions/${session.sessionId}/live`, { token, saw: log.saw }, (e) => e.type === "turn.completed" || e.type === "subagent.asked")
    )
    expect(events.filter((e) => e.type === "subagent.asked")).toEqual([])
    expect(events.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
    expect(readFileSync(join(cwd, "sub", "x.txt"), "utf8")).toBe("from the child\n")
    server.child.kill("SIGINT")
    await log.waiting("serve to exit on SIGINT", server.done)
  })
})
