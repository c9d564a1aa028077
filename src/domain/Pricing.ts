/**
 * What a turn costs: a price table (per model, US dollars per million tokens) and the arithmetic
 * from a turn's usage to dollars. A model the table does not know has no cost: the turn says which
 * model it was (`costUnknown`) rather than guess.
 *
 * @since 0.9.0
 */
import * as Schema from "effect/Schema"
import type { Usage } from "./AgentEvent.js"

/**
 * Dollars per million tokens, at most a million: no model costs near it, and a bound keeps every cost
 * finite (a safe-integer count of tokens at this rate is). An infinite or overflowing rate (`1e400`
 * parses as Infinity) would make a cost that JSON writes as `null`, which the log cannot read back.
 */
const Rate = Schema.Number.pipe(Schema.between(0, 1_000_000))

/** One model's prices, US dollars per million tokens. `cacheRead`/`cacheWrite` default to `input`. */
export const Price = Schema.Struct({
  input: Rate,
  output: Rate,
  cacheRead: Schema.optional(Rate),
  cacheWrite: Schema.optional(Rate)
})
/** One model's prices, US dollars per million tokens. */
export type Price = typeof Price.Type

/** Prices by model name. */
export const PriceTable = Schema.Record({ key: Schema.String, value: Price })
/** Prices by model name. */
export type PriceTable = typeof PriceTable.Type

/** When the built-in prices were read from the vendors' pricing pages. */
export const pricesAsOf = "2025-11-24"

/**
 * The built-in prices (as of {@link pricesAsOf}; `claude-sonnet-5-5`, the CLI's default Anthropic
 * model, and `gpt-4o-2024-05-13` read on 2026-12-07): Anthropic's list prices with 5-minute cache
 * writes (1.25 × input) and cache reads (0.1 × input); OpenAI's with cached input (OpenAI charges
 * nothing extra to write its cache; `gpt-4o-2024-05-13` lists no cached price). A newer model, or a
 * negotiated price, goes in the user's settings (`prices`) or the engine's `prices` option, which
 * take precedence.
 */
export const builtin: PriceTable = {
  "claude-sonnet-5-5": { input: 2, output: 10, cacheRead: 0.2, cacheWrite: 2.5 },
  "claude-opus-4-5": { input: 5, output: 25, cacheRead: 0.5, cacheWrite: 6.25 },
  "claude-opus-4-1": { input: 15, output: 75, cacheRead: 1.5, cacheWrite: 18.75 },
  "claude-opus-4": { input: 15, output: 75, cacheRead: 1.5, cacheWrite: 18.75 },
  "claude-sonnet-4-5": { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 },
  "claude-sonnet-4": { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 },
  "claude-haiku-4-5": { input: 1, output: 5, cacheRead: 0.1, cacheWrite: 1.25 },
  "claude-3-5-haiku": { input: 0.8, output: 4, cacheRead: 0.08, cacheWrite: 1 },
  "gpt-5": { input: 1.25, output: 10, cacheRead: 0.125, cacheWrite: 1.25 },
  "gpt-5-mini": { input: 0.25, output: 2, cacheRead: 0.025, cacheWrite: 0.25 },
  "gpt-5-nano": { input: 0.05, output: 0.4, cacheRead: 0.005, cacheWrite: 0.05 },
  "gpt-4.1": { input: 2, output: 8, cacheRead: 0.5, cacheWrite: 2 },
  "gpt-4.1-mini": { input: 0.4, output: 1.6, cacheRead: 0.1, cacheWrite: 0.4 },
  "gpt-4.1-nano": { input: 0.1, output: 0.4, cacheRead: 0.025, cacheWrite: 0.1 },
  "gpt-4o": { input: 2.5, output: 10, cacheRead: 1.25, cacheWrite: 2.5 },
  // GPT-4o's first snapshot is listed at its own price, twice the later ones': not priced as `gpt-4o`.
  "gpt-4o-2024-05-13": { input: 5, output: 15 },
  "gpt-4o-mini": { input: 0.15, output: 0.6, cacheRead: 0.075, cacheWrite: 0.15 },
  "o4-mini": { input: 1.1, output: 4.4, cacheRead: 0.275, cacheWrite: 1.1 }
}

/** The built-in table with `overrides` over it (an override replaces a model's whole entry). */
export const withOverrides = (overrides: PriceTable | undefined): PriceTable =>
  overrides === undefined ? builtin : { ...builtin, ...overrides }

// A dated snapshot ("claude-sonnet-4-5-20250929", "gpt-4.1-mini-2025-04-14") is priced as its model,
// unless the table lists the snapshot itself: one whose list price differs ("gpt-4o-2024-05-13") is.
const datedSuffix = /-(?:\d{8}|\d{4}-\d{2}-\d{2})$/

/** A model's price: by its exact name, else by its name without a date suffix; `undefined` when unknown. */
export const priceOf = (table: PriceTable, model: string): Price | undefined =>
  Object.hasOwn(table, model) ? table[model] : (() => {
    const undated = model.replace(datedSuffix, "")
    return undated !== model && Object.hasOwn(table, undated) ? table[undated] : undefined
  })()

/**
 * The input tokens a usage was charged at the full input price. Anthropic reports `input_tokens`
 * without the cache's reads and writes; OpenAI's `prompt_tokens` include the cached ones, so the
 * cached share is taken out for the `openai` provider.
 */
export const uncachedInput = (usage: Usage, provider: string): number =>
  provider === "openai" ? Math.max(0, usage.inputTokens - (usage.cacheReadTokens ?? 0)) : usage.inputTokens

/** All the input tokens of a usage: uncached, read from the cache and written to it. */
export const totalInput = (usage: Usage, provider: string): number =>
  uncachedInput(usage, provider) + (usage.cacheReadTokens ?? 0) + (usage.cacheWriteTokens ?? 0)

/** What a usage cost, in US dollars (rounded to a millionth of a dollar). */
export const costOf = (usage: Usage, price: Price, provider: string): number => {
  const perToken = (rate: number) => rate / 1_000_000
  const dollars = uncachedInput(usage, provider) * perToken(price.input) +
    usage.outputTokens * perToken(price.output) +
    (usage.cacheReadTokens ?? 0) * perToken(price.cacheRead ?? price.input) +
    (usage.cacheWriteTokens ?? 0) * perToken(price.cacheWrite ?? price.input)
  return Math.round(dollars * 1_000_000) / 1_000_000
}

/**
 * Whether a provider's spending is nothing to count against `maxCost`: the built-in echo model and a
 * script without a provider (`fake`). Its reported usage stays unpriced in the log, but a cost cap
 * neither refuses its turn nor trips on it; `maxTokens` still counts its tokens.
 */
export const spendsNothing = (provider: string): boolean => provider === "fake"

/** A turn's cost as `turn.completed` records it: dollars, or `null` and the model no price is known for. */
export type TurnCost = { readonly cost: number } | { readonly cost: null; readonly costUnknown: string }

const isPrice = Schema.is(Price)

/**
 * A turn's cost from its usage, the model that answered, its provider and the price table. A price
 * outside {@link Price}'s bounds (an embedder's `prices` option is typed, not decoded: Infinity, NaN,
 * a negative or overflowing rate) is no price: the cost is unknown and names the model, never an
 * infinite cost that JSON would write as `null` where the log's schema wants a number.
 */
export const turnCost = (usage: Usage, model: string, provider: string, table: PriceTable): TurnCost => {
  const price = priceOf(table, model)
  return price === undefined || !isPrice(price) ? { cost: null, costUnknown: model } : { cost: costOf(usage, price, provider) }
}
