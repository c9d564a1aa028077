/**
 * `effect-agent serve` as a real subprocess (the built, bundled CLI): it binds 127.0.0.1, prints the
 * token once and a one-time viewer URL to stderr (nothing to stdout), takes EFFECT_AGENT_TOKEN, serves
 * the API and the viewer's files from the package, and stops on SIGINT.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { type Running, start } from "../cli/subprocess.js"
import { liveUntil } from "./harness.js"

const dir = mkdtempSync(join(tmpdir(), "effect-agent-serve-"))
const running: Array<Running> = []
afterAll(() => {
  for (const r of running) r.child.kill("SIGKILL")
  rmSync(dir, { recursive: true, force: true })
})

/** Starts `serve` on a free port; resolves with what it printed once it is listening. */
const launch = async (name: string, env: Record<string, string> = {}, responses: ReadonlyArray<unknown> = [{ chunks: ["served"] }]) => {
  const cwd = join(dir, name)
  mkdirSync(cwd, { recursive: true })
  const script = join(dir, `${name}.json`)
  writeFileSync(script, JSON.stringify({ responses }))
  const server = start(["serve", "--port", "0", "--script", script, "--data-dir", join(cwd, ".data")], { cwd, env })
  running.push(server)
  let stderr = ""
  server.child.stderr!.on("data", (chunk: string) => (stderr += chunk))
  await server.waitForStderr(/viewer \(this URL works once\): \S+\n/)
  const url = /listening on (http:\/\/\S+)/.exec(stderr)![1]!
  const login = /works once\): (\S+)/.exec(stderr)![1]!
  const token = /token: (\S+)/.exec(stderr)![1]!
  return { server, url, login, token, printed: () => stderr }
}

describe("effect-agent serve", () => {
  it("listens on 127.0.0.1, prints the token once and a one-time URL, serves the API and the viewer, stops on SIGINT", async () => {
    const { login, printed, server, token, url } = await launch("random")
    expect(new URL(url).hostname).toBe("127.0.0.1")
    expect((await fetch(`${url}/healthz`)).status).toBe(200)
    expect((await fetch(`${url}/sessions`)).status).toBe(401)
    expect((await fetch(`${url}/sessions`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200)

    // The one-time URL: a cookie for the viewer, then refused.
    const first = await fetch(login, { redirect: "manual" })
    expect(first.status).toBe(303)
    const cookie = first.headers.get("set-cookie")!
    expect(cookie).toMatch(/^effect_agent_token=[^;]+; Path=\/; HttpOnly; SameSite=Strict$/)
    expect((await fetch(login, { redirect: "manual" })).status).toBe(401)
    const page = await fetch(`${url}/`, { headers: { cookie: cookie.split(";")[0]! } })
    expect(page.status).toBe(200)
    expect(page.headers.get("content-security-policy")).toContain("script-src 'self'")
    expect(await page.text()).toContain(`<script type="module" src="/viewer.js">`)
    const script = await fetch(`${url}/viewer.js`, { headers: { cookie: cookie.split(";")[0]! } })
    expect(script.status).toBe(200)
    expect(await script.text()).toContain("export const fold")
    expect((await fetch(`${url}/`)).status).toBe(401)

    server.child.kill("SIGINT")
    const finished = await server.done
    expect(finished.stdout).toBe("")
    // The token is printed once, and nowhere else.
    expect(printed().split(token).length - 1).toBe(1)
    expect(finished.signal === null || finished.signal === "SIGINT").toBe(true)
  })

  it("takes its token from EFFECT_AGENT_TOKEN and does not print it", async () => {
    const secret = "a-token-from-the-environment-0123"
    const { printed, server, token, url } = await launch("env", { EFFECT_AGENT_TOKEN: secret })
    expect(token).toBe("from")
    expect(printed()).not.toContain(secret)
    expect((await fetch(`${url}/sessions`, { headers: { authorization: `Bearer ${secret}` } })).status).toBe(200)
    expect((await fetch(`${url}/sessions`, { headers: { authorization: "Bearer a-token-from-the-environment-0124" } })).status).toBe(401)
    server.child.kill("SIGINT")
    await server.done
  })

  it("each session follows the settings file of its own cwd", async () => {
    const write = (path: string) => ({ toolCalls: [{ tool: "write_file", args: { path, content: "x" } }] })
    const { server, token, url } = await launch("policies", {}, [write("a.txt"), { chunks: ["ok"] }, write("b.txt"), write("c.txt")])
    const project = (name: string, settings?: string) => {
      const cwd = join(dir, "policies-projects", name)
      mkdirSync(join(cwd, ".effect-agent"), { recursive: true })
      if (settings !== undefined) writeFileSync(join(cwd, ".effect-agent", "settings.json"), settings)
      return cwd
    }
    const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" }
    /** Runs one turn in a new session of `cwd`; the decision of its first permission.resolved. */
    const decisionIn = async (cwd: string) => {
      const session = (await (await fetch(`${url}/sessions`, { method: "POST", headers, body: JSON.stringify({ cwd }) })).json()) as { sessionId: string }
      expect((await fetch(`${url}/sessions/${session.sessionId}/turns`, { method: "POST", headers, body: JSON.stringify({ message: "write" }) })).status).toBe(202)
      // Until the call asks, or the turn ends (an allowed call ran): the next turn's script then comes next.
      const events = await liveUntil(`${url}/sessions/${session.sessionId}/live`, { token }, (e) =>
        e.type === "turn.completed" || (e.type === "permission.resolved" && e.payload.decision === "ask"))
      return events.find((e) => e.type === "permission.resolved")!.payload
    }
    expect(await decisionIn(project("edits", `{"mode":"acceptEdits"}`))).toMatchObject({ decision: "allow" })
    expect(await decisionIn(project("plain"))).toMatchObject({ decision: "ask" })
    expect(await decisionIn(project("broken", `{"mode":`))).toMatchObject({ decision: "ask", policy: "settings/unreadable" })
    server.child.kill("SIGINT")
    const finished = await server.done
    expect(finished.stderr).toContain("calls in sessions of")
  })
})
