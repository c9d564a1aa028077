import { describe, expect, it } from "vitest"
import * as Session from "../../src/domain/Session.js"
import * as SessionUsage from "../../src/layers/sql/SessionUsage.js"

describe("SessionUsage.addRow (the SQL listing's usage totals)", () => {
  // A session's first row: what addUsage makes of it, field for field and in the same order.
  const rows: ReadonlyArray<Parameters<typeof SessionUsage.addRow>> = [
    [undefined, "", 1_200, 80, null, null, 0],
    [undefined, "scripted", 1_200, 80, null, null, 0],
    [undefined, "", 4, 2, 7, null, 0.3],
    [undefined, "m", 4, 2, null, 0, 0.1234567],
    // PostgreSQL's 64-bit columns arrive as text.
    [undefined, "", "12", "34", "56", "78", "0.0000014"],
    [undefined, "", "9007199254740993", 1, "9007199254740999", null, 1e-7],
    [undefined, "", 0, 0, 0, 0, 12.3456785]
  ]

  it("makes of a session's first row what Session.addUsage makes of it added to no totals", () => {
    for (const [, unknownModel, inputTokens, outputTokens, cacheRead, cacheWrite, cost] of rows) {
      const usage: { inputTokens: number; outputTokens: number; cacheReadTokens?: number; cacheWriteTokens?: number } = {
        inputTokens: Number(inputTokens),
        outputTokens: Number(outputTokens)
      }
      if (cacheRead !== null) usage.cacheReadTokens = Number(cacheRead)
      if (cacheWrite !== null) usage.cacheWriteTokens = Number(cacheWrite)
      const expected = Session.addUsage({}, { usage, cost: Number(cost), costUnknown: unknownModel === "" ? undefined : unknownModel })
      const made = SessionUsage.addRow(undefined, unknownModel, inputTokens, outputTokens, cacheRead, cacheWrite, cost)
      expect(made).toStrictEqual(expected)
      expect(JSON.stringify(made)).toBe(JSON.stringify(expected))
    }
  })

  it("adds a session's further rows to its totals", () => {
    const first = SessionUsage.addRow(undefined, "", 4, 2, 7, null, 0.3)
    const both = SessionUsage.addRow(first, "m", "1", "1", null, "5", 0)
    expect(both).toStrictEqual({ usage: { inputTokens: 5, outputTokens: 3, cacheReadTokens: 7, cacheWriteTokens: 5 }, cost: 0.3, costUnknown: ["m"] })
  })
})
