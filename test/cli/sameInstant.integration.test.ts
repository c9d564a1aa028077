/**
 * Two built CLI processes start a turn on one session at the same instant (timing4), on each store
 * that several processes share: JSONL, one SQLite file, PostgreSQL. Both are started together with
 * a turn that asks for approval, so the one that gets the session holds it until answered — which
 * one wins is left to the race. Exactly one turn runs: the other process fails `SessionBusy` naming
 * the winner and writes nothing; the log has the winner's turn alone, whole; once the winner ends,
 * the loser's turn runs.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { hostname, tmpdir } from "node:os"
import { join } from "node:path"
import * as Effect from "effect/Effect"
import { afterAll, describe, expect, it } from "vitest"
import type { AgentEvent } from "../../src/index.js"
import { expectWellFormedLog, typesOf } from "../helpers.js"
import { freshSchemaUrl } from "../postgres.js"
import { run, start } from "./subprocess.js"

const dir = mkdtempSync(join(tmpdir(), "effect-agent-cli-same-instant-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const writeScript = (name: string, script: unknown) => {
  const file = join(dir, name)
  writeFileSync(file, JSON.stringify(script))
  return file
}
const events = (stdout: string): Array<AgentEvent.AgentEvent> => stdout.trim().split("\n").map((l) => JSON.parse(l) as AgentEvent.AgentEvent)

for (const store of ["jsonl", "sqlite", "postgres"] as const) {
  describe(`two CLI processes start a turn on one session at once (${store} store)`, () => {
    it("exactly one runs, the other is refused SessionBusy and writes nothing, then runs its turn", async () => {
      const cwd = join(dir, store)
      mkdirSync(cwd, { recursive: true })
      const env = store === "postgres" ? { EFFECT_AGENT_DATABASE_URL: await Effect.runPromise(freshSchemaUrl("same_instant")) } : {}
      const common = ["--data-dir", join(dir, `data-${store}`), "--store", store]
      const replay = async (sessionId: string) => {
        const replayed = await run(["replay", sessionId, "--json", ...common], { env })
        expect(replayed.code, replayed.stderr).toBe(0)
        return events(replayed.stdout)
      }
      const created = await run(["run", "hello", ...common, "--script", writeScript(`hello-${store}.json`, { responses: [{ chunks: ["hi"] }] })], { cwd, env })
      expect(created.code, created.stderr).toBe(0)
      const sessionId = /session (\S+)/.exec(created.stderr)![1]!
      const before = await replay(sessionId)

      const asking = (name: string) =>
        start(["run", `write ${name}`, "--session", sessionId, ...common, "--script", writeScript(`${name}-${store}.json`, {
          responses: [{ toolCalls: [{ tool: "write_file", args: { path: `${name}.txt`, content: "v1\n" } }] }, { chunks: [`${name} done`] }]
        })], { cwd, env })
      const racers = [asking("a"), asking("b")]
      // The loser exits; the winner holds the session, waiting on its question.
      const loserIndex = await Promise.race(racers.map((racer, i) => racer.done.then(() => i)))
      const loser = await racers[loserIndex]!.done
      const winner = racers[1 - loserIndex]!
      const [winnerName, loserName] = loserIndex === 0 ? ["b", "a"] : ["a", "b"]
      expect(loser.code).not.toBe(0)
      expect(loser.stdout).toBe("")
      expect(loser.stderr).toContain("SessionBusy")
      expect(loser.stderr).toContain(`pid ${winner.child.pid} on host ${hostname()}`)
      await winner.waitForStderr(/\[y\]es \/ \[n\]o \/ \[a\]lways/)

      winner.child.stdin!.end("y\n")
      const won = await winner.done
      expect(won.code, won.stderr).toBe(0)
      const log = await replay(sessionId)
      expectWellFormedLog(log)
      expect(log.slice(0, before.length)).toEqual(before)
      expect(log.filter((e) => e.type === "user.message").map((e) => e.payload.content)).toEqual(["hello", `write ${winnerName}`])
      expect(log.filter((e) => e.type === "turn.started")).toHaveLength(2)
      expect(log.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })

      const again = start(["run", `write ${loserName}`, "--session", sessionId, ...common, "--script", writeScript(`${loserName}-${store}.json`, {
        responses: [{ toolCalls: [{ tool: "write_file", args: { path: `${loserName}.txt`, content: "v1\n" } }] }, { chunks: [`${loserName} done`] }]
      })], { cwd, env })
      await again.waitForStderr(/\[y\]es \/ \[n\]o \/ \[a\]lways/)
      again.child.stdin!.end("y\n")
      expect((await again.done).code).toBe(0)
      const after = await replay(sessionId)
      expectWellFormedLog(after)
      expect(after.slice(0, log.length)).toEqual(log)
      expect(after.filter((e) => e.type === "user.message").map((e) => e.payload.content)).toEqual(["hello", `write ${winnerName}`, `write ${loserName}`])
    })
  })
}

/**
 * A turn or a follow-up sent from another terminal while `effect-agent compact` runs on the session
 * (timing4). The compaction holds the session's writer lock while the model writes the summary
 * (here a summary that never comes: a scripted delay of an hour, stopped by the test's Ctrl+C), so
 * the other process is refused `SessionBusy` naming it — for `run --follow-up` too, which says where
 * to queue it — and stores nothing. The compaction's Ctrl+C stores `compaction.failed {cancelled}`;
 * then the turn runs, after it in the log.
 */
describe("effect-agent compact while another terminal sends a turn", () => {
  it("the turn and the follow-up are refused SessionBusy and store nothing; after the compaction ends the turn runs", async () => {
    const cwd = join(dir, "work")
    mkdirSync(cwd, { recursive: true })
    const common = ["--data-dir", join(dir, "data")]
    const replay = async (sessionId: string) => events((await run(["replay", sessionId, "--json", ...common])).stdout)
    const first = await run(["run", "one", ...common, "--script", writeScript("one.json", { responses: [{ chunks: ["answer one"] }] })], { cwd })
    expect(first.code, first.stderr).toBe(0)
    const sessionId = /session (\S+)/.exec(first.stderr)![1]!
    expect((await run(["run", "two", "--session", sessionId, ...common, "--script", writeScript("two.json", { responses: [{ chunks: ["answer two"] }] })], { cwd })).code).toBe(0)
    const before = await replay(sessionId)

    const watching = start(["watch", sessionId, "--json", ...common])
    const compacting = start(["compact", sessionId, ...common, "--script", writeScript("summary.json", { responses: [{ chunks: ["The summary."], delay: "1h" }] })], { cwd })
    await watching.waitForStdout(/"type":"compaction.started"/)

    const turn = await run(["run", "three", "--session", sessionId, ...common, "--script", writeScript("three.json", { responses: [{ chunks: ["answer three"] }] })], { cwd })
    expect(turn.code).not.toBe(0)
    expect(turn.stdout).toBe("")
    expect(turn.stderr).toContain("SessionBusy")
    expect(turn.stderr).toContain(`pid ${compacting.child.pid} on host ${hostname()}`)
    const followUp = await run(["run", "three", "--session", sessionId, "--follow-up", ...common], { cwd })
    expect(followUp.code).toBe(1)
    expect(followUp.stderr).toContain("queue it where the session is driven")
    const during = await replay(sessionId)
    expect(typesOf(during.slice(before.length))).toEqual(["compaction.started"])

    compacting.child.kill("SIGINT")
    expect((await compacting.done).code).toBe(130)
    watching.child.kill("SIGINT")
    await watching.done
    const next = await run(["run", "three", "--session", sessionId, ...common, "--script", writeScript("three.json", { responses: [{ chunks: ["answer three"] }] })], { cwd })
    expect(next.code, next.stderr).toBe(0)
    expect(next.stdout).toBe("answer three\n")
    const log = await replay(sessionId)
    expectWellFormedLog(log)
    expect(log.slice(0, during.length)).toEqual(during)
    expect(typesOf(log.slice(before.length))).toEqual(["compaction.started", "compaction.failed", "turn.started", "user.message", "context.built", "model.delta", "turn.completed"])
    expect(log[before.length + 1]?.payload).toMatchObject({ errorCode: "cancelled" })
  })
})
