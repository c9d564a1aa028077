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
import type * as AgentEvent from "../../src/domain/AgentEvent.js"
import { run } from "../cli/subprocess.js"
import { steps } from "../steps.js"
import { liveUntil } from "./harness.js"
import { startServe } from "./serveProcess.js"

const dir = mkdtempSync(join(tmpdir(), "effect-agent-serve-settings-change-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

type Turn = (message: string, until: (event: AgentEvent.AgentEvent) => boolean) => Promise<Array<AgentEvent.AgentEvent>>
/** Answers a question of the session's, then follows its events (from its first) until `until`. */
type Approve = (toolCallId: string, until: (event: AgentEvent.AgentEvent) => boolean) => Promise<Array<AgentEvent.AgentEvent>>

/** Starts `serve` (in `where.serveCwd`, else the session's cwd), creates a session of `where.cwd`, runs `body` with a way to post its turns, stops the server. */
const inSession = async (
  log: ReturnType<typeof steps>,
  args: ReadonlyArray<string>,
  where: { readonly cwd: string; readonly serveCwd?: string; readonly env: Record<string, string> },
  body: (turn: Turn, approve: Approve) => Promise<void>
) => {
  const { server, token, url } = await startServe([...args], { cwd: where.serveCwd ?? where.cwd, env: where.env, steps: log })
  try {
    const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" }
    const created = await log.waiting("POST /sessions", fetch(`${url}/sessions`, { method: "POST", headers, body: JSON.stringify({ cwd: where.cwd }) }))
    const { sessionId } = (await created.json()) as { sessionId: string }
    // The live stream starts from the session's first event, each time.
    const follow = (what: string, until: (event: AgentEvent.AgentEvent) => boolean) =>
      log.waiting(what, liveUntil(`${url}/sessions/${sessionId}/live`, { token, saw: log.saw }, until))
    await body(async (message, until) => {
      expect((await log.waiting(`POST /turns ${message}`, fetch(`${url}/sessions/${sessionId}/turns`, { method: "POST", headers, body: JSON.stringify({ message }) }))).status).toBe(202)
      return await follow(`turn ${message} ends`, until)
    }, async (toolCallId, until) => {
      const approved = await log.waiting(`POST /approvals/${toolCallId}`, fetch(`${url}/sessions/${sessionId}/approvals/${toolCallId}`, { method: "POST", headers, body: JSON.stringify({ decision: "allow" }) }))
      expect(approved.status).toBeLessThan(300)
      return await follow(`after approving ${toolCallId}`, until)
    })
  } finally {
    server.child.kill("SIGINT")
    await log.waiting("serve to exit on SIGINT", server.done)
  }
}

/** Until the `n`-th `turn.completed` (turn `n` has ended), or an event `also` stops at. */
const completed = (n: number, also: (event: AgentEvent.AgentEvent) => boolean = () => false) => {
  let seen = 0
  return (event: AgentEvent.AgentEvent) => (event.type === "turn.completed" && ++seen >= n) || also(event)
}

const asks = (event: AgentEvent.AgentEvent) => event.type === "permission.resolved" && event.payload.decision === "ask"

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
    await inSession(log, ["--script", script, "--data-dir", join(dir, "data")], { cwd, env }, async (turn) => {
      const first = await turn("first", completed(1, asks))
      expect(first.filter(asks)).toEqual([])
      expect(readFileSync(join(cwd, "one.txt"), "utf8")).toBe("one.txt\n")
      expect((await log.waiting("effect-agent trust --revoke", run(["trust", "--revoke"], { cwd, env }))).code).toBe(0)
      const second = await turn("second", completed(2, asks))
      expect(second.at(-1)).toMatchObject({ type: "permission.resolved", payload: { decision: "ask" } })
      expect(existsSync(join(cwd, "two.txt"))).toBe(false)
    })
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
    const args = ["--script", script, "--data-dir", join(dir, "env-data"), "--allow", "shell:printenv SETTINGS_CHANGE_FLAVOR"]
    const results = (events: ReadonlyArray<AgentEvent.AgentEvent>) =>
      events.flatMap((e) => e.type === "tool.completed" ? [JSON.stringify(e.payload.result)] : [])
    await inSession(log, args, { cwd, env }, async (turn) => {
      expect(results(await turn("first", completed(1))).join()).toContain("flavor-value")
      expect((await log.waiting("effect-agent trust --revoke", run(["trust", "--revoke"], { cwd, env }))).code).toBe(0)
      const second = results(await turn("second", completed(2)))
      expect(second).toHaveLength(2)
      expect(second[1]).not.toContain("flavor-value")
    })
  })

  // Leftovers 42, item 2: a call that asked ran with the env as of its question — a revoke between
  // the question and the approval was not seen, and the command got env.allow's variable. Failed
  // on main (the approved `printenv` printed the value).
  it("trust revoked while a command waits for approval: it runs without the project's env.allow", async () => {
    const log = steps()
    const cwd = join(dir, "asked-project")
    const env = { EFFECT_AGENT_CONFIG_DIR: join(dir, "asked-config"), SETTINGS_CHANGE_FLAVOR: "flavor-value" }
    mkdirSync(join(cwd, ".effect-agent"), { recursive: true })
    writeFileSync(join(cwd, ".effect-agent", "settings.json"), `{"env":{"allow":["SETTINGS_CHANGE_FLAVOR"]}}`)
    expect((await log.waiting("effect-agent trust --yes", run(["trust", "--yes"], { cwd, env }))).code).toBe(0)
    const script = join(dir, "asked-script.json")
    writeFileSync(script, JSON.stringify({ responses: [{ toolCalls: [{ tool: "shell", args: { command: "printenv SETTINGS_CHANGE_FLAVOR" } }] }, { chunks: ["ok"] }] }))
    await inSession(log, ["--script", script, "--data-dir", join(dir, "asked-data")], { cwd, env }, async (turn, approve) => {
      const asked = (await turn("ask", asks)).at(-1)!
      expect(asked.type).toBe("permission.resolved")
      expect((await log.waiting("effect-agent trust --revoke", run(["trust", "--revoke"], { cwd, env }))).code).toBe(0)
      const events = await approve((asked.payload as { toolCallId: string }).toolCallId, completed(1))
      const results = events.flatMap((e) => e.type === "tool.completed" ? [JSON.stringify(e.payload.result)] : [])
      expect(results).toHaveLength(1)
      expect(results[0]).not.toContain("flavor-value")
    })
  })

  // Review 44's remark: a cwd whose project file cannot be read made every call ask, a call the
  // operator's `--deny` (or your own settings' deny) names too, approvable. Failed on main (decision
  // "ask", policy settings/unreadable).
  it("a project file that cannot be read: a call --deny or your own settings deny is still denied", async () => {
    const log = steps()
    const cwd = join(dir, "broken-project")
    const env = { EFFECT_AGENT_CONFIG_DIR: join(dir, "broken-config") }
    mkdirSync(join(cwd, ".effect-agent"), { recursive: true })
    writeFileSync(join(cwd, ".effect-agent", "settings.json"), `{"mode":`)
    mkdirSync(env.EFFECT_AGENT_CONFIG_DIR, { recursive: true })
    writeFileSync(join(env.EFFECT_AGENT_CONFIG_DIR, "settings.json"), JSON.stringify({ rules: [{ decision: "deny", tool: "read_file", path: "**/secret.txt" }] }))
    const script = join(dir, "broken-script.json")
    const calls = [{ tool: "write_file", args: { path: "one.txt", content: "x" } }, { tool: "read_file", args: { path: "secret.txt" } }]
    writeFileSync(script, JSON.stringify({ responses: [{ toolCalls: calls }, { chunks: ["ok"] }] }))
    const args = ["--script", script, "--data-dir", join(dir, "broken-data"), "--deny", "write_file"]
    await inSession(log, args, { cwd, serveCwd: dir, env }, async (turn) => {
      let decided = 0
      // Until both are decided, or one asks (the turn then waits on it).
      const events = await turn("write", completed(1, (e) => asks(e) || (e.type === "permission.resolved" && ++decided >= 2)))
      expect(events.filter((e) => e.type === "permission.resolved").map((e) => e.payload)).toMatchObject([{ decision: "deny" }, { decision: "deny" }])
      expect(existsSync(join(cwd, "one.txt"))).toBe(false)
    })
  })
})
