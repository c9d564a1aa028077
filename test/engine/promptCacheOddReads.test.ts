/**
 * review51: `PromptCache.usageDrafts` judged a drop in cache reads on the count as the provider gave
 * it, while `model.usage` and `cache.break` store it whole (`EventDraft.usageOf`): 99.6 after 100
 * stored a `cache.break` from 100 to 100, and NaN (stored 0) after 100 stored none. Failed before.
 */
import { describe, expect, it } from "vitest"
import * as PromptCache from "../../src/engine/PromptCache.js"
import type { ModelRequest } from "../../src/services/ModelProvider.js"

const request = { parts: [], request: { system: "", messages: [], tools: [] } as unknown as ModelRequest }
const last = { cacheRead: 100, parts: [] }
const breaks = (cacheReadTokens: number) =>
  PromptCache.usageDrafts(last, { inputTokens: 10, outputTokens: 1, cacheReadTokens }, { provider: "p", model: "m" }, request)
    .flatMap((draft) => (draft.type === "cache.break" ? [draft.payload] : []))

describe("cache.break on a read that is no whole count", () => {
  it("99.6 after 100 is 100 as stored: no break", () => {
    expect(breaks(99.6)).toEqual([])
  })

  it("NaN after 100 is 0 as stored: a break from 100 to 0", () => {
    expect(breaks(Number.NaN)).toEqual([{ previousCacheRead: 100, cacheRead: 0, changed: [] }])
  })

  it("a whole drop still breaks, as before", () => {
    expect(breaks(40)).toEqual([{ previousCacheRead: 100, cacheRead: 40, changed: [] }])
  })
})
