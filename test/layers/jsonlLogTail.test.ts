/**
 * A JSONL log's last sequence read from its end: given only when the last line is a whole event of
 * the session, `undefined` for anything the full read must judge.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import * as LogTail from "../../src/layers/jsonl/LogTail.js"

const dir = mkdtempSync(join(tmpdir(), "effect-agent-logtail-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

let made = 0
const logOf = (text: string) => {
  const file = join(dir, `log${made++}.jsonl`)
  writeFileSync(file, text)
  return file
}
const line = (sequence: number, sessionId = "ses_a", extra = "") => `${JSON.stringify({ sessionId, sequence, extra })}\n`
const header = `${JSON.stringify({ effectAgentLog: 1 })}\n`

describe("LogTail.lastSequence", () => {
  it("the last whole line's sequence", () => {
    expect(LogTail.lastSequence(logOf(header + line(1) + line(2) + line(3)), "ses_a")).toBe(3)
    expect(LogTail.lastSequence(logOf(line(1)), "ses_a")).toBe(1)
  })

  it("a last line that fills the tail read exactly, the log's only line: read", () => {
    const short = line(1, "ses_a")
    expect(LogTail.lastSequence(logOf(line(1, "ses_a", "x".repeat(64 * 1024 - short.length))), "ses_a")).toBe(1)
  })

  it("nothing it cannot tell for sure: a torn last line, a last line longer than the tail read, another session, a header alone, no log", () => {
    expect(LogTail.lastSequence(logOf(header + line(1) + line(2).slice(0, 10)), "ses_a")).toBeUndefined()
    expect(LogTail.lastSequence(logOf(header + line(1) + line(2, "ses_a", "x".repeat(70 * 1024))), "ses_a")).toBeUndefined()
    expect(LogTail.lastSequence(logOf(line(1, "ses_a", "x".repeat(70 * 1024))), "ses_a")).toBeUndefined()
    expect(LogTail.lastSequence(logOf(header + line(1, "ses_b")), "ses_a")).toBeUndefined()
    expect(LogTail.lastSequence(logOf(header), "ses_a")).toBeUndefined()
    expect(LogTail.lastSequence(logOf(header + "not json\n"), "ses_a")).toBeUndefined()
    expect(LogTail.lastSequence(logOf(""), "ses_a")).toBeUndefined()
    expect(LogTail.lastSequence(join(dir, "missing.jsonl"), "ses_a")).toBeUndefined()
  })
})
