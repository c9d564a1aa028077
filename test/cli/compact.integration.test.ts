import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { expectWellFormedLog } from "../helpers.js"
import { run, scratch, sessionIdIn } from "./subprocess.js"

const { dataDir, dir, replay } = scratch("compact")
const sessionOf = sessionIdIn

describe("effect-agent compact (subprocess)", () => {
  it("compacts a session with the built-in model, prints the summary; the session goes on from it; replay shows it", async () => {
    const first = await run(["run", "one", "--data-dir", dataDir], { cwd: dir })
    expect(first.code).toBe(0)
    const sessionId = sessionOf(first.stderr)!
    expect((await run(["run", "two", "--session", sessionId, "--data-dir", dataDir])).code).toBe(0)
    const before = await replay(sessionId)

    const compacted = await run(["compact", sessionId, "--keep-recent-tokens", "0", "--data-dir", dataDir])
    expect(compacted.code).toBe(0)
    const [line, summary] = compacted.stdout.trimEnd().split("\n")
    expect(line).toMatch(new RegExp(`^compacted ${sessionId} \\(cmp_\\S+\\): ~\\d+ → ~\\d+ tokens; kept verbatim from sequence \\d+$`))
    // The echo model's summary of the three items before the last answer.
    expect(summary).toBe("Echo summary: 3 earlier items were compacted.")
    const log = await replay(sessionId)
    expectWellFormedLog(log)
    expect(log.slice(before.length).map((e) => [e.type, "turnId" in e])).toEqual([["compaction.started", false], ["session.compacted", false]])
    // The last answer is kept verbatim: the cut is at its first delta.
    const lastMessage = before.findLast((e) => e.type === "user.message")!.sequence
    const answer = before.find((e) => e.type === "model.delta" && e.sequence > lastMessage)!
    expect(log.at(-1)!.payload).toMatchObject({ reason: "manual", summary, firstKeptSequence: answer.sequence })

    const next = await run(["run", "three", "--session", sessionId, "--data-dir", dataDir])
    expect(next.code).toBe(0)
    expect(next.stdout).toBe("Echo: three\n")
    const text = await run(["replay", sessionId, "--data-dir", dataDir])
    expect(text.stdout).toContain(`[summary of the conversation so far]\n${summary}\n`)
    expect(text.stdout).toContain("⟳ context compacted")
  })

  it("nothing to compact, an unknown session, a summary the model refuses: exit 1 with one line, no stack", async () => {
    const first = await run(["run", "only", "--data-dir", dataDir], { cwd: dir })
    const sessionId = sessionOf(first.stderr)!
    const nothing = await run(["compact", sessionId, "--data-dir", dataDir])
    expect(nothing.code).toBe(1)
    expect(nothing.stderr).toContain("nothing to compact")
    expect(nothing.stderr).not.toMatch(/\n\s+at /)
    const missing = await run(["compact", "sess_missing", "--data-dir", dataDir])
    expect(missing.code).toBe(1)
    expect(missing.stderr).toContain("sess_missing")

    // A script whose summary request fails: compaction.failed is stored, the context is unchanged.
    const script = join(dir, "refuse.json")
    writeFileSync(script, JSON.stringify({ responses: [{ failure: { reason: "invalid_request" } }] }))
    const before = await replay(sessionId)
    const refused = await run(["compact", sessionId, "--keep-recent-tokens", "0", "--script", script, "--data-dir", dataDir])
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain("invalid_request")
    expect(refused.stderr).not.toMatch(/\n\s+at /)
    const log = await replay(sessionId)
    expect(log.slice(before.length).map((e) => [e.type, e.type === "compaction.failed" ? e.payload.errorCode : undefined])).toEqual([
      ["compaction.started", undefined],
      ["compaction.failed", "invalid_request"]
    ])
  })
})
