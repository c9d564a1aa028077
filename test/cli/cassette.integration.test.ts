/**
 * `effect-agent export-script`: a session recorded by one run becomes a `--script` file; running the
 * same messages with it in a fresh data dir gives the same events (ids and times aside).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import type { AgentEvent } from "../../src/index.js"
import { run } from "./subprocess.js"

const dir = mkdtempSync(join(tmpdir(), "effect-agent-cassette-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const events = (stdout: string): Array<AgentEvent.AgentEvent> => stdout.trim().split("\n").map((line) => JSON.parse(line) as AgentEvent.AgentEvent)
const sessionOf = (stderr: string) => /session (\S+)/.exec(stderr)![1]!
/** What a replay must reproduce: each event's type and payload, in order. */
const shape = (log: ReadonlyArray<AgentEvent.AgentEvent>) => log.map(({ payload, type }) => ({ type, payload }))

describe("export-script", () => {
  it("turns a recorded session into a script that replays it", async () => {
    // The agent works in a folder of its own, so its tools see the same files in both runs.
    const work = join(dir, "work")
    mkdirSync(work)
    writeFileSync(join(work, "notes.txt"), "milk\n")
    const original = join(dir, "original.json")
    writeFileSync(original, JSON.stringify({
      responses: [
        { chunks: ["Let me ", "look."], toolCalls: [{ tool: "read_file", args: { path: "notes.txt" }, id: "toolu_1" }] },
        { chunks: ["You need "], failure: { reason: "server", afterChunks: 1 } }
      ]
    }))
    const recorded = join(dir, "recorded")
    const first = await run(["run", "what do I need?", "--script", original, "--data-dir", recorded], { cwd: work })
    expect(first.code).toBe(3)
    const sessionId = sessionOf(first.stderr)

    const exported = await run(["export-script", sessionId, "--data-dir", recorded], { cwd: dir })
    expect(exported.code).toBe(0)
    const cassette = join(dir, "cassette.json")
    writeFileSync(cassette, exported.stdout)
    expect(JSON.parse(exported.stdout)).toEqual({
      responses: [
        { chunks: ["Let me ", "look."], toolCalls: [{ tool: "read_file", args: { path: "notes.txt" }, id: "toolu_1" }] },
        { chunks: ["You need "], failure: { reason: "server", afterChunks: 1 } }
      ]
    })

    const replayed = join(dir, "replayed")
    const again = await run(["run", "what do I need?", "--script", cassette, "--data-dir", replayed], { cwd: work })
    expect(again.code).toBe(3)
    const before = events((await run(["replay", sessionId, "--json", "--data-dir", recorded], { cwd: dir })).stdout)
    const after = events((await run(["replay", sessionOf(again.stderr), "--json", "--data-dir", replayed], { cwd: dir })).stdout)
    // Ids and times are new in every run; everything else is the recording's.
    expect(shape(after)).toEqual(shape(before))
    expect(before.find((e) => e.type === "tool.completed")?.payload).toEqual({ toolCallId: "toolu_1", result: "milk\n" })
  })
})
