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

/** One entry of a transcript. */
export type TranscriptEntry =
  | { readonly role: "user"; readonly turnId: string; readonly content: string }
  | {
    readonly role: "assistant"
    readonly turnId: string
    readonly content: string
    readonly toolCalls: ReadonlyArray<TranscriptToolCall>
  }

/** A session's conversation so far. */
export interface Transcript {
  readonly entries: ReadonlyArray<TranscriptEntry>
  /** Whether the last assistant entry is still receiving output of the same model response. */
  readonly responseOpen: boolean
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
export const empty: Transcript = { entries: [], responseOpen: false }

const withLastAssistant = (
  transcript: Transcript,
  turnId: string,
  update: (entry: Extract<TranscriptEntry, { role: "assistant" }>) => TranscriptEntry
): Transcript => {
  const last = transcript.entries.at(-1)
  const current = transcript.responseOpen && last?.role === "assistant"
    ? last
    : { role: "assistant" as const, turnId, content: "", toolCalls: [] }
  const kept = current === last ? transcript.entries.slice(0, -1) : transcript.entries
  return { entries: [...kept, update(current)], responseOpen: true }
}

const withResult = (transcript: Transcript, toolCallId: string, content: string, isError: boolean): Transcript => {
  // Results attach to their call, so messages() returns them in call order whatever the completion order.
  for (let i = transcript.entries.length - 1; i >= 0; i--) {
    const entry = transcript.entries[i]!
    if (entry.role !== "assistant" || !entry.toolCalls.some((c) => c.toolCallId === toolCallId)) continue
    const updated: TranscriptEntry = {
      ...entry,
      toolCalls: entry.toolCalls.map((c) => (c.toolCallId === toolCallId ? { ...c, result: { content, isError } } : c))
    }
    return { entries: transcript.entries.with(i, updated), responseOpen: false }
  }
  return { ...transcript, responseOpen: false }
}

/** Applies one event. Events that do not change the conversation only close the current response. */
export const reduce = (transcript: Transcript, event: AgentEvent): Transcript => {
  switch (event.type) {
    case "user.message":
      return { entries: [...transcript.entries, { role: "user", turnId: event.turnId, content: event.payload.content }], responseOpen: false }
    case "model.delta":
      return withLastAssistant(transcript, event.turnId, (entry) => ({ ...entry, content: entry.content + event.payload.text }))
    case "model.tool_call_requested":
      return withLastAssistant(transcript, event.turnId, (entry) => ({
        ...entry,
        toolCalls: [...entry.toolCalls, { toolCallId: event.payload.toolCallId, tool: event.payload.tool, args: event.payload.args }]
      }))
    case "tool.completed":
      return withResult(transcript, event.payload.toolCallId, event.payload.result, false)
    case "tool.failed":
      return withResult(transcript, event.payload.toolCallId, event.payload.message, true)
    case "session.created":
    case "context.built":
    case "model.retry":
      return transcript
    default:
      return transcript.responseOpen ? { ...transcript, responseOpen: false } : transcript
  }
}

/** Replays a whole log into its transcript. */
export const replay = (events: Iterable<AgentEvent>): Transcript => {
  let transcript = empty
  for (const event of events) transcript = reduce(transcript, event)
  return transcript
}

/**
 * The messages of a transcript as a model request carries them. A call that never got a result (a
 * log cut short) is left out, so the request stays well-formed.
 */
export const messages = (transcript: Transcript): ReadonlyArray<Message> =>
  transcript.entries.flatMap((entry): ReadonlyArray<Message> => {
    if (entry.role === "user") return [{ role: "user", content: entry.content }]
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
  })

/** The assistant text of the last turn in the transcript: what a turn "answered". */
export const lastAnswer = (transcript: Transcript): string => {
  const last = transcript.entries.at(-1)
  const turnId = last?.turnId
  return transcript.entries
    .filter((e) => e.role === "assistant" && e.turnId === turnId)
    .map((e) => e.content)
    .join("")
}
