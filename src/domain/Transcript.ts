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

/** What the assistant said in one model response: text and tool calls. */
export interface AssistantEntry {
  readonly role: "assistant"
  readonly turnId: string
  readonly content: string
  readonly toolCalls: ReadonlyArray<TranscriptToolCall>
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
 * (see {@link reduce}), or the engine's live one, changed in place. Which event does which is said
 * once, in {@link apply}.
 */
export interface Changes<T> {
  /** A message of the user (a turn's `user.message`, a `turn.steered`): it ends the response streaming. */
  readonly user: (transcript: T, turnId: string, content: string, sequence: number, images?: ReadonlyArray<ImageRef>) => T
  /** Text of the response streaming; `sequence` begins it when none streams. */
  readonly text: (transcript: T, turnId: string, text: string, sequence: number) => T
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

/**
 * The fold {@link replay} runs: {@link reduce}'s changes, made in place, since no one sees the
 * transcript before the replay returns it. `reduce` gives a new value per event, so a response of N
 * calls copied its calls at each call and scanned and copied them at each result (N² for one wide
 * response, test/domain/wideResponse.test.ts), and the entries at each response's end. Here a call
 * is pushed, a result finds its call by id ({@link Replaying.places}), and the result is the same
 * transcript (test/engine/liveTranscript.test.ts and test/domain/rewindFold.test.ts compare them).
 */
class Replaying {
  entries: Array<TranscriptEntry> = []
  /** The response streaming: an entry of this replay's own, its text and calls added in place. */
  open: { -readonly [K in keyof AssistantEntry]: AssistantEntry[K] } & { toolCalls: Array<TranscriptToolCall> } | undefined = undefined
  past: Past | undefined = undefined
  /**
   * The latest ended entry holding each call id, and the call's place in it (-1: the entry repeats
   * the id, and its result goes to each, as `withResult` gives it). Exact: entries only move at a
   * compaction or a rewind, which build it again.
   */
  private readonly places = new Map<string, { readonly entry: number; readonly index: number }>()
  /**
   * The entry a result made in this replay, its calls its own: the response's next results change
   * it in place. Forgotten at a rewind, whose `past` may hold it (and compares entries by identity).
   */
  private unshared: TranscriptEntry | undefined = undefined

  user(turnId: string, content: string, sequence: number, images?: ReadonlyArray<ImageRef>): this {
    this.closeResponse()
    this.entries.push(userEntry(turnId, content, sequence, images))
    return this
  }

  text(turnId: string, text: string, sequence: number): this {
    this.opened(turnId, sequence).content += text
    return this
  }

  call(turnId: string, call: TranscriptToolCall, sequence: number): this {
    this.opened(turnId, sequence).toolCalls.push(call)
    return this
  }

  result(toolCallId: string, content: string, isError: boolean, images?: ReadonlyArray<ImageRef>): this {
    this.closeResponse()
    const place = this.places.get(toolCallId)
    if (place === undefined) return this
    let entry = this.entries[place.entry] as AssistantEntry
    if (entry !== this.unshared) {
      entry = { ...entry, toolCalls: entry.toolCalls.slice() }
      this.entries[place.entry] = entry
      this.unshared = entry
    }
    const calls = entry.toolCalls as Array<TranscriptToolCall>
    const answered = (call: TranscriptToolCall) => ({ ...call, result: resultOf(content, isError, images) })
    if (place.index >= 0) calls[place.index] = answered(calls[place.index]!)
    else for (let i = 0; i < calls.length; i++) if (calls[i]!.toolCallId === toolCallId) calls[i] = answered(calls[i]!)
    return this
  }

  compacted(compaction: Compaction): this {
    this.closeResponse()
    this.entries = compacted({ entries: this.entries, open: undefined }, compaction).entries as Array<TranscriptEntry>
    this.past = undefined
    return this.moved()
  }

  rewound(rewind: Rewind): this {
    this.closeResponse()
    const next = rewound({ entries: this.entries, open: undefined, past: this.past }, rewind)
    this.entries = next.entries as Array<TranscriptEntry>
    this.past = next.past
    return this.moved()
  }

  refused(turnId: string): this {
    this.closeResponse()
    for (let i = turnStart(this.entries, turnId); i < this.entries.length; i++) this.entries[i] = withoutImages(this.entries[i]!)
    this.unshared = undefined
    return this
  }

  /** Ends the streaming response: it joins the entries, its calls placed. */
  closeResponse(): this {
    if (this.open === undefined) return this
    this.entries.push(this.open)
    this.place(this.entries.length - 1)
    this.open = undefined
    return this
  }

  /** The transcript, as `reduce` would have left it. */
  done(): Transcript {
    return this.past === undefined ? { entries: this.entries, open: this.open } : { entries: this.entries, open: this.open, past: this.past }
  }

  private opened(turnId: string, sequence: number) {
    return this.open ??= { role: "assistant", turnId, content: "", toolCalls: [], sequence }
  }

  private place(entry: number) {
    const e = this.entries[entry]!
    if (e.role !== "assistant" || e.toolCalls.length === 0) return
    const here = new Set<string>()
    e.toolCalls.forEach(({ toolCallId }, index) => {
      this.places.set(toolCallId, { entry, index: here.has(toolCallId) ? -1 : index })
      here.add(toolCallId)
    })
  }

  /** The entries moved (a compaction, a rewind): their calls placed again. */
  private moved(): this {
    this.places.clear()
    this.unshared = undefined
    for (let i = 0; i < this.entries.length; i++) this.place(i)
    return this
  }
}

/** A transcript held by an object that makes each change in place, by a method of the same name ({@link Changes}). */
export interface InPlace {
  user(turnId: string, content: string, sequence: number, images?: ReadonlyArray<ImageRef>): unknown
  text(turnId: string, text: string, sequence: number): unknown
  call(turnId: string, call: TranscriptToolCall, sequence: number): unknown
  result(toolCallId: string, content: string, isError: boolean, images?: ReadonlyArray<ImageRef>): unknown
  compacted(compaction: Compaction): unknown
  rewound(rewind: Rewind): unknown
  refused(turnId: string): unknown
  closeResponse(): unknown
}

/** The {@link Changes} of a transcript held {@link InPlace}: each calls its method and gives the same holder. */
export const inPlace = <T extends InPlace>(): Changes<T> => ({
  user: (t, turnId, content, sequence, images) => (t.user(turnId, content, sequence, images), t),
  text: (t, turnId, text, sequence) => (t.text(turnId, text, sequence), t),
  call: (t, turnId, call, sequence) => (t.call(turnId, call, sequence), t),
  result: (t, toolCallId, content, isError, images) => (t.result(toolCallId, content, isError, images), t),
  compacted: (t, compaction) => (t.compacted(compaction), t),
  rewound: (t, rewind) => (t.rewound(rewind), t),
  refused: (t, turnId) => (t.refused(turnId), t),
  close: (t) => (t.closeResponse(), t)
})

const replaying = inPlace<Replaying>()

/** Replays a whole log into its transcript: what folding it with {@link reduce} gives, in time linear in the log. */
export const replay = (events: Iterable<AgentEvent>): Transcript => {
  const transcript = new Replaying()
  for (const event of events) apply(replaying, transcript, event)
  return transcript.done()
}

/** The messages of one entry (see {@link messages}). */
export const messagesOf = (entry: TranscriptEntry): ReadonlyArray<Message> => {
  if (entry.role === "user") {
    return [entry.images === undefined ? { role: "user", content: entry.content } : { role: "user", content: entry.content, images: entry.images }]
  }
  if (entry.role === "summary") return [{ role: "user", content: summaryMessage(entry.content) }]
  const answered = entry.toolCalls.filter((c) => c.result !== undefined)
  const assistant: Message = {
    role: "assistant",
    content: entry.content,
    toolCalls: answered.map(({ args, tool, toolCallId }) => ({ toolCallId, tool, args }))
  }
  const results = answered.map((c): Message => {
    const message = { role: "tool" as const, toolCallId: c.toolCallId, tool: c.tool, content: c.result!.content, isError: c.result!.isError }
    return c.result!.images === undefined ? message : { ...message, images: c.result!.images }
  })
  return entry.content === "" && answered.length === 0 ? [] : [assistant, ...results]
}

/** An entry's messages and the length of each serialized as JSON. */
interface Rendered {
  readonly messages: ReadonlyArray<Message>
  readonly chars: number
}

// Entries are immutable (an update makes a new entry), so an entry's rendering is computed once:
// a request in turn 2,000 renders only what changed since the last one.
const renderings = new WeakMap<TranscriptEntry, Rendered>()

const render = (entry: TranscriptEntry): Rendered => {
  const known = renderings.get(entry)
  if (known !== undefined) return known
  const messages = messagesOf(entry)
  let chars = 0
  for (const message of messages) chars += JSON.stringify(message).length
  const rendered = { messages, chars }
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
export const rendered = (transcript: Transcript): { readonly messages: ReadonlyArray<Message>; readonly jsonLength: number } => {
  const out: Array<Message> = []
  let chars = 0
  const add = (entry: TranscriptEntry) => {
    const r = render(entry)
    for (const message of r.messages) out.push(message)
    chars += r.chars
  }
  for (const entry of transcript.entries) add(entry)
  if (transcript.open !== undefined) add(transcript.open)
  // "[" + the messages joined by "," + "]"
  return { messages: out, jsonLength: 2 + chars + Math.max(0, out.length - 1) }
}
