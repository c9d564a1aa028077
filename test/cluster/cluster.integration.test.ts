/**
 * Sessions as cluster entities across real runner processes (`node dist/cli/bin.js serve --cluster`)
 * on the test PostgreSQL: 20 sessions spread over two runners, turns started through either runner's
 * HTTP API (the owner runs them), a manual compaction and a steer through the runner that does not
 * own the session, a turn's SSE followed through the runner that does not own it;
 * one runner killed with SIGKILL mid-turn → its sessions move to the other, whose next turn closes
 * the turn the dead runner left open (`interrupted`) and runs; every log gap-free with every turn
 * and call closed exactly once. A runner with other shard settings is refused at start; a runner
 * stopped with SIGINT releases its sessions, which the runner left then drives.
 *
 * Which runner owns a session is read from the line each runner prints when a session arrives. The
 * killed runner runs as if on another machine (`unshare --uts`) where this one allows: its sessions'
 * writer leases are then waited out rather than seen dead by their pid.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { hostname, tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { AgentEvent } from "../../src/index.js"
import { otherHostFlags, type Running, run, start } from "../cli/subprocess.js"
import { expectWellFormedLog } from "../helpers.js"
import { freshSchemaUrl } from "../postgres.js"
import { freePort } from "../ports.js"

const dir = mkdtempSync(join(tmpdir(), "effect-agent-cluster-"))
const cwd = join(dir, "work")
mkdirSync(cwd, { recursive: true })
const running: Array<Running> = []
afterAll(() => {
  for (const r of running) r.child.kill("SIGKILL")
  rmSync(dir, { recursive: true, force: true })
})

const token = "cluster-test-token-0123456789abcdef"
const shards = 12

let url = ""
beforeAll(async () => {
  url = await Effect.runPromise(freshSchemaUrl("cluster"))
})

const writeScript = (name: string, script: unknown) => {
  const file = join(dir, name)
  writeFileSync(file, JSON.stringify(script))
  return file
}

const runnerArgs = (runnerPort: number, script: string, extra: ReadonlyArray<string> = []) => [
  "serve", "--port", "0", "--cluster", "--store", "postgres", "--runner-port", String(runnerPort),
  "--shards-per-group", String(shards), "--shard-lock-ttl", "3", "--script", script, ...extra
]

interface Runner {
  readonly process: Running
  readonly http: string
  readonly stderr: () => string
  /** The sessions that arrived at this runner (it drove them), in order. */
  readonly owned: () => Array<string>
}

/** Writer leases that outlast the shard locks (3 s) yet are short enough to wait out: a runner on another machine is known dead only by its leases' expiry. */
const env = () => ({ EFFECT_AGENT_TOKEN: token, EFFECT_AGENT_DATABASE_URL: url, EFFECT_AGENT_WRITER_LEASE_TTL: "8 seconds" })

const launch = async (runnerPort: number, script: string, hostname?: string): Promise<Runner> => {
  const process = start(runnerArgs(runnerPort, script), { cwd, env: env(), ...(hostname === undefined ? {} : { hostname }) })
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

const post = async (base: string, path: string, body: unknown) => {
  const response = await fetch(`${base}${path}`, { method: "POST", headers, body: JSON.stringify(body) })
  return { status: response.status, body: await response.json() as Record<string, unknown> }
}

const eventsOf = async (base: string, sessionId: string): Promise<Array<AgentEvent.AgentEvent>> => {
  const response = await fetch(`${base}/sessions/${sessionId}/events`, { headers })
  expect(response.status).toBe(200)
  return await response.json() as Array<AgentEvent.AgentEvent>
}

/**
 * Polls until `check` holds (no timing is asserted: the limit only ends a hung test). Only for the
 * shard assignment, which nothing announces; a session's events are awaited live (`untilEvent`).
 */
const until = async <A>(what: string, check: () => Promise<A | undefined>, limitMs = 45_000): Promise<A> => {
  const end = Date.now() + limitMs
  for (;;) {
    const value = await check()
    if (value !== undefined) return value
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

const closedTurn = (events: ReadonlyArray<AgentEvent.AgentEvent>, turnId: string) =>
  events.find((event) => event.type === "turn.completed" && event.turnId === turnId)
const closes = (turnId: string) => (event: AgentEvent.AgentEvent) => event.type === "turn.completed" && event.turnId === turnId

/** Runs a query on the test's schema. */
const query = <A extends object>(statement: (sql: SqlClient.SqlClient) => Effect.Effect<ReadonlyArray<A>, unknown>) =>
  Effect.runPromise(
    Effect.flatMap(SqlClient.SqlClient, statement).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 })), Effect.orDie)
  )

/** How many shard locks each runner's database connection holds (advisory locks, by backend). */
const shardLocks = () =>
  query((sql) =>
    sql<{ pid: number; locks: number }>`
      SELECT l.pid AS pid, COUNT(*)::int AS locks FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
      WHERE l.locktype = 'advisory' AND l.granted AND a.application_name = 'effect-agent-cluster' AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
      GROUP BY l.pid`)

/** Whether the shards are spread over two runners, all of them between the two. */
const spreadOverTwo = async () => {
  const locks = await shardLocks()
  return locks.length === 2 && locks.every((row) => row.locks > 0) && locks.reduce((sum, row) => sum + row.locks, 0) === shards ? true : undefined
}

/** How many writer leases the database holds. */
const leaseCount = async () => (await query((sql) => sql<{ n: number }>`SELECT COUNT(*)::int AS n FROM writer_leases`))[0]!.n

/** Reads an SSE response until `done` holds for what arrived. */
const readSse = async (response: Response, done: (text: string) => boolean) => {
  const reader = response.body!.getReader()
  const decoder = new TextDecoder()
  let text = ""
  while (!done(text)) {
    const { done: ended, value } = await reader.read()
    if (ended) break
    text += decoder.decode(value, { stream: true })
  }
  await reader.cancel()
  return text
}

/** Follows a session's events through a runner's `/live` (SSE) until one satisfies `done`: each arrives as it is stored. */
const untilEvent = async (base: string, sessionId: string, done: (event: AgentEvent.AgentEvent) => boolean) => {
  const response = await fetch(`${base}/sessions/${sessionId}/live`, { headers: { authorization: `Bearer ${token}` } })
  expect(response.status).toBe(200)
  let seen = 0
  await readSse(response, (text) => {
    // Complete frames only: the last one may have arrived in part.
    const frames = text.slice(0, text.lastIndexOf("\n\n") + 1)
    const events = [...frames.matchAll(/^data: (.*)$/gm)].map((match) => JSON.parse(match[1]!) as AgentEvent.AgentEvent)
    const found = events.slice(seen).some(done)
    seen = events.length
    return found
  })
}

describe("serve --cluster", () => {
  it("spreads sessions over two runners, routes through either, and moves a killed runner's sessions to the other", { timeout: 120_000 }, async () => {
    // The survivor's model answers at once (it echoes); the other's answers slowly, so its turns can be caught mid-way.
    const quick = writeScript("quick.json", { responses: [] })
    const slow = writeScript("slow.json", { responses: Array.from({ length: 60 }, () => ({ chunks: Array.from({ length: 40 }, (_, i) => `${i} `), delay: "150 millis" })) })
    const a = await launch(await freePort(), quick)
    // B runs as if on another machine where this one can: A then knows B dead only as its leases expire.
    const remote = otherHostFlags() !== undefined
    const b = await launch(await freePort(), slow, remote ? `not-${hostname()}`.slice(0, 60) : undefined)
    const runners = [a, b]
    // Both runners hold shards, all of them between them: the assignment has settled.
    await until("the shards to be spread over both runners", spreadOverTwo)

    // 20 sessions, created through either runner.
    const sessions: Array<string> = []
    for (let i = 0; i < 20; i++) {
      const created = await post(runners[i % 2]!.http, "/sessions", { cwd })
      expect(created.status).toBe(201)
      sessions.push(created.body["sessionId"] as string)
    }

    // An unknown session is answered 404 from the store, by any runner, and reaches no owner.
    for (const runner of runners) {
      const unknown = await post(runner.http, "/sessions/sess_unknown/turns", { message: "hi" })
      expect(unknown.status).toBe(404)
      expect(unknown.body["error"]).toBe("SessionNotFound")
    }

    // A turn on each, started through the runner that did not create it; each runs on its owner.
    const first = await Promise.all(sessions.map(async (sessionId, i) => {
      const started = await post(runners[(i + 1) % 2]!.http, `/sessions/${sessionId}/turns`, { message: `first ${i}` })
      expect(started.status, JSON.stringify(started.body)).toBe(202)
      return started.body["turnId"] as string
    }))
    await Promise.all(sessions.map((sessionId, i) => untilEvent(a.http, sessionId, closes(first[i]!))))

    // Each session has one owner, and both runners own some.
    const ownedByA = new Set(a.owned())
    const ownedByB = new Set(b.owned())
    expect(ownedByA.size).toBeGreaterThan(0)
    expect(ownedByB.size).toBeGreaterThan(0)
    expect([...ownedByA].filter((sessionId) => ownedByB.has(sessionId))).toEqual([])
    expect(new Set([...ownedByA, ...ownedByB])).toEqual(new Set(sessions))
    expect([...ownedByA, ...ownedByB]).not.toContain("sess_unknown")
    const onB = sessions.filter((sessionId) => ownedByB.has(sessionId))

    // The long-session routes through the runner that does not own the session: a manual compaction
    // runs on A (its model writes the summary) and answers B's request; a steer with no turn is refused 409.
    const compactedOnA = sessions.find((sessionId) => ownedByA.has(sessionId))!
    const compaction = await post(b.http, `/sessions/${compactedOnA}/compact`, { keepRecentTokens: 0 })
    expect(compaction.status, JSON.stringify(compaction.body)).toBe(200)
    expect(compaction.body).toMatchObject({ reason: "manual", summary: expect.any(String) })
    expect((await eventsOf(a.http, compactedOnA)).at(-1)).toMatchObject({ type: "session.compacted", payload: compaction.body })
    const steer = await post(b.http, `/sessions/${compactedOnA}/steer`, { message: "too early" })
    expect(steer).toMatchObject({ status: 409, body: { error: "NoTurnInProgress" } })

    // A's HTTP follows one of B's sessions live (SSE through the runner that does not own it).
    const watched = onB[0]!
    const after = (await eventsOf(a.http, watched)).length
    const live = await fetch(`${a.http}/sessions/${watched}/live?after=${after}`, { headers: { authorization: `Bearer ${token}` } })
    expect(live.status).toBe(200)
    const liveText = readSse(live, (text) => /event: turn\.completed[\s\S]*event: turn\.completed/.test(text))

    // Second turns on B's sessions, started through A; B streams them slowly. Kill B mid-turn.
    const second = await Promise.all(onB.map(async (sessionId) => {
      const started = await post(a.http, `/sessions/${sessionId}/turns`, { message: "second" })
      expect(started.status, JSON.stringify(started.body)).toBe(202)
      return started.body["turnId"] as string
    }))
    await Promise.all(onB.map((sessionId, i) =>
      untilEvent(a.http, sessionId, (event) => event.type === "model.delta" && event.turnId === second[i])))
    b.process.child.kill("SIGKILL")
    const killed = await b.process.done
    expect(killed.signal).toBe("SIGKILL")

    // The next turn on each of B's sessions, through A: it waits for the shard to move, repairs, runs.
    const third = await Promise.all(onB.map(async (sessionId) => {
      const started = await post(a.http, `/sessions/${sessionId}/turns`, { message: "third" })
      expect(started.status, JSON.stringify(started.body)).toBe(202)
      return started.body["turnId"] as string
    }))
    await Promise.all(onB.map((sessionId, i) => untilEvent(a.http, sessionId, closes(third[i]!))))
    // A turn more on A's own sessions too.
    const onA = sessions.filter((sessionId) => ownedByA.has(sessionId))
    const more = await Promise.all(onA.map(async (sessionId) => (await post(a.http, `/sessions/${sessionId}/turns`, { message: "more" })).body["turnId"] as string))
    await Promise.all(onA.map((sessionId, i) => untilEvent(a.http, sessionId, closes(more[i]!))))

    // Every log: gap-free, every turn and call closed once; B's open turns closed `interrupted`, then the next ran.
    for (const sessionId of sessions) {
      const events = await eventsOf(a.http, sessionId)
      expectWellFormedLog(events)
      const completed = events.filter((event): event is Extract<AgentEvent.AgentEvent, { type: "turn.completed" }> => event.type === "turn.completed")
      expect(completed.at(-1)!.payload.stopReason).toBe("final")
      if (ownedByB.has(sessionId)) {
        const i = onB.indexOf(sessionId)
        const interrupted = closedTurn(events, second[i]!) as Extract<AgentEvent.AgentEvent, { type: "turn.completed" }>
        expect(interrupted.payload).toMatchObject({ stopReason: "error", errorCode: "interrupted" })
        expect(completed.map((event) => event.turnId)).toEqual([first[sessions.indexOf(sessionId)], second[i], third[i]])
      } else {
        expect(completed.map((event) => event.payload.stopReason)).toEqual(["final", "final"])
      }
    }
    // B's sessions now belong to A, which took each one's writer lease over from B.
    for (const sessionId of onB) {
      expect(a.owned()).toContain(sessionId)
      expect(a.stderr()).toMatch(new RegExp(`took over the writer lease of session ${sessionId} left by .*, ${remote ? "whose lease expired" : "which is gone"}`))
    }
    // The live stream through A saw the killed turn closed and the next one too, each event once.
    const text = await liveText
    const ids = [...text.matchAll(/^id: (\d+)$/gm)].map((match) => Number(match[1]))
    expect(ids).toEqual(ids.map((_, i) => after + 1 + i))
    expect(text).toContain("event: model.delta")

    // A runner with other shard settings is refused, with one clear line.
    const mismatched = await run(runnerArgs(await freePort(), quick).map((arg) => (arg === String(shards) ? "7" : arg)), { cwd, env: env() })
    expect(mismatched.code).toBe(1)
    expect(mismatched.stderr).toContain("shard settings (7 shards per group, groups default) differ from the cluster's (12 shards per group, groups default)")
    expect(mismatched.stderr).not.toContain("    at ")

    // A runner that stops (SIGINT) hands its sessions over: it releases their writer leases, and
    // the runner left drives them from then on.
    const c = await launch(await freePort(), quick)
    await until("the shards to be spread over A and C", spreadOverTwo)
    a.process.child.kill("SIGINT")
    await a.process.done
    expect(await leaseCount()).toBe(0)
    const last = await Promise.all(sessions.map(async (sessionId) => {
      const started = await post(c.http, `/sessions/${sessionId}/turns`, { message: "last" })
      expect(started.status, JSON.stringify(started.body)).toBe(202)
      return started.body["turnId"] as string
    }))
    await Promise.all(sessions.map((sessionId, i) => untilEvent(c.http, sessionId, closes(last[i]!))))
    expect(new Set(c.owned())).toEqual(new Set(sessions))
    for (const sessionId of sessions) {
      const events = await eventsOf(c.http, sessionId)
      expectWellFormedLog(events)
      expect(closedTurn(events, last[sessions.indexOf(sessionId)]!)).toMatchObject({ payload: { stopReason: "final" } })
      // Nothing was left open by A's stop: no turn closed by a repair.
      expect(events.filter((event) => event.type === "turn.completed" && event.payload.errorCode === "interrupted").length).toBe(ownedByB.has(sessionId) ? 1 : 0)
    }
  })

  it("refuses --cluster without the PostgreSQL store", async () => {
    const refused = await run(["serve", "--port", "0", "--cluster"], { cwd })
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain("--cluster needs --store postgres")
  })
})
