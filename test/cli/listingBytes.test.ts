import { getHeapSpaceStatistics, setFlagsFromString } from "node:v8"
import { runInNewContext } from "node:vm"
import { describe, expect, it } from "vitest"
import type { Session } from "../../src/index.js"
import { line, listingBytes } from "../../src/cli/Sessions.js"

const summary = (i: number, extra: Partial<Session.SessionSummary> = {}): Session.SessionSummary => ({
  sessionId: `sess_${String(i).padStart(6, "0")}`,
  cwd: "/work",
  client: "cli",
  createdAt: "2026-12-02T10:00:00.000Z",
  lastActivityAt: "2026-12-02T10:00:01.000Z",
  turnCount: i % 3,
  lastSequence: 4,
  ...extra
})

describe("listingBytes (the sessions listing as written)", () => {
  it("makes no string for a session whose fields need no escape (perf62list)", () => {
    // First in the file: the tests below hand it fractions and counts past 2^31, after which V8's
    // optimized code for it may box a few numbers. What the listing allocates in the young generation, from a full GC, with no GC in between
    // (code compiled meanwhile goes to other spaces): a listing of 10,000 that made ~110 bytes of
    // strings a session (each count's `String`, the dollars' text, the unpriced models' `join`, the
    // `for … of`'s results before the loop was optimized) filled the young generation once more after
    // the listing, and its scavenge copied every summary still young (docs/benchmarks.md, "perf62list").
    setFlagsFromString("--expose-gc")
    const gc = runInNewContext("gc") as () => void
    const young = () => getHeapSpaceStatistics().find((space) => space.space_name === "new_space")!.space_used_size
    // Parsed from JSON, as the JSONL index is, with a key of their own first: objects of the shapes
    // the other tests make share V8's maps with theirs, and a map whose field once held a fraction
    // (a cost of 0.3 above) makes each read of that field a fresh heap number until the code is optimized.
    const summaries = JSON.parse(JSON.stringify(Array.from({ length: 2_000 }, (_, i) => ({
      perf62list: i,
      ...summary(i, {
        turnCount: i,
        // Its own first key as well (not a literal of the usage type: the key is not one of its fields).
        usage: { ...{ perf62list: i }, inputTokens: 1_000_003 + i, outputTokens: 7_000_001 + i, ...(i % 2 === 0 ? { cacheReadTokens: 3_000_017 + i } : {}) },
        cost: 0,
        costUnknown: ["scripted", "other-model"],
        title: "Parser refactor"
      })
    })))) as ReadonlyArray<Session.SessionSummary>
    gc()
    const before = young()
    const bytes = listingBytes(summaries)
    const taken = young() - before
    expect(bytes.length).toBeGreaterThan(2_000 * 150)
    // The buffers' own objects and the function's closures, a few KB; not 2,000 sessions' strings.
    expect(taken).toBeLessThan(2_000 * 8)
  })

  it("is each session's line and a newline, in UTF-8: totals, titles, escapes", () => {
    const text = listingBytes([
      summary(1, { title: "naïve — café ✓", usage: { inputTokens: 4, outputTokens: 2, cacheReadTokens: 7 }, cost: 0.3, costUnknown: ["m"] }),
      summary(2, { cwd: "/tmp/\x1b[2Jx\r", title: "a\u0085b" })
    ]).toString("utf8")
    expect(text).toBe(
      "sess_000001  2026-12-02T10:00:01.000Z  1 turn  cli  /work  tokens in 4 · out 2 · cache read 7 — $0.30; cost unknown for m  naïve — café ✓\n" +
        "sess_000002  2026-12-02T10:00:01.000Z  2 turns  cli  /tmp/\\x1b[2Jx  a\\x85b\n"
    )
  })

  it("holds every line across pieces and a buffer that grows (long titles, 3-byte characters)", () => {
    const summaries = Array.from({ length: 300 }, (_, i) => summary(i, { title: "✓".repeat(i * 7) }))
    const expected = summaries.map((s) => `${s.sessionId}  ${s.lastActivityAt}  ${s.turnCount} turn${s.turnCount === 1 ? "" : "s"}  cli  /work  ${s.title}\n`).join("")
    const bytes = listingBytes(summaries)
    expect(bytes.length).toBeGreaterThan(256 * 300)
    expect(bytes.toString("utf8")).toBe(expected)
  })

  it("is each summary's line as text, byte for byte, whatever its fields hold", () => {
    // Every kind of field the line shows: totals with and without cache counts, costs under a cent
    // and none, several models without a price, controls to escape (in the cwd, the title, a model's
    // name), characters of two, three and four bytes, a lone surrogate, and a non-ASCII character first.
    const odd = ["", "plain", "naïve", "—dash first", "✓ tick", "emoji 😀 here", "lone \ud800 surrogate", "end \udc00", "ctl \x1b[31m\r\x7f\x85", "tab\tand\nline", "é"]
    const summaries: Array<Session.SessionSummary> = []
    for (let i = 0; i < odd.length * 4; i++) {
      const text = odd[i % odd.length]!
      summaries.push(summary(i, {
        cwd: i % 4 === 0 ? text : "/work",
        client: i % 5 === 0 ? "acp" : "cli",
        ...(i % 3 === 0 ? {} : { title: text }),
        ...(i % 2 === 0 ? {} : {
          usage: {
            inputTokens: i * 1_000,
            outputTokens: i,
            ...(i % 3 === 1 ? { cacheReadTokens: 0 } : {}),
            ...(i % 4 === 3 ? { cacheWriteTokens: 9_007_199_254_740_991 } : {})
          },
          ...(i % 5 === 0 ? {} : { cost: [0, 0.004, 0.01, 12.345][i % 4]! }),
          ...(i % 6 === 1 ? { costUnknown: [text, "model-b"] } : i % 6 === 3 ? { costUnknown: [] } : {})
        })
      }))
    }
    const expected = Buffer.from(summaries.map((s) => `${line(s)}\n`).join(""), "utf8")
    expect(listingBytes(summaries).equals(expected)).toBe(true)
    // One at a time too: each line starts a buffer of its own.
    for (const s of summaries) expect(listingBytes([s]).equals(Buffer.from(`${line(s)}\n`, "utf8"))).toBe(true)
  })

  it("is each line byte for byte at the edges of the copy: controls, DEL, C1 and non-ASCII after ASCII, odd counts and costs", () => {
    const fields = ["a\x7f", "ab\x1f", "x\u009b[2J", "tab\tnew\nline", "abc\u00e9", "abc\u00a0", "\x0c", "ok", "\r\r", "a\u2028b"]
    const counts = [0, 9, 10, 99, 100, 1_000_000, 9_007_199_254_740_991, 9_007_199_254_740_992, -1, 1.5, -0, Number.NaN]
    const costs = [0, -0, 0.009, 0.01, 1e-7, 123.456, Number.NaN, undefined]
    const summaries = fields.flatMap((field, i) =>
      counts.map((n, j): Session.SessionSummary =>
        summary(i * 100 + j, {
          lastActivityAt: j % 3 === 0 ? field : "2026-12-02T10:00:01.000Z",
          // A hostile store's client name: not one the type knows.
          client: (j % 4 === 1 ? field : "cli") as Session.SessionSummary["client"],
          cwd: j % 2 === 0 ? field : "/work",
          turnCount: n,
          title: j % 5 === 0 ? `t${field}` : field,
          usage: { inputTokens: n, outputTokens: counts[(j + 1) % counts.length]!, ...(j % 2 === 0 ? { cacheReadTokens: n } : { cacheWriteTokens: n }) },
          ...(costs[j % costs.length] === undefined ? {} : { cost: costs[j % costs.length]! }),
          costUnknown: j % 3 === 0 ? [field, "b", field] : j % 3 === 1 ? [field] : []
        })
      )
    )
    for (const s of summaries) expect(listingBytes([s]).toString("utf8")).toBe(`${line(s)}\n`)
    expect(listingBytes(summaries).equals(Buffer.from(summaries.map((s) => `${line(s)}\n`).join(""), "utf8"))).toBe(true)
  })

  it("is empty for no session", () => {
    expect(listingBytes([]).length).toBe(0)
  })
})
