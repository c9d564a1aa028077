/**
 * What the web viewer shows of a session (CONTRACT.md §7.3): its log folded into turns — each with
 * the user's message, the model's text, steers, tool calls with their decisions and results, and
 * lines about the session's life (retries, follow-ups, forks, compaction) — plus what the state panel
 * shows. A pure fold, one handler per event type (a new type does not compile until it says what the
 * viewer shows of it), so the view of the whole log and the view "as of" sequence N (the timeline)
 * are the same fold of a prefix. The viewer's page bundles this module (see `scripts/bundle-cli.mjs`);
 * test/server/viewer.test.ts checks it against `SessionState` and `Transcript` on real logs.
 *
 * It imports types only, and `SessionTitle` (which imports nothing), so the page's bundle carries nothing of Effect.
 *
 * @since 0.5.0
 */
import type { AgentEvent, Client, EventOfType, EventType, InstructionPart, Risk, StopReason, Usage } from "./AgentEvent.js"
import type { Json } from "./Json.js"
import type { ImageRef } from "./Image.js"
import type { ToolCallStatus } from "./SessionState.js"
import * as SessionTitle from "./SessionTitle.js"
import * as Branches from "./Branches.js"
import { cacheBreakText, subagentText } from "./UsageText.js"
import { addCounts } from "./Tokens.js"
import * as Plural from "./Plural.js"

/** A tool call as the viewer shows it: how far it got, each decision, and how it ended. */
export interface ViewCall {
  readonly kind: "call"
  readonly toolCallId: string
  readonly tool: string
  readonly args: Json
  status: ToolCallStatus | "completed" | "failed"
  risk: Risk | undefined
  readonly decisions: Array<{ readonly decision: string; readonly actor: string; readonly policy?: string | undefined }>
  progress?: string
  /** The subagent a `task` call runs: its session (a link to its own view), its task, and what its tree used so far. */
  subagent?: ViewSubagent
  result?: string
  /** Images the tool returned (shown from `GET /sessions/:id/blobs/:hash`). */
  images?: ReadonlyArray<ImageRef>
  exitCode?: number | undefined
  errorCode?: string
  message?: string
}

/** A subagent under its `task` call: the tree view nests the child session's own view here, by its id. */
export interface ViewSubagent {
  readonly childSessionId: string
  readonly description: string
  readonly cwd: string
  readonly tools: ReadonlyArray<string> | undefined
  readonly mode: "inherit" | "readOnly"
  /** What the child's tree used so far, as a line (`3 steps · tokens in 412 · out 15 — $0.0012`). */
  used: string | undefined
  /** The child's call waiting for the user, when one is: with its arguments, so what an Allow runs is shown beside it. */
  asking: { readonly toolCallId: string; readonly tool: string; readonly args: Json; readonly risk: Risk } | undefined
  /** How the child's turn ended, once it has. */
  outcome: string | undefined
}

/** A line about the session's life: `event` names the session-level event it tells of; `detail` holds a compaction's summary. */
export interface ViewNote {
  readonly kind: "note"
  readonly text: string
  readonly event?: EventType
  readonly detail?: string
}

/** One item of a turn, in log order. */
export type ViewItem = { kind: "text"; text: string } | { kind: "thinking"; text: string } | { readonly kind: "steer"; readonly text: string } | ViewNote | ViewCall

/** One turn. */
export interface ViewTurn {
  readonly turnId: string
  /** The user's message (its preview until `user.message`). */
  user: string
  /** The images sent with the user's message, when there are some (the viewer shows them from `GET /sessions/:id/blobs/:hash`). */
  userImages?: ReadonlyArray<ImageRef>
  readonly items: Array<ViewItem>
  /** How it ended, once it has. */
  end: {
    readonly stopReason: StopReason
    readonly errorCode?: string | undefined
    /** Why a `final` turn may say less than asked (a refusal, the output limit): see `UsageText.finishText`. */
    readonly finishReason?: "length" | "content_filter" | undefined
    readonly usage?: Usage | undefined
    /** What the turn cost in dollars; `null` with `costUnknown` naming the model no price is known for. */
    readonly cost?: number | null | undefined
    readonly costUnknown?: string | undefined
  } | undefined
  /** The sequence of its `turn.started`, to place it among the session-level lines. */
  readonly startedAt: number
  /** The follow-up this turn runs (`turn.started {queueId}`). */
  readonly queueId: string | undefined
  /** A rewind went back before it (`session.rewound`): it is on an abandoned branch, still shown, no longer in the conversation. */
  abandoned?: true
}

/** The view of a session's log. */
export interface View {
  session:
    | {
      readonly sessionId: string
      readonly cwd: string
      readonly client: Client
      readonly createdAt: string
      readonly forkedFrom: { readonly sessionId: string; readonly sequence: number } | undefined
      /** A subagent's session: the session and `task` call that started it. */
      readonly parent?: { readonly sessionId: string; readonly toolCallId: string; readonly depth: number } | undefined
    }
    | undefined
  readonly turns: Array<ViewTurn>
  /** Every call by id. */
  readonly calls: Record<string, ViewCall>
  lastSequence: number
  openTurn: ViewTurn | undefined
  /** Session-level lines outside any turn, with the sequence they sit at. */
  readonly notes: Array<ViewNote & { readonly sequence: number }>
  /** The tokens of the next model request, as last stored (`context.built`, `session.compacted`). */
  contextTokens: number | undefined
  /** The instructions files in the last turn's system prompt (`context.built`); `undefined` before any turn. */
  instructions: ReadonlyArray<InstructionPart> | undefined
  /** Follow-ups queued and not yet started nor dropped, oldest first. */
  followUps: Array<{ readonly queueId: string; readonly content: string }>
  /** The compaction in progress (between `compaction.started` and its end). */
  compacting: string | undefined
  /** The session's title (see `Session.SessionSummary.title`); `undefined` before the first message. */
  title: string | undefined
  /**
   * The session's totals over its turns' and its compactions' summary requests' usage and cost
   * (`turn.completed`, `session.compacted`, `compaction.failed`: what `Session.usageChange` counts for
   * the listing beside the page); `undefined` before any reported usage.
   */
  totals: ViewTotals | undefined
  /** The session's rewinds, `[sequence, toSequence]`, oldest first (see `Transcript.onBranch`). */
  readonly rewinds: Array<readonly [number, number]>
  /** The branches the rewinds made, and the one the session is on (what a rewind changes is found from it). */
  branches: Branches.Branches
}

/** A session's usage and cost, summed over its turns. `costUnknown`: the models without a price (their turns add no cost). */
export interface ViewTotals {
  inputTokens: number
  outputTokens: number
  cacheReadTokens: number
  cacheWriteTokens: number
  cost: number
  readonly costUnknown: Array<string>
}

/** A fresh, empty view. */
export const empty = (): View => ({
  session: undefined,
  turns: [],
  // No prototype: ids are the model's, and `__proto__`, `constructor` or `valueOf` is one a vendor takes.
  calls: Object.create(null) as Record<string, ViewCall>,
  lastSequence: 0,
  openTurn: undefined,
  notes: [],
  contextTokens: undefined,
  instructions: undefined,
  followUps: [],
  compacting: undefined,
  totals: undefined,
  title: undefined,
  rewinds: [],
  branches: Branches.initial
})

/** The turns that began in `range` (the turns are in the order they began). */
const forTurns = (view: View, range: Branches.Range, f: (turn: ViewTurn) => void) => {
  const { turns } = view
  let lo = 0
  let hi = turns.length
  while (lo < hi) {
    const mid = (lo + hi) >> 1
    if (turns[mid]!.startedAt <= range.after) lo = mid + 1
    else hi = mid
  }
  for (let i = lo; i < turns.length && turns[i]!.startedAt <= range.upTo; i++) f(turns[i]!)
}

/** Adds an item to the open turn, if any. */
/** Adds what one event spent (a turn's, a compaction summary's) to the session's totals. */
const addToTotals = (view: View, spent: { readonly usage?: Usage | undefined; readonly cost?: number | null | undefined; readonly costUnknown?: string | undefined }) => {
  const { cost, costUnknown, usage } = spent
  if (usage === undefined) return
  const totals = view.totals ??= { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, cost: 0, costUnknown: [] }
  totals.inputTokens = addCounts(totals.inputTokens, usage.inputTokens)
  totals.outputTokens = addCounts(totals.outputTokens, usage.outputTokens)
  totals.cacheReadTokens = addCounts(totals.cacheReadTokens, usage.cacheReadTokens ?? 0)
  totals.cacheWriteTokens = addCounts(totals.cacheWriteTokens, usage.cacheWriteTokens ?? 0)
  // To a millionth of a dollar, as every summary keeps it: no float noise from adding turns.
  if (typeof cost === "number") totals.cost = Math.round((totals.cost + cost) * 1_000_000) / 1_000_000
  if (costUnknown !== undefined && !totals.costUnknown.includes(costUnknown)) totals.costUnknown.push(costUnknown)
}

const push = (view: View, item: ViewItem) => {
  view.openTurn?.items.push(item)
}

/** A line about the session's life: in the open turn where it happened, else between turns. */
const note = (view: View, event: AgentEvent, text: string, detail?: string) => {
  const item: ViewNote = { kind: "note", text, event: event.type, ...(detail === undefined ? {} : { detail }) }
  if (view.openTurn !== undefined) view.openTurn.items.push(item)
  else view.notes.push({ ...item, sequence: event.sequence })
}

/** The call an event of a call is about, to change in place. */
const callOf = (view: View, toolCallId: string): ViewCall | undefined => view.calls[toolCallId]

const statusOfDecision = { ask: "awaiting_approval", allow: "allowed", deny: "denied" } as const

/** What each event type shows — one entry per type. */
const steps: { readonly [K in EventType]: (view: View, event: EventOfType<K>) => void } = {
  "session.created": (view, event) => {
    const { client, cwd, forkedFrom, parent } = event.payload
    view.session = { sessionId: event.sessionId, cwd, client, createdAt: event.timestamp, forkedFrom, ...(parent === undefined ? {} : { parent }) }
  },
  "turn.started": (view, event) => {
    const { promptPreview, queueId } = event.payload
    const turn: ViewTurn = { turnId: event.turnId, user: promptPreview, items: [], end: undefined, startedAt: event.sequence, queueId }
    view.openTurn = turn
    view.turns.push(turn)
    if (queueId !== undefined) view.followUps = view.followUps.filter((f) => f.queueId !== queueId)
  },
  "user.message": (view, event) => {
    view.title ??= SessionTitle.fromMessage(event.payload.content, event.payload.images?.length ?? 0)
    if (view.openTurn === undefined) return
    view.openTurn.user = event.payload.content
    if (event.payload.images !== undefined) view.openTurn.userImages = event.payload.images
  },
  "turn.steered": (view, event) => push(view, { kind: "steer", text: event.payload.content }),
  // Which tools an MCP server offered (again, when its list changed): a note where it happened.
  "mcp.tools_listed": (view, event) => {
    const { server, tools } = event.payload
    note(view, event, `MCP server ${server}: ${Plural.count(tools.length, "tool")}`, tools.map((t) => t.name).join(", "))
  },
  // What the next model request costs: shown in the state panel, not in the turn.
  "context.built": (view, event) => {
    view.contextTokens = event.payload.tokens.total
    view.instructions = event.payload.instructions ?? []
  },
  "model.delta": (view, event) => {
    const last = view.openTurn?.items.at(-1)
    if (last?.kind === "text") last.text += event.payload.text
    else push(view, { kind: "text", text: event.payload.text })
  },
  // Thinking (extended thinking): an item of its own, which a viewer shows collapsed; a block's end (its signature) adds nothing to see.
  "model.thinking_delta": (view, event) => {
    // A delta with no text (a log the engine did not write: it stores none) is nothing to fold away.
    if (event.payload.text === "") return
    const last = view.openTurn?.items.at(-1)
    if (last?.kind === "thinking") last.text += event.payload.text
    else push(view, { kind: "thinking", text: event.payload.text })
  },
  "model.thinking_block": () => {},
  "model.retry": (view, event) => {
    const { attempt, delayMs, errorCode } = event.payload
    push(view, { kind: "note", text: `retry ${attempt}: ${errorCode}, again in ${delayMs} ms` })
  },
  "model.tool_call_requested": (view, event) => {
    const { args, tool, toolCallId } = event.payload
    const call: ViewCall = { kind: "call", toolCallId, tool, args, status: "requested", decisions: [], risk: undefined }
    view.calls[toolCallId] = call
    push(view, call)
  },
  "permission.requested": (view, event) => {
    const call = callOf(view, event.payload.toolCallId)
    if (call === undefined) return
    call.status = "permission_pending"
    call.risk = event.payload.risk
  },
  "permission.resolved": (view, event) => {
    const call = callOf(view, event.payload.toolCallId)
    if (call === undefined) return
    const { actor, decision, policy } = event.payload
    call.status = statusOfDecision[decision]
    call.decisions.push({ decision, actor, policy })
  },
  "tool.started": (view, event) => {
    const call = callOf(view, event.payload.toolCallId)
    if (call !== undefined) call.status = "running"
  },
  "tool.progress": (view, event) => {
    const call = callOf(view, event.payload.toolCallId)
    if (call !== undefined) call.progress = event.payload.message
  },
  "tool.completed": (view, event) => {
    const call = callOf(view, event.payload.toolCallId)
    if (call === undefined) return
    call.status = "completed"
    call.result = event.payload.result
    if (event.payload.images !== undefined) call.images = event.payload.images
    call.exitCode = event.payload.exitCode
  },
  "tool.failed": (view, event) => {
    const call = callOf(view, event.payload.toolCallId)
    if (call === undefined) return
    call.status = "failed"
    call.errorCode = event.payload.errorCode
    call.message = event.payload.message
  },
  "turn.completed": (view, event) => {
    const { cost, costUnknown, errorCode, finishReason, stopReason, usage } = event.payload
    if (view.openTurn !== undefined) view.openTurn.end = { stopReason, errorCode, ...(finishReason === undefined ? {} : { finishReason }), usage, cost, costUnknown }
    view.openTurn = undefined
    addToTotals(view, event.payload)
  },
  // Per-response usage adds up in `turn.completed`; only a break of the prompt cache is a line of the turn.
  "model.usage": () => {},
  "cache.break": (view, event) => push(view, { kind: "note", text: cacheBreakText(event.payload), event: event.type }),
  "subagent.started": (view, event) => {
    const call = callOf(view, event.payload.toolCallId)
    if (call === undefined) return
    const { childSessionId, cwd, description, mode, tools } = event.payload
    call.subagent = { childSessionId, description, cwd, tools, mode, used: undefined, asking: undefined, outcome: undefined }
  },
  "subagent.progress": (view, event) => {
    const subagent = callOf(view, event.payload.toolCallId)?.subagent
    if (subagent === undefined) return
    subagent.used = subagentText(event.payload)
    if (event.payload.answered !== undefined && event.payload.answered === subagent.asking?.toolCallId) subagent.asking = undefined
  },
  "subagent.asked": (view, event) => {
    const subagent = callOf(view, event.payload.toolCallId)?.subagent
    if (subagent !== undefined) subagent.asking = { toolCallId: event.payload.childToolCallId, tool: event.payload.tool, args: event.payload.args, risk: event.payload.risk }
  },
  "subagent.completed": (view, event) => {
    const subagent = callOf(view, event.payload.toolCallId)?.subagent
    if (subagent === undefined) return
    subagent.used = subagentText(event.payload)
    subagent.asking = undefined
    subagent.outcome = event.payload.errorCode === undefined ? event.payload.outcome : `${event.payload.outcome} (${event.payload.errorCode})`
  },
  "followup.queued": (view, event) => {
    view.followUps.push({ queueId: event.payload.queueId, content: event.payload.content })
    note(view, event, `follow-up queued: ${event.payload.content}`)
  },
  "followup.dropped": (view, event) => {
    const dropped = new Set(event.payload.queueIds)
    view.followUps = view.followUps.filter((f) => !dropped.has(f.queueId))
    note(view, event, `${Plural.count(dropped.size, "queued follow-up")} dropped`)
  },
  "session.forked": (view, event) => note(view, event, `forked from ${event.payload.fromSessionId} at #${event.payload.atSequence}`),
  "session.titled": (view, event) => {
    view.title = SessionTitle.stored(event.payload.title)
    note(view, event, `renamed: ${view.title}`)
  },
  "workspace.changed": (view, event) => {
    const { changes, incomplete } = event.payload
    const names = changes.slice(0, 5).map((c) => `${c.before === undefined ? "+" : c.after === undefined ? "-" : "~"}${c.path}`).join(", ")
    const more = changes.length > 5 ? ` and ${changes.length - 5} more` : ""
    push(view, { kind: "note", text: `changed ${Plural.count(changes.length, "file")}: ${names}${more}${incomplete === undefined ? "" : ` (snapshot incomplete: ${incomplete})`}`, event: event.type })
  },
  "session.rewound": (view, event) => {
    const { changes, forced, toSequence } = event.payload
    view.rewinds.push([event.sequence, toSequence])
    // Only the turns of the branches the session leaves or goes back onto change (see `Branches`):
    // marking every turn again at each rewind made a log of thousands of rewinds freeze the page.
    const change = Branches.rewind(view.branches, event.sequence, toSequence)
    view.branches = change.next
    for (const range of change.left) forTurns(view, range, (turn) => (turn.abandoned = true))
    for (const range of change.back) forTurns(view, range, (turn) => delete turn.abandoned)
    const files = changes.length === 0 ? "no files changed" : `${Plural.count(changes.length, "file")} restored`
    note(view, event, `rewound to #${toSequence}: ${files}${forced === undefined ? "" : `, ${forced.length} changed outside the agent overwritten`}`)
  },
  "compaction.started": (view, event) => {
    view.compacting = event.payload.compactionId
    note(view, event, `compacting the conversation (${event.payload.reason}, ${event.payload.tokensBefore} tokens)…`)
  },
  "session.compacted": (view, event) => {
    const { firstKeptSequence, reason, summary, tokensAfter, tokensBefore } = event.payload
    view.compacting = undefined
    view.contextTokens = tokensAfter
    addToTotals(view, event.payload)
    note(view, event, `conversation compacted (${reason}): ${tokensBefore} → ${tokensAfter} tokens, events before #${firstKeptSequence} summarized`, summary)
  },
  "compaction.failed": (view, event) => {
    const { errorCode } = event.payload
    view.compacting = undefined
    addToTotals(view, event.payload)
    note(view, event, `compaction ${errorCode === "cancelled" ? "cancelled" : `failed: ${errorCode}`}; the conversation is unchanged`)
  }
}

/** Every event type the view knows (each is an SSE event name on `/live`). */
export const eventTypes: ReadonlyArray<EventType> = Object.keys(steps) as Array<EventType>

/** Folds one event into the view, changing it in place (fold into a fresh {@link empty}); returns it. */
export const step = (view: View, event: AgentEvent): View => {
  view.lastSequence = event.sequence
  const shown = steps[event.type] as ((view: View, event: AgentEvent) => void) | undefined
  // A type newer than the page (a page left open across an upgrade) is named, not dropped.
  if (shown !== undefined) shown(view, event)
  else note(view, event, event.type)
  return view
}

/** The view of a sequence of events. */
export const fold = (events: ReadonlyArray<AgentEvent>): View => events.reduce(step, empty())

const openStatuses: ReadonlySet<ViewCall["status"]> = new Set(["requested", "permission_pending", "awaiting_approval", "allowed", "denied", "running"])

/** The open turn's calls that have not ended, in request order. */
export const openCalls = (view: View): ReadonlyArray<ViewCall> =>
  view.openTurn === undefined ? [] : view.openTurn.items.filter((i): i is ViewCall => i.kind === "call" && openStatuses.has(i.status))

/** The calls waiting for the user. */
export const pendingApprovals = (view: View): ReadonlyArray<ViewCall> => openCalls(view).filter((c) => c.status === "awaiting_approval")

/** What the session is doing: idle, running, waiting for an approval, or compacting. */
export const phase = (view: View): "idle" | "running" | "waiting for approval" | "compacting" =>
  view.compacting !== undefined ? "compacting" : view.openTurn === undefined ? "idle" : pendingApprovals(view).length > 0 ? "waiting for approval" : "running"
