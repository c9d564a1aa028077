/**
 * The price table and the cost arithmetic: each provider's convention for input tokens, the
 * defaults of cache prices, dated model names, overrides, unknown models, and the usage totals a
 * session's summary keeps.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import * as Pricing from "../../src/domain/Pricing.js"
import * as Session from "../../src/domain/Session.js"
import * as UsageText from "../../src/domain/UsageText.js"

describe("Pricing", () => {
  const price = { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 }

  it("Anthropic's input leaves the cache out; OpenAI's includes the cached tokens, which are priced once, as cache reads", () => {
    const usage = { inputTokens: 1000, outputTokens: 100, cacheReadTokens: 10_000, cacheWriteTokens: 2000 }
    // 1000 × 3 + 100 × 15 + 10 000 × 0.3 + 2000 × 3.75 = 15 000 per million.
    expect(Pricing.costOf(usage, price, "anthropic")).toBe(0.015)
    // OpenAI: 220 of 2140 prompt tokens were not cached; more cached than prompt tokens (a malformed report) counts no uncached input.
    expect(Pricing.uncachedInput({ inputTokens: 2140, outputTokens: 0, cacheReadTokens: 1920 }, "openai")).toBe(220)
    expect(Pricing.uncachedInput(usage, "openai")).toBe(0)
    expect(Pricing.totalInput({ inputTokens: 9, outputTokens: 0, cacheReadTokens: 2048, cacheWriteTokens: 37 }, "anthropic")).toBe(2094)
    expect(Pricing.totalInput({ inputTokens: 2140, outputTokens: 0, cacheReadTokens: 1920 }, "openai")).toBe(2140)
  })

  it("cache prices default to the input price", () => {
    expect(Pricing.costOf({ inputTokens: 1, outputTokens: 0, cacheReadTokens: 1, cacheWriteTokens: 1 }, { input: 1_000_000, output: 0 }, "anthropic")).toBe(3)
  })

  it("a dated snapshot is priced as its model; an override replaces the built-in entry; an unknown model has no cost and is named", () => {
    expect(Pricing.priceOf(Pricing.builtin, "claude-haiku-4-5-20251001")).toEqual(Pricing.builtin["claude-haiku-4-5"])
    expect(Pricing.priceOf(Pricing.builtin, "gpt-4.1-mini-2025-04-14")).toEqual(Pricing.builtin["gpt-4.1-mini"])
    expect(Pricing.priceOf(Pricing.builtin, "toString")).toBeUndefined()
    // A snapshot listed at a price of its own is not priced as its model (until December 2026 GPT-4o's first, $5/$15, was priced as gpt-4o's $2.50/$10).
    expect(Pricing.priceOf(Pricing.builtin, "gpt-4o-2024-05-13")).toEqual({ input: 5, output: 15 })
    expect(Pricing.priceOf(Pricing.builtin, "gpt-4o-2024-08-06")).toEqual(Pricing.builtin["gpt-4o"])
    // The CLI's default Anthropic model has its list price (a `--max-cost` on it is counted).
    expect(Pricing.priceOf(Pricing.builtin, "claude-sonnet-5-5")).toEqual({ input: 2, output: 10, cacheRead: 0.2, cacheWrite: 2.5 })
    const table = Pricing.withOverrides({ "claude-haiku-4-5": { input: 0, output: 0 } })
    expect(Pricing.turnCost({ inputTokens: 5, outputTokens: 5, cacheReadTokens: 5 }, "claude-haiku-4-5", "anthropic", table)).toEqual({ cost: 0 })
    expect(Pricing.turnCost({ inputTokens: 5, outputTokens: 5 }, "claude-unreleased-9", "anthropic", table)).toEqual({ cost: null, costUnknown: "claude-unreleased-9" })
    expect(Pricing.pricesAsOf).toMatch(/^\d{4}-\d{2}-\d{2}$/)
  })
  it("a price a settings file gives is a finite rate up to $1,000,000 per million tokens: an overflowing cost would be stored as null and leave a log its store cannot read", () => {
    const decode = (json: string) => Schema.decodeUnknownEither(Pricing.PriceTable)(JSON.parse(json))
    expect(Either.isRight(decode(`{"m":{"input":3,"output":15,"cacheRead":0,"cacheWrite":1000000}}`))).toBe(true)
    // JSON.parse reads 1e400 as Infinity; 1e300 is finite but its cost of a few tokens is not.
    for (const rate of ["1e400", "-1e400", "1e300", "1000001", "-1"]) expect(Either.isLeft(decode(`{"m":{"input":${rate},"output":1}}`)), rate).toBe(true)
  })
})

describe("a session's usage totals", () => {
  it("sum usage, keep cache counts absent until one is reported, add costs to a millionth, and name each unknown model once", () => {
    let totals = Session.addUsage({}, { usage: { inputTokens: 1, outputTokens: 2 }, cost: 0.1, costUnknown: undefined })
    expect(totals).toEqual({ usage: { inputTokens: 1, outputTokens: 2 }, cost: 0.1 })
    totals = Session.addUsage(totals, { usage: { inputTokens: 1, outputTokens: 0, cacheReadTokens: 7 }, cost: 0.2, costUnknown: undefined })
    totals = Session.addUsage(totals, { usage: { inputTokens: 1, outputTokens: 0 }, cost: 0, costUnknown: "m" })
    totals = Session.addUsage(totals, { usage: { inputTokens: 1, outputTokens: 0 }, cost: 0, costUnknown: "m" })
    expect(totals).toEqual({ usage: { inputTokens: 4, outputTokens: 2, cacheReadTokens: 7 }, cost: 0.3, costUnknown: ["m"] })
    expect(UsageText.totalsText(totals)).toBe("tokens in 4 · out 2 · cache read 7 — $0.30; cost unknown for m")
    // Nothing priced: no dollars (until December 2026 `$0.00; cost unknown for m`, read as a known zero).
    const unpriced = Session.addUsage({}, { usage: { inputTokens: 1, outputTokens: 2 }, cost: 0, costUnknown: "m" })
    expect(UsageText.hasKnownCost(unpriced)).toBe(false)
    expect(UsageText.totalsText(unpriced)).toBe("tokens in 1 · out 2 — cost unknown for m")
  })
})
