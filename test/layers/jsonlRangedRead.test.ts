/**
 * A JSONL read from a sequence costs what it hands over plus a bounded seek, not the log: counted in
 * lines parsed (`LogSeek.parsed`), never timed. Whatever the seek lands on, the read gives exactly
 * what a read of the whole log gives from that sequence, and fails as it fails on the lines it reads.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Stream from "effect/Stream"
import { afterAll, describe, expect, it } from "vitest"
import * as AgentEvent from "../../src/domain/AgentEvent.js"
import * as LogReader from "../../src/layers/jsonl/LogReader.js"
import * as LogSeek from "../../src/layers/jsonl/LogSeek.js"

const dir = mkdtempSync(join(tmpdir(), "effect-agent-ranged-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const sessionId = "ses_ranged"
const header = `{"format":"effect-agent/events","version":1}\n`

const event = (sequence: number, text = `text ${sequence}`): AgentEvent.AgentEvent =>
  sequence === 1
    ? { id: "evt_1", sessionId, sequence, timestamp: "2026-01-01T00:00:00.000Z", type: "session.created", payload: { cwd: "/w", client: "test" } }
    : { id: `evt_${sequence}`, sessionId, turnId: "turn_1", sequence, timestamp: "2026-01-01T00:00:00.000Z", type: "model.delta", payload: { text } }

const lineOf = (e: AgentEvent.AgentEvent) => AgentEvent.encodeJson(e) + "\n"
/** Event lines 1..n, some long (a tool result's worth) so that lines are of uneven length. */
const lines = (n: number) => Array.from({ length: n }, (_, i) => lineOf(event(i + 1, i % 97 === 5 ? "x".repeat(3000 + i) : `text ${i + 1}`)))

let made = 0
const logOf = (text: string) => {
  const file = join(dir, `log${made++}.jsonl`)
  writeFileSync(file, text)
  return file
}

/** What a read hands over and how it ends, and the lines it parsed. */
const readFrom = (file: string, fromSequence: number, recovery: LogReader.Recovery = "skip-trailing-partial") => {
  const before = LogSeek.parsed.count
  const out = Effect.runSync(
    LogReader.events({ sessionId, file, recovery, maxLineBytes: 1 << 20, fromSequence }).pipe(
      Stream.either,
      Stream.runCollect,
      Effect.map((chunk) => Array.from(chunk))
    )
  )
  return { out, parsed: LogSeek.parsed.count - before }
}

/** What a read of the whole log gives from `fromSequence`: the reference, checking every line. */
const reference = (file: string, fromSequence: number, recovery: LogReader.Recovery = "skip-trailing-partial") =>
  readFrom(file, 1, recovery).out.filter((x) => Either.isLeft(x) || x.right.sequence >= fromSequence)

describe("a JSONL read from a sequence", () => {
  const n = 10_000
  const body = lines(n)
  const file = logOf(header + body.join(""))

  it("the last 5 of 10,000 events: parses a bounded number of lines, not the log", () => {
    const { out, parsed } = readFrom(file, n - 4)
    expect(out.map((x) => Either.getOrThrow(x).sequence)).toEqual([n - 4, n - 3, n - 2, n - 1, n])
    // A seek of ~log2(size / 64 KiB) probes, then at most a 64 KiB window of lines before the sequence.
    expect(parsed).toBeLessThan(400)
    expect(parsed).toBeGreaterThanOrEqual(5)
  })

  it("from anywhere, the events a whole read gives from there; a read from the middle parses about what it returns", () => {
    for (const from of [1, 2, 3, 97, 1234, 5000, 9999, n, n + 1, n + 50]) {
      const { out } = readFrom(file, from)
      expect(out.length).toBe(Math.max(0, n - from + 1))
      expect(out).toEqual(reference(file, from))
    }
    const { parsed } = readFrom(file, 5000)
    expect(parsed).toBeLessThan(5001 + 400)
  })

  it("a corrupt line, a gap, a torn last line after the sequence: the whole read's events and failure, line numbered", () => {
    const corrupt = [...body]
    corrupt[n - 3] = "{nope\n"
    const gap = body.filter((_, i) => i !== n - 3)
    const torn = [...body.slice(0, -1), body[n - 1]!.slice(0, -1)]
    for (const text of [corrupt, gap, torn]) {
      const log = logOf(header + text.join(""))
      for (const recovery of ["skip-trailing-partial", "strict"] as const) {
        const { out, parsed } = readFrom(log, n - 6, recovery)
        expect(out).toEqual(reference(log, n - 6, recovery))
        expect(parsed).toBeLessThan(400)
      }
    }
  })

  it("damage before the sequence never gives wrong events: either the whole read's failure or the same events", () => {
    const damaged: ReadonlyArray<ReadonlyArray<string>> = [
      // Garbage where a probe may land.
      body.map((l, i) => (i > 100 && i < n - 200 && i % 3 === 0 ? "{garbage}".padEnd(l.length - 1, " ") + "\n" : l)),
      // A second writer's run (before writer locks): sequences that go back.
      [...body.slice(0, 6000), ...body.slice(3000)],
      // Another session's events in the middle.
      body.map((l, i) => (i > 4000 && i < 6000 ? l.replace(sessionId, "ses_other") : l))
    ]
    for (const text of damaged) {
      const log = logOf(header + text.join(""))
      for (const from of [2, 2500, 4500, 5500, 8000, n - 3]) {
        const { out } = readFrom(log, from)
        const events = out.filter(Either.isRight).map((x) => x.right)
        // What is handed over runs from the sequence, one by one, as the file holds them.
        events.forEach((e, i) => expect(e.sequence).toBe(from + i))
        const full = reference(log, from)
        if (Either.isRight(full.at(-1) ?? Either.right(undefined))) expect(out).toEqual(full)
        else expect(out.at(-1)).toSatisfy((x: Either.Either<unknown, unknown>) => Either.isLeft(x) || events.length > 0)
      }
    }
  })

  it("a log of an older format version is read as a whole read reads it", () => {
    const v0 = Array.from({ length: 3000 }, (_, i) => JSON.stringify({ ...event(i + 1, "y".repeat(40)), type: i === 0 ? "session.created" : "model.delta" }) + "\n")
    const log = logOf(v0.join(""))
    expect(readFrom(log, 2990).out).toEqual(reference(log, 2990))
  })
})
