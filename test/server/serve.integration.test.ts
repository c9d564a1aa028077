/**
 * `effect-agent serve` as a real subprocess (the built, bundled CLI): it binds 127.0.0.1, prints the
 * token once and a one-time viewer URL to stderr (nothing to stdout), takes EFFECT_AGENT_TOKEN, serves
 * the API and the viewer's files from the package, and stops on SIGINT.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { type Running, run, start } from "../cli/subprocess.js"
import { freshSchemaUrl } from "../postgres.js"
import { liveUntil } from "./harness.js"
import { send } from "./requests.js"

const dir = mkdtempSync(join(tmpdir(), "effect-agent-serve-"))
const running: Array<Running> = []
afterAll(() => {
  for (const r of running) r.child.kill("SIGKILL")
  rmSync(dir, { recursive: true, force: true })
})

/** Starts `serve` on a free port; resolves with what it printed once it is listening. */
const launch = async (
  name: string,
  env: Record<string, string> = {},
  responses: ReadonlyArray<unknown> = [{ chunks: ["served"] }],
  storage: ReadonlyArray<string> = ["--data-dir", join(dir, name, ".data")]
) => {
  const cwd = join(dir, name)
  mkdirSync(cwd, { recursive: true })
  const script = join(dir, `${name}.json`)
  writeFileSync(script, JSON.stringify({ responses }))
  const server = start(["serve", "--port", "0", "--script", script, ...storage], { cwd, env })
  running.push(server)
  let stderr = ""
  server.child.stderr!.on("data", (chunk: string) => (stderr += chunk))
  await server.waitForStderr(/viewer \(this URL works once, within 10 minutes\): \S+\n/)
  const url = /listening on (http:\/\/\S+)/.exec(stderr)![1]!
  const login = /works once, within 10 minutes\): (\S+)/.exec(stderr)![1]!
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
    expect(cookie).toMatch(new RegExp(`^effect_agent_session_${new URL(url).port}=[^;]+; Path=/; HttpOnly; SameSite=Strict$`))
    expect(cookie).not.toContain(token)
    expect((await fetch(login, { redirect: "manual" })).status).toBe(401)
    const page = await fetch(`${url}/`, { headers: { cookie: cookie.split(";")[0]! } })
    expect(page.status).toBe(200)
    expect(page.headers.get("content-security-policy")).toContain("script-src 'self'")
    expect(await page.text()).toContain(`<script type="module" src="/viewer.js">`)
    const script = await fetch(`${url}/viewer.js`, { headers: { cookie: cookie.split(";")[0]! } })
    expect(script.status).toBe(200)
    // The page's script, bundled with the domain's fold of the log.
    expect(await script.text()).toContain("// src/domain/SessionView.ts")
    expect((await fetch(`${url}/`)).status).toBe(401)

    server.child.kill("SIGINT")
    const finished = await server.done
    expect(finished.stdout).toBe("")
    // The token is printed once, and nowhere else.
    expect(printed().split(token).length - 1).toBe(1)
    expect(finished.signal === null || finished.signal === "SIGINT").toBe(true)
  })

  it("SIGTERM: a clean shutdown (the running turn closed cancelled in the log), then exit 0", async () => {
    const slow = { chunks: Array.from({ length: 100 }, (_, i) => `tick${i} `), delay: 100 }
    const { server, token, url } = await launch("sigterm", {}, [slow])
    const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" }
    const session = (await (await fetch(`${url}/sessions`, { method: "POST", headers, body: "{}" })).json()) as { sessionId: string }
    expect((await fetch(`${url}/sessions/${session.sessionId}/turns`, { method: "POST", headers, body: JSON.stringify({ message: "count" }) })).status).toBe(202)
    await liveUntil(`${url}/sessions/${session.sessionId}/live`, { token }, (e) => e.type === "model.delta")
    server.child.kill("SIGTERM")
    const finished = await server.done
    expect(finished).toMatchObject({ code: 0, signal: null })
    expect(finished.stderr).toContain("effect-agent serve: shutting down")
    const log = readFileSync(join(dir, "sigterm", ".data", "sessions", `${session.sessionId}.jsonl`), "utf8").trim().split("\n")
    expect(JSON.parse(log.at(-1)!)).toMatchObject({ type: "turn.completed", payload: { stopReason: "cancelled" } })
  }, 120_000)

  it("a second signal while the shutdown waits (here on a locked store) stops it at once, killed by SIGTERM (143)", async () => {
    const url = await Effect.runPromise(freshSchemaUrl("serve_sigterm"))
    const slow = { chunks: Array.from({ length: 100 }, (_, i) => `tick${i} `), delay: 100 }
    const launched = await launch("sigterm-twice", {}, [slow], ["--store", "postgres", "--database-url", url])
    const headers = { authorization: `Bearer ${launched.token}`, "content-type": "application/json" }
    const session = (await (await fetch(`${launched.url}/sessions`, { method: "POST", headers, body: "{}" })).json()) as { sessionId: string }
    await fetch(`${launched.url}/sessions/${session.sessionId}/turns`, { method: "POST", headers, body: JSON.stringify({ message: "count" }) })
    await liveUntil(`${launched.url}/sessions/${session.sessionId}/live`, { token: launched.token }, (e) => e.type === "model.delta")
    // Another client holds the events table: the turn's next write, and so the shutdown's closing write, wait for it.
    const locked = Effect.runSync(Deferred.make<void>())
    const release = Effect.runSync(Deferred.make<void>())
    const holder = Effect.runPromise(
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* sql.withTransaction(
          sql`LOCK TABLE events IN ACCESS EXCLUSIVE MODE`.pipe(Effect.zipRight(Deferred.succeed(locked, undefined)), Effect.zipRight(Deferred.await(release)))
        )
      }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 })))
    )
    await Effect.runPromise(Deferred.await(locked))
    try {
      launched.server.child.kill("SIGTERM")
      await launched.server.waitForStderr(/shutting down/)
      launched.server.child.kill("SIGTERM")
      const finished = await launched.server.done
      expect(finished).toMatchObject({ code: null, signal: "SIGTERM" })
    } finally {
      await Effect.runPromise(Deferred.succeed(release, undefined))
      await holder
    }
  }, 120_000)

  it("takes its token from EFFECT_AGENT_TOKEN and does not print it", async () => {
    const secret = "a-token-from-the-environment-0123"
    const { printed, server, token, url } = await launch("env", { EFFECT_AGENT_TOKEN: secret }, undefined, [
      "--data-dir",
      join(dir, "env", ".data"),
      "--allowed-host",
      "agent.internal"
    ])
    // --allowed-host names a host clients may use (a proxy's); any other name is refused.
    const port = Number(new URL(url).port)
    expect((await send(port, "/healthz", { headers: { host: "agent.internal" } })).status).toBe(200)
    expect((await send(port, "/healthz", { headers: { host: "evil.example" } })).status).toBe(403)
    expect(token).toBe("from")
    expect(printed()).not.toContain(secret)
    expect((await fetch(`${url}/sessions`, { headers: { authorization: `Bearer ${secret}` } })).status).toBe(200)
    expect((await fetch(`${url}/sessions`, { headers: { authorization: "Bearer a-token-from-the-environment-0124" } })).status).toBe(401)
    server.child.kill("SIGINT")
    await server.done
  })

  // The bearer header is not rate limited (a 3-character token was found in 14,165 guesses): a
  // weak token of the user's was the server's whole guard, and `serve` took any.
  it("refuses an EFFECT_AGENT_TOKEN weaker than 128 bits, and starts nothing", async () => {
    const cwd = join(dir, "weak")
    mkdirSync(cwd, { recursive: true })
    const refused = await run(["serve", "--port", "0", "--data-dir", join(cwd, ".data")], { cwd, env: { EFFECT_AGENT_TOKEN: "abc123" } })
    expect(refused.code).not.toBe(0)
    expect(refused.stderr).toContain("EFFECT_AGENT_TOKEN is too weak")
    expect(refused.stderr).not.toContain("abc123")
    expect(refused.stderr).not.toContain("listening on")
  })

  it("each session follows the settings file of its own cwd, as far as the user trusts it", async () => {
    const write = (path: string) => ({ toolCalls: [{ tool: "write_file", args: { path, content: "x" } }] })
    const { server, token, url } = await launch("policies", {}, [write("a.txt"), { chunks: ["ok"] }, write("b.txt"), write("c.txt"), write("d.txt")])
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
    const edits = project("edits", `{"mode":"acceptEdits"}`)
    expect((await run(["trust", "--yes"], { cwd: edits })).code).toBe(0)
    expect(await decisionIn(edits)).toMatchObject({ decision: "allow" })
    expect(await decisionIn(project("plain"))).toMatchObject({ decision: "ask" })
    // The same file, not trusted: its wider mode is ignored (issue 18).
    expect(await decisionIn(project("untrusted", `{"mode":"acceptEdits"}`))).toMatchObject({ decision: "ask", policy: "default/write" })
    expect(await decisionIn(project("broken", `{"mode":`))).toMatchObject({ decision: "ask", policy: "settings/unreadable" })
    server.child.kill("SIGINT")
    const finished = await server.done
    expect(finished.stderr).toContain("calls in sessions of")
    expect(finished.stderr).toContain("effect-agent serve: ")
    expect(finished.stderr).toMatch(/untrusted\/\.effect-agent\/settings\.json is not trusted, so its mode acceptEdits is ignored/)
  })

  it("the grep tool's walk leaves out what a session's cwd's rules fence, and answers (as run's does)", async () => {
    // Before, the server's per-cwd policy had no fence: a grep over a cwd whose settings deny .env asked.
    const { server, token, url } = await launch("fence", {}, [{ toolCalls: [{ tool: "grep", args: { pattern: "API_KEY" } }] }, { chunks: ["ok"] }])
    const cwd = join(dir, "fence-project")
    mkdirSync(join(cwd, ".effect-agent"), { recursive: true })
    mkdirSync(join(cwd, "src"))
    // A deny in a project's file needs no trust: it only makes the agent more careful.
    writeFileSync(join(cwd, ".effect-agent", "settings.json"), JSON.stringify({ rules: [{ name: "no-env", decision: "deny", path: ".env" }] }))
    writeFileSync(join(cwd, ".env"), "API_KEY=hunter2\n")
    writeFileSync(join(cwd, "src", "a.ts"), "const API_KEY = process.env.API_KEY\n")
    const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" }
    const session = (await (await fetch(`${url}/sessions`, { method: "POST", headers, body: JSON.stringify({ cwd }) })).json()) as { sessionId: string }
    expect((await fetch(`${url}/sessions/${session.sessionId}/turns`, { method: "POST", headers, body: JSON.stringify({ message: "search" }) })).status).toBe(202)
    const events = await liveUntil(`${url}/sessions/${session.sessionId}/live`, { token }, (e) =>
      e.type === "turn.completed" || (e.type === "permission.resolved" && e.payload.decision === "ask"))
    expect(events.find((e) => e.type === "permission.resolved")!.payload).toMatchObject({ decision: "allow" })
    const completed = events.find((e) => e.type === "tool.completed")!.payload as { result: string }
    expect(completed.result).toContain("src/a.ts:1:")
    expect(completed.result).not.toContain("hunter2")
    expect(completed.result).toContain("[left out 1 file or folder that your permission rules fence]")
    server.child.kill("SIGINT")
    await server.done
  })
})
