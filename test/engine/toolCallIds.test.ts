/**
 * ToolCallIds: the id a model's call is stored under. A hostile response can repeat one id in
 * thousands of calls; finding each a free id must not try every earlier one again (counted, not timed).
 */
import { describe, expect, it } from "vitest"
import * as ToolCallIds from "../../src/engine/ToolCallIds.js"

describe("ToolCallIds.storedId", () => {
  it("gives 10,000 calls of one id 10,000 distinct ids, trying each candidate about once", () => {
    const used = new Set<string>()
    const next = new Map<string, number>()
    let tries = 0
    const taken = (id: string) => {
      tries++
      return used.has(id)
    }
    for (let i = 0; i < 10_000; i++) used.add(ToolCallIds.storedId("toolu_same", taken, next))
    expect(used.size).toBe(10_000)
    expect([...used].every((id) => /^[A-Za-z0-9_-]{1,40}$/.test(id))).toBe(true)
    // Before the hint, the n-th call tried n candidates: 50 million in all.
    expect(tries).toBeLessThan(3 * 10_000)
  })

  it("keeps an id the vendors take and no call has, and renames the rest into the vendors' form", () => {
    const used = new Set(["toolu_a"])
    const next = new Map<string, number>()
    const taken = (id: string) => used.has(id)
    expect(ToolCallIds.storedId("toolu_b", taken, next)).toBe("toolu_b")
    expect(ToolCallIds.storedId("toolu_a", taken, next)).toBe("toolu_a_1")
    expect(ToolCallIds.storedId("", taken, next)).toBe("call_1")
    expect(ToolCallIds.storedId("x".repeat(10_000), taken, next)).toBe("call_2")
    // The hint is only where to start: an id taken since is still skipped.
    used.add("call_3")
    expect(ToolCallIds.storedId("bad id", taken, next)).toBe("call_4")
  })
})
