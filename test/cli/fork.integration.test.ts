import { describe, expect, it } from "vitest"
import { expectWellFormedLog } from "../helpers.js"
import { eventsOf, run, scratch, sessionIdIn, start } from "./subprocess.js"

const { dataDir, dir, replay } = scratch("fork")
const sessionOf = sessionIdIn

describe("effect-agent fork, run --follow-up (subprocess)", () => {
  it("fork prints the new session id; the fork continues on its own; --at forks at an earlier turn; bad points exit 1", async () => {
    const first = await run(["run", "one", "--data-dir", dataDir], { cwd: dir })
    expect(first.code).toBe(0)
    const source = sessionOf(first.stderr)!
    expect((await run(["run", "two", "--session", source, "--data-dir", dataDir])).code).toBe(0)
    const before = await replay(source)

    const forked = await run(["fork", source, "--data-dir", dataDir])
    expect(forked.code).toBe(0)
    const fork = forked.stdout.trim()
    expect(fork).toMatch(/^sess_/)
    expect(fork).not.toBe(source)
    const forkLog = await replay(fork)
    expectWellFormedLog(forkLog)
    expect(forkLog[0]!.payload).toMatchObject({ forkedFrom: { sessionId: source, sequence: before.length } })
    expect(forkLog.at(-1)).toMatchObject({ type: "session.forked", payload: { fromSessionId: source, atSequence: before.length } })

    const onFork = await run(["run", "three", "--session", fork, "--data-dir", dataDir])
    expect(onFork.stdout).toBe("Echo: three\n")
    expect(await replay(source)).toEqual(before)

    const end1 = before.find((e) => e.type === "turn.completed")!.sequence
    const early = await run(["fork", source, "--at", String(end1), "--data-dir", dataDir])
    expect(early.code).toBe(0)
    const earlyLog = await replay(early.stdout.trim())
    expect(earlyLog.filter((e) => e.type === "user.message").map((e) => e.payload.content)).toEqual(["one"])

    const inside = await run(["fork", source, "--at", "2", "--data-dir", dataDir])
    expect(inside.code).toBe(1)
    expect(inside.stderr).toContain("sequence 2 is inside a turn or compaction: fork at the end of a closed turn (the nearest before it: 1)")
    // Named by the flag the user typed, not the API's field ("Invalid atSequence: …"), as rewind names --to.
    expect(inside.stderr).toBe("effect-agent: --at 2: sequence 2 is inside a turn or compaction: fork at the end of a closed turn (the nearest before it: 1)\n")
    const past = await run(["fork", source, "--at", "9999", "--data-dir", dataDir])
    expect(past.stderr).toMatch(/^effect-agent: --at 9999: must be a sequence of the session, 1\.\.\d+\n$/)
    expect(inside.stderr).not.toMatch(/\n\s+at /)
    // Inside the second turn, the point it names is the end of the first: one the user can pass.
    const second = await run(["fork", source, "--at", String(end1 + 2), "--data-dir", dataDir])
    expect(second.code).toBe(1)
    expect(second.stderr).toContain(`(the nearest before it: ${end1})`)
    const missing = await run(["fork", "sess_missing", "--data-dir", dataDir])
    expect(missing.code).toBe(1)
  })

  it("run --follow-up on an idle session runs the message as a follow-up turn and prints it", async () => {
    const first = await run(["run", "one", "--data-dir", dataDir], { cwd: dir })
    const sessionId = sessionOf(first.stderr)!
    const queued = await run(["run", "later", "--follow-up", "--session", sessionId, "--data-dir", dataDir])
    expect(queued.code).toBe(0)
    expect(queued.stdout).toBe("Echo: later\n")
    const log = await replay(sessionId)
    expectWellFormedLog(log)
    const q = log.find((e) => e.type === "followup.queued")!
    expect(q.payload).toMatchObject({ content: "later" })
    expect(log.find((e) => e.type === "turn.started" && e.payload.queueId !== undefined)!.payload).toMatchObject({
      queueId: (q.payload as { queueId: string }).queueId
    })
  })
})

describe("effect-agent watch (subprocess)", () => {
  it("--json prints the stored events, then those another process stores, each once, until SIGINT", async () => {
    const first = await run(["run", "one", "--data-dir", dataDir], { cwd: dir })
    const sessionId = sessionOf(first.stderr)!
    const watching = start(["watch", sessionId, "--json", "--data-dir", dataDir])
    await watching.waitForStdout(/"turn\.completed"/)
    const second = await run(["run", "two", "--session", sessionId, "--data-dir", dataDir])
    expect(second.code).toBe(0)
    await watching.waitForStdout(/"turn\.completed"[\s\S]*"turn\.completed"/)
    watching.child.kill("SIGINT")
    const finished = await watching.done
    const log = await replay(sessionId)
    expect(eventsOf(finished.stdout)).toEqual(log)
    expectWellFormedLog(log)
  })

  it("without --json prints the transcript live", async () => {
    const first = await run(["run", "hello", "--data-dir", dataDir], { cwd: dir })
    const sessionId = sessionOf(first.stderr)!
    const watching = start(["watch", sessionId, "--data-dir", dataDir])
    await watching.waitForStdout(/Echo: hello/)
    await run(["run", "more", "--session", sessionId, "--data-dir", dataDir])
    await watching.waitForStdout(/> more\nEcho: more/)
    watching.child.kill("SIGINT")
    await watching.done
  })
})
