/**
 * What a turn's responses tell of the prompt cache and the bill: each response's usage with the
 * hashes of its request's parts (`model.usage`), a `cache.break` when the cache's reads drop against
 * the session's previous response — naming the parts whose content changed — and the turn's cost
 * from the price table. Hashes are Effect's cheap string hash (or the sha256 a file part already
 * has), computed only for a response that reported usage.
 *
 * @since 0.9.0
 * @internal
 */
import * as Hash from "effect/Hash"
import type * as AgentEvent from "../domain/AgentEvent.js"
import * as Pricing from "../domain/Pricing.js"
import type { LastRequest } from "../domain/SessionState.js"
import type { PromptPart } from "../services/ContextBuilder.js"
import type { ModelRequest } from "../services/ModelProvider.js"
import * as EventDraft from "./EventDraft.js"
import type { Services } from "./Services.js"

/** What a request was made of, for its usage's record: the system prompt's parts as built, and the request. */
export interface RequestParts {
  readonly parts: ReadonlyArray<PromptPart>
  readonly request: ModelRequest
}

const hashOf = (text: string): string => (Hash.string(text) >>> 0).toString(36)

const toolsHashOf = new WeakMap<ReadonlyArray<unknown>, string>()

/**
 * The hash of a request's tools as sent, kept per list: the engine's steps send one list (see
 * `toolSpecs`), and its JSON (~2.8 KB for the workspace tools) was written and hashed again for every
 * response that reported its usage — every response of a real provider. A list is not changed once
 * made (`ContextBuilder`'s token estimate keeps its count by the list the same way).
 */
const toolsHash = (tools: ReadonlyArray<unknown>): string => {
  let hash = toolsHashOf.get(tools)
  if (hash === undefined) {
    hash = hashOf(JSON.stringify(tools))
    toolsHashOf.set(tools, hash)
  }
  return hash
}

/** The hashes of a request's parts: each system prompt part (by id and source), then its tools. */
export const partHashes = ({ parts, request }: RequestParts): ReadonlyArray<AgentEvent.PromptPartHash> => [
  ...parts.filter((part) => part.content.trim() !== "").map((part) => ({
    part: part.id,
    source: part.source,
    hash: part.sha256 === undefined ? hashOf(part.content) : part.sha256.slice(0, 16)
  })),
  // The tools' names, descriptions and schemas as sent (the `tools` prompt part is only their mention).
  ...(request.tools.length === 0 ? [] : [{ part: "tool definitions", source: "tools", hash: toolsHash(request.tools) }])
]

/** The parts that differ between two requests: changed, added or gone (with the source each had). */
export const changedParts = (
  before: ReadonlyArray<AgentEvent.PromptPartHash>,
  now: ReadonlyArray<AgentEvent.PromptPartHash>
): ReadonlyArray<{ readonly part: string; readonly source: string }> => {
  const key = (p: AgentEvent.PromptPartHash) => `${p.source}\u0000${p.part}`
  const earlier = new Map(before.map((p) => [key(p), p.hash]))
  const later = new Set(now.map(key))
  return [
    ...now.filter((p) => earlier.get(key(p)) !== p.hash),
    ...before.filter((p) => !later.has(key(p)))
  ].map(({ part, source }) => ({ part, source }))
}

/** What a compaction since the last request changed: the history before the cache point. */
const compactedHistory = { part: "history", source: "compaction" } as const

/**
 * The drafts a response's usage adds: `model.usage`, and after it `cache.break` when the response
 * read fewer tokens from the cache than the session's last response that reported usage.
 */
export const usageDrafts = (
  last: LastRequest | undefined,
  usage: AgentEvent.Usage,
  answeredBy: { readonly provider: string; readonly model: string },
  request: RequestParts
): Array<AgentEvent.TurnEventDraft> => {
  const parts = partHashes(request)
  // Compared as stored (whole, non-negative): a raw 99.6 after 100 broke "from 100 to 100", a NaN (stored 0) broke nothing.
  const read = EventDraft.usageOf(usage).cacheReadTokens
  const broke = last !== undefined && read !== undefined && read < last.cacheRead
  return [
    EventDraft.modelUsage(usage, answeredBy, parts),
    ...(broke ? [EventDraft.cacheBreak(last.cacheRead, read, [...changedParts(last.parts, parts), ...(last.compacted ? [compactedHistory] : [])])] : [])
  ]
}

/** The cost fields of `turn.completed` for a turn's usage, from the engine's price table. */
export const costOf = (services: Services, usage: AgentEvent.Usage): Pricing.TurnCost => {
  const { model, provider } = services.provider.capabilities
  return costAt(services, usage, model, provider)
}

/** A usage's cost at `model` of `provider`. Priced as stored: a provider's odd count (NaN, negative, fractional) costs what the log says it used. */
export const costAt = (services: Services, usage: AgentEvent.Usage, model: string, provider: string): Pricing.TurnCost =>
  Pricing.turnCost(EventDraft.usageOf(usage), model, provider, Pricing.withOverrides(services.options.prices))

