/**
 * Transcript replay (CONTRACT.md §5): the conversation a session's events tell — user messages,
 * assistant text, tool calls and their results. It is what the next model request is built from
 * and what UIs show. A pure reducer, kept live by the engine and equal to a replay of the log.
 *
 * @since 0.1.0
 */
import type { AgentEvent, EventOfType, EventType } from "./AgentEvent.js"
import * as Branches from "./Branches.js"
import { type ImageRef, note } from "./Image.js"
import type { Json } from "./Json.js"

/** A tool call the model made, with its result once the call ended. */
export interface TranscriptToolCall {
  readonly toolCallId: string
  readonly tool: string
  readonly args: Json
  readonly result?: { readonly content: string; readonly isError: boolean; readonly images?: ReadonlyArray<ImageRef> | undefined }
}

/**
 * A thinking block of a response (Anthropic extended thinking), in the order the response gave them.
 * `provider` and `model`: who wrote it, set when the block ended (`model.thinking_block`); absent
 * while it streams, or when the stream was cut inside it. `signature` (a thinking block's) or
 * `redacted` (a redacted block's `data`): what lets it be sent back ({@link sendable}).
 */
export interface ThinkingBlock {
  readonly text: string
  readonly provider?: string
  readonly model?: string
  readonly signature?: string
  readonly redacted?: string
  /**
   * Where the block sat in its response: the length of the response's text and the number of its
   * calls when the block ended — present only when some came before it (interleaved thinking:
   * `[thinking, text, thinking, tool_use]`). Read from the log's order by the fold, so replay, the
   * live transcript and {@link reduce} agree, and an old log gets it too. Absent: the block opens
   * the response, where a block without it is sent.
   */
  readonly at?: ThinkingPlace
}

/** A place in a response: after `text` characters of its text and `calls` of its calls. */
export interface ThinkingPlace {
  readonly text: number
  readonly calls: number
}

/** How a `model.thinking_block` ends a block: who wrote it, and its signature or redacted data. */
export interface ThinkingEnd {
  readonly provider: string
  readonly model: string
  readonly signature?: string | undefined
  readonly redacted?: string | undefined
}

/**
 * Whether a block can be sent back to a vendor: it ended signed, or redacted. A block the stream
 * never signed (cut inside it, or a vendor that signs none) is shown only: the API refuses one
 * without its signature.
 */
export const sendable = (block: ThinkingBlock): boolean => block.model !== undefined && (block.signature !== undefined || block.redacted !== undefined)

/**
 * Whether a block can be sent back to `provider`'s `model`: it is {@link sendable} and that model
 * wrote it (a signature is its writer's; thinking from before a switch is the other model's).
 */
export const sendableTo = (block: ThinkingBlock, provider: string, model: string): boolean =>
  sendable(block) && block.provider === provider && block.model === model

/** A block's signature or redacted data, each only when there is one. */
export const proofOf = (block: { readonly signature?: string | undefined; readonly redacted?: string | undefined }) => ({
  ...(block.signature === undefined ? {} : { signature: block.signature }),
  ...(block.redacted === undefined ? {} : { redacted: block.redacted })
})

/**
 * Whether the active assistant turn of `messages` — the assistant's messages after the last user
 * message (tool results do not end it) — opens with a block `sends` keeps, or there is none yet.
 * Anthropic: "You cannot toggle thinking in the middle of an assistant turn, including during tool
 * use loops. The entire assistant turn should operate in a single thinking mode: if thinking is
 * enabled, the final assistant turn should start with a thinking block" (docs, extended thinking,
 * "Toggling thinking modes in conversations"). A compaction can summarise a turn's first step away
 * (see `Compaction.cut`): such a request asks for no thinking ({@link withoutActiveThinking}).
 */
export const activeTurnThinks = (messages: ReadonlyArray<Message>, sends: (block: ThinkingBlock) => boolean): boolean => {
  let first: Message | undefined = undefined
  for (let i = messages.length - 1; i >= 0 && messages[i]!.role !== "user"; i--) if (messages[i]!.role === "assistant") first = messages[i]
  return first?.role !== "assistant" || opensWithThinking(first.thinking, sends)
}

/**
 * Whether what is sent of a response's thinking opens it: the first block kept has no place (it came
 * before any text or call). `[T1 cut, text, T2, tool_use]` sends `[text, T2, tool_use]`, which does not.
 */
export const opensWithThinking = (thinking: ReadonlyArray<ThinkingBlock> | undefined, sends: (block: ThinkingBlock) => boolean): boolean => {
  const opening = thinking?.find(sends)
  return opening !== undefined && opening.at === undefined
}

/** The messages with no thinking in the active assistant turn: what a request that asks for none carries. */
export const withoutActiveThinking = (messages: ReadonlyArray<Message>): ReadonlyArray<Message> => {
  let i = messages.length
  while (i > 0 && messages[i - 1]!.role !== "user") i--
  return messages.slice(0, i).concat(messages.slice(i).map((m) => {
    if (m.role !== "assistant" || m.thinking === undefined) return m
    const { thinking: _, ...rest } = m
    return rest
  }))
}

/**
 * The JSON characters the thinking of the active assistant turn adds to a request to `to` (what
 * {@link withoutActiveThinking} takes away from {@link sentTo}'s messages): the length each of its
 * messages loses without its thinking.
 */
export const activeThinkingChars = (messages: ReadonlyArray<Message>, to: { readonly provider: string; readonly model: string }): number => {
  let start = messages.length
  while (start > 0 && messages[start - 1]!.role !== "user") start--
  let chars = 0
  for (const message of sentTo(messages.slice(start), to)) {
    if (message.role !== "assistant" || message.thinking === undefined) continue
    const { thinking: _, ...without } = message
    chars += JSON.stringify(message).length - JSON.stringify(without).length
  }
  return chars
}

/**
 * A block ended: the text streamed so far with who wrote it and its signature or data (each only
 * when there is one), and where it sat when the response had said something before it.
 */
const endedBlock = (text: string, end: ThinkingEnd, said: number, called: number): ThinkingBlock => ({
  text,
  provider: end.provider,
  model: end.model,
  ...proofOf(end),
  ...(said === 0 && called === 0 ? {} : { at: { text: said, calls: called } })
})

/**
 * An assistant message's blocks in the order the response gave them — its thinking blocks each at
 * its place ({@link ThinkingBlock.at}; one without a place opens the message), its text and calls
 * between them — as `part` makes each. Anthropic: an assistant message with thinking goes back as
 * received; rearranged thinking is refused. Text comes before calls between two thinking blocks
 * (the response's text and calls are kept apart); an empty piece of text is not sent.
 */
export const inResponseOrder = <P>(
  message: { readonly content: string; readonly toolCalls: ReadonlyArray<{ readonly toolCallId: string; readonly tool: string; readonly args: Json }> },
  blocks: ReadonlyArray<ThinkingBlock>,
  part: {
    readonly thinking: (block: ThinkingBlock) => ReadonlyArray<P>
    readonly text: (text: string) => P
    readonly call: (call: { readonly toolCallId: string; readonly tool: string; readonly args: Json }) => P
  }
): Array<P> => {
  const out: Array<P> = []
  let said = 0
  let called = 0
  let split = false
  // Up to a place (never back: a place past the end, or before one already reached, is read as the nearest it can be).
  // A piece of text cut out by thinking that is only white space (the "\n\n" between blocks) is left out: the
  // Messages API refuses a text block without other characters, and the text was one block when it streamed.
  const upTo = (text: number, calls: number) => {
    const textEnd = Math.max(said, Math.min(text, message.content.length))
    const callsEnd = Math.max(called, Math.min(calls, message.toolCalls.length))
    const piece = message.content.slice(said, textEnd)
    if (textEnd > said && !(split && piece.trim() === "")) out.push(part.text(piece))
    for (let i = called; i < callsEnd; i++) out.push(part.call(message.toolCalls[i]!))
    said = textEnd
    called = callsEnd
  }
  for (const block of blocks) {
    const parts = part.thinking(block)
    if (parts.length === 0) continue
    if (block.at !== undefined) {
      split = true
      upTo(block.at.text, block.at.calls)
    }
    out.push(...parts)
  }
  upTo(message.content.length, message.toolCalls.length)
  return out
}

/** The blocks with thinking text added: to the last one while it streams, else as a new one. */
const withThinkingText = (blocks: ReadonlyArray<ThinkingBlock> | undefined, text: string): ReadonlyArray<ThinkingBlock> => {
  const last = blocks?.at(-1)
  return last !== undefined && last.model === undefined ? [...blocks!.slice(0, -1), { text: last.text + text }] : [...(blocks ?? []), { text }]
}

/** The blocks with the streaming one ended (or, when none streams, an empty one: a signature with no thinking before it). */
const withThinkingEnd = (entry: AssistantEntry, end: ThinkingEnd): ReadonlyArray<ThinkingBlock> => {
  const blocks = entry.thinking
  const last = blocks?.at(-1)
  const ended = (text: string) => endedBlock(text, end, entry.content.length, entry.toolCalls.length)
  return last !== undefined && last.model === undefined ? [...blocks!.slice(0, -1), ended(last.text)] : [...(blocks ?? []), ended("")]
}

/** What the assistant said in one model response: text and tool calls, and its thinking when it had some. */
export interface AssistantEntry {
  readonly role: "assistant"
  readonly turnId: string
  readonly content: string
  readonly toolCalls: ReadonlyArray<TranscriptToolCall>
  /** The response's thinking blocks (extended thinking), present only when it had some. */
  readonly thinking?: ReadonlyArray<ThinkingBlock>
  /** The sequence of the event that began the entry (set by {@link reduce}); where a compaction may cut. */
  readonly sequence?: number
}

/** A message of the user: a turn's `user.message`, or a `turn.steered`. */
export interface UserEntry {
  readonly role: "user"
  readonly turnId: string
  readonly content: string
  /** The images sent with the message (references to blobs), when there are some. */
  readonly images?: ReadonlyArray<ImageRef> | undefined
  /** The sequence of the event that began the entry (set by {@link reduce}); where a compaction may cut. */
  readonly sequence?: number
}

/**
 * What a compaction (`session.compacted`) left of the entries before its cut: the model's summary.
 * Always the first entry; the model sees it as a user message (see {@link summaryMessage}).
 * `turnId`: the turn it was made in, none for a manual compaction.
 */
export interface SummaryEntry {
  readonly role: "summary"
  readonly turnId?: string | undefined
  readonly compactionId: string
  readonly content: string
  readonly sequence: number
}

/** One entry of a transcript. */
export type TranscriptEntry = UserEntry | AssistantEntry | SummaryEntry

/** How the model sees a compaction's summary: a user message, this prefix, then the summary. */
export const summaryPrefix = "Summary of the conversation so far:\n\n"

/** The user message a compaction's summary becomes in a model request. */
export const summaryMessage = (summary: string): string => summaryPrefix + summary

/** A session's conversation so far. */
export interface Transcript {
  /** The entries whose model response has ended. */
  readonly entries: ReadonlyArray<TranscriptEntry>
  /**
   * The response still streaming, kept apart so that each delta updates one entry instead of
   * copying the whole conversation.
   */
  readonly open: AssistantEntry | undefined
  /** What rewinds took out of the conversation, kept so that a later rewind can bring it back; absent before the first rewind. */
  readonly past?: Past | undefined
}

/**
 * What rewinds took out of the conversation, kept so that a later rewind can bring it back: the
 * branches of the log since the last compaction (see `Branches`), and the entries of each branch
 * but the newest as they were when the session last left it, in sequence order (the first
 * branch's summary first). A compaction clears it: a rewind never goes back past one.
 *
 * Its lists are shared by the versions of one fold (a later rewind appends to them in place, see
 * `Branches.Grown`): a transcript kept while the fold goes on keeps {@link settledPast} of its
 * past, as the engine's snapshots do, or compares by `all`/`messages` rather than whole.
 */
export interface Past {
  readonly branches: Branches.Branches
  readonly entries: Branches.Grown<ReadonlyArray<TranscriptEntry>>
}

/**
 * `past` as a value of its own, for a transcript handed out while the fold goes on: its lists are
 * shared with the fold's later versions, which append to them in place (see `Branches.Grown`).
 */
export const settledPast = (past: Past): Past => ({
  branches: { all: Branches.settled(past.branches.all), top: past.branches.top },
  entries: Branches.settled(past.entries)
})

/** What `session.rewound` says, as {@link rewound} applies it. */
export interface Rewind {
  readonly toSequence: number
  /** The sequence of the `session.rewound` event. */
  readonly sequence: number
}

/**
 * Whether the event at `sequence` is part of the session as it was at `at`: walking back from `at`,
 * a rewind jumps to its target, so the events between a rewind's target and the rewind are an
 * abandoned branch. `rewinds`: `[sequence, toSequence]`, oldest first.
 */
export const onBranch = (sequence: number, at: number, rewinds: ReadonlyArray<readonly [number, number]>): boolean => {
  let current = at
  for (let i = rewinds.length - 1; i >= 0; i--) {
    const [rewind, to] = rewinds[i]!
    if (rewind > current) continue
    if (sequence >= rewind) return sequence <= current
    current = to
    if (sequence > current) return false
  }
  return sequence <= current
}

const sequenceOf = (entry: TranscriptEntry) => entry.sequence ?? 0

/** The index of the first entry of `entries` from `from` on (in sequence order from there) that began after `after`. */
const firstAfter = (entries: ReadonlyArray<TranscriptEntry>, after: number, from: number): number => {
  let lo = from
  let hi = entries.length
  while (lo < hi) {
    const mid = (lo + hi) >> 1
    if (sequenceOf(entries[mid]!) <= after) lo = mid + 1
    else hi = mid
  }
  return lo
}

/** Where a list of entries is in sequence order from: after its summary, when it begins with one. */
const afterSummary = (entries: ReadonlyArray<TranscriptEntry>) => (entries[0]?.role === "summary" ? 1 : 0)

/**
 * What a rewind does to the entries held (in sequence order, the summary first): the first `keep`
 * stay, `back` follows them; `past` is what is kept for later rewinds. {@link rewound} and the
 * engine's live transcript (which changes its entries in place) both apply it.
 */
export interface RewindChange {
  readonly keep: number
  readonly back: ReadonlyArray<TranscriptEntry>
  readonly past: Past
}

/**
 * A rewind, as the entries held must change: what costs is what leaves the conversation and what
 * comes back (see `Branches`), never every entry or rewind so far. The entries the session leaves
 * are kept as they are now: the newest branch's all at once (each branch is left as the newest
 * once), an older one's only when an event changed one of them since it came back (a result
 * attached to an old call: only a log `SessionState` refuses can do it).
 */
export const rewindChange = (entries: ReadonlyArray<TranscriptEntry>, past: Past | undefined, rewind: Rewind): RewindChange => {
  const branches = past?.branches ?? Branches.initial
  const newest = branches.all.length - 1
  const start = branches.all.items[newest]!.start
  let kept = Branches.grown(past?.entries ?? Branches.none<ReadonlyArray<TranscriptEntry>>(), entries.slice(newest === 0 ? 0 : firstAfter(entries, start - 1, afterSummary(entries))))
  const change = Branches.rewind(branches, rewind.sequence, rewind.toSequence)
  const keep = firstAfter(entries, change.shared, afterSummary(entries))
  // The entries left, in sequence order, are those of the ranges left, in order.
  let i = keep
  for (const range of change.left) {
    const branch = kept.items[range.branch]!
    let j = firstAfter(branch, range.after, afterSummary(branch))
    let changed: Array<TranscriptEntry> | undefined = undefined
    for (; i < entries.length && sequenceOf(entries[i]!) <= range.upTo; i++, j++) {
      if (range.branch === newest || j >= branch.length || branch[j] === entries[i]) continue
      changed ??= branch.slice()
      changed[j] = entries[i]!
    }
    if (changed !== undefined) kept = Branches.replaced(kept, range.branch, changed)
  }
  const back: Array<TranscriptEntry> = []
  for (const range of change.back) {
    const branch = kept.items[range.branch]!
    for (let j = firstAfter(branch, range.after, afterSummary(branch)); j < branch.length && sequenceOf(branch[j]!) <= range.upTo; j++) back.push(branch[j]!)
  }
  return { keep, back, past: { branches: change.next, entries: kept } }
}

/**
 * A rewind applied: the conversation as it was at `toSequence` — the entries that began on its
 * branch (see {@link onBranch}), from those held now and those earlier rewinds took out — and
 * what it takes out kept in `past`. Exact for any point since the last compaction (the engine
 * refuses a rewind past one).
 */
export const rewound = (transcript: Transcript, rewind: Rewind): Transcript => {
  const { entries } = closed(transcript)
  const change = rewindChange(entries, transcript.past, rewind)
  return { entries: entries.slice(0, change.keep).concat(change.back), open: undefined, past: change.past }
}

/** A message as a model request carries it: tool results are messages of their own, in call order. */
export type Message =
  | {
    readonly role: "user"
    readonly content: string
    /** Images sent with the message, by blob reference: the request's `images` holds their bytes (see `ModelRequest`). */
    readonly images?: ReadonlyArray<ImageRef>
  }
  | {
    readonly role: "assistant"
    readonly content: string
    readonly toolCalls: ReadonlyArray<{ readonly toolCallId: string; readonly tool: string; readonly args: Json }>
    /**
     * The response's thinking blocks that can be sent back ({@link sendable}), in order, present
     * only when there are some. An adapter sends a vendor only its own model's blocks (a signature
     * is the writer's), each at its place among the text and the calls ({@link inResponseOrder}).
     */
    readonly thinking?: ReadonlyArray<ThinkingBlock>
  }
  | {
    readonly role: "tool"
    readonly toolCallId: string
    readonly tool: string
    readonly content: string
    readonly isError: boolean
    /** Images the tool returned, by blob reference (their bytes: the request's `images`). */
    readonly images?: ReadonlyArray<ImageRef>
  }

/** An empty transcript. */
export const empty: Transcript = { entries: [], open: undefined }

/** Every entry, the streaming response included. */
export const all = (transcript: Transcript): ReadonlyArray<TranscriptEntry> =>
  transcript.open === undefined ? transcript.entries : [...transcript.entries, transcript.open]

/** Ends the streaming response, if any: it joins the entries. */
const closed = (transcript: Transcript): Transcript =>
  transcript.open === undefined ? transcript : { entries: [...transcript.entries, transcript.open], open: undefined }

const withOpen = (transcript: Transcript, turnId: string, sequence: number, update: (entry: AssistantEntry) => AssistantEntry): Transcript => ({
  entries: transcript.entries,
  open: update(transcript.open ?? { role: "assistant", turnId, content: "", toolCalls: [], sequence })
})

/** What `session.compacted` says, as {@link compacted} applies it. */
export interface Compaction {
  readonly compactionId: string
  readonly summary: string
  readonly firstKeptSequence: number
  /** The sequence of the `session.compacted` event. */
  readonly sequence: number
  readonly turnId?: string | undefined
}

/**
 * A compaction applied: the summary first, then the entries that began at or after
 * `firstKeptSequence`, verbatim. An earlier summary is always replaced: the new one was written
 * from it. A tool call's results belong to its entry, so no cut can separate them.
 */
export const compacted = (transcript: Transcript, compaction: Compaction): Transcript => {
  const { entries } = closed(transcript)
  const summary: SummaryEntry = {
    role: "summary",
    ...(compaction.turnId === undefined ? {} : { turnId: compaction.turnId }),
    compactionId: compaction.compactionId,
    content: compaction.summary,
    sequence: compaction.sequence
  }
  const kept = entries.filter((e) => e.role !== "summary" && (e.sequence ?? 0) >= compaction.firstKeptSequence)
  return { entries: [summary, ...kept], open: undefined }
}

/** A call's result; `images` only when there are some. */
export const resultOf = (content: string, isError: boolean, images: ReadonlyArray<ImageRef> | undefined): NonNullable<TranscriptToolCall["result"]> =>
  images === undefined || images.length === 0 ? { content, isError } : { content, isError, images }

const withResult = (transcript: Transcript, toolCallId: string, content: string, isError: boolean, images?: ReadonlyArray<ImageRef>): Transcript => {
  const { entries } = closed(transcript)
  // Results attach to their call, so messages() returns them in call order whatever the completion order.
  for (let i = entries.length - 1; i >= 0; i--) {
    const entry = entries[i]!
    if (entry.role !== "assistant" || !entry.toolCalls.some((c) => c.toolCallId === toolCallId)) continue
    const updated: TranscriptEntry = {
      ...entry,
      toolCalls: entry.toolCalls.map((c) => (c.toolCallId === toolCallId ? { ...c, result: resultOf(content, isError, images) } : c))
    }
    return { entries: entries.with(i, updated), open: undefined }
  }
  return { entries, open: undefined }
}

/**
 * What an event can do to a transcript, for each way one is held: the immutable {@link Transcript}
 * (see {@link reduce}), or a {@link Held} one, changed in place (replay's, the engine's live one).
 * Which event does which is said once, in {@link apply}.
 */
export interface Changes<T> {
  /** A message of the user (a turn's `user.message`, a `turn.steered`): it ends the response streaming. */
  readonly user: (transcript: T, turnId: string, content: string, sequence: number, images?: ReadonlyArray<ImageRef>) => T
  /** Text of the response streaming; `sequence` begins it when none streams. */
  readonly text: (transcript: T, turnId: string, text: string, sequence: number) => T
  /** Thinking text of the response streaming; `sequence` begins it when none streams. */
  readonly thinking: (transcript: T, turnId: string, text: string, sequence: number) => T
  /** A thinking block of the response streaming ended; `sequence` begins the response when none streams. */
  readonly thinkingEnd: (transcript: T, turnId: string, end: ThinkingEnd, sequence: number) => T
  /** A tool call of the response streaming; `sequence` begins it when none streams. */
  readonly call: (transcript: T, turnId: string, call: TranscriptToolCall, sequence: number) => T
  /** A call's result, attached to its call: it ends the response streaming. */
  readonly result: (transcript: T, toolCallId: string, content: string, isError: boolean, images?: ReadonlyArray<ImageRef>) => T
  /** A compaction (see {@link compacted}). */
  readonly compacted: (transcript: T, compaction: Compaction) => T
  /** A rewind (see {@link rewound}). */
  readonly rewound: (transcript: T, rewind: Rewind) => T
  /**
   * The provider refused a request of turn `turnId` as invalid (see {@link refusedTurn}): the images
   * the turn brought are left out of later requests, each as a note (see {@link withoutImages}).
   */
  readonly refused: (transcript: T, turnId: string) => T
  /** Another event of a turn: the response streaming ends. */
  readonly close: (transcript: T) => T
}

/**
 * Whether a turn ended because the provider refused its request as invalid (`invalid_request`: an
 * HTTP 400, which the same request would get again). A request carries every image of the
 * conversation, so one image the provider cannot process ("Could not process image") made every
 * later request of the session fail the same way, text-only messages included. The likeliest cause
 * of such a refusal is what the turn added, and what it added that is not text is its images: they
 * are left out from then on. Vendors' messages for it vary ("Could not process image", "Invalid
 * request."), so the refusal's kind decides, not its words; a turn refused for another reason loses
 * its images from later requests too, and its notes say how to send them again.
 */
export const refusedTurn = (event: EventOfType<"turn.completed">): boolean =>
  event.payload.stopReason === "error" && event.payload.errorCode === "invalid_request"

/** What the model reads in place of an image of a refused turn. */
export const refusedImageNote = (image: ImageRef): string =>
  note(image, "left out, the provider refused the request that first carried it (invalid_request); read or attach it again to send it")

const withNotesOf = (content: string, images: ReadonlyArray<ImageRef>) => [content, ...images.map(refusedImageNote)].filter((s) => s !== "").join("\n")

/**
 * An entry without its images — a user message's, its tool results' — each replaced by a note in
 * the text it came with; the same entry when it has none.
 */
export const withoutImages = (entry: TranscriptEntry): TranscriptEntry => {
  if (entry.role === "user") {
    if (entry.images === undefined) return entry
    const { images, ...rest } = entry
    return { ...rest, content: withNotesOf(entry.content, images) }
  }
  if (entry.role === "summary" || !entry.toolCalls.some((c) => c.result?.images !== undefined)) return entry
  return {
    ...entry,
    toolCalls: entry.toolCalls.map((c) => {
      if (c.result?.images === undefined) return c
      return { ...c, result: resultOf(withNotesOf(c.result.content, c.result.images), c.result.isError, undefined) }
    })
  }
}

/**
 * The index of the first entry of the last turn's run of entries when that turn is `turnId`'s
 * (entries of one turn are contiguous, and a turn ends after its entries), `entries.length` when
 * the last entry is another turn's.
 */
export const turnStart = (entries: ReadonlyArray<TranscriptEntry>, turnId: string): number => {
  let i = entries.length
  while (i > 0 && entries[i - 1]!.turnId === turnId) i--
  return i
}

/** The transcript with the images of turn `turnId`'s entries left out (see {@link refusedTurn}). */
export const refused = (transcript: Transcript, turnId: string): Transcript => {
  const closedOne = closed(transcript)
  const start = turnStart(closedOne.entries, turnId)
  if (start === closedOne.entries.length) return closedOne
  const entries = closedOne.entries.slice(0, start).concat(closedOne.entries.slice(start).map(withoutImages))
  return { ...closedOne, entries }
}

type Change = <T>(changes: Changes<T>, transcript: T, event: AgentEvent) => T

const unchanged: Change = (_, transcript) => transcript
const closes: Change = (changes, transcript) => changes.close(transcript)

/**
 * What each event type does to the conversation — one entry per type: a new type does not compile
 * until it says. Session-level events, and those about the context rather than the conversation,
 * change nothing; the other events of a turn end the response streaming.
 */
const changesOf: { readonly [K in EventType]: <T>(changes: Changes<T>, transcript: T, event: EventOfType<K>) => T } = {
  "session.created": unchanged,
  "followup.queued": unchanged,
  "followup.dropped": unchanged,
  "session.forked": unchanged,
  "session.titled": unchanged,
  "context.built": unchanged,
  "mcp.tools_listed": unchanged,
  "model.retry": unchanged,
  "model.usage": unchanged,
  "cache.break": unchanged,
  "compaction.started": unchanged,
  "compaction.failed": unchanged,
  "session.rewound": (changes, transcript, event) => changes.rewound(transcript, { toSequence: event.payload.toSequence, sequence: event.sequence }),
  "workspace.changed": closes,
  // A steer reaches the model as a user message, where it was stored in the turn.
  "user.message": (changes, transcript, event) => changes.user(transcript, event.turnId, event.payload.content, event.sequence, event.payload.images),
  "turn.steered": (changes, transcript, event) => changes.user(transcript, event.turnId, event.payload.content, event.sequence),
  "model.delta": (changes, transcript, event) => changes.text(transcript, event.turnId, event.payload.text, event.sequence),
  "model.thinking_delta": (changes, transcript, event) => changes.thinking(transcript, event.turnId, event.payload.text, event.sequence),
  "model.thinking_block": (changes, transcript, event) => changes.thinkingEnd(transcript, event.turnId, event.payload, event.sequence),
  "model.tool_call_requested": (changes, transcript, event) =>
    changes.call(transcript, event.turnId, { toolCallId: event.payload.toolCallId, tool: event.payload.tool, args: event.payload.args }, event.sequence),
  "tool.completed": (changes, transcript, event) => changes.result(transcript, event.payload.toolCallId, event.payload.result, false, event.payload.images),
  "tool.failed": (changes, transcript, event) => changes.result(transcript, event.payload.toolCallId, event.payload.message, true),
  "session.compacted": (changes, transcript, event) =>
    changes.compacted(transcript, {
      compactionId: event.payload.compactionId,
      summary: event.payload.summary,
      firstKeptSequence: event.payload.firstKeptSequence,
      sequence: event.sequence,
      turnId: event.turnId
    }),
  "turn.started": closes,
  "turn.completed": (changes, transcript, event) =>
    refusedTurn(event) ? changes.refused(changes.close(transcript), event.turnId) : changes.close(transcript),
  "permission.requested": closes,
  "permission.resolved": closes,
  "tool.started": closes,
  "tool.progress": closes,
  // A subagent's conversation is in its own log; the parent's model reads its final answer as the task's result.
  "subagent.started": closes,
  "subagent.progress": closes,
  "subagent.asked": closes,
  "subagent.completed": closes
}

/** Applies one event to a transcript held as `changes` holds it: the one transcript fold. */
export const apply = <T>(changes: Changes<T>, transcript: T, event: AgentEvent): T => (changesOf[event.type] as Change)(changes, transcript, event)

/** A user entry; `images` only when there are some. */
export const userEntry = (turnId: string, content: string, sequence: number, images: ReadonlyArray<ImageRef> | undefined): UserEntry =>
  images === undefined || images.length === 0 ? { role: "user", turnId, content, sequence } : { role: "user", turnId, content, images, sequence }

/** The changes of the immutable transcript: each gives a new transcript, sharing what did not change. */
const immutable: Changes<Transcript> = {
  user: (transcript, turnId, content, sequence, images) => ({ entries: [...closed(transcript).entries, userEntry(turnId, content, sequence, images)], open: undefined }),
  text: (transcript, turnId, text, sequence) => withOpen(transcript, turnId, sequence, (entry) => ({ ...entry, content: entry.content + text })),
  thinking: (transcript, turnId, text, sequence) => withOpen(transcript, turnId, sequence, (entry) => ({ ...entry, thinking: withThinkingText(entry.thinking, text) })),
  thinkingEnd: (transcript, turnId, end, sequence) => withOpen(transcript, turnId, sequence, (entry) => ({ ...entry, thinking: withThinkingEnd(entry, end) })),
  call: (transcript, turnId, call, sequence) => withOpen(transcript, turnId, sequence, (entry) => ({ ...entry, toolCalls: [...entry.toolCalls, call] })),
  result: (transcript, toolCallId, content, isError, images) => withResult(transcript, toolCallId, content, isError, images),
  compacted: (transcript, compaction) => compacted(transcript, compaction),
  rewound: (transcript, rewind) => rewound(transcript, rewind),
  refused: (transcript, turnId) => refused(transcript, turnId),
  close: (transcript) => closed(transcript)
}

/** Applies one event. Events that do not change the conversation only close the current response. */
export const reduce = (transcript: Transcript, event: AgentEvent): Transcript => {
  const next = apply(immutable, transcript, event)
  // What rewinds took out stays until a compaction clears it; the changes above build entries only.
  return transcript.past === undefined || next.past !== undefined || event.type === "session.compacted" ? next : { ...next, past: transcript.past }
}

/** The tool calls of a response that asked for none: one array for all of them. */
const noCalls: ReadonlyArray<TranscriptToolCall> = Object.freeze([])

/**
 * How many deltas of a streaming response are added before its text is flattened (see
 * {@link Held.text}): 32, or a quarter of the deltas so far when that is more, so that a long
 * response copies its text a few times over in all rather than once every 32 deltas.
 */
const flattenAfter = (deltas: number): number => Math.max(32, deltas >> 2)

/**
 * A transcript held in place: the fold of {@link apply}, each change made on entries this object
 * owns, so that an event costs what it changes — a delta appends its text, a call is pushed, a
 * result finds its call by id — never a copy of the conversation. {@link reduce} gives a new value
 * per event instead: a response of N calls copied its calls at each call and scanned and copied them
 * at each result (N² for one wide response, test/domain/wideResponse.test.ts). {@link replay} folds
 * a log with one, and the engine's live transcript is one that also renders its requests; what
 * {@link Held.snapshot} gives equals the fold of `reduce` (test/engine/liveTranscript.test.ts and
 * test/domain/rewindFold.test.ts compare them).
 */
export class Held {
  /** The entries whose response has ended. An entry handed out is never changed: a result replaces its entry. */
  protected readonly entries: Array<TranscriptEntry> = []
  /** The response still streaming: its turn, text so far and tool calls (undefined: none open). */
  private openTurnId: string | undefined = undefined
  /** The sequence of the event that began the open response (where a compaction may cut). */
  private openSequence = 0
  private openContent = ""
  /** Deltas added to `openContent`, and since it was last flattened. */
  private openDeltas = 0
  private openPieces = 0
  private openCalls: Array<TranscriptToolCall> = []
  /** The open response's ended thinking blocks; undefined until it has some (a response without thinking holds none). */
  private openThinking: Array<ThinkingBlock> | undefined = undefined
  /** The text of the open response's thinking block still streaming, a cons string per delta as `openContent`; undefined: none streams. */
  private openThinkingText: string | undefined = undefined
  /** What rewinds took out (see {@link Past}); undefined before the first rewind. */
  private past: Past | undefined = undefined
  /**
   * Where the latest entry holding each unanswered call is (its entry, its place among the entry's
   * calls), so that a result finds its call without a scan. Forgotten when entries move (a
   * compaction, a rewind: a valid log has no call open at either) and once the call is answered;
   * a result with no place searches, as `withResult` does. Made at the first call: a transcript of
   * text alone holds none (bench row 21 holds a thousand).
   */
  private callPlaces: Map<string, { readonly entry: number; readonly index: number }> | undefined = undefined
  /**
   * The entry a result made since the transcript was last handed out ({@link shared}): no one else
   * holds it, so the next results of the same response change it in place. A response of N calls
   * then copies its calls once per snapshot, not once per result (N² in all). One entry, not a set
   * of them: a response's results come together, and a set filled by a hydration of 24,000 turns
   * (no snapshot in between) raised its peak RSS from 1.12 to 1.21× replay's (bench row 5).
   * Forgotten at a rewind too, whose `past` may hold it (and compares entries by identity).
   */
  private unshared: TranscriptEntry | undefined = undefined

  /** Folds one event in, as {@link reduce} does: the domain's one transcript fold, applied in place. */
  add(event: AgentEvent): void {
    apply(heldChanges, this, event)
  }

  /** A message of the user (see {@link Changes}). */
  user(turnId: string, content: string, sequence: number, images?: ReadonlyArray<ImageRef>): this {
    this.close()
    this.entries.push(userEntry(turnId, content, sequence, images))
    this.changed(this.entries.length - 1)
    return this
  }

  /**
   * Text of the streaming response: the hot path, a cons string per delta, flattened now and then
   * ({@link flattenAfter}) and when the response ends — a response in flight holds one string and a
   * short chain rather than a chain of every delta (32 bytes each; bench row 21 holds 1,000 responses
   * in flight), for copying its text about five times over in all.
   */
  text(turnId: string, text: string, sequence: number): this {
    if (this.openTurnId === undefined) this.open(turnId, sequence)
    this.openContent += text
    if (++this.openPieces >= flattenAfter(++this.openDeltas)) {
      this.openPieces = 0
      // Number() reads the whole string, which makes V8 flatten it (see `close`).
      Number(this.openContent)
    }
    this.changed(this.entries.length)
    return this
  }

  /** Thinking text of the streaming response: appended to its block's text, as `text` appends (no copy of the blocks per delta). */
  thinking(turnId: string, text: string, sequence: number): this {
    if (this.openTurnId === undefined) this.open(turnId, sequence)
    this.openThinkingText = (this.openThinkingText ?? "") + text
    this.changed(this.entries.length)
    return this
  }

  /** A thinking block of the streaming response ended: its text made one flat string (see `close`), as {@link withThinkingEnd} ends it. */
  thinkingEnd(turnId: string, end: ThinkingEnd, sequence: number): this {
    if (this.openTurnId === undefined) this.open(turnId, sequence)
    const text = this.openThinkingText ?? ""
    Number(text)
    ;(this.openThinking ??= []).push(endedBlock(text, end, this.openContent.length, this.openCalls.length))
    this.openThinkingText = undefined
    this.changed(this.entries.length)
    return this
  }

  /** A tool call of the streaming response. */
  call(turnId: string, call: TranscriptToolCall, sequence: number): this {
    if (this.openTurnId === undefined) this.open(turnId, sequence)
    this.openCalls.push(call)
    this.changed(this.entries.length)
    return this
  }

  /** A tool's result attaches to its call (the latest entry holding it), so messages keep call order. */
  result(toolCallId: string, content: string, isError: boolean, images?: ReadonlyArray<ImageRef>): this {
    this.close()
    const place = this.callPlaces?.get(toolCallId)
    const entry = place === undefined ? undefined : this.entries[place.entry]
    if (place !== undefined && entry?.role === "assistant" && entry.toolCalls[place.index]?.toolCallId === toolCallId) {
      this.callPlaces!.delete(toolCallId)
      const answered = { ...entry.toolCalls[place.index]!, result: resultOf(content, isError, images) }
      if (this.unshared === entry) (entry.toolCalls as Array<TranscriptToolCall>)[place.index] = answered
      else {
        const toolCalls = entry.toolCalls.slice()
        toolCalls[place.index] = answered
        const next = { ...entry, toolCalls }
        this.unshared = next
        this.entries[place.entry] = next
      }
      this.changed(place.entry)
      return this
    }
    for (let i = this.entries.length - 1; i >= 0; i--) {
      const entry = this.entries[i]!
      if (entry.role !== "assistant" || !entry.toolCalls.some((c) => c.toolCallId === toolCallId)) continue
      this.entries[i] = {
        ...entry,
        toolCalls: entry.toolCalls.map((c) => (c.toolCallId === toolCallId ? { ...c, result: resultOf(content, isError, images) } : c))
      }
      this.changed(i)
      return this
    }
    this.changed(this.entries.length)
    return this
  }

  /** A compaction: the summary, then the entries kept verbatim, as {@link compacted} makes them. */
  compacted(compaction: Compaction): this {
    this.close()
    const next = compacted({ entries: this.entries, open: undefined }, compaction)
    this.entries.length = 0
    for (const entry of next.entries) this.entries.push(entry)
    this.past = undefined
    this.moved()
    this.changed(0)
    return this
  }

  /**
   * A rewind, as {@link rewound} makes it, in place: the entries after the point where the branches
   * part are dropped and those of the branch at the target pushed (what it costs is what changes,
   * see {@link rewindChange}).
   */
  rewound(rewind: Rewind): this {
    this.close()
    const change = rewindChange(this.entries, this.past, rewind)
    this.entries.length = change.keep
    for (const entry of change.back) this.entries.push(entry)
    this.past = change.past
    this.moved()
    this.changed(change.keep)
    return this
  }

  /** A refused turn's images left out, as {@link refused} does. */
  refused(turnId: string): this {
    this.close()
    let first = this.entries.length
    for (let i = turnStart(this.entries, turnId); i < this.entries.length; i++) {
      const entry = withoutImages(this.entries[i]!)
      if (entry === this.entries[i]) continue
      this.entries[i] = entry
      first = Math.min(first, i)
    }
    this.changed(first)
    return this
  }

  /** Another event of a turn: the streaming response ends. */
  closeResponse(): this {
    if (this.close()) this.changed(this.entries.length - 1)
    return this
  }

  /** The transcript now, a value of its own: what this holder changes later is not in it. */
  snapshot(): Transcript {
    this.shared()
    const open = this.openEntry()
    return this.past === undefined
      ? { entries: this.entries.slice(), open }
      : { entries: this.entries.slice(), open, past: settledPast(this.past) }
  }

  /** The open response as an entry of its own, if one streams. */
  protected openEntry(): AssistantEntry | undefined {
    return this.openTurnId === undefined
      ? undefined
      : {
        role: "assistant",
        turnId: this.openTurnId,
        content: this.openContent,
        toolCalls: this.openCalls.length === 0 ? noCalls : this.openCalls.slice(),
        sequence: this.openSequence,
        ...(this.openThinking === undefined && this.openThinkingText === undefined
          ? {}
          : { thinking: [...(this.openThinking ?? []), ...(this.openThinkingText === undefined ? [] : [{ text: this.openThinkingText }])] })
      }
  }

  /** The entries are handed out: none is changed in place from now on. */
  protected shared(): void {
    this.unshared = undefined
  }

  /**
   * What a holder that keeps more than the entries hears of a change: the entries from `from` on
   * changed (`entries.length`: only the open response did, or nothing).
   */
  protected changed(_from: number): void {}

  /** A response starts streaming. Its turn id is the previous entry's string when they are equal: one copy per turn is held, not one per entry. */
  private open(turnId: string, sequence: number) {
    const previous = this.entries.at(-1)?.turnId
    this.openTurnId = previous === turnId ? previous : turnId
    this.openSequence = sequence
  }

  /** Ends the streaming response, if one streams: it joins the entries, its text made one flat string. */
  private close(): boolean {
    const open = this.openEntry()
    if (open === undefined) return false
    // Number() reads the whole string, which makes V8 flatten the cons string the deltas built: the
    // entry then holds one string rather than a chain of every delta.
    Number(open.content)
    if (this.openThinkingText !== undefined) Number(this.openThinkingText)
    // An id the response repeats is left to the scan, which gives the result to every call of that id
    // (as `withResult` does); a place would name only the last.
    const seen = open.toolCalls.length > 1 ? new Set<string>() : undefined
    for (let index = 0; index < open.toolCalls.length; index++) {
      const { toolCallId } = open.toolCalls[index]!
      if (seen?.has(toolCallId)) this.callPlaces?.delete(toolCallId)
      else {
        seen?.add(toolCallId)
        ;(this.callPlaces ??= new Map()).set(toolCallId, { entry: this.entries.length, index })
      }
    }
    this.entries.push(open)
    this.openTurnId = undefined
    this.openContent = ""
    this.openDeltas = 0
    this.openPieces = 0
    this.openCalls = []
    this.openThinking = undefined
    this.openThinkingText = undefined
    return true
  }

  /** The entries moved (a compaction, a rewind): their places are forgotten, and so is the entry a result made. */
  private moved() {
    this.callPlaces = undefined
    this.unshared = undefined
  }
}

/** The {@link Changes} of a {@link Held} transcript: each calls its method and gives the same holder. */
const heldChanges: Changes<Held> = {
  user: (t, turnId, content, sequence, images) => t.user(turnId, content, sequence, images),
  text: (t, turnId, text, sequence) => t.text(turnId, text, sequence),
  thinking: (t, turnId, text, sequence) => t.thinking(turnId, text, sequence),
  thinkingEnd: (t, turnId, end, sequence) => t.thinkingEnd(turnId, end, sequence),
  call: (t, turnId, call, sequence) => t.call(turnId, call, sequence),
  result: (t, toolCallId, content, isError, images) => t.result(toolCallId, content, isError, images),
  compacted: (t, compaction) => t.compacted(compaction),
  rewound: (t, rewind) => t.rewound(rewind),
  refused: (t, turnId) => t.refused(turnId),
  close: (t) => t.closeResponse()
}

/** Replays a whole log into its transcript: what folding it with {@link reduce} gives, in time linear in the log. */
export const replay = (events: Iterable<AgentEvent>): Transcript => {
  const transcript = new Held()
  for (const event of events) transcript.add(event)
  return transcript.snapshot()
}

/**
 * The blocks with their places counted among the calls sent (`answered`), not all of the entry's:
 * a call left without a result is not sent, and a block after it sits after one call fewer.
 */
const placedAmong = (
  blocks: ReadonlyArray<ThinkingBlock> | undefined,
  calls: ReadonlyArray<TranscriptToolCall>,
  answered: ReadonlyArray<TranscriptToolCall>
): ReadonlyArray<ThinkingBlock> | undefined =>
  blocks === undefined || answered.length === calls.length ? blocks : blocks.map((block) =>
    block.at === undefined ? block : { ...block, at: { text: block.at.text, calls: calls.slice(0, block.at.calls).filter((c) => c.result !== undefined).length } })

/** The messages of one entry (see {@link messages}). */
export const messagesOf = (entry: TranscriptEntry): ReadonlyArray<Message> => {
  if (entry.role === "user") {
    return [entry.images === undefined ? { role: "user", content: entry.content } : { role: "user", content: entry.content, images: entry.images }]
  }
  if (entry.role === "summary") return [{ role: "user", content: summaryMessage(entry.content) }]
  const answered = entry.toolCalls.filter((c) => c.result !== undefined)
  const thinking = placedAmong(entry.thinking?.filter(sendable), entry.toolCalls, answered)
  const toolCalls = answered.map(({ args, tool, toolCallId }) => ({ toolCallId, tool, args }))
  // `thinking` only when there is some: a response without it renders (and is counted) as before.
  const assistant: Message = thinking === undefined || thinking.length === 0
    ? { role: "assistant", content: entry.content, toolCalls }
    : { role: "assistant", content: entry.content, toolCalls, thinking }
  const results = answered.map((c): Message => {
    const message = { role: "tool" as const, toolCallId: c.toolCallId, tool: c.tool, content: c.result!.content, isError: c.result!.isError }
    return c.result!.images === undefined ? message : { ...message, images: c.result!.images }
  })
  return entry.content === "" && answered.length === 0 ? [] : [assistant, ...results]
}

/** An entry's messages and the length of each serialized as JSON, and the share of it its thinking is. */
interface Rendered {
  readonly messages: ReadonlyArray<Message>
  readonly chars: number
  readonly thinking: ThinkingShare | undefined
}

/**
 * The JSON characters a message's thinking adds to it, and who wrote all of it (`writerKey`): a
 * request to another model sends none of it (see {@link sendableTo}), so its estimate leaves them
 * out. A message whose blocks two writers wrote (no response of the engine's) has none: counted whole.
 */
export interface ThinkingShare {
  readonly writer: string
  readonly chars: number
}

/** The key of a writer of thinking, as {@link ThinkingShare} and a rendering's `thinkingChars` name it. */
export const writerKey = (provider: string, model: string): string => `${provider}\u0000${model}`

/** Who wrote all of a message's thinking (`writerKey`); `undefined` when it has none, or two wrote it. */
export const thinkingWriter = (message: Message): string | undefined => {
  if (message.role !== "assistant" || message.thinking === undefined || message.thinking.length === 0) return undefined
  const [first, ...rest] = message.thinking
  if (first!.provider === undefined || first!.model === undefined) return undefined
  if (rest.some((block) => block.provider !== first!.provider || block.model !== first!.model)) return undefined
  return writerKey(first!.provider, first!.model)
}

/**
 * The messages as a request to `provider`'s `model` carries them once the provider leaves out the
 * thinking others wrote, as the estimate counts them (a message two writers' thinking, none of the
 * engine's, is kept whole). Messages without thinking are the same objects.
 */
export const sentTo = (messages: ReadonlyArray<Message>, to: { readonly provider: string; readonly model: string }): ReadonlyArray<Message> => {
  const own = writerKey(to.provider, to.model)
  return messages.map((message) => {
    const writer = thinkingWriter(message)
    if (writer === undefined || writer === own || message.role !== "assistant") return message
    const { thinking: _, ...rest } = message
    return rest
  })
}

/** A message's {@link ThinkingShare} when it has thinking; `json`: the length of its JSON. */
export const thinkingShare = (message: Message, json: number): ThinkingShare | undefined => {
  const writer = thinkingWriter(message)
  if (writer === undefined || message.role !== "assistant") return undefined
  const { thinking: _, ...without } = message
  return { writer, chars: json - JSON.stringify(without).length }
}

/**
 * `shares` with `share` added (`sign` -1: taken away), in place: made when the first comes, a
 * writer left with none dropped, and none left when no writer is (a transcript without thinking has none).
 */
export const withShare = (shares: Map<string, number> | undefined, share: ThinkingShare | undefined, sign = 1): Map<string, number> | undefined => {
  if (share === undefined) return shares
  const out = shares ?? new Map<string, number>()
  const chars = (out.get(share.writer) ?? 0) + sign * share.chars
  if (chars === 0) out.delete(share.writer)
  else out.set(share.writer, chars)
  return out.size === 0 ? undefined : out
}

/**
 * Of a rendering's JSON length, what a request to `provider`'s `model` carries once the provider
 * leaves out the thinking other models wrote (`thinkingChars`: the rendering's, by writer).
 */
export const sentJsonLength = (
  jsonLength: number,
  thinkingChars: ReadonlyMap<string, number> | undefined,
  to: { readonly provider: string; readonly model: string }
): number => {
  if (thinkingChars === undefined) return jsonLength
  const own = writerKey(to.provider, to.model)
  let sent = jsonLength
  for (const [writer, chars] of thinkingChars) if (writer !== own) sent -= chars
  return sent
}

// Entries are immutable (an update makes a new entry), so an entry's rendering is computed once:
// a request in turn 2,000 renders only what changed since the last one.
const renderings = new WeakMap<TranscriptEntry, Rendered>()

const render = (entry: TranscriptEntry): Rendered => {
  const known = renderings.get(entry)
  if (known !== undefined) return known
  const messages = messagesOf(entry)
  let chars = 0
  let thinking: ThinkingShare | undefined = undefined
  for (const message of messages) {
    const json = JSON.stringify(message).length
    chars += json
    // An entry is one response: its one assistant message is the only one with thinking.
    thinking ??= thinkingShare(message, json)
  }
  const rendered = { messages, chars, thinking }
  renderings.set(entry, rendered)
  return rendered
}

/**
 * The messages of a transcript as a model request carries them. A call that never got a result (a
 * log cut short) is left out, so the request stays well-formed.
 */
export const messages = (transcript: Transcript): ReadonlyArray<Message> => rendered(transcript).messages

/**
 * The messages (as {@link messages}) and the length of `JSON.stringify(messages)`, both from
 * renderings kept per entry: neither the messages nor their JSON are rebuilt for entries that did
 * not change.
 */
export const rendered = (transcript: Transcript): {
  readonly messages: ReadonlyArray<Message>
  readonly jsonLength: number
  readonly thinkingChars?: ReadonlyMap<string, number> | undefined
} => {
  const out: Array<Message> = []
  let chars = 0
  let thinkingChars: Map<string, number> | undefined = undefined
  const add = (entry: TranscriptEntry) => {
    const r = render(entry)
    for (const message of r.messages) out.push(message)
    chars += r.chars
    thinkingChars = withShare(thinkingChars, r.thinking)
  }
  for (const entry of transcript.entries) add(entry)
  if (transcript.open !== undefined) add(transcript.open)
  // "[" + the messages joined by "," + "]"
  const jsonLength = 2 + chars + Math.max(0, out.length - 1)
  return thinkingChars === undefined ? { messages: out, jsonLength } : { messages: out, jsonLength, thinkingChars }
}
