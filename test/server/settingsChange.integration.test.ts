/**
 * Leftovers 41, item 4: `serve` kept each cwd's settings as it first loaded them, for its whole life.
 * A project trusted in Accept edits, then `effect-agent trust --revoke` while the server ran: its
 * sessions kept writing files without asking until a restart, and so with a deny rule added to your
 * own `settings.json`. Now a decision loads a cwd's settings again when one of their files changed
 * (the user's settings, the trust store, the project's file). Failed before: the second write ran
 * unasked (against main's dist, `EFFECT_AGENT_TEST_BIN`).
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { run } from "../cli/subprocess.js"
import { steps } from "../steps.js"
import { liveUntil } from "./harness.js"
import { startServe } from "./serveProcess.js"

const dir = mkdtempSync(join(tmpdir(), "effect-agent-serve-settings-change-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe("effect-agent serve, settings changed while it runs", () => {
  it("trust revoked: the project's Accept edits no longer applies — the next write asks", async () => {
    const log = steps()
    const cwd = join(dir, "project")
    const env = { EFFECT_AGENT_CONFIG_DIR: join(dir, "config") }
    mkdirSync(join(cwd, ".effect-agent"), { recursive: true })
    writeFileSync(join(cwd, ".effect-agent", "settings.json"), `{"mode":"acceptEdits"}`)
    expect((await log.waiting("effect-agent trust --yes", run(["trust", "--yes"], { cwd, env }))).code).toBe(0)
    const script = join(dir, "script.json")
    const write = (path: string) => ({ toolCalls: [{ tool: "write_file", args: { path, content: `${path}\n` } }] })
    writeFileSync(script, JSON.stringify({ responses: [write("one.txt"), { chunks: ["Written."] }, write("two.txt"), { chunks: ["Written."] }] }))
    const { server, token, url } = await startServe(["--script", script, "--data-dir", join(dir, "data")], { cwd, env, steps: log })
    try {
      const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" }
      const created = await log.waiting("POST /sessions", fetch(`${url}/sessions`, { method: "POST", headers, body: JSON.stringify({ cwd }) }))
      const { sessionId } = (await created.json()) as { sessionId: string }
      // The live stream starts from the session's first event: turn `n` has ended at the n-th `turn.completed`.
      const turn = async (message: string, n: number) => {
        expect((await log.waiting(`POST /turns ${message}`, fetch(`${url}/sessions/${sessionId}/turns`, { method: "POST", headers, body: JSON.stringify({ message }) }))).status).toBe(202)
        let completed = 0
        return await log.waiting(
          `turn ${n} ends or asks`,
          liveUntil(`${url}/sessions/${sessionId}/live`, { token, saw: log.saw }, (e) =>
            (e.type === "turn.completed" && ++completed >= n) || (e.type === "permission.resolved" && e.payload.decision === "ask"))
        )
      }
      const first = await turn("first", 1)
      expect(first.filter((e) => e.type === "permission.resolved" && e.payload.decision === "ask")).toEqual([])
      expect(readFileSync(join(cwd, "one.txt"), "utf8")).toBe("one.txt\n")
      expect((await log.waiting("effect-agent trust --revoke", run(["trust", "--revoke"], { cwd, env }))).code).toBe(0)
      const second = await turn("second", 2)
      expect(second.at(-1)).toMatchObject({ type: "permission.resolved", payload: { decision: "ask" } })
      expect(existsSync(join(cwd, "two.txt"))).toBe(false)
    } finally {
      server.child.kill("SIGINT")
      await log.waiting("serve to exit on SIGINT", server.done)
    }
  })
})
