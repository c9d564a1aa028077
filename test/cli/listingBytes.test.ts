import { describe, expect, it } from "vitest"
import type { Session } from "../../src/index.js"
import { listingBytes } from "../../src/cli/Sessions.js"

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

  it("is empty for no session", () => {
    expect(listingBytes([]).length).toBe(0)
  })
})
