/**
 * A session: one conversation bound for life to one working directory.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { Client, Usage } from "./AgentEvent.js"
import type { AgentEvent } from "./AgentEvent.js"
import type { SessionState } from "./SessionState.js"
import * as SessionTitle from "./SessionTitle.js"
import { addCounts } from "./Tokens.js"

/** A session, as read from its `session.created` event. */
export const Session = Schema.Struct({
  sessionId: Schema.String,
  cwd: Schema.String,
  client: Client,
  createdAt: Schema.String
})
/** A session, as read from its `session.created` event. */
export type Session = typeof Session.Type

/**
 * What a session list shows of each session. `awaitingApproval`: the tool calls of its open turn
 * that wait for the user's answer, present only when there are some (so `pending` reads the
 * listing, not every log).
 */
export const SessionSummary = Schema.Struct({
  sessionId: Schema.String,
  cwd: Schema.String,
  client: Client,
  createdAt: Schema.String,
  lastActivityAt: Schema.String,
  turnCount: Schema.Int,
  lastSequence: Schema.Int,
  awaitingApproval: Schema.optional(Schema.Array(Schema.String)),
  /**
   * The session's title: the one the user gave (`session.titled`, the latest), else its first
   * message's (see `SessionTitle.fromMessage`); absent before the first message. Plain text, one line.
   */
  title: Schema.optional(Schema.String),
  // What the session used and cost (issue 21 §6), summed over its turns' `turn.completed` and its compactions' `session.compacted` / `compaction.failed`: present
  // once a turn reported usage. `cost`: the dollars of the turns priced; `costUnknown`: the models
  // of the turns that could not be (their turns add no cost, so `cost` is then a lower bound).
  usage: Schema.optional(Usage),
  cost: Schema.optional(Schema.Number),
  costUnknown: Schema.optional(Schema.Array(Schema.String))
})
/** What a session list shows of each session. */
export type SessionSummary = typeof SessionSummary.Type

/** The session of a state. */
export const fromState = (state: SessionState): Session => ({
  sessionId: state.sessionId,
  cwd: state.cwd,
  client: state.client,
  createdAt: state.createdAt
})

/** The summary of a state. */
export const summaryOf = (state: SessionState): SessionSummary => {
  const awaiting = state.openTurn?.toolCalls.filter((c) => c.status === "awaiting_approval").map((c) => c.toolCallId) ?? []
  return {
    ...fromState(state),
    lastActivityAt: state.lastActivityAt,
    turnCount: state.turnCount,
    lastSequence: state.lastSequence,
    ...(awaiting.length === 0 ? {} : { awaitingApproval: awaiting }),
    ...(state.title === undefined ? {} : { title: state.title }),
    ...state.totals
  }
}

/**
 * How an event changes a session's title — a function of the event alone, so every store keeps it
 * the same way (the SQL stores in their own statements): a user message titles a session that has
 * no title yet (`Derive`), the user's own title replaces any (`Set`).
 */
export type TitleChange =
  | { readonly _tag: "Derive"; readonly title: string }
  | { readonly _tag: "Set"; readonly title: string }
  | undefined

/** The change an event makes to the session's title (`undefined`: none). */
export const titleChange = (event: AgentEvent): TitleChange => {
  switch (event.type) {
    case "user.message": {
      const title = SessionTitle.fromMessage(event.payload.content, event.payload.images?.length ?? 0)
      return title === undefined ? undefined : { _tag: "Derive", title }
    }
    case "session.titled":
      return { _tag: "Set", title: SessionTitle.stored(event.payload.title) }
    default:
      return undefined
  }
}

/** The title after a change. */
export const applyTitle = (title: string | undefined, change: TitleChange): string | undefined =>
  change === undefined ? title : change._tag === "Set" ? change.title : title ?? change.title

/**
 * How an event changes which calls wait for the user — a function of the event alone, so every
 * store keeps it the same way (the SQL stores in their own statements): an `ask` adds its call, any
 * other decision or the call's failure removes it, the end of the turn clears them all.
 */
export type AwaitingChange =
  | { readonly _tag: "Add"; readonly toolCallId: string }
  | { readonly _tag: "Remove"; readonly toolCallId: string }
  | { readonly _tag: "Clear" }
  | undefined

/** The change an event makes to the calls waiting for the user (`undefined`: none). */
export const awaitingChange = (event: AgentEvent): AwaitingChange => {
  switch (event.type) {
    case "permission.resolved":
      return event.payload.decision === "ask"
        ? { _tag: "Add", toolCallId: event.payload.toolCallId }
        : { _tag: "Remove", toolCallId: event.payload.toolCallId }
    case "tool.failed":
      return { _tag: "Remove", toolCallId: event.payload.toolCallId }
    case "turn.completed":
      return { _tag: "Clear" }
    default:
      return undefined
  }
}

/** The calls waiting for the user after a change; `undefined` for none (as summaries carry it). */
export const applyAwaiting = (
  awaiting: ReadonlyArray<string> | undefined,
  change: AwaitingChange
): ReadonlyArray<string> | undefined => {
  if (change === undefined) return awaiting
  if (change._tag === "Clear") return undefined
  const others = (awaiting ?? []).filter((id) => id !== change.toolCallId)
  const next = change._tag === "Add" ? [...others, change.toolCallId] : others
  return next.length === 0 ? undefined : next
}

/** What a turn or a compaction adds to a session's totals: the usage and cost of its `turn.completed`, `session.compacted` or `compaction.failed`. */
export interface UsageChange {
  readonly usage: Usage
  readonly cost: number
  readonly costUnknown: string | undefined
}

/** The events whose usage no other event counts: a turn's total, and a compaction's summary request (done or failed). */
const spendsOnItsOwn = (event: AgentEvent): event is Extract<AgentEvent, { readonly type: "turn.completed" | "session.compacted" | "compaction.failed" }> =>
  event.type === "turn.completed" || event.type === "session.compacted" || event.type === "compaction.failed"

/**
 * The change an event makes to a session's usage totals (`undefined`: none) — one function, so every
 * store keeps them alike: a turn's (`turn.completed`) and a compaction's summary request's
 * (`session.compacted`, or `compaction.failed` when the request returned and was refused), which no turn counts.
 */
export const usageChange = (event: AgentEvent): UsageChange | undefined => {
  if (!spendsOnItsOwn(event) || event.payload.usage === undefined) return undefined
  const { cost, costUnknown, usage } = event.payload
  return { usage, cost: typeof cost === "number" ? cost : 0, costUnknown: cost === null ? costUnknown : undefined }
}

const add = (a: number | undefined, b: number | undefined) => (a === undefined && b === undefined ? undefined : addCounts(a ?? 0, b ?? 0))

/**
 * Totals with a turn's change added: usage summed, cost summed (to a millionth of a dollar), models
 * without a price listed once. The objects are built field by field, not spread: a listing of the
 * SQL stores adds 10,000 sessions' rows.
 */
export const addUsage = (
  totals: Pick<SessionSummary, "usage" | "cost" | "costUnknown">,
  change: UsageChange
): Required<Pick<SessionSummary, "usage" | "cost">> & Pick<SessionSummary, "costUnknown"> => {
  const before = totals.usage
  const cacheReadTokens = add(before?.cacheReadTokens, change.usage.cacheReadTokens)
  const cacheWriteTokens = add(before?.cacheWriteTokens, change.usage.cacheWriteTokens)
  const unknown = change.costUnknown === undefined || totals.costUnknown?.includes(change.costUnknown)
    ? totals.costUnknown
    : totals.costUnknown === undefined ? [change.costUnknown] : [...totals.costUnknown, change.costUnknown]
  const usage: { -readonly [K in keyof Usage]: Usage[K] } = {
    inputTokens: addCounts(before?.inputTokens ?? 0, change.usage.inputTokens),
    outputTokens: addCounts(before?.outputTokens ?? 0, change.usage.outputTokens)
  }
  if (cacheReadTokens !== undefined) usage.cacheReadTokens = cacheReadTokens
  if (cacheWriteTokens !== undefined) usage.cacheWriteTokens = cacheWriteTokens
  const added: { usage: Usage; cost: number; costUnknown?: ReadonlyArray<string> } = {
    usage,
    cost: Math.round(((totals.cost ?? 0) + change.cost) * 1_000_000) / 1_000_000
  }
  if (unknown !== undefined) added.costUnknown = unknown
  return added
}

/**
 * Folds one event into a summary, without validating the log: listing stays cheap, and a log that
 * does not begin with `session.created` has no summary.
 */
export const summarize = (summary: SessionSummary | undefined, event: AgentEvent): SessionSummary | undefined => {
  if (summary === undefined) {
    return event.type === "session.created"
      ? {
        sessionId: event.sessionId,
        cwd: event.payload.cwd,
        client: event.payload.client,
        createdAt: event.timestamp,
        lastActivityAt: event.timestamp,
        turnCount: 0,
        lastSequence: event.sequence
      }
      : undefined
  }
  const moved = {
    ...summary,
    lastActivityAt: event.timestamp,
    lastSequence: event.sequence,
    turnCount: event.type === "turn.started" ? summary.turnCount + 1 : summary.turnCount
  }
  // A derived title is made once, from the first message: later messages skip the work.
  const titled = event.type === "user.message" && summary.title !== undefined ? moved : withTitle(moved, titleChange(event))
  const used = usageChange(event)
  const counted = used === undefined ? titled : { ...titled, ...addUsage(titled, used) }
  const change = awaitingChange(event)
  if (change === undefined) return counted
  const { awaitingApproval: before, ...rest } = counted
  const awaiting = applyAwaiting(before, change)
  return awaiting === undefined ? rest : { ...rest, awaitingApproval: awaiting }
}

const withTitle = (summary: SessionSummary, change: TitleChange): SessionSummary => {
  if (change === undefined) return summary
  const title = applyTitle(summary.title, change)
  return title === undefined ? summary : { ...summary, title }
}

/** What a listing may be narrowed to: sessions of a directory (or under it), whose title or id holds every word of `search`. */
export interface ListFilter {
  readonly cwd?: string | undefined
  readonly search?: string | undefined
}

/** Whether a session's cwd is `dir` or a directory under it. */
const within = (cwd: string, dir: string): boolean => {
  const base = dir.length > 1 && (dir.endsWith("/") || dir.endsWith("\\")) ? dir.slice(0, -1) : dir
  return cwd === base || cwd.startsWith(base.endsWith("/") ? base : `${base}/`) || cwd.startsWith(`${base}\\`)
}

/** The summaries a filter keeps, in their order. An empty filter keeps them all. */
export const filterSummaries = <S extends SessionSummary>(summaries: ReadonlyArray<S>, filter: ListFilter): ReadonlyArray<S> => {
  const cwd = filter.cwd === undefined || filter.cwd === "" ? undefined : filter.cwd
  const search = filter.search === undefined || filter.search.trim() === "" ? undefined : filter.search
  if (cwd === undefined && search === undefined) return summaries
  return summaries.filter((s) => (cwd === undefined || within(s.cwd, cwd)) && (search === undefined || SessionTitle.matches(search, s)))
}

/**
 * Session ids name files and keys: letters, digits, `_` and `-`, at most 128 characters. Anything
 * else (a path separator, `..`) is never a session.
 */
export const isValidId = (sessionId: string): boolean => /^[A-Za-z0-9_-]{1,128}$/.test(sessionId)
