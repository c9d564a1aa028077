/**
 * One writer per PostgreSQL session across real CLI processes (`node dist/cli/bin.js run --store
 * postgres`): a second process gets SessionBusy naming the holder and changes nothing; the holder
 * killed with SIGKILL mid-turn is taken over once its lease expires, and the turn it left open is
 * closed `interrupted`; the log stays gap-free; the database URL (and its password) is never printed.
 *
 * To be judged by its lease rather than by its pid, the killed holder runs as if on another machine:
 * in a UTS namespace of its own with another host name (`unshare --uts`, as root or in a user
 * namespace). Where neither is allowed it runs plainly, and is seen dead by its pid at once.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { hostname, tmpdir } from "node:os"
import { join } from "node:path"
import * as SqlClient from "@effect/sql/SqlClient"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { AgentEvent } from "../../src/index.js"
import { binPath, run, start } from "../cli/subprocess.js"
import { expectWellFormedLog } from "../helpers.js"
import { freshSchemaUrl } from "../postgres.js"
import { ownedByTest } from "../processes.js"

const dir = mkdtempSync(join(tmpdir(), "effect-agent-pg-cli-"))
const children: Array<ChildProcess> = []
afterAll(() => {
  for (const child of children) child.kill("SIGKILL")
  rmSync(dir, { recursive: true, force: true })
})

let url = ""
beforeAll(async () => {
  url = await Effect.runPromise(freshSchemaUrl("cli"))
})
const password = () => new URL(url).password

const events = (stdout: string): Array<AgentEvent.AgentEvent> => stdout.trim().split("\n").map((l) => JSON.parse(l) as AgentEvent.AgentEvent)
const writeScript = (name: string, script: unknown) => {
  const file = join(dir, name)
  writeFileSync(file, JSON.stringify(script))
  return file
}
const store = ["--store", "postgres"]
/** The URL through the environment (as users should pass it), or through the flag. */
const viaEnv = () => ({ env: { EFFECT_AGENT_DATABASE_URL: url } })

const replay = async (sessionId: string) => {
  const replayed = await run(["replay", sessionId, "--json", ...store, "--database-url", url])
  expect(replayed.code, replayed.stderr).toBe(0)
  return events(replayed.stdout)
}

const expectNoSecret = (...outputs: ReadonlyArray<string>) => {
  for (const output of outputs) expect(output).not.toContain(password())
}

/** The session's lease row, as the test reads it from the database. */
const leaseOf = (sessionId: string) =>
  Effect.runPromise(
    Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ expires_at: string }>`SELECT expires_at FROM writer_leases WHERE session_id = ${sessionId}`).pipe(
      Effect.map(([row]) => (row === undefined ? undefined : Number(row.expires_at))),
      Effect.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 }))
    )
  )

/**
 * The next `count` expiries the session's lease is renewed to, as each renewal is stored: a trigger
 * of the test's own on `writer_leases` notifies every UPDATE (LISTEN/NOTIFY), so the test awaits the
 * renewals rather than reading the row again and again.
 */
const nextRenewals = (sessionId: string, count: number) =>
  Effect.runPromise(
    Effect.gen(function*() {
      const sql = yield* PgClient.PgClient
      yield* sql.unsafe(`CREATE OR REPLACE FUNCTION test_lease_renewed() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN PERFORM pg_notify('test_lease_renewed', NEW.session_id || ' ' || NEW.expires_at); RETURN NEW; END $$`)
      yield* sql.unsafe(`CREATE OR REPLACE TRIGGER test_lease_renewed AFTER UPDATE ON writer_leases FOR EACH ROW EXECUTE FUNCTION test_lease_renewed()`)
      const renewed = yield* sql.listen("test_lease_renewed").pipe(
        Stream.map((payload) => payload.split(" ")),
        Stream.filter(([session]) => session === sessionId),
        Stream.map(([, expiresAt]) => Number(expiresAt)),
        Stream.take(count),
        Stream.runCollect
      )
      return Chunk.toReadonlyArray(renewed)
    }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 })))
  )

/** How this machine can run a process under another host name, if it can. */
const unshare = ((): ReadonlyArray<string> | undefined => {
  for (const flags of [["--uts"], ["--user", "--map-root-user", "--uts"]]) {
    if (spawnSync("unshare", [...flags, "true"], { stdio: "ignore" }).status === 0) return flags
  }
  return undefined
})()
const remoteHost = `not-${hostname()}`.slice(0, 60)

/** Starts the CLI as if on another machine (see the header), with the output `start` gives. */
const startRemote = (args: ReadonlyArray<string>, options: { readonly cwd: string; readonly env: Record<string, string> }) => {
  if (unshare === undefined) {
    const plain = start(args, options)
    let printed = ""
    plain.child.stderr!.on("data", (chunk: string) => (printed += chunk))
    return { ...plain, stderr: () => printed }
  }
  let stderr = ""
  const child = ownedByTest(spawn("unshare", [...unshare, "sh", "-c", "hostname \"$0\" && exec \"$@\"", remoteHost, process.execPath, binPath, ...args], {
    cwd: options.cwd,
    env: { ...process.env, ...options.env, NODE_OPTIONS: "", ANTHROPIC_API_KEY: "", OPENAI_API_KEY: "" },
    stdio: ["pipe", "pipe", "pipe"]
  }))
  const done = new Promise<{ code: number | null; stderr: string }>((ok) => child.on("close", (code) => ok({ code, stderr })))
  const waiters: Array<() => void> = []
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => {
    stderr += chunk
    for (const waiter of waiters.splice(0)) waiter()
  })
  const waitForStderr = (pattern: RegExp): Promise<void> =>
    pattern.test(stderr)
      ? Promise.resolve()
      : Promise.race([
        new Promise<void>((ok) => waiters.push(ok)).then(() => waitForStderr(pattern)),
        done.then((d) => Promise.reject(new Error(`the CLI exited before printing ${pattern}: ${d.stderr}`)))
      ])
  return { child, done, waitForStderr, stderr: () => stderr }
}

describe("one writer per session across CLI processes (postgres store)", () => {
  it("a second run while the first waits for approval: SessionBusy naming the holder, the log unchanged; then released", async () => {
    const cwd = join(dir, "busy")
    mkdirSync(cwd, { recursive: true })
    const first = start(["run", "write the notes", ...store, "--script", writeScript("busy.json", {
      responses: [{ chunks: ["Writing."], toolCalls: [{ tool: "write_file", args: { path: "notes.txt", content: "v1\n" } }] }, { chunks: ["Not written."] }]
    })], { cwd, ...viaEnv() })
    children.push(first.child)
    let firstErr = ""
    first.child.stderr!.on("data", (chunk: string) => (firstErr += chunk))
    // Paused on the prompt, stdin open and unanswered: the first process surely holds the session.
    await first.waitForStderr(/\[y\]es \/ \[n\]o \/ \[a\]lways/)
    const id = /session (\S+)/.exec(firstErr)![1]!
    const before = await replay(id)

    const second = await run(["run", "something else", "--session", id, ...store, "--database-url", url, "--script", writeScript("second.json", {
      responses: [{ chunks: ["I should never run."] }]
    })], { cwd })
    expect(second.code).not.toBe(0)
    expect(second.stdout).toBe("")
    const lines = second.stderr.trim().split("\n")
    expect(lines, second.stderr).toHaveLength(1)
    expect(lines[0]).toContain("SessionBusy")
    expect(lines[0]).toContain(`pid ${first.child.pid} on host ${hostname()}`)
    expect(await replay(id)).toEqual(before)

    first.child.stdin!.end("n\n")
    const finished = await first.done
    expect(finished.code, finished.stderr).toBe(0)
    const log = await replay(id)
    expectWellFormedLog(log)
    expect(log.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
    expect(await leaseOf(id)).toBeUndefined()
    const listed = await run(["sessions", ...store], viaEnv())
    expect(listed.stdout).toContain(id)

    const next = await run(["run", "and now?", "--session", id, ...store, "--script", writeScript("next.json", { responses: [{ chunks: ["Now it runs."] }] })], {
      cwd,
      ...viaEnv()
    })
    expect(next.code, next.stderr).toBe(0)
    expect(next.stdout).toBe("Now it runs.\n")
    expectNoSecret(finished.stdout, finished.stderr, second.stderr, listed.stdout, listed.stderr, next.stderr)
  }, 60_000)

  it("the holder renews its lease while it lives, killed with SIGKILL mid-turn it is taken over once the lease expires, and its turn is closed interrupted", async () => {
    const cwd = join(dir, "dead")
    mkdirSync(cwd, { recursive: true })
    // A short ttl (real time: these are real processes): the holder renews every 2 s.
    const env = { EFFECT_AGENT_DATABASE_URL: url, EFFECT_AGENT_WRITER_LEASE_TTL: "6 seconds" }
    // The model takes ten minutes before its first chunk: the turn is open, the session held.
    const first = startRemote(["run", "think slowly", ...store, "--script", writeScript("slow.json", {
      responses: [{ chunks: ["never"], delay: "10 minutes" }]
    })], { cwd, env })
    children.push(first.child)
    await first.waitForStderr(/session \S+\n/)
    const sessionId = /session (\S+)/.exec(first.stderr())![1]!

    // Renewed while it lives: its expiry moves on twice.
    const taken = await leaseOf(sessionId)
    const [renewed, renewedAgain] = await nextRenewals(sessionId, 2)
    expect(renewed).toBeGreaterThan(taken ?? 0)
    expect(renewedAgain).toBeGreaterThan(renewed!)
    const busy = await run(["run", "me too", "--session", sessionId, ...store, "--script", writeScript("busy2.json", { responses: [{ chunks: ["no"] }] })], { cwd, env })
    expect(busy.code).not.toBe(0)
    expect(busy.stdout).toBe("")
    expect(busy.stderr).toContain("SessionBusy")
    expect(busy.stderr).toContain(`pid `)
    if (unshare !== undefined) expect(busy.stderr).toContain(`on host ${remoteHost}`)

    first.child.kill("SIGKILL")
    await first.done
    const before = await replay(sessionId)
    const turn = before[1]!
    expect(turn.type).toBe("turn.started")
    expect(before.some((e) => e.type === "turn.completed")).toBe(false)

    // The next process is refused, changing nothing, until the dead holder's lease expires; then it takes over.
    const after = writeScript("after.json", { responses: [{ chunks: ["It was interrupted."] }] })
    let next = await run(["run", "what happened?", "--session", sessionId, ...store, "--script", after], { cwd, env })
    while (next.code !== 0 && next.stderr.includes("SessionBusy")) {
      expect(next.stdout).toBe("")
      expect(await replay(sessionId)).toEqual(before)
      next = await run(["run", "what happened?", "--session", sessionId, ...store, "--script", after], { cwd, env })
    }
    expect(next.code, next.stderr).toBe(0)
    expect(next.stdout).toBe("It was interrupted.\n")
    const log = await replay(sessionId)
    expectWellFormedLog(log)
    expect(log.map((e) => e.sequence)).toEqual(log.map((_, i) => i + 1))
    expect(log.slice(0, before.length)).toEqual(before)
    expect(log[before.length]).toMatchObject({ type: "turn.completed", turnId: (turn as { turnId?: string }).turnId, payload: { stopReason: "error", errorCode: "interrupted" } })
    expect(log.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
    expectNoSecret(busy.stderr, next.stderr)
  }, 90_000)

  it("without a URL, or with a wrong password: one line, naming no secret", async () => {
    const missing = await run(["sessions", ...store])
    expect(missing.code).toBe(1)
    expect(missing.stderr.trim()).toMatch(/--store postgres needs --database-url or EFFECT_AGENT_DATABASE_URL/)
    const wrong = new URL(url)
    wrong.password = "not-the-password-42"
    const refused = await run(["sessions", ...store, "--database-url", wrong.toString()])
    expect(refused.code).toBe(1)
    expect(refused.stderr.trim().split("\n"), refused.stderr).toHaveLength(1)
    expect(refused.stderr).toContain("the database refused the user or password")
    expect(refused.stderr).toContain(`postgresql://${wrong.host}/postgres`)
    expect(refused.stderr).not.toContain("not-the-password-42")
    expectNoSecret(refused.stderr)
  })
})
