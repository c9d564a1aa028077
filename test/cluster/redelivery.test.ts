/**
 * Messages applied once (issue 24, item 2), across real runner processes on the test PostgreSQL:
 * the owner of a session is killed (SIGKILL, from inside, by the test fault
 * `EFFECT_AGENT_TEST_KILL_AFTER_STORED`) once a follow-up — and, on a second owner, an approval's
 * answer — is in the log and before it answers. The runner the request came through sees its
 * message delivered again to the session's next owner (itself), which finds the message's key in
 * the log and answers from it: the HTTP request succeeds, with the queueId that was stored, and the
 * log holds the follow-up and the answer once each.
 *
 * Which runner owns a session is read from the line each runner prints when a session arrives.
 */
import * as Effect from "effect/Effect"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { AgentEvent } from "../../src/index.js"
import { type Running, start } from "../cli/subprocess.js"
import { expectWellFormedLog } from "../helpers.js"
import { freshSchemaUrl } from "../postgres.js"
import { freePort } from "../ports.js"

const dir = mkdtempSync(join(tmpdir(), "effect-agent-redelivery-"))
const cwd = join(dir, "work")
mkdirSync(cwd, { recursive: true })
const running: Array<Running> = []
afterAll(() => {
  for (const r of running) r.child.kill("SIGKILL")
  rmSync(dir, { recursive: true, force: true })
})

const token = "redelivery-test-token-0123456789abcdef"
const shards = 6

let url = ""
beforeAll(async () => {
  url = await Effect.runPromise(freshSchemaUrl("redelivery"))
})

const writeScript = (name: string, script: unknown) => {
  const file = join(dir, name)
  writeFileSync(file, JSON.stringify(script))
  return file
}

interface Runner {
  readonly process: Running
  readonly http: string
  readonly stderr: () => string
  /** The sessions that arrived at this runner, in order. */
  readonly owned: () => Array<string>
}

const launch = async (script: string, fault?: string): Promise<Runner> => {
  const args = [
    "serve", "--port", "0", "--cluster", "--store", "postgres", "--runner-port", String(await freePort()),
    "--shards-per-group", String(shards), "--shard-lock-ttl", "3", "--script", script
  ]
  const env: Record<string, string> = { EFFECT_AGENT_TOKEN: token, EFFECT_AGENT_DATABASE_URL: url, EFFECT_AGENT_WRITER_LEASE_TTL: "8 seconds" }
  if (fault !== undefined) env["EFFECT_AGENT_TEST_KILL_AFTER_STORED"] = fault
  const process = start(args, { cwd, env })
  running.push(process)
  let stderr = ""
  process.child.stderr!.on("data", (chunk: string) => (stderr += chunk))
  await process.waitForStderr(/viewer \(this URL works once\)/)
  return {
    process,
    http: /listening on (http:\/\/\S+)/.exec(stderr)![1]!,
    stderr: () => stderr,
    owned: () => [...stderr.matchAll(/session (\S+) is driven by this runner/g)].map((match) => match[1]!)
  }
}

const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" }

const post = async (base: string, path: string, body?: unknown) => {
  const response = await fetch(`${base}${path}`, { method: "POST", headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) })
  return { status: response.status, body: await response.json() as Record<string, unknown> }
}

const eventsOf = async (base: string, sessionId: string): Promise<Array<AgentEvent.AgentEvent>> => {
  const response = await fetch(`${base}/sessions/${sessionId}/events`, { headers })
  expect(response.status).toBe(200)
  return await response.json() as Array<AgentEvent.AgentEvent>
}

/** Polls until `check` holds (no timing is asserted: the limit only ends a hung test). */
const until = async <A>(what: string, check: () => Promise<A | undefined>, limitMs = 60_000): Promise<A> => {
  const end = Date.now() + limitMs
  for (;;) {
    const value = await check()
    if (value !== undefined) return value
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

/**
 * A session created through `through` that `owner` drives: sessions are made and sent a cancel
 * (which reaches each one's owner, making its entity there) until one arrives at `owner`.
 */
const sessionOwnedBy = async (through: Runner, owner: Runner) =>
  until("a session owned by the runner to kill", async () => {
    const created = await post(through.http, "/sessions", { cwd })
    expect(created.status).toBe(201)
    const sessionId = created.body["sessionId"] as string
    expect((await post(through.http, `/sessions/${sessionId}/cancel`)).status).toBe(200)
    return owner.owned().includes(sessionId) ? sessionId : undefined
  })

const ofType = <T extends AgentEvent.AgentEvent["type"]>(events: ReadonlyArray<AgentEvent.AgentEvent>, type: T) =>
  events.filter((event): event is Extract<AgentEvent.AgentEvent, { type: T }> => event.type === type)

describe("a message whose owner dies between storing it and answering", () => {
  it("is answered from the log by the next owner and stored once: a follow-up, an approval's answer", { timeout: 180_000 }, async () => {
    const echo = writeScript("echo.json", { responses: [] })
    const b = await launch(echo)

    // A follow-up: its owner A dies once it is stored; B, which the request came through, answers it.
    const a = await launch(echo, "FollowUp")
    const queuedOn = await sessionOwnedBy(b, a)
    const followUp = await post(b.http, `/sessions/${queuedOn}/followups`, { message: "once" })
    expect((await a.process.done).signal).toBe("SIGKILL")
    expect(a.stderr()).toContain("test fault: killed after storing FollowUp")
    expect(followUp.status, JSON.stringify(followUp.body)).toBe(202)
    const afterFollowUp = await eventsOf(b.http, queuedOn)
    const queued = ofType(afterFollowUp, "followup.queued")
    expect(queued).toHaveLength(1)
    expect(followUp.body["queueId"]).toBe(queued[0]!.payload.queueId)
    expect(b.owned()).toContain(queuedOn)

    // An approval's answer: its owner C pauses a turn on a write, then dies once the answer is stored.
    const write = writeScript("write.json", { responses: [{ toolCalls: [{ tool: "write_file", args: { path: "once.txt", content: "x\n" } }] }] })
    const c = await launch(write, "ResolvePermission")
    const approvedOn = await sessionOwnedBy(b, c)
    const started = await post(b.http, `/sessions/${approvedOn}/turns`, { message: "write it" })
    expect(started.status, JSON.stringify(started.body)).toBe(202)
    const asked = await until("the call to wait for approval", async () =>
      ofType(await eventsOf(b.http, approvedOn), "permission.resolved").find((event) => event.payload.decision === "ask"))
    const toolCallId = asked.payload.toolCallId
    const approved = await post(b.http, `/sessions/${approvedOn}/approvals/${toolCallId}`, { decision: "allow" })
    expect((await c.process.done).signal).toBe("SIGKILL")
    expect(c.stderr()).toContain("test fault: killed after storing ResolvePermission")
    expect(approved, JSON.stringify(approved.body)).toMatchObject({ status: 200, body: { ok: true } })
    const log = await until("the turn to be closed", async () => {
      const events = await eventsOf(b.http, approvedOn)
      return events.at(-1)?.type === "turn.completed" ? events : undefined
    })
    expectWellFormedLog(log)
    expect(ofType(log, "permission.resolved").filter((event) => event.payload.toolCallId === toolCallId).map((event) => event.payload.decision)).toEqual([
      "ask",
      "allow"
    ])
    expect(b.owned()).toContain(approvedOn)
    // B still serves, and its own follow-up log is still well formed.
    expectWellFormedLog(await eventsOf(b.http, queuedOn))
  })
})
