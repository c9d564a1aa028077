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

  it("is empty for no session", () => {
    expect(listingBytes([]).length).toBe(0)
  })
})
