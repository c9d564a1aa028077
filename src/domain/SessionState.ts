/**
 * State replay (CONTRACT.md §5): a pure reducer from a session's events to its state — turns and
 * their state machine, open tool calls, pending approvals, remembered permissions and the last
 * sequence. The engine keeps its live state with this same reducer, so a state built live always
 * equals one built by replaying the log, and a log in an impossible order is refused by name.
 *
 * @since 0.1.0
 */
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Stream from "effect/Stream"
import * as TurnFsm from "../fsm/TurnFsm.js"
import type { AgentEvent, Client, CompactionEvent, CompactionReason, Decision, EventOfType, PromptPartHash, Risk, StopReason, TurnEvent, Usage } from "./AgentEvent.js"
import type { Json } from "./Json.js"
import { OpenCalls } from "./OpenCalls.js"
import * as Session from "./Session.js"
import * as SessionTitle from "./SessionTitle.js"

/** Where a tool call stands. */
export type ToolCallStatus = "requested" | "permission_pending" | "awaiting_approval" | "allowed" | "denied" | "running"

/** A tool call that has not ended yet. */
export interface OpenToolCall {
  readonly toolCallId: string
  readonly tool: string
  readonly args: Json
  readonly status: ToolCallStatus
  readonly risk?: Risk
  /** Real paths outside the session's cwd the call would touch, for an approval question. */
  readonly outsidePaths?: ReadonlyArray<string>
  /** Who made the last permission decision, for a denial's message. */
  readonly decidedBy?: "policy" | "user"
  /**
   * The policy whose ask the call waits on (`permission.resolved {ask}`'s `policy`): a question asked
   * again after a restart gives the ask's reason only when the same policy asks again
   * (`PermissionPolicy.reasonAgain`).
   */
  readonly askedByPolicy?: string
  /** The subagent a running `task` call runs (`subagent.started`): its session and task. */
  readonly subagent?: OpenSubagent
  /**
   * Only in a session's `pendingApprovals` (the engine's): a call of a subagent below the session,
   * waiting for the user — the subagent's session and task. Answered on either session.
   */
  readonly askedBy?: { readonly sessionId: string; readonly description: string }
}

/**
 * The subagent a running `task` call runs, as `subagent.started` told it (what it may do, so that a
 * restarted process narrows it again), and whether `subagent.completed` has told its end since.
 */
export interface OpenSubagent {
  readonly childSessionId: string
  readonly description: string
  readonly cwd: string
  readonly tools?: ReadonlyArray<string> | undefined
  readonly mode: "inherit" | "readOnly"
  readonly maxSteps?: number | undefined
  /** `subagent.completed` is stored: the call only has its result left to store. */
  readonly completed?: true
}

/** The turn that has started and not completed. */
export interface OpenTurn {
  readonly turnId: string
  readonly status: TurnFsm.TurnStatus
  /** Open tool calls in the order the model requested them. */
  readonly toolCalls: ReadonlyArray<OpenToolCall>
  /** How many tool calls this turn has requested so far. */
  readonly toolCallCount: number
}

/** How the last completed turn ended. */
export interface LastTurn {
  readonly turnId: string
  readonly stopReason: StopReason
  readonly errorCode?: string
  readonly usage?: Usage
}

/** A user decision stored with `remember: true`: it applies to later calls with the same scope in the session. */
export interface RememberedPermission {
  readonly scope: string
  readonly decision: Exclude<Decision, "ask">
  readonly sequence: number
}

/** A follow-up waiting to run as its own turn (`followup.queued`, not yet started nor dropped). */
export interface QueuedFollowUp {
  readonly queueId: string
  readonly content: string
}

/**
 * What a message sent with an idempotency key did, as its event in the log says: a message
 * delivered again with the same key (a runner died after storing it and before answering) is
 * answered from this, never applied twice.
 */
export type AppliedMessage =
  | { readonly _tag: "FollowUpQueued"; readonly key: string; readonly queueId: string }
  | { readonly _tag: "TurnSteered"; readonly key: string; readonly turnId: string }
  | { readonly _tag: "PermissionResolved"; readonly key: string; readonly toolCallId: string }

/**
 * How many keys a state remembers, the most recent ones: a message is delivered again within
 * seconds (the time its session takes to move to another runner), never after a thousand others.
 */
export const rememberedKeys = 1024

/** A compaction that has started and not ended (`compaction.started` without its `session.compacted` or `compaction.failed`). */
export interface OpenCompaction {
  readonly compactionId: string
  readonly reason: CompactionReason
  /** The turn it runs in; none for a manual compaction. */
  readonly turnId?: string
}

/** A session's state, as replayed from its log. */
export interface SessionState {
  readonly sessionId: string
  readonly cwd: string
  readonly client: Client
  /** A subagent's session: the session and `task` call that started it (`session.created.parent`). */
  readonly parent?: { readonly sessionId: string; readonly toolCallId: string; readonly depth: number } | undefined
  readonly createdAt: string
  readonly lastSequence: number
  readonly lastActivityAt: string
  readonly turnCount: number
  readonly openTurn: OpenTurn | undefined
  readonly lastTurn: LastTurn | undefined
  readonly remembered: ReadonlyArray<RememberedPermission>
  /** Follow-ups queued and not yet started nor dropped, oldest first. */
  readonly followUps: ReadonlyArray<QueuedFollowUp>
  /**
   * The compaction running now: the session's `compaction` phase (inside a turn, its phase is
   * `compaction` too). Left open in a log by a crash, it is closed `compaction.failed {interrupted}`.
   */
  readonly compaction?: OpenCompaction | undefined
  /** The messages with an idempotency key the log holds, oldest first (at most {@link rememberedKeys}). */
  readonly applied: ReadonlyArray<AppliedMessage>
  /** The hash of the tool list each MCP server last offered in this session (`mcp.tools_listed`); absent before any. */
  readonly toolLists?: Readonly<Record<string, string>> | undefined
  /** The session's title (see `Session.SessionSummary.title`); absent before the first message. */
  readonly title?: string | undefined
  /**
   * The session's last model response that reported usage (`model.usage`): its prompt-cache reads and
   * its request's part hashes, what the next response's are compared with (`cache.break`).
   */
  readonly lastRequest?: LastRequest | undefined
  /** What the session's turns and compactions used and cost, summed (see `Session.addUsage`); absent until one reported usage. */
  readonly totals?: UsageTotals | undefined
}

/** A session's usage and cost totals, as its summary carries them. */
export type UsageTotals = ReturnType<typeof Session.addUsage>

/** The prompt-cache reads and part hashes of the session's last model response that reported usage. */
export interface LastRequest {
  readonly cacheRead: number
  readonly parts: ReadonlyArray<PromptPartHash>
  /** A compaction (`session.compacted`) replaced the history since. */
  readonly compacted?: true
}

/** An event that cannot follow the events before it. Names the sequence; the log is never guessed at. */
export class ImpossibleEvent extends Data.TaggedError("ImpossibleEvent")<{
  readonly sequence: number
  readonly detail: string
}> {
  override get message(): string {
    return `Impossible event at sequence ${this.sequence}: ${this.detail}`
  }
}

/** The state right after `session.created`. */
export const fromCreated = (event: EventOfType<"session.created">): SessionState => ({
  sessionId: event.sessionId,
  cwd: event.payload.cwd,
  client: event.payload.client,
  ...(event.payload.parent === undefined ? {} : { parent: event.payload.parent }),
  createdAt: event.timestamp,
  lastSequence: event.sequence,
  lastActivityAt: event.timestamp,
  turnCount: 0,
  openTurn: undefined,
  lastTurn: undefined,
  remembered: [],
  followUps: [],
  applied: []
})

/** The state of a session whose log begins with `event`; fails unless it is a `session.created` at sequence 1. */
export const start = (event: AgentEvent): Either.Either<SessionState, ImpossibleEvent> =>
  event.type !== "session.created"
    ? Either.left(new ImpossibleEvent({ sequence: event.sequence, detail: `a log must begin with session.created, not ${event.type}` }))
    : event.sequence !== 1
    ? Either.left(new ImpossibleEvent({ sequence: event.sequence, detail: "session.created must have sequence 1" }))
    : Either.right(fromCreated(event))

const fail = (event: AgentEvent, detail: string) =>
  Either.left(new ImpossibleEvent({ sequence: event.sequence, detail }))

// Each turn the reducer builds keeps its calls in a table (see OpenCalls): a tool event costs O(1),
// not a scan and a copy of every open call. The table is a hidden property of the turn (a symbol,
// not enumerable: no copy, comparison or JSON sees it). It was a WeakMap entry per turn, and every
// event makes a turn: a hydration of 24,000 turns filled the ephemeron table between collections
// (peak RSS 1.12 → 1.21× replay's, bench row 5). A turn built elsewhere (a test's, a clone) has no
// table: it is read from its array.
const tableKey: unique symbol = Symbol("OpenCalls")

type TurnWithTable = OpenTurn & { readonly [tableKey]?: OpenCalls }

const tableOf = (turn: OpenTurn): OpenCalls => (turn as TurnWithTable)[tableKey] ?? OpenCalls.of(turn.toolCalls)

const noCalls: ReadonlyArray<OpenToolCall> = Object.freeze([])

/**
 * How a turn with open calls reads its `toolCalls`: one getter for every turn, given the turn as
 * `this`. A getter written in each turn's literal was a closure, and an accessor V8 cannot share
 * between objects: every such turn got a hidden class of its own and then, with the table added, a
 * dictionary of its properties — about 650 bytes and 2.7 µs a turn where this costs ~190 and 0.3–1
 * (four to five such turns a tool call, one per event of the call; docs/benchmarks.md, "step21").
 */
const toolCallsFromTable: PropertyDescriptor = {
  get(this: TurnWithTable) {
    return this[tableKey]!.calls
  },
  enumerable: true,
  configurable: true
}

/**
 * A turn as the reducer builds it: its `toolCalls` read from its table when asked for. With no call
 * open (most events: a response's deltas, the turn's start and end) a plain turn, no table nor getter:
 * a getter's closure per event was garbage enough to raise a hydration's peak RSS (bench row 5).
 * The keys, their order and their attributes are those of the literal `{ turnId, status, get
 * toolCalls(), toolCallCount }` with the table added as a hidden property.
 */
const makeTurn = (turnId: string, status: TurnFsm.TurnStatus, toolCallCount: number, calls: OpenCalls): OpenTurn => {
  if (calls.size === 0) return { turnId, status, toolCalls: noCalls, toolCallCount }
  const turn = { turnId, status } as { turnId: string; status: TurnFsm.TurnStatus; toolCallCount: number }
  Object.defineProperty(turn, "toolCalls", toolCallsFromTable)
  turn.toolCallCount = toolCallCount
  return Object.defineProperty(turn, tableKey, { value: calls }) as unknown as OpenTurn
}

const withCalls = (turn: OpenTurn, calls: OpenCalls): OpenTurn => makeTurn(turn.turnId, turn.status, turn.toolCallCount, calls)

const updateCall = (
  turn: OpenTurn,
  call: OpenToolCall,
  next: OpenToolCall | undefined
): OpenTurn => withCalls(turn, next === undefined ? tableOf(turn).remove(call.toolCallId) : tableOf(turn).set(next))

/** The open call of the state's open turn with this id: O(1), where a scan of `toolCalls` is O(calls). */
export const openCall = (state: SessionState, toolCallId: string): OpenToolCall | undefined =>
  state.openTurn === undefined ? undefined : tableOf(state.openTurn).get(toolCallId)

// The statuses from which each tool event may follow; anything else is an impossible order.
const callMayReceive: Record<string, ReadonlyArray<ToolCallStatus>> = {
  "permission.requested": ["requested"],
  "permission.resolved": ["permission_pending", "awaiting_approval"],
  "tool.started": ["allowed"],
  "tool.progress": ["running"],
  "tool.completed": ["running"],
  "tool.failed": ["requested", "permission_pending", "awaiting_approval", "allowed", "denied", "running"]
}

const reduceToolEvent = (
  turn: OpenTurn,
  event: EventOfType<"permission.requested" | "permission.resolved" | "tool.started" | "tool.progress" | "tool.completed" | "tool.failed">
): Either.Either<OpenTurn, ImpossibleEvent> => {
  const call = tableOf(turn).get(event.payload.toolCallId)
  if (call === undefined) return fail(event, `${event.type} for tool call ${event.payload.toolCallId}, which is not open`)
  if (!callMayReceive[event.type]!.includes(call.status)) {
    return fail(event, `${event.type} cannot follow a tool call in status ${call.status}`)
  }
  switch (event.type) {
    case "permission.requested":
      return Either.right(updateCall(turn, call, {
        ...call,
        status: "permission_pending",
        risk: event.payload.risk,
        ...(event.payload.outsidePaths === undefined ? {} : { outsidePaths: event.payload.outsidePaths })
      }))
    case "permission.resolved": {
      const { decision, actor } = event.payload
      // A call awaiting approval is answered by the user, or denied by the policy when the wait times out.
      if (call.status === "awaiting_approval" && (decision === "ask" || (actor === "policy" && decision !== "deny"))) {
        return fail(event, "a call awaiting approval can only be allowed or denied by the user, or denied by the policy")
      }
      if (call.status === "permission_pending" && actor === "user") {
        return fail(event, "the user resolved a call the policy had not asked about")
      }
      const status: ToolCallStatus = decision === "ask" ? "awaiting_approval" : decision === "allow" ? "allowed" : "denied"
      const policy = decision === "ask" ? event.payload.policy : undefined
      const { askedByPolicy: _, ...rest } = call
      return Either.right(updateCall(turn, call, { ...rest, status, decidedBy: actor, ...(policy === undefined ? {} : { askedByPolicy: policy }) }))
    }
    case "tool.started":
      return Either.right(updateCall(turn, call, { ...call, status: "running" }))
    case "tool.progress":
      return Either.right(turn)
    case "tool.completed":
    case "tool.failed":
      return Either.right(updateCall(turn, call, undefined))
  }
}

const rememberedOf = (
  state: SessionState,
  event: EventOfType<"permission.resolved">
): ReadonlyArray<RememberedPermission> => {
  const { actor, decision, remember, scope } = event.payload
  if (remember !== true || actor !== "user" || decision === "ask" || scope === undefined) return state.remembered
  return [...state.remembered.filter((r) => r.scope !== scope), { scope, decision, sequence: event.sequence }]
}

// With several calls open, one call's event does not say what the turn is doing: the most pressing call does.
const callPhases: ReadonlyArray<readonly [ToolCallStatus, TurnFsm.RunningPhase]> = [
  ["awaiting_approval", TurnFsm.RunningPhase.AwaitingApproval],
  ["running", TurnFsm.RunningPhase.ToolRunning],
  ["permission_pending", TurnFsm.RunningPhase.PermissionPending]
]

/** A running turn's phase from its open calls; with none open, the phase its last event entered. */
const withCallsPhase = (turn: OpenTurn): OpenTurn => {
  const calls = tableOf(turn)
  if (turn.status.state !== "running" || calls.size === 0) return turn
  const phase = callPhases.find(([status]) => calls.counts[status] > 0)?.[1] ?? TurnFsm.RunningPhase.ToolPending
  return makeTurn(turn.turnId, { state: "running", phase }, turn.toolCallCount, calls)
}

/**
 * The input each turn event feeds the turn's state machine, one entry per event type (a new type does
 * not compile until it says what it does to a turn). Events that do not move the turn (a delta while
 * streaming, a tool completing while others still run) enter the phase they imply.
 */
const inputs: { readonly [T in TurnEvent["type"]]: (event: Extract<TurnEvent, { readonly type: T }>) => TurnFsm.TurnInput } = {
  "turn.started": () => ({ _tag: "Start" }),
  "turn.completed": (event) =>
    event.payload.stopReason === "final" ? { _tag: "Complete" } : event.payload.stopReason === "cancelled" ? { _tag: "Cancel" } : { _tag: "Fail" },
  "user.message": () => enter(TurnFsm.RunningPhase.ContextBuilding),
  "turn.steered": () => enter(TurnFsm.RunningPhase.ContextBuilding),
  "context.built": () => enter(TurnFsm.RunningPhase.ContextBuilding),
  "mcp.tools_listed": () => enter(TurnFsm.RunningPhase.ContextBuilding),
  "model.usage": () => enter(TurnFsm.RunningPhase.ModelStreaming),
  "cache.break": () => enter(TurnFsm.RunningPhase.ModelStreaming),
  "model.delta": () => enter(TurnFsm.RunningPhase.ModelStreaming),
  "model.thinking_delta": () => enter(TurnFsm.RunningPhase.ModelStreaming),
  "model.thinking_block": () => enter(TurnFsm.RunningPhase.ModelStreaming),
  "model.retry": () => enter(TurnFsm.RunningPhase.ModelStreaming),
  "tool.completed": () => enter(TurnFsm.RunningPhase.ModelStreaming),
  "tool.failed": () => enter(TurnFsm.RunningPhase.ModelStreaming),
  "model.tool_call_requested": () => enter(TurnFsm.RunningPhase.ToolPending),
  "permission.requested": () => enter(TurnFsm.RunningPhase.PermissionPending),
  "permission.resolved": (event) => enter(event.payload.decision === "ask" ? TurnFsm.RunningPhase.AwaitingApproval : TurnFsm.RunningPhase.ToolPending),
  "tool.started": () => enter(TurnFsm.RunningPhase.ToolRunning),
  "tool.progress": () => enter(TurnFsm.RunningPhase.ToolRunning),
  // A subagent's events come while its `task` call runs (the calls' phase is recomputed from them).
  "subagent.started": () => enter(TurnFsm.RunningPhase.ToolRunning),
  "subagent.progress": () => enter(TurnFsm.RunningPhase.ToolRunning),
  "subagent.asked": () => enter(TurnFsm.RunningPhase.ToolRunning),
  "subagent.completed": () => enter(TurnFsm.RunningPhase.ToolRunning),
  "workspace.changed": () => enter(TurnFsm.RunningPhase.ToolRunning),
  "compaction.started": () => enter(TurnFsm.RunningPhase.Compaction),
  // The request is built again, from the compacted (or unchanged) context.
  "session.compacted": () => enter(TurnFsm.RunningPhase.ContextBuilding),
  "compaction.failed": () => enter(TurnFsm.RunningPhase.ContextBuilding)
}

const enter = (phase: TurnFsm.RunningPhase): TurnFsm.TurnInput => ({ _tag: "Enter", phase })

/** The input a turn event feeds the turn's state machine: the log and the machine cannot disagree. */
export const inputOf = (event: TurnEvent): TurnFsm.TurnInput => (inputs[event.type] as (event: TurnEvent) => TurnFsm.TurnInput)(event)

/** A piece of a streaming response's text or thinking: what a run of {@link Folder} folds at once. */
type Delta = EventOfType<"model.delta" | "model.thinking_delta">

const isDelta = (event: AgentEvent): event is Delta => event.type === "model.delta" || event.type === "model.thinking_delta"

/**
 * Whether `event` moves nothing but the state's sequence and activity time: a delta while the open
 * turn's model streams (its machine would give back the same status). The reducer's hot path, and
 * what lets {@link Folder} fold a run of deltas at once.
 */
const movesOnlyTheSequence = (state: SessionState, event: AgentEvent): boolean => {
  if (!isDelta(event)) return false
  const status = state.openTurn?.status
  return status?.state === TurnFsm.TurnState.Running && status.phase === TurnFsm.RunningPhase.ModelStreaming && state.openTurn!.turnId === event.turnId
}

/** Applies one event. Fails, naming the event's sequence, when it cannot follow the state. */
export const reduce = (state: SessionState, event: AgentEvent): Either.Either<SessionState, ImpossibleEvent> => {
  if (event.sessionId !== state.sessionId) return fail(event, `event of session ${event.sessionId} in session ${state.sessionId}`)
  if (event.sequence !== state.lastSequence + 1) {
    return fail(event, `sequence ${event.sequence} does not follow ${state.lastSequence}`)
  }
  if (event.type === "session.created") return fail(event, "session.created may only begin a log")
  // Session-level events belong to no turn: they may come between or inside turns.
  if (
    event.type === "followup.queued" || event.type === "followup.dropped" || event.type === "session.forked" || event.type === "session.titled" || event.type === "session.rewound"
  ) {
    const moved: SessionState = { ...state, lastSequence: event.sequence, lastActivityAt: event.timestamp }
    switch (event.type) {
      case "followup.queued":
        if (state.followUps.some((f) => f.queueId === event.payload.queueId)) return fail(event, `follow-up ${event.payload.queueId} queued twice`)
        return Either.right({
          ...moved,
          followUps: [...state.followUps, { queueId: event.payload.queueId, content: event.payload.content }],
          applied: withApplied(state.applied, event.payload.idempotencyKey, (key) => ({ _tag: "FollowUpQueued", key, queueId: event.payload.queueId }))
        })
      case "followup.dropped": {
        const dropped = new Set(event.payload.queueIds)
        return Either.right({ ...moved, followUps: state.followUps.filter((f) => !dropped.has(f.queueId)) })
      }
      case "session.forked":
        return Either.right(moved)
      case "session.titled":
        return Either.right({ ...moved, title: SessionTitle.stored(event.payload.title) })
      case "session.rewound":
        // A rewind goes back to a point between turns, so it is stored between turns. Remembered
        // permissions, the title and the totals stay: a rewind undoes the conversation and the files,
        // not the user's standing decisions nor what was spent.
        if (state.openTurn !== undefined) return fail(event, `session.rewound while turn ${state.openTurn.turnId} is open`)
        if (state.compaction !== undefined) return fail(event, `session.rewound while compaction ${state.compaction.compactionId} runs`)
        if (event.payload.toSequence >= event.sequence) return fail(event, `session.rewound to ${event.payload.toSequence}, which is not before it`)
        return Either.right(moved)
    }
  }
  if (event.type === "compaction.started" || event.type === "session.compacted" || event.type === "compaction.failed") {
    return reduceCompaction(state, event)
  }
  const open = state.openTurn
  if (event.type === "turn.started") {
    if (open !== undefined) return fail(event, `turn ${event.turnId} started while turn ${open.turnId} is open`)
    if (state.compaction !== undefined) return fail(event, `turn ${event.turnId} started while compaction ${state.compaction.compactionId} runs`)
  } else if (open === undefined || open.turnId !== event.turnId) {
    return fail(event, `${event.type} of turn ${event.turnId}, which is not the open turn`)
  }
  const base: SessionState = { ...state, lastSequence: event.sequence, lastActivityAt: event.timestamp }
  // The hot path: a delta while the model streams moves nothing but the sequence and the time.
  if (movesOnlyTheSequence(state, event)) return Either.right(base)
  const status = TurnFsm.transition(open?.status ?? TurnFsm.initial, inputOf(event))
  if (Either.isLeft(status)) return fail(event, status.left.message)
  const turn: OpenTurn = open === undefined
    ? makeTurn(event.turnId, status.right, 0, OpenCalls.empty)
    : makeTurn(open.turnId, status.right, open.toolCallCount, tableOf(open))

  switch (event.type) {
    case "turn.started": {
      const { queueId } = event.payload
      if (queueId !== undefined && !state.followUps.some((f) => f.queueId === queueId)) {
        return fail(event, `turn ${event.turnId} runs follow-up ${queueId}, which is not queued`)
      }
      return Either.right({
        ...base,
        turnCount: state.turnCount + 1,
        openTurn: turn,
        followUps: queueId === undefined ? state.followUps : state.followUps.filter((f) => f.queueId !== queueId)
      })
    }
    case "turn.completed":
      if (state.compaction !== undefined) return fail(event, `turn completed while compaction ${state.compaction.compactionId} runs`)
      if (tableOf(turn).size > 0) {
        return fail(event, `turn completed with open tool calls: ${turn.toolCalls.map((c) => c.toolCallId).join(", ")}`)
      }
      return Either.right({
        ...base,
        openTurn: undefined,
        ...totalsWith(state, event),
        lastTurn: {
          turnId: event.turnId,
          stopReason: event.payload.stopReason,
          ...(event.payload.errorCode === undefined ? {} : { errorCode: event.payload.errorCode }),
          ...(event.payload.usage === undefined ? {} : { usage: event.payload.usage })
        }
      })
    case "model.tool_call_requested":
    {
      const { args, tool, toolCallId } = event.payload
      const calls = tableOf(turn)
      if (calls.get(toolCallId) !== undefined) return fail(event, `tool call ${toolCallId} requested twice`)
      return Either.right({
        ...base,
        openTurn: makeTurn(turn.turnId, turn.status, turn.toolCallCount + 1, calls.set({ toolCallId, tool, args, status: "requested" }))
      })
    }
    case "permission.requested":
    case "permission.resolved":
    case "tool.started":
    case "tool.progress":
    case "tool.completed":
    case "tool.failed":
      return Either.map(reduceToolEvent(turn, event), (next) => ({
        ...base,
        openTurn: withCallsPhase(next),
        remembered: event.type === "permission.resolved" ? rememberedOf(state, event) : state.remembered,
        applied: event.type === "permission.resolved"
          ? withApplied(state.applied, event.payload.idempotencyKey, (key) => ({ _tag: "PermissionResolved", key, toolCallId: event.payload.toolCallId }))
          : state.applied
      }))
    case "turn.steered":
      return Either.right({
        ...base,
        openTurn: turn,
        applied: withApplied(state.applied, event.payload.idempotencyKey, (key) => ({ _tag: "TurnSteered", key, turnId: event.turnId }))
      })
    case "user.message": {
      // The first message titles the session (unless the user named it first); later ones change nothing.
      const title = state.title ?? SessionTitle.fromMessage(event.payload.content, event.payload.images?.length ?? 0)
      return Either.right({ ...base, openTurn: turn, ...(title === undefined ? {} : { title }) })
    }
    case "context.built":
    case "model.delta":
    case "model.thinking_delta":
    case "model.thinking_block":
    case "model.retry":
      // The turn moves on (its phase), nothing else.
      return Either.right({ ...base, openTurn: turn })
    case "mcp.tools_listed":
      return Either.right({ ...base, openTurn: turn, toolLists: { ...state.toolLists, [event.payload.server]: event.payload.hash } })
    case "model.usage":
      return Either.right({
        ...base,
        openTurn: turn,
        lastRequest: { cacheRead: event.payload.usage.cacheReadTokens ?? 0, parts: event.payload.parts ?? [] }
      })
    case "cache.break":
      return Either.right({ ...base, openTurn: turn })
    case "subagent.started":
    case "subagent.progress":
    case "subagent.asked":
    case "subagent.completed":
      // Only while the `task` call that runs the subagent is running.
      if (tableOf(turn).get(event.payload.toolCallId)?.status !== "running") {
        return fail(event, `${event.type} for tool call ${event.payload.toolCallId}, which is not running`)
      }
      return Either.right({
        ...base,
        openTurn: withCallsPhase(withSubagent(turn, event))
      })
    case "workspace.changed":
      // Stored while its call runs, beside others maybe: the most pressing call says the phase.
      if (tableOf(turn).get(event.payload.toolCallId)?.status !== "running") {
        return fail(event, `workspace.changed of tool call ${event.payload.toolCallId}, which is not running`)
      }
      return Either.right({ ...base, openTurn: withCallsPhase(turn) })
  }
}

/** The turn with what a subagent event tells of its `task` call: the subagent it started, or that it ended. */
const withSubagent = (turn: OpenTurn, event: EventOfType<"subagent.started" | "subagent.progress" | "subagent.asked" | "subagent.completed">): OpenTurn => {
  if (event.type !== "subagent.started" && event.type !== "subagent.completed") return turn
  const call = tableOf(turn).get(event.payload.toolCallId)
  if (call === undefined) return turn
  if (event.type === "subagent.completed") return call.subagent === undefined ? turn : updateCall(turn, call, { ...call, subagent: { ...call.subagent, completed: true } })
  const { childSessionId, cwd, description, maxSteps, mode, tools } = event.payload
  return updateCall(turn, call, {
    ...call,
    subagent: { childSessionId, description, cwd, mode, ...(tools === undefined ? {} : { tools }), ...(maxSteps === undefined ? {} : { maxSteps }) }
  })
}

/**
 * A compaction's events: `compaction.started` opens one (in the open turn, between its steps; or,
 * with no turnId, while no turn is open), and `session.compacted` or `compaction.failed` of the same
 * compaction, in the same turn, closes it. A turn's phase is `compaction` meanwhile.
 */
const reduceCompaction = (state: SessionState, event: CompactionEvent): Either.Either<SessionState, ImpossibleEvent> => {
  const open = state.openTurn
  const { compactionId } = event.payload
  if (event.turnId === undefined ? open !== undefined : open?.turnId !== event.turnId) {
    return fail(event, event.turnId === undefined ? `${event.type} of no turn while turn ${open!.turnId} is open` : `${event.type} of turn ${event.turnId}, which is not the open turn`)
  }
  if (event.type === "compaction.started") {
    if (state.compaction !== undefined) return fail(event, `compaction ${compactionId} started while compaction ${state.compaction.compactionId} runs`)
    if (open !== undefined && tableOf(open).size > 0) return fail(event, "a compaction cannot start while tool calls are open")
  } else if (state.compaction?.compactionId !== compactionId) {
    return fail(event, `${event.type} of compaction ${compactionId}, which is not running`)
  }
  let turn = open
  if (open !== undefined) {
    const status = TurnFsm.transition(open.status, inputOf(event))
    if (Either.isLeft(status)) return fail(event, status.left.message)
    turn = makeTurn(open.turnId, status.right, open.toolCallCount, tableOf(open))
  }
  return Either.right({
    ...state,
    lastSequence: event.sequence,
    lastActivityAt: event.timestamp,
    openTurn: turn,
    compaction: event.type === "compaction.started"
      ? { compactionId, reason: event.payload.reason, ...(event.turnId === undefined ? {} : { turnId: event.turnId }) }
      : undefined,
    // The history the last request's cache held is gone: the next request's cache break names it.
    ...(event.type === "session.compacted" && state.lastRequest !== undefined ? { lastRequest: { ...state.lastRequest, compacted: true } } : {}),
    ...totalsWith(state, event)
  })
}

/** The session's totals with what an event used added (`Session.usageChange`); nothing when it used nothing. */
const totalsWith = (state: SessionState, event: AgentEvent): Pick<SessionState, "totals"> => {
  const used = Session.usageChange(event)
  return used === undefined ? {} : { totals: Session.addUsage(state.totals ?? {}, used) }
}

/** The applied messages with one more (the oldest forgotten past {@link rememberedKeys}); unchanged without a key. */
const withApplied = (
  applied: ReadonlyArray<AppliedMessage>,
  key: string | undefined,
  make: (key: string) => AppliedMessage
): ReadonlyArray<AppliedMessage> => {
  if (key === undefined) return applied
  const next = [...applied, make(key)]
  return next.length > rememberedKeys ? next.slice(next.length - rememberedKeys) : next
}

/** What the message with this idempotency key did, when the log holds it (the first one, if a key came twice). */
export const findApplied = (state: SessionState, key: string): AppliedMessage | undefined => state.applied.find((m) => m.key === key)

/**
 * An incremental fold of one session's new events into its state, as {@link reduce} does one event at
 * a time — but a run of deltas while the model streams (each moves nothing but the sequence and the
 * time, see {@link movesOnlyTheSequence}) is folded by reducing only its last delta, when the state
 * is next read. What the engine's commit folds each batch with: a provider that streams one delta
 * per chunk costs one reduction per run, not one state copy per delta.
 */
export class Folder {
  /** The last delta of the run not folded yet. */
  private pending: Delta | undefined = undefined
  /** The last sequence taken, pending deltas included. */
  lastSequence: number

  constructor(private folded: SessionState) {
    this.lastSequence = folded.lastSequence
  }

  /** The state with every event added. */
  get state(): SessionState {
    const pending = this.pending
    if (pending !== undefined) {
      this.pending = undefined
      this.folded = orThrow(reduce({ ...this.folded, lastSequence: pending.sequence - 1 }, pending))
    }
    return this.folded
  }

  /** Adds the next event. Throws an {@link ImpossibleEvent} when it cannot follow: a caller that builds only legal events treats that as a defect. */
  add(event: AgentEvent): void {
    const inRun = isDelta(event) && event.sequence === this.lastSequence + 1 &&
      (this.pending === undefined ? movesOnlyTheSequence(this.folded, event) : event.turnId === this.pending.turnId)
    if (inRun) this.pending = event
    else this.folded = orThrow(reduce(this.state, event))
    this.lastSequence = event.sequence
  }
}

const orThrow = (next: Either.Either<SessionState, ImpossibleEvent>): SessionState => {
  if (Either.isLeft(next)) throw next.left
  return next.right
}

/** Replays a whole log. Fails on the first event that cannot follow its predecessors. */
export const replay = (events: Iterable<AgentEvent>): Either.Either<SessionState | undefined, ImpossibleEvent> => {
  let state: SessionState | undefined
  for (const event of events) {
    const next = state === undefined ? start(event) : reduce(state, event)
    if (Either.isLeft(next)) return next
    state = next.right
  }
  return Either.right(state)
}

/**
 * Replays a log as it is read, a chunk at a time: the whole log is never held at once. Given a state
 * already folded (`held`), `events` are the ones after it, folded on from it.
 */
export const replayStream = <E, R>(
  events: Stream.Stream<AgentEvent, E, R>,
  held?: SessionState
): Effect.Effect<SessionState | undefined, E | ImpossibleEvent, R> =>
  Effect.suspend(() => {
    let state: SessionState | undefined = held
    return Stream.runForEachChunk(events, (chunk) => {
      for (const event of chunk) {
        const next = state === undefined ? start(event) : reduce(state, event)
        if (Either.isLeft(next)) return Effect.fail(next.left)
        state = next.right
      }
      return Effect.void
    }).pipe(Effect.map(() => state))
  })

/** The calls of the open turn that wait for the user's decision. */
export const pendingApprovals = (state: SessionState): ReadonlyArray<OpenToolCall> =>
  state.openTurn?.toolCalls.filter((c) => c.status === "awaiting_approval") ?? []

/**
 * Whether the open turn is paused: a call waits for the user, or the user answered and the turn
 * has not gone on yet. A paused turn is not a crash — it waits to be resumed.
 */
export const isPaused = (state: SessionState): boolean =>
  state.openTurn?.toolCalls.some((c) => c.status === "awaiting_approval" || (c.decidedBy === "user" && (c.status === "allowed" || c.status === "denied"))) === true

/**
 * The `task` calls of the open turn that wait on their subagent: running, the subagent started and
 * its end not told yet (`subagent.completed`). A process that stopped leaves them so; the turn is then
 * paused on its subagents (see {@link isWaiting}), and resuming it follows each subagent to its end.
 */
export const waitingOnSubagents = (state: SessionState): ReadonlyArray<OpenToolCall & { readonly subagent: OpenSubagent }> =>
  (state.openTurn?.toolCalls ?? []).filter((c): c is OpenToolCall & { readonly subagent: OpenSubagent } =>
    c.status === "running" && c.subagent !== undefined && c.subagent.completed !== true
  )

/** How deep a tree of waiting sessions is followed: past any real nesting, so that a log edited into a cycle ends. */
export const maxSubagentDepth = 8

/**
 * The calls of the subagents a session's open `task` calls wait on ({@link waitingOnSubagents}), and
 * of theirs, that wait for the user, each labelled with its subagent (`askedBy`). `read` gives a
 * session's state (an engine's cache, or a fold of the store); a subagent it cannot read is left out.
 */
export const pendingBelow = <E, R>(
  state: SessionState,
  read: (sessionId: string) => Effect.Effect<SessionState, E, R>
): Effect.Effect<ReadonlyArray<OpenToolCall>, never, R> => {
  // Each session is followed once: a log's `childSessionId` is any id its author wrote, and twenty
  // open `task` calls of a session naming itself made the depth bound alone 20^8 reads (`pending`,
  // a read never refused, of a repository's log: 8 such calls already took a minute).
  const seen = new Set<string>([state.sessionId])
  const firstVisit = (sessionId: string): boolean => {
    if (seen.has(sessionId)) return false
    seen.add(sessionId)
    return true
  }
  const below = (state: SessionState, depth: number): Effect.Effect<ReadonlyArray<OpenToolCall>, never, R> =>
    depth > maxSubagentDepth ? Effect.succeed([]) : Effect.map(
      Effect.forEach(waitingOnSubagents(state).filter(({ subagent }) => firstVisit(subagent.childSessionId)), ({ subagent }) =>
        read(subagent.childSessionId).pipe(
          Effect.flatMap((child) =>
            Effect.map(below(child, depth + 1), (deeper) => [
              ...pendingApprovals(child).map((call) => ({ ...call, askedBy: { sessionId: child.sessionId, description: subagent.description } })),
              ...deeper
            ])
          ),
          Effect.orElseSucceed(() => [])
        )),
      (lists) => lists.flat()
    )
  return below(state, 1)
}

/**
 * Whether the open turn waits — on the user ({@link isPaused}) or on a subagent
 * ({@link waitingOnSubagents}) — rather than having been left open by a crash: it is resumed, not
 * repaired.
 */
export const isWaiting = (state: SessionState): boolean => isPaused(state) || waitingOnSubagents(state).length > 0
