/**
 * The one-line texts about usage, cost and prompt-cache breaks that the CLI, `replay` and the viewer
 * show alike. Types only from the rest of the domain, so the viewer's bundle carries nothing of Effect.
 *
 * @since 0.9.0
 */
import type { PayloadOf, Usage } from "./AgentEvent.js"
import * as Plural from "./Plural.js"

/** Dollars for a line: four decimals under a cent, else two… enough to tell a turn from the next. */
export const dollars = (cost: number): string => `$${cost < 0.01 && cost > 0 ? cost.toFixed(4) : cost.toFixed(2)}`

/** Token counts: `in 412 · out 15 · cache read 128 · cache write 0` (cache counts when reported). */
export const tokensText = (usage: Usage): string => {
  // Concatenated, not an array joined: a listing makes 10,000 of these.
  let text = `in ${usage.inputTokens} · out ${usage.outputTokens}`
  if (usage.cacheReadTokens !== undefined) text += ` · cache read ${usage.cacheReadTokens}`
  if (usage.cacheWriteTokens !== undefined) text += ` · cache write ${usage.cacheWriteTokens}`
  return text
}

/** A cost as recorded: dollars, or which model has no price. */
export const costText = (cost: number | null | undefined, costUnknown: string | undefined): string | undefined =>
  typeof cost === "number" ? dollars(cost) : costUnknown !== undefined ? `cost unknown for ${costUnknown}` : undefined

/** A turn's summary line from its `turn.completed`: `tokens in 412 · out 15 · cache read 128 — $0.0012`; none without usage. */
export const turnText = (completed: PayloadOf<"turn.completed">): string | undefined => {
  if (completed.usage === undefined) return undefined
  const cost = costText(completed.cost, completed.costUnknown)
  return `tokens ${tokensText(completed.usage)}${cost === undefined ? "" : ` — ${cost}`}`
}

/**
 * Why a turn that ended `final` may say less than asked (`turn.completed.finishReason`): the model
 * refused (Anthropic `stop_reason: "refusal"`, OpenAI `refusal` or `content_filter`) — with no text at
 * all, the turn showed nothing — or the output limit cut its answer. None for a whole answer.
 */
export const finishText = (completed: Pick<PayloadOf<"turn.completed">, "finishReason">): string | undefined =>
  completed.finishReason === "content_filter"
    ? "the model refused to answer (content_filter)"
    : completed.finishReason === "length"
    ? "the answer was cut at the output limit (length)"
    : undefined

/** A cache break: `prompt cache break: read 2048 → 0 tokens; changed: AGENTS.md (project)`. */
export const cacheBreakText = (payload: PayloadOf<"cache.break">): string => {
  const changed = payload.changed.length === 0
    ? "no prompt part changed (the cache expired?)"
    : `changed: ${payload.changed.map((c) => `${c.part} (${c.source})`).join(", ")}`
  return `prompt cache break: read ${payload.previousCacheRead} → ${payload.cacheRead} tokens; ${changed}`
}

/**
 * Whether a session's totals have a cost: some turn was priced. The totals keep no count of priced
 * turns, so a session whose models have no price and whose priced turns (if any) cost nothing has
 * none — its `cost` of 0 says only that no price was known.
 */
export const hasKnownCost = (totals: { readonly cost?: number | undefined; readonly costUnknown?: ReadonlyArray<string> | undefined }): boolean =>
  totals.cost !== undefined && (totals.cost > 0 || totals.costUnknown === undefined || totals.costUnknown.length === 0)

/**
 * A session's totals for a listing: `tokens in 14 · out 10 · cache read 103 — $0.25`, and which models had no
 * price (`; cost unknown for model-x`, then the dollars are of the other turns); none without usage.
 */
export const totalsText = (
  totals: { readonly usage?: Usage | undefined; readonly cost?: number | undefined; readonly costUnknown?: ReadonlyArray<string> | undefined }
): string | undefined => {
  if (totals.usage === undefined) return undefined
  const unknown = totals.costUnknown === undefined || totals.costUnknown.length === 0 ? "" : `; cost unknown for ${totals.costUnknown.join(", ")}`
  // No dollars when nothing could be priced: `$0.00; cost unknown for m` read as a known zero.
  if (unknown !== "" && !hasKnownCost(totals)) return `tokens ${tokensText(totals.usage)} — ${unknown.slice(2)}`
  return `tokens ${tokensText(totals.usage)} — ${dollars(totals.cost ?? 0)}${unknown}`
}

/** What a subagent's tree used so far (`subagent.progress`, `subagent.completed`): `3 steps · tokens in 412 · out 15 — $0.0012`. */
export const subagentText = (payload: PayloadOf<"subagent.progress"> | PayloadOf<"subagent.completed">): string =>
  [
    Plural.count(payload.steps, "step"),
    ...(payload.usage === undefined ? [] : [`tokens ${tokensText(payload.usage)}`])
  ].join(" · ") + (payload.cost === undefined ? "" : ` — ${dollars(payload.cost)}`)

/** A subagent's end: `subagent sess_… ended final (3 steps · …)`. */
export const subagentEndText = (payload: PayloadOf<"subagent.completed">): string =>
  `subagent ${payload.childSessionId} ended ${payload.outcome}${payload.errorCode === undefined ? "" : ` (${payload.errorCode})`}: ${subagentText(payload)}`
