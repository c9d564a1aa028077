/**
 * Runner processes for the cluster tests (`node dist/cli/bin.js serve --cluster`) on a schema of
 * the test PostgreSQL: a scratch folder (removed, and every runner killed, after the file), model
 * scripts, each runner's HTTP address and the sessions it drove (read from the line it prints when
 * a session arrives), and the HTTP calls the tests make through a runner.
 */
import * as Effect from "effect/Effect"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, expect } from "vitest"
import type { AgentEvent } from "../../src/index.js"
import { type Running, start } from "../cli/subprocess.js"
import { freshDatabaseUrl } from "../postgres.js"

/** A runner process of a test. */
export interface Runner {
  readonly process: Running
  readonly runnerPort: number
  readonly http: string
  readonly stderr: () => string
  /** The sessions that arrived at this runner (it drove them), in order. */
  readonly owned: () => Array<string>
}

/**
 * Polls until `check` holds (no timing is asserted: the limit only ends a hung test). Only for what
 * nothing announces (the shard assignment, which runner a session arrived at); a session's events
 * are awaited live (`untilEvent`).
 */
export const until = async <A>(what: string, check: () => Promise<A | undefined>, limitMs = 60_000, context: () => string = () => ""): Promise<A> => {
  const end = Date.now() + limitMs
  for (;;) {
    const value = await check()
    if (value !== undefined) return value
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}${context()}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

/**
 * Bounds a wait nothing else bounds and names it, so a hung step fails saying what it waited for
 * (with `context()`, e.g. the runners' last lines) instead of at the test's timeout with no clue.
 * Not a timing: the limit only ends a hung test.
 */
export const within = async <A>(what: string, wait: (signal: AbortSignal) => Promise<A>, limitMs = 90_000, context: () => string = () => ""): Promise<A> => {
  const controller = new AbortController()
  let timer: ReturnType<typeof setTimeout> | undefined
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      controller.abort()
      reject(new Error(`timed out after ${limitMs / 1000} s waiting for ${what}${context()}`))
    }, limitMs)
  })
  try {
    return await Promise.race([wait(controller.signal), expired])
  } finally {
    clearTimeout(timer)
  }
}

/** Reads an SSE response until `done` holds for what arrived. */
export const readSse = async (response: Response, done: (text: string) => boolean) => {
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

/** The events of one type in a log. */
export const ofType = <T extends AgentEvent.AgentEvent["type"]>(events: ReadonlyArray<AgentEvent.AgentEvent>, type: T) =>
  events.filter((event): event is Extract<AgentEvent.AgentEvent, { type: T }> => event.type === type)

/**
 * A test file's cluster: its scratch folder and working directory, its database schema (made
 * before the file's tests), and runners launched with `token` and the writer lease ttl given.
 */
export const testCluster = (name: string, options: { readonly token: string; readonly writerLeaseTtl: string }) => {
  const dir = mkdtempSync(join(tmpdir(), `effect-agent-${name}-`))
  const cwd = join(dir, "work")
  mkdirSync(cwd, { recursive: true })
  const running: Array<Running> = []
  const launched: Array<{ readonly name: string; readonly stderr: () => string }> = []
  /** The last lines each runner printed: what a timed-out wait reports. */
  const runnersTail = () =>
    launched.map((runner) => `\n--- ${runner.name}, last lines:\n${runner.stderr().split("\n").slice(-15).join("\n")}`).join("")
  afterAll(() => {
    for (const r of running) r.child.kill("SIGKILL")
    rmSync(dir, { recursive: true, force: true })
  })
  let url = ""
  beforeAll(async () => {
    url = await Effect.runPromise(freshDatabaseUrl(name))
  })

  const writeScript = (file: string, script: unknown) => {
    const path = join(dir, file)
    writeFileSync(path, JSON.stringify(script))
    return path
  }

  /** The environment of a runner: the token, the database, a writer lease ttl short enough to wait out. */
  const env = (): Record<string, string> => ({ EFFECT_AGENT_TOKEN: options.token, EFFECT_AGENT_DATABASE_URL: url, EFFECT_AGENT_WRITER_LEASE_TTL: options.writerLeaseTtl })

  /** Starts a runner (`serve --cluster` with `args`) and waits until it serves. */
  const launch = async (
    runnerPort: number,
    args: ReadonlyArray<string>,
    extra: { readonly env?: Record<string, string>; readonly hostname?: string } = {}
  ): Promise<Runner> => {
    const process = start(args, { cwd, env: { ...env(), ...extra.env }, ...(extra.hostname === undefined ? {} : { hostname: extra.hostname }) })
    running.push(process)
    let stderr = ""
    process.child.stderr!.on("data", (chunk: string) => (stderr += chunk))
    launched.push({ name: `runner on port ${runnerPort} (pid ${process.child.pid})`, stderr: () => stderr })
    await within(`the runner on port ${runnerPort} to serve`, () => process.waitForStderr(/viewer \(this URL works once, within 10 minutes\)/), 120_000, runnersTail)
    return {
      process,
      runnerPort,
      http: /listening on (http:\/\/\S+)/.exec(stderr)![1]!,
      stderr: () => stderr,
      owned: () => [...stderr.matchAll(/session (\S+) is driven by this runner/g)].map((match) => match[1]!)
    }
  }

  const headers = { authorization: `Bearer ${options.token}`, "content-type": "application/json" }

  const post = (base: string, path: string, body?: unknown) =>
    within(`the answer to POST ${base}${path}`, async (signal) => {
      const response = await fetch(`${base}${path}`, { method: "POST", headers, signal, ...(body === undefined ? {} : { body: JSON.stringify(body) }) })
      return { status: response.status, body: await response.json() as Record<string, unknown> }
    }, 90_000, runnersTail)

  const eventsOf = (base: string, sessionId: string): Promise<Array<AgentEvent.AgentEvent>> =>
    within(`the events of ${sessionId} through ${base}`, async (signal) => {
      const response = await fetch(`${base}/sessions/${sessionId}/events`, { headers, signal })
      expect(response.status).toBe(200)
      return await response.json() as Array<AgentEvent.AgentEvent>
    }, 90_000, runnersTail)

  /** Follows a session's events through a runner's `/live` (SSE) until one satisfies `done`, and returns it: each arrives as it is stored. */
  const untilEvent = async <E extends AgentEvent.AgentEvent>(
    base: string,
    sessionId: string,
    done: ((event: AgentEvent.AgentEvent) => event is E) | ((event: AgentEvent.AgentEvent) => boolean)
  ): Promise<E> => {
    let seen: Array<AgentEvent.AgentEvent> = []
    const describeSeen = () => `; the last events seen: ${seen.slice(-3).map((event) => `${event.sequence} ${event.type}`).join(", ")}${runnersTail()}`
    return within(`an awaited event of ${sessionId} through ${base}/live`, async (signal) => {
      const response = await fetch(`${base}/sessions/${sessionId}/live`, { headers: { authorization: `Bearer ${options.token}` }, signal })
      expect(response.status).toBe(200)
      let found: AgentEvent.AgentEvent | undefined
      await readSse(response, (text) => {
        // Complete frames only: the last one may have arrived in part.
        const frames = text.slice(0, text.lastIndexOf("\n\n") + 1)
        const events = [...frames.matchAll(/^data: (.*)$/gm)].map((match) => JSON.parse(match[1]!) as AgentEvent.AgentEvent)
        found = events.slice(seen.length).find(done)
        seen = events
        return found !== undefined
      })
      if (found === undefined) throw new Error(`the live stream of ${sessionId} ended before the event waited for${describeSeen()}`)
      return found as E
    }, 90_000, describeSeen)
  }

  /**
   * A session created through `through` that `owner` drives: sessions are made and sent a cancel
   * (which reaches each one's owner, making its entity there) until one arrives at `owner`.
   */
  const sessionOwnedBy = async (through: Runner, owner: Runner) =>
    until("a session owned by the runner wanted", async () => {
      const created = await post(through.http, "/sessions", { cwd })
      expect(created.status).toBe(201)
      const sessionId = created.body["sessionId"] as string
      expect((await post(through.http, `/sessions/${sessionId}/cancel`)).status).toBe(200)
      return owner.owned().includes(sessionId) ? sessionId : undefined
    }, 150_000, runnersTail)

  /** A runner's exit, bounded. */
  const exitOf = (runner: Runner, what: string) => within(what, () => runner.process.done, 90_000, runnersTail)

  return { dir, cwd, running, url: () => url, writeScript, env, launch, post, eventsOf, untilEvent, exitOf, runnersTail, sessionOwnedBy }
}
