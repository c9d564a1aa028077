/**
 * `serve --max-steps` and `serve --max-subagents` through the built CLI and HTTP: a turn's tree is
 * bounded by the flags as by the engine's options (a task past the subagents fails
 * `subagents_exceeded`; past the steps the turn ends `budget_exceeded`), seen in the turn's live events.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { liveUntil } from "./harness.js"
import { startServe } from "./serveProcess.js"

const dir = realpathSync(mkdtempSync(join(tmpdir(), "effect-agent-serve-limits-")))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe("effect-agent serve --max-steps --max-subagents", () => {
  it("the second task call fails subagents_exceeded; the fifth model request of the tree is past --max-steps 4: budget_exceeded", async () => {
    const cwd = join(dir, "work")
    mkdirSync(cwd, { recursive: true })
    const script = join(dir, "script.json")
    writeFileSync(script, JSON.stringify({
      responses: [
        { toolCalls: [{ tool: "task", args: { description: "first", prompt: "child: first" } }] },
        { toolCalls: [{ tool: "task", args: { description: "second", prompt: "child: second" } }] },
        { toolCalls: [{ tool: "list_dir", args: { path: "." } }] },
        { chunks: ["never"] }
      ],
      subagents: { "child: first": [{ chunks: ["first done"] }], "child: second": [{ chunks: ["second done"] }] }
    }))
    const { server, token, url } = await startServe(
      ["--subagents", "--max-subagents", "1", "--max-steps", "4", "--script", script, "--data-dir", join(dir, "data")],
      { cwd }
    )
    try {
      const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" }
      const session = await (await fetch(`${url}/sessions`, { method: "POST", headers, body: JSON.stringify({ cwd }) })).json() as { sessionId: string }
      const started = await fetch(`${url}/sessions/${session.sessionId}/turns`, { method: "POST", headers, body: JSON.stringify({ message: "fan out" }) })
      expect(started.status).toBe(202)
      const events = await liveUntil(`${url}/sessions/${session.sessionId}/live`, { token }, (e) => e.type === "turn.completed")
      expect(events.filter((e) => e.type === "subagent.started")).toHaveLength(1)
      expect(events.find((e) => e.type === "tool.failed")).toMatchObject({ payload: { errorCode: "subagents_exceeded" } })
      expect(events.at(-1)).toMatchObject({ payload: { stopReason: "error", errorCode: "budget_exceeded" } })
    } finally {
      server.child.kill("SIGTERM")
      await server.done
    }
  })
})
