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

  // Review 44, item 1: the trusted project's `env` was read once, at start, from the start folder's
  // settings; a revoke changed the rules but the next command still got the variable. Failed on main
  // (the second `printenv` printed the value).
  it("trust revoked: the project's env.allow no longer passes the variable to the next command", async () => {
    const log = steps()
    const cwd = join(dir, "env-project")
    const env = { EFFECT_AGENT_CONFIG_DIR: join(dir, "env-config"), SETTINGS_CHANGE_FLAVOR: "flavor-value" }
    mkdirSync(join(cwd, ".effect-agent"), { recursive: true })
    writeFileSync(join(cwd, ".effect-agent", "settings.json"), `{"env":{"allow":["SETTINGS_CHANGE_FLAVOR"]}}`)
    expect((await log.waiting("effect-agent trust --yes", run(["trust", "--yes"], { cwd, env }))).code).toBe(0)
    const script = join(dir, "env-script.json")
    const printenv = { toolCalls: [{ tool: "shell", args: { command: "printenv SETTINGS_CHANGE_FLAVOR" } }] }
    writeFileSync(script, JSON.stringify({ responses: [printenv, { chunks: ["ok"] }, printenv, { chunks: ["ok"] }] }))
    const { server, token, url } = await startServe(
      ["--script", script, "--data-dir", join(dir, "env-data"), "--allow", "shell:printenv SETTINGS_CHANGE_FLAVOR"],
      { cwd, env, steps: log }
    )
    try {
      const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" }
      const created = await log.waiting("POST /sessions", fetch(`${url}/sessions`, { method: "POST", headers, body: JSON.stringify({ cwd }) }))
      const { sessionId } = (await created.json()) as { sessionId: string }
      const turn = async (message: string, n: number) => {
        expect((await log.waiting(`POST /turns ${message}`, fetch(`${url}/sessions/${sessionId}/turns`, { method: "POST", headers, body: JSON.stringify({ message }) }))).status).toBe(202)
        let completed = 0
        const events = await log.waiting(`turn ${n} ends`, liveUntil(`${url}/sessions/${sessionId}/live`, { token, saw: log.saw }, (e) => e.type === "turn.completed" && ++completed >= n))
        return events.filter((e) => e.type === "tool.completed").map((e) => JSON.stringify(e.payload.result))
      }
      expect((await turn("first", 1)).join()).toContain("flavor-value")
      expect((await log.waiting("effect-agent trust --revoke", run(["trust", "--revoke"], { cwd, env }))).code).toBe(0)
      const results = await turn("second", 2)
      expect(results).toHaveLength(2)
      expect(results[1]).not.toContain("flavor-value")
    } finally {
      server.child.kill("SIGINT")
      await log.waiting("serve to exit on SIGINT", server.done)
    }
  })

  // Review 44's remark: a cwd whose project file cannot be read made every call ask, a call the
  // operator's `--deny` names too (approvable). Failed on main (decision "ask", policy settings/unreadable).
  it("a project file that cannot be read: a call --deny names is still denied", async () => {
    const log = steps()
    const cwd = join(dir, "broken-project")
    const env = { EFFECT_AGENT_CONFIG_DIR: join(dir, "broken-config") }
    mkdirSync(join(cwd, ".effect-agent"), { recursive: true })
    writeFileSync(join(cwd, ".effect-agent", "settings.json"), `{"mode":`)
    const script = join(dir, "broken-script.json")
    writeFileSync(script, JSON.stringify({ responses: [{ toolCalls: [{ tool: "write_file", args: { path: "one.txt", content: "x" } }] }, { chunks: ["ok"] }] }))
    const { server, token, url } = await startServe(
      ["--script", script, "--data-dir", join(dir, "broken-data"), "--deny", "write_file"],
      { cwd: dir, env, steps: log }
    )
    try {
      const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" }
      const created = await log.waiting("POST /sessions", fetch(`${url}/sessions`, { method: "POST", headers, body: JSON.stringify({ cwd }) }))
      const { sessionId } = (await created.json()) as { sessionId: string }
      expect((await log.waiting("POST /turns", fetch(`${url}/sessions/${sessionId}/turns`, { method: "POST", headers, body: JSON.stringify({ message: "write" }) }))).status).toBe(202)
      const events = await log.waiting("the call decided", liveUntil(`${url}/sessions/${sessionId}/live`, { token, saw: log.saw }, (e) =>
        e.type === "turn.completed" || e.type === "permission.resolved"))
      expect(events.find((e) => e.type === "permission.resolved")?.payload).toMatchObject({ decision: "deny" })
      expect(existsSync(join(cwd, "one.txt"))).toBe(false)
    } finally {
      server.child.kill("SIGINT")
      await log.waiting("serve to exit on SIGINT", server.done)
    }
  })
})
