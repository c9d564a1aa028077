/**
 * One process drives a session at a time, across real CLI processes: a second `run --session`
 * while the first holds the session fails `SessionBusy` naming the holder and changes nothing; a
 * holder killed with SIGKILL is dead, so the next process takes over and closes its turn
 * `interrupted`.
 */
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { hostname, tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import type { AgentEvent } from "../../src/index.js"
import { expectWellFormedLog } from "../helpers.js"
import { run, start } from "./subprocess.js"

const dir = mkdtempSync(join(tmpdir(), "effect-agent-cli-writer-"))
const started: Array<ReturnType<typeof start>> = []
afterAll(() => {
  for (const running of started) running.child.kill("SIGKILL")
  rmSync(dir, { recursive: true, force: true })
})

const events = (stdout: string): Array<AgentEvent.AgentEvent> => stdout.trim().split("\n").map((l) => JSON.parse(l) as AgentEvent.AgentEvent)

/** What a running process has printed on stderr so far. */
const printed = new WeakMap<object, string>()
const stderrOf = (running: ReturnType<typeof start>) => printed.get(running) ?? ""
const track = (running: ReturnType<typeof start>) => {
  running.child.stderr!.on("data", (chunk: string) => printed.set(running, stderrOf(running) + chunk))
  started.push(running)
  return running
}

const writeScript = (name: string, script: unknown) => {
  const file = join(dir, name)
  writeFileSync(file, JSON.stringify(script))
  return file
}

for (const store of ["jsonl", "sqlite"] as const) {
  describe(`one writer per session across CLI processes (${store} store)`, () => {
    const dataDir = join(dir, `data-${store}`)
    const common = ["--data-dir", dataDir, "--store", store]
    const replay = async (sessionId: string) => {
      const replayed = await run(["replay", sessionId, "--json", ...common])
      expect(replayed.code, replayed.stderr).toBe(0)
      return events(replayed.stdout)
    }

    it("a second run while the first waits for approval: SessionBusy naming the holder, the log unchanged and intact", async () => {
      const cwd = join(dir, `busy-${store}`)
      mkdirSync(cwd, { recursive: true })
      const first = track(start(["run", "write the notes", ...common, "--script", writeScript(`busy-${store}.json`, {
        responses: [{ chunks: ["Writing."], toolCalls: [{ tool: "write_file", args: { path: "notes.txt", content: "v1\n" } }] }, { chunks: ["Not written."] }]
      })], { cwd }))
      // Paused on the prompt, stdin open and unanswered: the first process surely holds the session.
      await first.waitForStderr(/\[y\]es \/ \[n\]o \/ \[a\]lways/)
      const id = /session (\S+)/.exec(stderrOf(first))![1]!
      const before = await replay(id)

      const second = await run(["run", "something else", "--session", id, ...common, "--script", writeScript(`second-${store}.json`, {
        responses: [{ chunks: ["I should never run."] }]
      })], { cwd })
      expect(second.code).not.toBe(0)
      expect(second.stdout).toBe("")
      const lines = second.stderr.trim().split("\n")
      expect(lines, second.stderr).toHaveLength(1)
      expect(lines[0]).toContain("SessionBusy")
      expect(lines[0]).toContain(`pid ${first.child.pid} on host ${hostname()}`)
      expect(await replay(id)).toEqual(before)

      // A follow-up from a second terminal cannot be queued either (one process writes a session's
      // log): it says so plainly, and where to queue it instead.
      const followUp = await run(["run", "then this", "--session", id, "--follow-up", ...common], { cwd })
      expect(followUp.code).toBe(1)
      const said = followUp.stderr.trim().split("\n").filter((line) => !line.includes("built-in echo model"))
      expect(said, followUp.stderr).toHaveLength(1)
      expect(said[0]).toContain(`pid ${first.child.pid} on host ${hostname()}`)
      expect(said[0]).toContain("queue it where the session is driven")
      expect(await replay(id)).toEqual(before)

      // The first process goes on as if nothing happened.
      first.child.stdin!.end("n\n")
      const finished = await first.done
      expect(finished.code).toBe(0)
      const log = await replay(id)
      expectWellFormedLog(log)
      expect(log.map((e) => e.sequence)).toEqual(log.map((_, i) => i + 1))
      expect(log.filter((e) => e.type === "user.message").map((e) => e.payload.content)).toEqual(["write the notes"])
      expect(log.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
      expect((await run(["sessions", ...common])).stdout).toContain(id)

      // Released with the first process: the session can be driven again.
      const next = await run(["run", "and now?", "--session", id, ...common, "--script", writeScript(`next-${store}.json`, {
        responses: [{ chunks: ["Now it runs."] }]
      })], { cwd })
      expect(next.code, next.stderr).toBe(0)
      expect(next.stdout).toBe("Now it runs.\n")
    })

    it("the holder killed with SIGKILL mid-turn: the next process takes over and closes its turn interrupted", async () => {
      const cwd = join(dir, `dead-${store}`)
      mkdirSync(cwd, { recursive: true })
      // The model takes ten minutes before its first chunk: the turn is open, the session held.
      const first = track(start(["run", "think slowly", ...common, "--script", writeScript(`slow-${store}.json`, {
        responses: [{ chunks: ["never"], delay: "10 minutes" }]
      })], { cwd }))
      await first.waitForStderr(/session \S+/)
      first.child.kill("SIGKILL")
      const killed = await first.done
      const sessionId = /session (\S+)/.exec(killed.stderr)![1]!
      const before = await replay(sessionId)
      // Killed somewhere after the turn began (its events up to the model call): the turn is open.
      const turn = before[1]!
      expect(turn.type).toBe("turn.started")
      expect(before.some((e) => e.type === "turn.completed")).toBe(false)

      const next = await run(["run", "what happened?", "--session", sessionId, ...common, "--script", writeScript(`after-${store}.json`, {
        responses: [{ chunks: ["It was interrupted."] }]
      })], { cwd })
      expect(next.code, next.stderr).toBe(0)
      expect(next.stdout).toBe("It was interrupted.\n")
      const log = await replay(sessionId)
      expectWellFormedLog(log)
      expect(log.slice(0, before.length)).toEqual(before)
      expect(log[before.length]).toMatchObject({ type: "turn.completed", payload: { stopReason: "error", errorCode: "interrupted" } })
      expect(log[before.length]).toMatchObject({ turnId: (turn as { turnId?: string }).turnId })
      expect(log.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
    })
  })
}


describe("a log two writers appended to, on the CLI", () => {
  it("sessions lists the others and names it in one line; replay points at repair; repair makes it readable again", async () => {
    const dataDir = join(dir, "data-repair")
    const common = ["--data-dir", dataDir]
    const fixture = join(import.meta.dirname, "../layers/fixtures/two-writers.jsonl")
    const created = await run(["run", "hello", ...common, "--script", writeScript("repair-good.json", { responses: [{ chunks: ["hi"] }] })], { cwd: dir })
    expect(created.code, created.stderr).toBe(0)
    const good = /session (\S+)/.exec(created.stderr)![1]!
    const file = join(dataDir, "sessions", "sess_dup.jsonl")
    copyFileSync(fixture, file)

    const listed = await run(["sessions", ...common])
    expect(listed.code).toBe(0)
    expect(listed.stdout.trim().split("\n").map((l) => l.split(/\s+/)[0])).toEqual([good])
    expect(listed.stderr.trim().split("\n")).toEqual([expect.stringMatching(/^effect-agent: session sess_dup cannot be read: .*duplicate or out-of-order sequence.*sess_dup\.jsonl:8\)$/)])

    const replayed = await run(["replay", "sess_dup", ...common])
    expect(replayed.code).not.toBe(0)
    expect(replayed.stderr.trim().split("\n")).toHaveLength(1)
    expect(replayed.stderr).toContain("`effect-agent repair sess_dup`")

    const repaired = await run(["repair", "sess_dup", ...common])
    expect(repaired.code, repaired.stderr).toBe(0)
    expect(repaired.stdout).toBe(
      `Repaired sess_dup: kept 8 events, dropped 4 lines, closed turn turn_a as interrupted. The original is kept as ${file}.bak.\n`
    )
    expect(readFileSync(`${file}.bak`, "utf8")).toBe(readFileSync(fixture, "utf8"))
    const log = events((await run(["replay", "sess_dup", "--json", ...common])).stdout)
    expectWellFormedLog(log)
    expect(log.map((e) => e.sequence)).toEqual(Array.from({ length: 10 }, (_, i) => i + 1))
    const after = await run(["sessions", ...common])
    expect(after.stderr).toBe("")
    expect(after.stdout.trim().split("\n").map((l) => l.split(/\s+/)[0]).sort()).toEqual([good, "sess_dup"].sort())
    expect((await run(["repair", "sess_dup", ...common])).stdout).toBe("Nothing to repair: the log of sess_dup is valid (10 events).\n")
  })
})
