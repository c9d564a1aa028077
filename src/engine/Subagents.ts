/**
 * Subagents: a `task` call runs a child session — a real session with its own log, linked both ways
 * (`subagent.started` / `subagent.completed` in the parent, `session.created.parent` in the child) —
 * and its final answer is the call's result. A child works in its parent's cwd or one inside it
 * (checked when the call is prepared, see `TaskTool`), with a subset of its parent's tools, a mode
 * never wider than its parent's, its own step limit, and no `task` tool at the depth limit.
 *
 * A turn and the subagents it starts are one tree with one budget: every step of every session in it
 * counts, as does every token each model response reported; crossing the budget ends each session of
 * the tree at its next step boundary with `budget_exceeded`. The parent's log follows its children
 * (`subagent.progress`, once per model response or tool result of a child, never per delta), and a
 * child's call waiting for the user is told to the parent (`subagent.asked`) so that whoever answers
 * the parent answers it, on the child session.
 *
 * A cancel of the parent interrupts the call, which interrupts the child's turn stream: the child's
 * turn is cancelled and stored as such before the call ends.
 *
 * @since 0.10.0
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Stream from "effect/Stream"
import type * as AgentEvent from "../domain/AgentEvent.js"
import type { EventStoreFailure } from "../domain/Errors.js"
import * as Pricing from "../domain/Pricing.js"
import type * as Session from "../domain/Session.js"
import * as SessionState from "../domain/SessionState.js"
import * as Task from "../domain/Task.js"
import * as Transcript from "../domain/Transcript.js"
import * as AgentHooks from "../services/AgentHooks.js"
import type { PermissionEngine, PermissionRequest } from "../services/PermissionEngine.js"
import { type PathFence, type PreparedCall, unknownTool, ToolFailure, type ToolOutput, type ToolRouter } from "../services/ToolRouter.js"
import * as EventDraft from "./EventDraft.js"
import * as ModelResponse from "./ModelResponse.js"
import * as PromptCache from "./PromptCache.js"
import type { Live } from "./LiveSession.js"
import * as ResumedSpend from "./ResumedSpend.js"
import type { Services } from "./Services.js"
import type { Commit, Turn } from "./Turn.js"

/** What the engine lends the subagents: how to create a child session and run a turn of it. */
export interface EngineApi {
  readonly createChild: (input: {
    readonly cwd: string
    readonly client: AgentEvent.Client
    readonly parent: { readonly sessionId: string; readonly toolCallId: string; readonly depth: number }
  }) => Effect.Effect<Session.Session, unknown>
  /** `kept`: asked when the stream's reader goes away, whether to leave the turn be rather than cancel it. */
  readonly runTurn: (
    input: { readonly sessionId: string; readonly userMessage: string },
    kept?: Effect.Effect<boolean>
  ) => Stream.Stream<AgentEvent.AgentEvent, unknown>
  /** Continues a session's turn left open in its log (never handed to its parent, as the public `resumeTurn` may). */
  readonly resumeTurn: (sessionId: string, kept?: Effect.Effect<boolean>) => Stream.Stream<AgentEvent.AgentEvent, unknown>
  /** Repairs a session's turn left open by a crash (as its next run would), when nothing of it waits. */
  readonly repair: (sessionId: string) => Effect.Effect<void, unknown>
  /** Cancels a session's turn, running or paused in the log (as `cancelTurn`). */
  readonly cancelTurn: (sessionId: string) => Effect.Effect<void>
  /** A session's state and transcript, loaded from the store when the engine does not hold it. */
  readonly session: (sessionId: string) => Effect.Effect<Live, unknown>
  /** Whether a session's log says it is a subagent's (`session.created.parent`). */
  readonly isSubagent: (sessionId: string) => Effect.Effect<boolean>
}

/** What one session of a tree has used: its own steps and tokens, and which session started it. */
interface Member {
  readonly parent: string | undefined
  steps: number
  usage: AgentEvent.Usage | undefined
  /**
   * A resumed top turn's: what its responses before the resume used, per model that answered
   * (`ResumedSpend`), and this process's share of `usage` (its responses and the compactions), priced
   * at its model — the turn's cost as its `turn.completed` records it (`ResumedSpend.costOfAnswers`).
   */
  earlier?: ReadonlyArray<ResumedSpend.Answered>
  fresh?: AgentEvent.Usage | undefined
}

/** A turn and the subagents it started, with one budget. */
export interface Tree {
  readonly budget: Task.Budget | undefined
  readonly members: Map<string, Member>
  /** The subagents this turn's `task` calls started (in this process), counted against `Runtime.maxSubagents`. */
  started: number
}

/** A running child session: where it hangs in its tree and what it may do. */
interface Link {
  readonly tree: Tree
  /** The session that started it, and that session's cwd: its decisions bound the child's. */
  readonly parent: { readonly sessionId: string; readonly cwd: string }
  readonly depth: number
  /** Its tools; `undefined`: the same as the engine's. */
  readonly tools: ReadonlySet<string> | undefined
  readonly readOnly: boolean
  readonly maxSteps: number | undefined
}

/** The subagents of one engine: the running children by session id, and the trees of top turns. */
export interface Runtime {
  /** Whether the tools offer `task`: without it no subagent starts, but budgets still hold for single turns. */
  readonly offersTask: boolean
  readonly maxDepth: number
  /** The subagent sessions one top turn's tree may start in all. */
  readonly maxSubagents: number
  readonly budget: Task.Budget | undefined
  readonly links: Map<string, Link>
  readonly roots: WeakMap<Turn, Tree>
  /** Set once the engine is built (the subagents run through its own operations). */
  api: EngineApi | undefined
}

/** Options of the subagents (engine options `maxSubagentDepth`, `maxSubagents`, `budget`). */
export const makeRuntime = (options: {
  readonly offersTask: boolean
  readonly maxDepth?: number | undefined
  readonly maxSubagents?: number | undefined
  readonly budget?: Task.Budget | undefined
}): Runtime => ({
  offersTask: options.offersTask,
  maxDepth: Math.max(0, options.maxDepth ?? Task.defaultMaxDepth),
  maxSubagents: Math.max(0, options.maxSubagents ?? Number.POSITIVE_INFINITY),
  budget: options.budget,
  links: new Map(),
  roots: new WeakMap(),
  api: undefined
})

/** Whether a prepared call is a `task` the engine runs. */
export const isTask = (services: Services, call: PreparedCall): boolean => call.tool === Task.toolName && services.subagents?.offersTask === true

/** What a session and the sessions below it used: steps, usage, cost. */
interface Used {
  readonly steps: number
  readonly usage: AgentEvent.Usage | undefined
  readonly cost: number | undefined
  /** A model that answered has no price: what it cost is unknown. */
  readonly unpriced: boolean
}

/** A usage's tokens as `maxTokens` counts them: OpenAI's prompt count holds its cache reads, counted once. */
const tokensOf = (services: Services, usage: AgentEvent.Usage | undefined): number =>
  usage === undefined ? 0 : Pricing.totalInput(usage, services.provider.capabilities.provider) + usage.outputTokens

/** What `sessionId` and every session below it in `tree` used (the whole tree for its top session). */
const usedBelow = (services: Services, tree: Tree, sessionId: string | undefined): Used => {
  let steps = 0
  let usage: AgentEvent.Usage | undefined
  let cost: number | undefined
  let unpriced = false
  const isBelow = (id: string): boolean => {
    if (sessionId === undefined || id === sessionId) return true
    const parent = tree.members.get(id)?.parent
    return parent !== undefined && isBelow(parent)
  }
  for (const [id, member] of tree.members) {
    if (!isBelow(id)) continue
    steps += member.steps
    if (member.usage === undefined) continue
    usage = ModelResponse.addUsage(usage, member.usage)
    const priced = member.earlier === undefined ? PromptCache.costOf(services, member.usage) : ResumedSpend.costOfAnswers(services, member.earlier, member.fresh)
    // A model with no price makes the cost unknown: a `maxCost` budget then fails closed (`overBudget`).
    if (priced.cost === null) unpriced = true
    else cost = Math.round(((cost ?? 0) + priced.cost) * 1_000_000) / 1_000_000
  }
  return { steps, usage, cost, unpriced }
}

/** The tree a turn belongs to: its parent's, for a subagent's turn; its own, for a top turn. */
const treeOf = (runtime: Runtime, turn: Turn): Tree => {
  const link = runtime.links.get(turn.session.sessionId)
  if (link !== undefined) return link.tree
  const known = runtime.roots.get(turn)
  if (known !== undefined) return known
  // The turn's own budget tightens the engine's, limit by limit; it never lifts one.
  const budget = Task.tighter(turn.work._tag === "New" ? turn.work.budget : undefined, runtime.budget)
  const tree: Tree = { budget, members: new Map([[turn.session.sessionId, { parent: undefined, steps: 0, usage: undefined }]]), started: 0 }
  runtime.roots.set(turn, tree)
  return tree
}

/**
 * A resumed top turn's tree, as its log left it (`ResumedSpend`): its own budget, or the engine's; the
 * steps it took before the pause; each subagent it started, with what that one and those below it had
 * used; and the subagents started, counted against `maxSubagents`. The turn's own usage is its tally's
 * (`beforeStep`). A subagent's resumed turn belongs to its parent's tree, seeded by the parent.
 */
export const seed = (turn: Turn, spent: ResumedSpend.Spent, stepsDone: number): void => {
  const runtime = turn.services.subagents
  const sessionId = turn.session.sessionId
  if (runtime === undefined || runtime.links.has(sessionId)) return
  const members = new Map<string, Member>([[sessionId, { parent: undefined, steps: stepsDone, usage: undefined, earlier: spent.answered, fresh: undefined }]])
  for (const child of spent.children) members.set(child.childSessionId, { parent: sessionId, steps: child.steps, usage: child.usage })
  // Its children and theirs: a grandchild started before the pause counts as one started now would.
  runtime.roots.set(turn, { budget: Task.tighter(spent.budget, runtime.budget), members, started: spent.started })
}

/** Whether a tree has used more than its budget. */
const overBudget = (services: Services, tree: Tree): boolean => {
  const { budget } = tree
  if (budget === undefined || (budget.maxTokens === undefined && budget.maxCost === undefined && budget.maxSteps === undefined)) return false
  const used = usedBelow(services, tree, undefined)
  // Checked before a step counts: the tree's steps so far are all it may take.
  // Spending at a model with no price is over any `maxCost`: a cap that cannot be counted is not skipped
  // (but on a provider that spends nothing to count, whose turn the engine let start under the cap).
  const uncountable = used.unpriced && !Pricing.spendsNothing(services.provider.capabilities.provider)
  return (budget.maxTokens !== undefined && tokensOf(services, used.usage) > budget.maxTokens) ||
    (budget.maxCost !== undefined && (uncountable || (used.cost ?? 0) > budget.maxCost)) ||
    (budget.maxSteps !== undefined && used.steps >= budget.maxSteps)
}

/**
 * The step boundary of any turn, before its request: the tree's budget and a subagent's own step
 * limit may end the turn here (`budget_exceeded`, `max_steps`); otherwise the step counts. `tally` is
 * what the turn spent so far, its responses and its compactions (`ModelResponse.spent`): a top turn's
 * own count (a child's is kept by its parent's call, which reads the child's events), priced as its
 * `turn.completed` records it — a resumed turn's earlier responses each at the model that answered.
 */
export const beforeStep = (
  turn: Turn,
  step: number,
  tally: ModelResponse.Tally
): AgentEvent.PayloadOf<"turn.completed"> | undefined => {
  const runtime = turn.services.subagents
  if (runtime === undefined) return undefined
  const tree = treeOf(runtime, turn)
  const link = runtime.links.get(turn.session.sessionId)
  const member = tree.members.get(turn.session.sessionId)
  if (link === undefined && member !== undefined) {
    member.usage = ModelResponse.spent(tally)
    if (member.earlier !== undefined) member.fresh = ModelResponse.addUsage(tally.fresh, tally.compacted)
  }
  if (overBudget(turn.services, tree)) return { stopReason: "error", errorCode: "budget_exceeded" }
  if (link?.maxSteps !== undefined && step > link.maxSteps) return { stopReason: "error", errorCode: "max_steps" }
  if (member !== undefined) member.steps += 1
  return undefined
}

/** The session at the top of a running child's tree: the one whose configuration the tree shares. */
const topOf = (runtime: Runtime, link: Link): Link["parent"] => {
  let top = link.parent
  // Links only ever point up (a child is made by a running parent); the bound is the nesting's.
  for (let depth = 0; depth <= runtime.maxDepth; depth++) {
    const above = runtime.links.get(top.sessionId)
    if (above === undefined) break
    top = above.parent
  }
  return top
}

/** A session's tools, narrowed for a subagent: its subset, and no `task` at the depth limit. */
export const router = (base: ToolRouter.Service, runtime: Runtime): ToolRouter.Service => {
  const narrowed = (sessionRouter: ToolRouter.Service, link: Link): ToolRouter.Service => {
    const allowed = (tool: string) =>
      (tool !== Task.toolName || link.depth < runtime.maxDepth) && (link.tools === undefined || link.tools.has(tool))
    return {
      ...sessionRouter,
      definitions: sessionRouter.definitions.filter((d) => allowed(d.name)),
      // The child's cwd was checked (a real path inside its parent's) when its task started: each call holds it to that.
      execute: (call, context) => sessionRouter.execute(call, { ...context, pinnedCwd: true }),
      prepare: (call, cwd) =>
        allowed(call.tool)
          ? sessionRouter.prepare(call, cwd).pipe(Effect.filterOrFail(
            (prepared) => prepared.tool !== Task.toolName || wider(link, prepared.input as Task.Input).length === 0,
            (prepared) => toolNotAllowed(wider(link, prepared.input as Task.Input))
          ))
          : Effect.fail(
            call.tool === Task.toolName
              ? new ToolFailure({ errorCode: "unknown_tool", message: `This subagent cannot start subagents: they nest at most ${runtime.maxDepth} deep.` })
              : unknownTool(call.tool, "subagent")
          )
    }
  }
  const forSession = (sessionId: string): ToolRouter.Service => {
    const link = runtime.links.get(sessionId)
    // A subagent's session has no tools of its own (MCP servers are given per session by its
    // client: ACP's session/new, the server's body): it is narrowed from its tree's top session's.
    const sessionRouter = base.forSession?.(link === undefined ? sessionId : topOf(runtime, link).sessionId) ?? base
    return link === undefined ? sessionRouter : narrowed(sessionRouter, link)
  }
  return { ...base, forSession }
}

const strictness = { allow: 0, ask: 1, deny: 2 } as const

/**
 * The permission engine, narrowed for subagents: a read-only subagent's calls but reads are denied,
 * and a subagent's decision is never wider than its parent's for the same call — whatever mode or
 * rules the permission engine keeps per session (ACP's session modes, a server's per-cwd settings),
 * the stricter of the two decisions stands. The parent's "always" answers do not carry over; the
 * user's "always" answers to the subagent's own questions count in both decisions (until December
 * 2026 the parent's, made without them, asked again: "always" on a subagent's question did nothing). The
 * subagent's own decision names the top session of its tree (`topSession`): such an engine decides it
 * with that session's configuration, as the CLI's one policy decides every session of its process.
 */
export const permissions = (base: PermissionEngine.Service, runtime: Runtime): PermissionEngine.Service => {
  const decide: PermissionEngine.Service["decide"] = (request) =>
    Effect.gen(function*() {
      const link = runtime.links.get(request.sessionId)
      if (link === undefined) {
        // A subagent no parent runs any more (the agent restarted while it waited): it may not act on its own,
        // its narrowing (tools, mode, the parent's decisions) being gone with its parent's call.
        const orphan = runtime.api !== undefined && (yield* runtime.api.isSubagent(request.sessionId))
        return orphan
          ? { decision: "deny", policy: "subagent/orphaned", reason: "this subagent's parent no longer runs it" } as const
          : yield* base.decide(request)
      }
      if (link.readOnly && request.call.risk !== "read") return { decision: "deny", policy: "subagent/read-only", reason: "this subagent is read-only" } as const
      const own = yield* base.decide({ ...request, topSession: topOf(runtime, link) })
      // The parent's decision sees the user's "always" answers to this subagent's questions (its own remembered), never
      // the parent's: an "always" on a subagent's question stands as it would on the top session's (a rule or a mode that
      // asks or denies still does).
      const parents = yield* decide({ ...request, sessionId: link.parent.sessionId, cwd: link.parent.cwd })
      return strictness[parents.decision] > strictness[own.decision] ? { ...parents, policy: `parent/${parents.policy}` } : own
    })
  // A subagent's walk leaves out what its own rules fence and what every parent's up the tree does,
  // as its decision is bounded by both. Only with the base's fence: without one the base decides such
  // a walk as any other (see `PermissionRequest.fenced`).
  const baseFence = base.fence
  if (baseFence === undefined) return { decide }
  const fence = (request: PermissionRequest): PathFence | undefined => {
    const link = runtime.links.get(request.sessionId)
    if (link === undefined) return baseFence(request)
    const own = baseFence({ ...request, topSession: topOf(runtime, link) })
    const parents = fence({ ...request, sessionId: link.parent.sessionId, cwd: link.parent.cwd, remembered: [] })
    if (own === undefined || parents === undefined) return own ?? parents
    return (path) => own(path) || parents(path)
  }
  return { decide, fence }
}

/** The tools a task asks for that its parent session lacks. */
const wider = (parent: Link | undefined, input: Task.Input): ReadonlyArray<string> =>
  parent?.tools === undefined ? [] : (input.tools ?? []).filter((t) => !parent.tools!.has(t))

const toolNotAllowed = (tools: ReadonlyArray<string>) =>
  new ToolFailure({ errorCode: "tool_not_allowed", message: `A subagent can only have tools this session has; not: ${tools.join(", ")}.` })

/** Why a task is refused before any session is made. */
const refusal = (turn: Turn, input: Task.Input, runtime: Runtime, tree: Tree): ToolFailure | undefined => {
  const parent = runtime.links.get(turn.session.sessionId)
  const depth = (parent?.depth ?? 0) + 1
  if (depth > runtime.maxDepth) {
    return new ToolFailure({ errorCode: "depth_exceeded", message: `Subagents nest at most ${runtime.maxDepth} deep.` })
  }
  // A model asking for a hundred tasks, each asking for a hundred more, would otherwise make 10,101
  // sessions (logs, model requests) of one user turn: the tree's total is bounded, whatever the depth.
  if (tree.started >= runtime.maxSubagents) {
    return new ToolFailure({
      errorCode: "subagents_exceeded",
      message: `This turn has started its ${runtime.maxSubagents} subagents, the most one turn may; do the rest yourself.`
    })
  }
  const refused = wider(parent, input)
  return refused.length > 0 ? toolNotAllowed(refused) : undefined
}

/** What the call's end says of the child's turn. */
interface Ending {
  outcome: AgentEvent.StopReason
  errorCode: string | undefined
}

/** The session that runs a call (a turn, or the driver writing to a turn no run drives). */
type Host = Pick<Turn, "services" | "session" | "commit">

/**
 * What the parent's turn does with the events of a child it follows: `subagent.progress` and
 * `subagent.asked` as the child goes, the tree's usage, the answer so far (the last response's text),
 * and `completed`, the call's `subagent.completed`.
 */
const follower = (host: Host, tree: Tree, toolCallId: string, childSessionId: string, description: string) => {
  const commit = (draft: AgentEvent.TurnEventDraft) => host.commit([draft])
  const used = () => usedBelow(host.services, tree, childSessionId)
  const progressWith = (answered?: string) => Effect.suspend(() => commit(EventDraft.subagentProgress(toolCallId, childSessionId, used(), answered)))
  const progress = progressWith()
  const ending: Ending = { outcome: "cancelled", errorCode: undefined }
  const completed = Effect.suspend(() => commit(EventDraft.subagentCompleted(toolCallId, childSessionId, ending.outcome, ending.errorCode, used())))
  // The child's calls, for the question its asks are told with; its answer so far (the last response's text).
  const calls = new Map<string, { tool: string; args: AgentEvent.PayloadOf<"tool.started">["args"]; risk?: AgentEvent.Risk; outsidePaths?: ReadonlyArray<string> | undefined }>()
  const state = { answer: "", ended: false }
  const follow = (event: AgentEvent.AgentEvent): Effect.Effect<void, EventStoreFailure> => {
    switch (event.type) {
      case "model.delta":
        state.answer += event.payload.text
        return Effect.void
      case "model.thinking_delta":
      case "model.thinking_block":
        // Thinking is not the answer.
        return Effect.void
      case "model.tool_call_requested":
        // A response with calls is not the answer: the answer is the text of the response that ends the turn.
        state.answer = ""
        calls.set(event.payload.toolCallId, { tool: event.payload.tool, args: event.payload.args })
        return Effect.void
      case "permission.requested": {
        const known = calls.get(event.payload.toolCallId)
        if (known !== undefined) {
          known.risk = event.payload.risk
          known.outsidePaths = event.payload.outsidePaths
        }
        return Effect.void
      }
      case "permission.resolved": {
        // The user answered the child: whoever showed its question can settle it.
        if (event.payload.actor === "user") return Effect.asVoid(progressWith(event.payload.toolCallId))
        if (event.payload.decision !== "ask") return Effect.void
        const known = calls.get(event.payload.toolCallId)
        return Effect.asVoid(commit(EventDraft.subagentAsked({
          toolCallId,
          childSessionId,
          description,
          childToolCallId: event.payload.toolCallId,
          tool: known?.tool ?? "unknown",
          args: known?.args ?? {},
          risk: known?.risk ?? "write",
          outsidePaths: known?.outsidePaths
        })))
      }
      case "subagent.asked":
        // A grandchild's ask goes up too, under this call: whoever answers the top session sees it.
        return Effect.asVoid(commit(EventDraft.subagentAsked({ ...event.payload, toolCallId })))
      case "model.usage":
      case "session.compacted":
      case "compaction.failed": {
        // A compaction's summary request (done, or returned and refused) is spent by the child's turn as its responses are: the tree's budget counts it.
        const { usage } = event.payload
        const member = tree.members.get(childSessionId)
        if (usage === undefined) return Effect.void
        if (member !== undefined) member.usage = ModelResponse.addUsage(member.usage, usage)
        return Effect.asVoid(progress)
      }
      case "tool.completed":
      case "tool.failed":
        return Effect.asVoid(progress)
      case "subagent.progress":
        // A grandchild's progress: this child's tree moved (and an answer below settles its question up here too).
        return Effect.asVoid(progressWith(event.payload.answered))
      case "turn.completed":
        ending.outcome = event.payload.stopReason
        ending.errorCode = event.payload.errorCode
        state.ended = true
        return Effect.void
      default:
        return Effect.void
    }
  }
  return { follow, ending, completed, state }
}

/**
 * Follows the child's turn to its end, its events through `following`. A cancel of the parent lets
 * the child's stream go, which cancels the child's turn (stored `cancelled` by then), and stores
 * `subagent.completed`. Any other stop — the engine shutting down — leaves a child that waits (on
 * the user, or on subagents that do) paused in its log and the call open, `subagent.completed` not
 * stored: the parent's turn is then paused on it, to be resumed after a restart. A child whose run
 * failed (its store) is repaired: its turn closed, as its next run would close it.
 */
const followChild = (
  turn: Turn,
  childSessionId: string,
  following: ReturnType<typeof follower>,
  completedBefore: boolean,
  stream: (kept: Effect.Effect<boolean>) => Stream.Stream<AgentEvent.AgentEvent, unknown>
): Effect.Effect<Either.Either<void, EventStoreFailure | { readonly _tag: "ChildFailed"; readonly failure: unknown }>> => {
  const runtime = turn.services.subagents!
  const kept = Effect.suspend(() => turn.cancel.requested ? Effect.succeed(false) : sessionWaits(runtime.api!, childSessionId, 1))
  return stream(kept).pipe(
    Stream.mapError((failure) => ({ _tag: "ChildFailed" as const, failure })),
    Stream.runForEach((event) => following.follow(event)),
    // The child's stream ended without its turn's end: a shutdown paused it; this call waits for the same shutdown.
    Effect.zipRight(Effect.suspend(() => following.state.ended ? Effect.void : Effect.flatMap(kept, (keep) => keep ? Effect.never : Effect.void))),
    Effect.either,
    // A child whose own store failed left its turn open, and no run of it will come to close it (a top
    // session's next run would): closed here, as a crash's repair closes it, once the child's run has stopped.
    Effect.tap((ran) => Either.isLeft(ran) && ran.left._tag === "ChildFailed" ? Effect.ignore(runtime.api!.repair(childSessionId)) : Effect.void),
    Effect.onInterrupt(() => Effect.flatMap(kept, (keep) => keep || completedBefore ? Effect.void : Effect.ignore(following.completed))),
    Effect.ensuring(Effect.sync(() => runtime.links.delete(childSessionId)))
  )
}

/** The call's result from how the child's turn ended and its answer. */
const resultOf = (childSessionId: string, ending: Ending, answer: string): Either.Either<ToolOutput, ToolFailure> => {
  if (ending.outcome === "final") return Either.right({ result: answer === "" ? "(the subagent gave no answer)" : answer })
  const why = ending.outcome === "cancelled" ? "was cancelled" : `ended with an error: ${ending.errorCode ?? "unknown"}`
  return Either.left(new ToolFailure({
    errorCode: ending.errorCode === "budget_exceeded" ? "budget_exceeded" : "subagent_failed",
    message: `The subagent (${childSessionId}) ${why}.${answer === "" ? "" : ` Its last words: ${answer}`}`
  }))
}

/**
 * Runs a prepared `task` call: the child session, its one turn, and the parent's events about it.
 * The child's failure (an error, a budget crossed) is the call's failure, never the parent turn's;
 * only the parent's own store failing fails this.
 */
export const run = (turn: Turn, call: PreparedCall): Effect.Effect<Either.Either<ToolOutput, ToolFailure>, EventStoreFailure> =>
  Effect.gen(function*() {
    const runtime = turn.services.subagents!
    const api = runtime.api!
    const input = call.input as Task.Input
    const tree = treeOf(runtime, turn)
    const refused = refusal(turn, input, runtime, tree)
    if (refused !== undefined) return Either.left(refused)
    // Counted before the session is made: calls running at once never pass the limit together.
    tree.started += 1
    const parentSessionId = turn.session.sessionId
    const parentLink = runtime.links.get(parentSessionId)
    const depth = (parentLink?.depth ?? 0) + 1
    const created = yield* Effect.either(api.createChild({
      cwd: input.cwd,
      client: turn.session.live.state.client,
      parent: { sessionId: parentSessionId, toolCallId: call.toolCallId, depth }
    }))
    if (Either.isLeft(created)) {
      yield* Effect.logWarning("could not create a subagent's session", created.left)
      return Either.left(new ToolFailure({ errorCode: "subagent_failed", message: "The subagent's session could not be created." }))
    }
    const childSessionId = created.right.sessionId
    const tools = input.tools ?? (parentLink?.tools === undefined ? undefined : [...parentLink.tools])
    link(turn, tree, childSessionId, { depth, tools, readOnly: input.mode === "readOnly" || parentLink?.readOnly === true, maxSteps: input.maxSteps })
    const { toolCallId } = call
    const following = follower(turn, tree, toolCallId, childSessionId, input.description)
    const { completed, ending, state } = following

    yield* turn.commit([EventDraft.subagentStarted({
      toolCallId,
      childSessionId,
      description: input.description,
      cwd: input.cwd,
      ...(tools === undefined ? {} : { tools }),
      mode: input.mode,
      ...(input.maxSteps === undefined ? {} : { maxSteps: input.maxSteps })
    })]).pipe(
      // Not stored (the parent's store failed, or the turn was cancelled): no call runs the child, which
      // must not stay linked below it — its calls would be decided as this call's subagent's (`followChild` unlinks it otherwise).
      Effect.onError(() => Effect.sync(() => runtime.links.delete(childSessionId)))
    )

    // The parent's own store failing stops the call; the child's failures end it as the call's result.
    const ran = yield* followChild(turn, childSessionId, following, false, (kept) => api.runTurn({ sessionId: childSessionId, userMessage: input.prompt }, kept))
    if (Either.isLeft(ran)) {
      if (ran.left._tag === "EventStoreFailure") return yield* Effect.fail(ran.left)
      yield* Effect.logWarning("a subagent's turn failed", ran.left.failure)
      ending.outcome = "error"
      ending.errorCode = "subagent_failed"
    }
    yield* completed
    return resultOf(childSessionId, ending, state.answer)
  })

/** The child is linked below `host`'s session in `tree`: narrowed as it was when it started, its usage counted in the tree. */
const link = (
  host: Host,
  tree: Tree,
  childSessionId: string,
  narrowing: Pick<Link, "depth" | "readOnly" | "maxSteps"> & { readonly tools: ReadonlyArray<string> | undefined }
): void => {
  const runtime = host.services.subagents!
  runtime.links.set(childSessionId, {
    ...narrowing,
    tree,
    parent: { sessionId: host.session.sessionId, cwd: host.session.live.state.cwd },
    tools: narrowing.tools === undefined ? undefined : new Set(narrowing.tools)
  })
  // A subagent resumed keeps what it used before the pause (see `seed`).
  if (!tree.members.has(childSessionId)) tree.members.set(childSessionId, { parent: host.session.sessionId, steps: 0, usage: undefined })
}

// ---------------------------------------------------------------------------------------------
// After a restart: a turn paused on its subagents

/** A `task` call left running in the log, with the subagent it started. */
export type WaitingCall = SessionState.OpenToolCall & { readonly subagent: SessionState.OpenSubagent }

/** How deep a tree of waiting sessions is followed (see `SessionState.maxSubagentDepth`). */
const maxFollowed = SessionState.maxSubagentDepth

/**
 * Whether the subagents a turn's `task` calls wait on (its log's {@link SessionState.waitingOnSubagents})
 * wait themselves — on the user, or on subagents of theirs that do. Then the turn is paused on them:
 * it is resumed, not repaired. A subagent that ended, was left open by a crash, or cannot be read
 * does not wait.
 */
export const treeWaits = (services: Services, state: SessionState.SessionState): Effect.Effect<boolean> => {
  const api = services.subagents?.api
  return api === undefined ? Effect.succeed(false) : subagentsWait(api, state, 1)
}

const subagentsWait = (api: EngineApi, state: SessionState.SessionState, depth: number): Effect.Effect<boolean> =>
  Effect.exists(SessionState.waitingOnSubagents(state), (call) => sessionWaits(api, call.subagent.childSessionId, depth))

/** Whether a session's open turn waits: on the user, or on subagents that wait. */
const sessionWaits = (api: EngineApi, sessionId: string, depth: number): Effect.Effect<boolean> =>
  depth > maxFollowed ? Effect.succeed(false) : api.session(sessionId).pipe(
    Effect.flatMap(({ state }) => SessionState.isPaused(state) ? Effect.succeed(true) : subagentsWait(api, state, depth + 1)),
    Effect.orElseSucceed(() => false)
  )

/** How a child's turn ended, as its log says: none while a turn of it is open (or none started). */
const endOf = (live: Live): { readonly ending: Ending; readonly answer: string } | undefined => {
  const { lastTurn, openTurn } = live.state
  if (openTurn !== undefined || lastTurn === undefined) return undefined
  const said = Transcript.all(live.transcript).filter((e) => e.role === "assistant" && e.turnId === lastTurn.turnId)
  return { ending: { outcome: lastTurn.stopReason, errorCode: lastTurn.errorCode }, answer: lastTurn.stopReason === "final" ? said.at(-1)?.content ?? "" : "" }
}

const tagOf = (failure: unknown): unknown => typeof failure === "object" && failure !== null && "_tag" in failure ? failure._tag : undefined

/** The call's end when the child's session cannot be read (deleted, or its log corrupt): a typed error, never a wait. */
const lost = (childSessionId: string, why: unknown): Either.Either<never, ToolFailure> => {
  const reason = tagOf(why) === "SessionNotFound" ? "is gone" : "could not be read"
  return Either.left(new ToolFailure({ errorCode: "subagent_lost", message: `The subagent's session (${childSessionId}) ${reason}.` }))
}

/**
 * Resumes a `task` call a stopped process left running: the subagent is linked again (narrowed as
 * `subagent.started` told it) and followed to its end — a turn it has paused is resumed (and waits
 * for the user's answer, given on either session), one a crash left open is closed `interrupted`
 * by its own repair, one that ended is read from its log (the answer picked up once), and one never
 * started is started. `subagent.completed` is stored unless the log has it; then the call's result.
 */
export const resume = (turn: Turn, call: WaitingCall): Effect.Effect<Either.Either<ToolOutput, ToolFailure>, EventStoreFailure> =>
  Effect.gen(function*() {
    const runtime = turn.services.subagents
    const api = runtime?.api
    const { subagent, toolCallId } = call
    const { childSessionId } = subagent
    if (runtime === undefined || api === undefined) return Either.left(new ToolFailure({ errorCode: "subagent_failed", message: "This engine runs no subagents." }))
    const loaded = yield* Effect.either(api.session(childSessionId))
    const tree = treeOf(runtime, turn)
    const parentLink = runtime.links.get(turn.session.sessionId)
    const following = follower(turn, tree, toolCallId, childSessionId, subagent.description)
    const { completed, ending } = following
    const finish = (result: Either.Either<ToolOutput, ToolFailure>, outcome: Ending) => {
      ending.outcome = outcome.outcome
      ending.errorCode = outcome.errorCode
      return Effect.as(subagent.completed === true ? Effect.void : completed, result)
    }
    if (Either.isLeft(loaded)) {
      yield* Effect.logWarning("a subagent's session could not be read", loaded.left)
      return yield* finish(lost(childSessionId, loaded.left), { outcome: "error", errorCode: "subagent_lost" })
    }
    const child = loaded.right.state
    const before = endOf(loaded.right)
    if (before === undefined) {
      const prompt = typeof call.args === "object" && call.args !== null && "prompt" in call.args && typeof call.args.prompt === "string" ? call.args.prompt : ""
      link(turn, tree, childSessionId, {
        depth: child.parent?.depth ?? (parentLink?.depth ?? 0) + 1,
        tools: subagent.tools,
        readOnly: subagent.mode === "readOnly" || parentLink?.readOnly === true,
        maxSteps: subagent.maxSteps
      })
      const ran = yield* followChild(turn, childSessionId, following, subagent.completed === true, (kept) =>
        child.turnCount === 0 ? api.runTurn({ sessionId: childSessionId, userMessage: prompt }, kept) : api.resumeTurn(childSessionId, kept))
      // NothingToResume: the child's turn was left open by a crash, and its repair has just closed it.
      if (Either.isLeft(ran)) {
        if (ran.left._tag === "EventStoreFailure") return yield* Effect.fail(ran.left)
        if (tagOf(ran.left.failure) !== "NothingToResume") yield* Effect.logWarning("a subagent's resumed turn failed", ran.left.failure)
      }
    }
    const after = yield* Effect.either(api.session(childSessionId))
    if (Either.isLeft(after)) return yield* finish(lost(childSessionId, after.left), { outcome: "error", errorCode: "subagent_lost" })
    const end = endOf(after.right) ?? { ending: { outcome: "error" as const, errorCode: "subagent_failed" }, answer: "" }
    return yield* finish(resultOf(childSessionId, end.ending, end.answer), end.ending)
  })

/**
 * Settles the `task` calls of a turn a stopped process left open, when nothing of its tree waits
 * for the user (see {@link treeWaits}): each subagent's turn left open is closed by its own repair,
 * then the call ends as the subagent did — `subagent.completed`, and the answer it gave as the
 * call's result, or its failure. Used by the repair that closes the turn (`interrupted`) afterwards.
 */
export const settle = (services: Services, session: Host["session"], commit: Commit): Effect.Effect<void, EventStoreFailure> =>
  Effect.gen(function*() {
    const api = services.subagents?.api
    const calls = (session.live.state.openTurn?.toolCalls ?? []).filter((c): c is WaitingCall => c.status === "running" && c.subagent !== undefined)
    for (const call of calls) {
      const { subagent, toolCallId } = call
      const { childSessionId } = subagent
      const live = api === undefined ? undefined : yield* Effect.option(api.session(childSessionId))
      // A turn of the child left open: its own repair closes it (and settles its own `task` calls first).
      if (live?._tag === "Some" && live.value.state.openTurn !== undefined) yield* Effect.ignore(api!.repair(childSessionId))
      const read = api === undefined ? undefined : yield* Effect.option(api.session(childSessionId))
      const end = read?._tag === "Some" ? endOf(read.value) : undefined
      const ending: Ending = read?._tag !== "Some"
        ? { outcome: "error", errorCode: "subagent_lost" }
        : end?.ending ?? { outcome: "error", errorCode: "interrupted" }
      const found = read?._tag !== "Some" ? lost(childSessionId, undefined) : resultOf(childSessionId, ending, end?.answer ?? "")
      // The answer goes through `afterToolResult` as a live call's result does.
      const result = Either.isRight(found) ? Either.right(yield* AgentHooks.afterResult(services.hooks, AgentHooks.storedCall(call), found.right)) : found
      yield* commit([
        ...(subagent.completed === true ? [] : [EventDraft.subagentCompleted(toolCallId, childSessionId, ending.outcome, ending.errorCode, { steps: 0 })]),
        Either.isRight(result)
          ? EventDraft.toolCompleted(toolCallId, result.right.result, undefined, [])
          : EventDraft.toolFailed(toolCallId, result.left.errorCode, result.left.message)
      ])
    }
  })

/**
 * Cancels the subagents a turn paused in the log waits on (each stored `cancelled` in its own log),
 * and stores their end in the parent: `subagent.completed {cancelled}` (the turn's close then ends
 * the calls `cancelled`).
 */
export const cancelWaiting = (services: Services, session: Host["session"], commit: Commit): Effect.Effect<void, EventStoreFailure> =>
  Effect.gen(function*() {
    const api = services.subagents?.api
    const calls = SessionState.waitingOnSubagents(session.live.state)
    if (api !== undefined) yield* Effect.forEach(calls, (call) => api.cancelTurn(call.subagent.childSessionId), { discard: true })
    if (calls.length === 0) return
    yield* commit(calls.map((call) => EventDraft.subagentCompleted(call.toolCallId, call.subagent.childSessionId, "cancelled", undefined, { steps: 0 })))
  })

/**
 * The session whose turn to resume for `sessionId`: a subagent whose parent's `task` call still
 * waits on it (in the parent's log) is resumed by its parent — the top one that waits — which
 * narrows it again and takes its answer; any other session is its own.
 */
export const driverOf = (services: Services, sessionId: string): Effect.Effect<string> => {
  const api = services.subagents?.api
  if (api === undefined) return Effect.succeed(sessionId)
  const up = (id: string, depth: number): Effect.Effect<string> =>
    depth > maxFollowed ? Effect.succeed(id) : api.session(id).pipe(
      Effect.flatMap(({ state }) => {
        const parent = state.parent
        if (parent === undefined) return Effect.succeed(id)
        return api.session(parent.sessionId).pipe(
          Effect.flatMap((above) =>
            SessionState.waitingOnSubagents(above.state).some((c) => c.toolCallId === parent.toolCallId && c.subagent.childSessionId === id)
              ? up(parent.sessionId, depth + 1)
              : Effect.succeed(id)
          )
        )
      }),
      Effect.orElseSucceed(() => id)
    )
  return up(sessionId, 0)
}

/**
 * The calls of the subagents a session's open `task` calls run (and of theirs) that wait for the
 * user, each labelled with its subagent (`askedBy`). A subagent whose session cannot be read is left out.
 */
export const pendingBelow = (services: Services, state: SessionState.SessionState): Effect.Effect<ReadonlyArray<SessionState.OpenToolCall>> => {
  const api = services.subagents?.api
  return api === undefined ? Effect.succeed([]) : SessionState.pendingBelow(state, (sessionId) => Effect.map(api.session(sessionId), (live) => live.state))
}
