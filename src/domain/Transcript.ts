/**
 * Transcript replay (CONTRACT.md §5): the conversation a session's events tell — user messages,
 * assistant text, tool calls and their results. It is what the next model request is built from
 * and what UIs show. A pure reducer, kept live by the engine and equal to a replay of the log.
 *
 * @since 0.1.0
 */
import type { AgentEvent } from "./AgentEvent.js"
import type { Json } from "./Json.js"

/** A tool call the model made, with its result once the call ended. */
export interface TranscriptToolCall {
  readonly toolCallId: string
  readonly tool: string
  readonly args: Json
  readonly result?: { readonly content: string; readonly isError: boolean }
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
}

/** A message as a model request carries it: tool results are messages of their own, in call order. */
export type Message =
  | { readonly role: "user"; readonly content: string }
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

const withResult = (transcript: Transcript, toolCallId: string, content: string, isError: boolean): Transcript => {
  const { entries } = closed(transcript)
  // Results attach to their call, so messages() returns them in call order whatever the completion order.
  for (let i = entries.length - 1; i >= 0; i--) {
    const entry = entries[i]!
    if (entry.role !== "assistant" || !entry.toolCalls.some((c) => c.toolCallId === toolCallId)) continue
    const updated: TranscriptEntry = {
      ...entry,
      toolCalls: entry.toolCalls.map((c) => (c.toolCallId === toolCallId ? { ...c, result: { content, isError } } : c))
    }
    return { entries: entries.with(i, updated), open: undefined }
  }
  return { entries, open: undefined }
}

/** Applies one event. Events that do not change the conversation only close the current response. */
export const reduce = (transcript: Transcript, event: AgentEvent): Transcript => {
  switch (event.type) {
    case "user.message":
    case "turn.steered":
      // A steer reaches the model as a user message, where it was stored in the turn.
      return {
        entries: [...closed(transcript).entries, { role: "user", turnId: event.turnId, content: event.payload.content, sequence: event.sequence }],
        open: undefined
      }
    case "model.delta":
      return withOpen(transcript, event.turnId, event.sequence, (entry) => ({ ...entry, content: entry.content + event.payload.text }))
    case "model.tool_call_requested":
      return withOpen(transcript, event.turnId, event.sequence, (entry) => ({
        ...entry,
        toolCalls: [...entry.toolCalls, { toolCallId: event.payload.toolCallId, tool: event.payload.tool, args: event.payload.args }]
      }))
    case "tool.completed":
      return withResult(transcript, event.payload.toolCallId, event.payload.result, false)
    case "tool.failed":
      return withResult(transcript, event.payload.toolCallId, event.payload.message, true)
    case "session.created":
    case "followup.queued":
    case "followup.dropped":
    case "session.forked":
    case "context.built":
    case "mcp.tools_listed":
    case "model.retry":
    case "compaction.started":
    case "compaction.failed":
      return transcript
    case "session.compacted":
      return compacted(transcript, {
        compactionId: event.payload.compactionId,
        summary: event.payload.summary,
        firstKeptSequence: event.payload.firstKeptSequence,
        sequence: event.sequence,
        turnId: event.turnId
      })
    default:
      return closed(transcript)
  }
}

/** Replays a whole log into its transcript. */
export const replay = (events: Iterable<AgentEvent>): Transcript => {
  let transcript = empty
  for (const event of events) transcript = reduce(transcript, event)
  return transcript
}

/** The messages of one entry (see {@link messages}). */
export const messagesOf = (entry: TranscriptEntry): ReadonlyArray<Message> => {
  if (entry.role === "user") return [{ role: "user", content: entry.content }]
  if (entry.role === "summary") return [{ role: "user", content: summaryMessage(entry.content) }]
  const answered = entry.toolCalls.filter((c) => c.result !== undefined)
  const assistant: Message = {
    role: "assistant",
    content: entry.content,
    toolCalls: answered.map(({ args, tool, toolCallId }) => ({ toolCallId, tool, args }))
  }
  const results = answered.map((c): Message => ({
    role: "tool",
    toolCallId: c.toolCallId,
    tool: c.tool,
    content: c.result!.content,
    isError: c.result!.isError
  }))
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
