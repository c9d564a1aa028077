/**
 * A turn or a follow-up sent from another terminal while `effect-agent compact` runs on the session
 * (timing4). The compaction holds the session's writer lock while the model writes the summary
 * (here a summary that never comes: a scripted delay of an hour, stopped by the test's Ctrl+C), so
 * the other process is refused `SessionBusy` naming it — for `run --follow-up` too, which says where
 * to queue it — and stores nothing. The compaction's Ctrl+C stores `compaction.failed {cancelled}`;
 * then the turn runs, after it in the log.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { hostname, tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import type { AgentEvent } from "../../src/index.js"
import { expectWellFormedLog, typesOf } from "../helpers.js"
import { run, start } from "./subprocess.js"

const dir = mkdtempSync(join(tmpdir(), "effect-agent-cli-compact-busy-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const writeScript = (name: string, script: unknown) => {
  const file = join(dir, name)
  writeFileSync(file, JSON.stringify(script))
  return file
}
const events = (stdout: string): Array<AgentEvent.AgentEvent> => stdout.trim().split("\n").map((l) => JSON.parse(l) as AgentEvent.AgentEvent)

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
