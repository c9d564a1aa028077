/**
 * Compaction, the pure part (CONTRACT.md §8): where a compaction cuts a transcript, and the request
 * that asks the model for the summary. The effects (events, the model call, retries, cancellation)
 * are in `engine/Compaction.ts`; how `session.compacted` changes the transcript is in `Transcript`.
 *
 * @since 0.4.0
 */
import * as Tokens from "./Tokens.js"
import * as Transcript from "./Transcript.js"

/** The fixed instruction of every summary request (its system prompt). */
export const summaryInstruction =
  "You are compacting the earlier part of a conversation between a user and a coding agent. The agent will continue " +
  "the work with your summary in place of that part, so keep everything it needs: what the user asked for and every " +
  "constraint they gave; decisions taken and why; files read or changed and commands run, with their outcomes; errors " +
  "met; what is done and what remains to do. Be concise and factual, invent nothing, and answer with the summary only."

/** The user message that closes a summary request, after the conversation. */
export const summaryAsk = "Summarise the conversation above."

/** Where a compaction cuts: the entries it summarises, and the first sequence it keeps verbatim. */
export interface Cut {
  /** The entries before the cut, oldest first (an earlier summary included: it is summarised again). */
  readonly summarised: ReadonlyArray<Transcript.TranscriptEntry>
  /**
   * Every entry that began at or after this sequence is kept verbatim. When nothing is kept, the
   * sequence after the last event (the `compaction.started` to come).
   */
  readonly firstKeptSequence: number
}

/** Who the requests go to: thinking another model wrote is not sent them, so it is not counted. */
type Recipient = { readonly provider: string; readonly model: string } | undefined

const entryTokens = (entry: Transcript.TranscriptEntry, sendsTo: Recipient): number => {
  const messages = Transcript.messages({ entries: [entry], open: undefined })
  return Tokens.estimateJson(sendsTo === undefined ? messages : Transcript.sentTo(messages, sendsTo))
}

/**
 * The cut of a transcript: the most recent entry is always kept, and the entries before it while
 * their estimated tokens fit `keepRecentTokens`; everything earlier is summarised. Entries are cut
 * whole, and a tool call's results belong to the entry of its call, so no cut separates a call from
 * its result. `undefined` when there is nothing to summarise (no entry but an earlier summary before
 * the cut). `nextSequence`: the sequence the compaction's first event will get. `sendsTo`: the model
 * the requests go to, whose estimate leaves out the thinking other models wrote.
 */
export const cut = (transcript: Transcript.Transcript, keepRecentTokens: number, nextSequence: number, sendsTo?: Recipient): Cut | undefined => {
  const entries = Transcript.all(transcript)
  let first = entries.length
  let kept = 0
  while (first > 0) {
    const entry = entries[first - 1]!
    // A summary is never kept verbatim: the next summary replaces it.
    if (entry.role === "summary" || entry.sequence === undefined) break
    const tokens = entryTokens(entry, sendsTo)
    if (first < entries.length && kept + tokens > keepRecentTokens) break
    kept += tokens
    first--
  }
  first = withTurnThinking(entries, first, kept, keepRecentTokens, sendsTo)
  const summarised = entries.slice(0, first)
  if (!summarised.some((entry) => entry.role !== "summary")) return undefined
  return { summarised, firstKeptSequence: entries[first]?.sequence ?? nextSequence }
}

/**
 * Where a cut inside the active assistant turn (the entries after the last user message or summary)
 * goes instead: back to that turn's first entry when it carries thinking that can be sent back and
 * the kept part then stays within twice the recent window. A turn with thinking on must open with a
 * thinking block (Transcript.activeTurnThinks); one whose first step is summarised away goes on
 * without thinking (the adapters ask for none), so the cut keeps it where that costs little.
 */
const withTurnThinking = (entries: ReadonlyArray<Transcript.TranscriptEntry>, first: number, kept: number, keepRecentTokens: number, sendsTo: Recipient): number => {
  let opening = entries.length
  while (opening > 0 && entries[opening - 1]!.role === "assistant") opening--
  const entry = entries[opening]
  if (opening >= first || entry?.role !== "assistant" || entry.sequence === undefined || !Transcript.opensWithThinking(entry.thinking, Transcript.sendable)) return first
  let tokens = kept
  for (let i = opening; i < first; i++) tokens += entryTokens(entries[i]!, sendsTo)
  return tokens <= 2 * keepRecentTokens ? opening : first
}

/**
 * The cut of a compaction the user asked for when the recent window would keep everything (a short
 * session): all but the last turn is summarised. `undefined` when there is nothing before that turn
 * but an earlier summary.
 */
export const cutBeforeLastTurn = (transcript: Transcript.Transcript): Cut | undefined => {
  const entries = Transcript.all(transcript)
  let first = entries.length
  const lastTurn = entries.at(-1)?.turnId
  while (first > 0) {
    const entry = entries[first - 1]!
    if (entry.role === "summary" || entry.sequence === undefined || entry.turnId !== lastTurn) break
    first--
  }
  const summarised = entries.slice(0, first)
  const kept = entries[first]
  if (kept?.sequence === undefined || !summarised.some((entry) => entry.role !== "summary")) return undefined
  return { summarised, firstKeptSequence: kept.sequence }
}

/** One entry as plain text for the summary request. */
const renderEntry = (entry: Transcript.TranscriptEntry): string => {
  switch (entry.role) {
    case "summary":
      return `[Summary of the conversation before]\n${entry.content}`
    case "user":
      return `[User]\n${entry.content}`
    case "assistant": {
      const parts = entry.content === "" ? [] : [`[Assistant]\n${entry.content}`]
      for (const call of entry.toolCalls) {
        parts.push(`[Tool call ${call.tool}] ${JSON.stringify(call.args)}`)
        if (call.result !== undefined) parts.push(`[Tool result${call.result.isError ? " (error)" : ""}]\n${call.result.content}`)
      }
      return parts.join("\n")
    }
  }
}

/** A summary request: the fixed instruction, then one user message holding the conversation as text, no tools. */
export interface SummaryRequest {
  readonly system: string
  readonly messages: ReadonlyArray<Transcript.Message>
  readonly tools: ReadonlyArray<never>
}

/**
 * The request for the summary of `entries`. The conversation goes as text in one user message, so
 * the request is well-formed for every vendor whatever the cut (a part ending in tool results, a
 * summary first).
 */
export const summaryRequest = (entries: ReadonlyArray<Transcript.TranscriptEntry>): SummaryRequest => ({
  system: summaryInstruction,
  messages: [{ role: "user", content: `<conversation>\n${entries.map(renderEntry).join("\n\n")}\n</conversation>\n\n${summaryAsk}` }],
  tools: []
})

/** The estimated tokens of a summary request, as the overflow preflight counts a request. */
export const summaryTokens = (request: SummaryRequest): number => Tokens.estimate(request.system) + Tokens.estimateJson(request.messages)

/**
 * The entries a summary request can carry within `maxTokens`: the oldest are dropped until it
 * fits (what they said is lost to the summary). Empty when not even the newest fits.
 */
export const fitting = (
  entries: ReadonlyArray<Transcript.TranscriptEntry>,
  maxTokens: number
): ReadonlyArray<Transcript.TranscriptEntry> => {
  // Each entry's share first (one pass), then the exact estimate of what is left.
  const shares = entries.map((entry) => Tokens.estimateJson(renderEntry(entry)))
  let total = summaryTokens(summaryRequest([])) + shares.reduce((a, b) => a + b, 0)
  let from = 0
  while (from < entries.length && total > maxTokens) total -= shares[from++]!
  while (from < entries.length && summaryTokens(summaryRequest(entries.slice(from))) > maxTokens) from++
  return entries.slice(from)
}
