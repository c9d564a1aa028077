/**
 * Listings from the index (issue 24, item 5), with the built CLI on a JSONL data dir of many
 * sessions: `sessions` (a command that only reads) saves the index, so the next listing is warm;
 * `pending` reads the logs of the sessions the index says wait for an answer, and no other — a log
 * damaged in place (same size, so the index still covers it) is never read by `pending`; an index
 * written before summaries carried the waiting calls (version 1) is not trusted.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { run, sessionIdIn, start } from "./subprocess.js"

const dir = mkdtempSync(join(tmpdir(), "effect-agent-listing-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const copies = 200

describe("listings of a JSONL data dir", () => {
  it("sessions saves the index; pending reads only the sessions the index says wait", { timeout: 120_000 }, async () => {
    const cwd = join(dir, "work")
    const dataDir = join(dir, "data")
    mkdirSync(cwd, { recursive: true })
    const common = ["--data-dir", dataDir]
    const script = (name: string, responses: unknown) => {
      const file = join(dir, name)
      writeFileSync(file, JSON.stringify({ responses }))
      return file
    }
    // One finished session, copied under other ids; one whose call waits for approval.
    const finished = await run(["run", "hello", ...common, "--script", script("done.json", [{ chunks: ["Hello."] }])], { cwd })
    expect(finished.code, finished.stderr).toBe(0)
    const template = readdirSync(join(dataDir, "sessions")).find((name) => name.endsWith(".jsonl"))!.slice(0, -".jsonl".length)
    const text = readFileSync(join(dataDir, "sessions", `${template}.jsonl`), "utf8")
    const ids = Array.from({ length: copies }, (_, i) => `sess_copy${String(i).padStart(4, "0")}`)
    for (const id of ids) writeFileSync(join(dataDir, "sessions", `${id}.jsonl`), text.replaceAll(template, id))
    const asking = start(["run", "write the notes", ...common, "--script", script("ask.json", [
      { chunks: ["Writing."], toolCalls: [{ tool: "write_file", args: { path: "notes.txt", content: "v1\n" } }] }
    ])], { cwd })
    await asking.waitForStderr(/\[y\]es \/ \[n\]o \/ \[a\]lways/)
    asking.child.kill("SIGKILL")
    const waiting = sessionIdIn((await asking.done).stderr)!

    // An index from before summaries carried the waiting calls: every entry current, none waiting.
    const stale = Object.fromEntries([template, waiting, ...ids].map((id) => {
      const size = readFileSync(join(dataDir, "sessions", `${id}.jsonl`)).length
      return [id, { covered: size, version: 1, summary: { sessionId: id, cwd, client: "cli", createdAt: "2026-01-01T00:00:00.000Z", lastActivityAt: "2026-01-01T00:00:00.000Z", turnCount: 1, lastSequence: 1 } }]
    }))
    writeFileSync(join(dataDir, "index.json"), JSON.stringify({ format: "effect-agent/index", version: 1, sessions: stale }))

    // `sessions` only reads, yet it saves the index it rebuilt.
    const listed = await run(["sessions", ...common])
    expect(listed.code, listed.stderr).toBe(0)
    expect(listed.stdout.trim().split("\n")).toHaveLength(copies + 2)
    const index = JSON.parse(readFileSync(join(dataDir, "index.json"), "utf8")) as { version: number; sessions: Array<{ summary: { sessionId: string; awaitingApproval?: ReadonlyArray<string> } }> }
    expect(index.version).toBe(5)
    expect(index.sessions).toHaveLength(copies + 2)
    expect(index.sessions.filter((entry) => entry.summary.awaitingApproval !== undefined).map((entry) => entry.summary.sessionId)).toEqual([waiting])

    // A finished session's log damaged in place: same size, so the index still covers it.
    const damaged = join(dataDir, "sessions", `${ids[0]}.jsonl`)
    const bytes = readFileSync(damaged, "utf8")
    const lines = bytes.split("\n")
    lines[2] = "x".repeat(lines[2]!.length)
    writeFileSync(damaged, lines.join("\n"))
    expect(readFileSync(damaged).length).toBe(Buffer.byteLength(bytes))
    expect((await run(["replay", ids[0]!, ...common])).code).toBe(1)

    // `pending` reads the waiting session's log only.
    const pending = await run(["pending", ...common])
    expect(pending, pending.stderr).toMatchObject({ code: 0, stderr: "", stdout: `${waiting}  call_1  write_file notes.txt  (write)\n` })
  })
})
