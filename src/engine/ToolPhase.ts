/**
 * The tool phase of a step: the calls of one model response, prepared one at a time in call order
 * (validation, the `beforeToolCall` hook, permission, the user's approval), each allowed call
 * started as soon as it is allowed and run concurrently with the others (bounded; a sequential tool
 * runs alone). Terminal tool events are stored in completion order; the transcript gives the results
 * back to the model in call order.
 *
 * @since 0.1.0
 * @internal
 */
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import type { TurnEventDraft } from "../domain/AgentEvent.js"
import type { EventStoreFailure } from "../domain/Errors.js"
import type { ImageRef } from "../domain/Image.js"
import * as SessionState from "../domain/SessionState.js"
import * as AgentHooks from "../services/AgentHooks.js"
import type { PermissionDecision } from "../services/PermissionEngine.js"
import { type PreparedCall, unknownTool, type ToolCallInput, ToolFailure, type ToolOutput } from "../services/ToolRouter.js"
import type { Capture } from "../services/WorkspaceCheckpoints.js"
import * as EventDraft from "./EventDraft.js"
import * as Images from "./Images.js"
import * as OwnedSpan from "./OwnedSpan.js"
import * as Subagents from "./Subagents.js"
import type * as LiveSession from "./LiveSession.js"
import { storeAccepted, type Turn, type UserDecision } from "./Turn.js"

const toolFailed = (turn: Turn, toolCallId: string, errorCode: string, message: string) =>
  turn.commit([EventDraft.toolFailed(toolCallId, errorCode, message)])

/** A guard that lets an event through only while the call is running (late progress is dropped). */
const whileRunning = (toolCallId: string): LiveSession.Guard => (live) =>
  SessionState.openCall(live.state, toolCallId)?.status === "running"

const prepare = (turn: Turn, call: ToolCallInput): Effect.Effect<Either.Either<PreparedCall, ToolFailure>> =>
  Effect.suspend(() => {
    const { tools } = turn.services
    return tools === undefined
      ? Effect.succeed(Either.left(unknownTool(call.tool, "none")))
      : Effect.either(tools.prepare(call, turn.session.live.state.cwd))
  })

/**
 * Stores the `ask` and waits for the user's answer. The wait is registered before the `ask` is
 * stored, so whoever sees that event can answer at once, and unregistered however the wait ends.
 * An approval timeout answers `None`.
 */
const askUser = (turn: Turn, toolCallId: string, storeAsk: Effect.Effect<unknown, EventStoreFailure>) =>
  Effect.gen(function*() {
    // A resumed turn registered its waits before it started; a fresh ask registers here.
    const answer = turn.approvals.get(toolCallId) ?? (yield* Deferred.make<UserDecision>())
    const timeout = turn.services.options.approvalTimeout
    const wait = timeout === undefined
      ? Effect.map(Deferred.await(answer), Option.some)
      : Effect.timeoutOption(Deferred.await(answer), Duration.decode(timeout))
    return yield* Effect.sync(() => turn.approvals.set(toolCallId, answer)).pipe(
      Effect.zipRight(storeAsk),
      Effect.zipRight(wait),
      Effect.ensuring(Effect.sync(() => turn.approvals.delete(toolCallId)))
    )
  })

/** Where a call's decision starts: fresh, after `permission.requested` was stored, or waiting for the user. */
type DecideFrom = "requested" | "permission_pending" | "awaiting_approval"

/** Waits for the user's answer to a paused call, then stores it. */
const userDecision = (turn: Turn, call: PreparedCall, storeAsk: Effect.Effect<unknown, EventStoreFailure>) =>
  Effect.gen(function*() {
    const { toolCallId } = call
    const answer = yield* askUser(turn, toolCallId, storeAsk)
    if (Option.isNone(answer)) {
      yield* turn.commit([EventDraft.permissionResolved({ toolCallId, decision: "deny", policy: "approval-timeout", actor: "policy" })])
      return Either.left("Permission denied: nobody approved the call in time.")
    }
    const { decision, idempotencyKey, remember } = answer.value
    yield* storeAccepted(turn, [idempotencyKey], [EventDraft.permissionResolved({
      toolCallId,
      decision,
      actor: "user",
      ...(remember ? { remember: true, scope: call.scope } : {}),
      ...(idempotencyKey === undefined ? {} : { idempotencyKey })
    })])
    return decision === "allow" ? Either.void : Either.left("Permission denied by the user.")
  })

/**
 * Whether a call may run, and the permission events of a decision the policy took alone, left to be
 * stored in one commit with what follows them (the call's `tool.started`, or its `tool.failed`):
 * the same events in the same order, one lock, append and fold fewer.
 */
interface Decided {
  readonly allowed: Either.Either<void, string>
  readonly pending: ReadonlyArray<TurnEventDraft>
}

const nothingPending: ReadonlyArray<TurnEventDraft> = []

/**
 * Decides a call: the policy, then, when it asks, the user. Returns whether the call may run. A
 * call resumed after a restart picks up where its decision stopped.
 */
const decide = (turn: Turn, call: PreparedCall, from: DecideFrom): Effect.Effect<Decided, EventStoreFailure> =>
  decideOnce(turn, call, from).pipe(OwnedSpan.within("ToolPhase.decide", { captureStackTrace: false, attributes: callAttributes(turn, call) }))

/** What every span of a call carries. */
const callAttributes = (turn: Turn, call: ToolCallInput) => ({
  sessionId: turn.session.sessionId,
  turnId: turn.turnId,
  toolCallId: call.toolCallId,
  tool: call.tool
})

const decideOnce = (turn: Turn, call: PreparedCall, from: DecideFrom): Effect.Effect<Decided, EventStoreFailure> =>
  Effect.gen(function*() {
    const { toolCallId } = call
    if (from === "awaiting_approval") return { allowed: yield* userDecision(turn, call, Effect.void), pending: nothingPending }
    // Paths outside cwd are named by their real target, so the approval shows where a link leads
    // (and, for one that only counts as outside, why).
    const requested = from === "requested"
      ? [EventDraft.permissionRequested({
        toolCallId,
        tool: call.tool,
        risk: call.risk,
        outsidePaths: outsideOf(call)
      })]
      : nothingPending
    // The policy reads nothing `permission.requested` changes: it decides before that event is
    // stored, and the two are stored together (with the ask, or with what follows the decision).
    const { state } = turn.session.live
    const policy: PermissionDecision = yield* turn.services.permissions.decide({
      sessionId: state.sessionId,
      cwd: state.cwd,
      call,
      remembered: state.remembered,
      // Only an engine with a fence may decide a tool's own walk as one that leaves its rules' paths out.
      fenced: turn.services.permissions.fence !== undefined
    })
    yield* Effect.annotateCurrentSpan({ decision: policy.decision, policy: policy.policy })
    const resolved = [...requested, EventDraft.permissionResolved({ toolCallId, decision: policy.decision, policy: policy.policy, actor: "policy" })]
    if (policy.decision === "ask") return { allowed: yield* userDecision(turn, call, turn.commit(resolved)), pending: nothingPending }
    return {
      allowed: policy.decision === "allow"
        ? Either.void
        : Either.left(`Permission denied by policy "${policy.policy}"${policy.reason === undefined ? "" : `: ${policy.reason}`}.`),
      pending: resolved
    }
  })

/** The real paths outside cwd a prepared call would touch, as its question names them (a link by its target; why, for one that only counts as outside). */
const outsideOf = (call: PreparedCall): ReadonlyArray<string> =>
  [...new Set(call.paths.filter((p) => !p.insideCwd).map((p) => p.note === undefined ? p.resolved : `${p.resolved} (${p.note})`))]

/**
 * A call answered (or waiting for its answer) before a restart is prepared again in the new
 * process: when it now leads elsewhere than its stored question said — other paths outside cwd (a
 * folder became a link), or another risk — the answer was not to this call, and it fails
 * `path_changed` as a swap while the question waited does in one process. (Paths inside cwd are not
 * stored with the question, so a move that stays inside is not told.)
 */
const changedSinceAsked = (turn: Turn, call: PreparedCall): string | undefined => {
  const asked = SessionState.openCall(turn.session.live.state, call.toolCallId)
  if (asked?.risk === undefined) return undefined
  const before = [...(asked.outsidePaths ?? [])].sort()
  const now = [...outsideOf(call)].sort()
  const samePaths = before.length === now.length && before.every((p, i) => p === now[i])
  if (samePaths && asked.risk === call.risk) return undefined
  const where = now.length === 0 ? "" : ` it would now touch ${now.join(", ")}, outside the working directory;`
  return `${call.paths[0]?.requested ?? call.tool} changed since the call was asked about (a folder or file became a link, or the file got another name):${where} it was not run; try again`
}

/**
 * Runs an allowed call: `tool.started` (stored with the decision's `pending` events), the tool,
 * then `tool.completed` or `tool.failed`.
 */
const execute = (turn: Turn, call: PreparedCall, pending: ReadonlyArray<TurnEventDraft>): Effect.Effect<void, EventStoreFailure> =>
  executeOnce(turn, call, pending).pipe(OwnedSpan.within("ToolPhase.execute", { captureStackTrace: false, attributes: callAttributes(turn, call) }))

const executeOnce = (turn: Turn, call: PreparedCall, pending: ReadonlyArray<TurnEventDraft>): Effect.Effect<void, EventStoreFailure> =>
  Effect.gen(function*() {
    const { toolCallId, tool, args } = call
    yield* turn.commit([...pending, EventDraft.toolStarted(toolCallId, tool, args)])
    const { state } = turn.session.live
    // The snapshot's registration and its release are paired: an interrupt right after `watch`
    // returned (before the cancel's finalizer was installed) left it registered for the process's
    // life, every later command in that cwd named uncertain and every later scan kept on it.
    // (Without checkpoints there is nothing to pair: no mask, nothing added to a plain call's path.)
    const paired = (restore: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>) => Effect.gen(function*() {
      const checkpoint = turn.services.checkpoints === undefined ? undefined : yield* restore(turn.services.checkpoints.watch(call, state.cwd))
      // A `task` runs a subagent: the engine's work, with events of its own in this turn.
      const outcome = Subagents.isTask(turn.services, call) ? yield* restore(Subagents.run(turn, call)) : yield* restore(turn.services.tools!.execute(call, {
        sessionId: state.sessionId,
        turnId: turn.turnId,
        cwd: state.cwd,
        acceptsImages: turn.services.provider.capabilities.images === true,
        leaveOut: turn.services.permissions.fence?.({ sessionId: state.sessionId, cwd: state.cwd, call, remembered: state.remembered }),
        progress: (message) =>
          turn.commit([EventDraft.toolProgress(toolCallId, message)], whileRunning(toolCallId)).pipe(
            // Progress is best effort: a store failure here is the tool result's to report, not the progress'.
            Effect.catchTag("EventStoreFailure", (e) => Effect.logWarning("could not store tool progress", e)),
            Effect.asVoid
          )
      })).pipe(
        Effect.catchAllDefect((defect) =>
          Effect.logError("a tool failed unexpectedly", defect).pipe(
            Effect.zipRight(Effect.fail(new ToolFailure({ errorCode: "tool_error", message: `The ${tool} tool failed unexpectedly.` })))
          )
        ),
        Effect.either,
        // A call cancelled while it ran (its process killed) may have changed files: they are recorded
        // before the turn closes the call, so that a rewind undoes them too. Best effort: a cancel never fails.
        // (Without checkpoints there is nothing to record: no finalizer.)
        (run) =>
          checkpoint === undefined ? run : Effect.onInterrupt(run, () =>
            Effect.flatMap(checkpoint, (capture) => recordChanges(turn, toolCallId, capture, whileRunning(toolCallId))).pipe(
              Effect.catchAll((e) => Effect.logWarning("could not record what a cancelled call changed", e))
            ))
      )
      return { capture: checkpoint === undefined ? undefined : yield* checkpoint, outcome }
    })
    const { capture, outcome } = yield* (turn.services.checkpoints === undefined ? paired((effect) => effect) : Effect.uninterruptibleMask(paired))
    if (capture !== undefined) yield* recordChanges(turn, toolCallId, capture)
    if (Either.isLeft(outcome)) return yield* toolFailed(turn, toolCallId, outcome.left.errorCode, outcome.left.message)
    const output = yield* afterResult(turn, call, outcome.right)
    const images = yield* toolImages(turn, tool, output)
    // Tool output is escaped here, in the one builder, before it reaches the log, the model or a terminal.
    yield* turn.commit([EventDraft.toolCompleted(toolCallId, images.result, output.exitCode, images.refs)])
  })

/** `workspace.changed`, before the call's result, when the call changed files (or may have: an incomplete snapshot). */
const recordChanges = (turn: Turn, toolCallId: string, capture: Capture, guard?: LiveSession.Guard) =>
  capture.changes.length === 0 && capture.incomplete === undefined
    ? Effect.void
    : turn.commit([EventDraft.workspaceChanged(toolCallId, capture.changes, capture.incomplete)], guard)

const noRefs: ReadonlyArray<ImageRef> = []

/**
 * A result's images, checked and put in the blob area. One the engine refuses (a tool's bug, a
 * repository's file, past what the turn's tool images may decode to, or a store without a blob
 * area) is left out, and the result says so: the call itself succeeded.
 */
const toolImages = (turn: Turn, tool: string, output: ToolOutput): Effect.Effect<{ readonly result: string; readonly refs: ReadonlyArray<ImageRef> }, EventStoreFailure> =>
  // Most results carry none (every step of a turn of reads): answered at once, with no map or catch around nothing.
  output.images === undefined || output.images.length === 0 ? Effect.succeed({ result: output.result, refs: noRefs }) : Images.store(turn.services.blobs, output.images, turn.toolImages).pipe(
    Effect.map((refs) => ({ result: output.result, refs })),
    Effect.catchTag("InvalidInput", (refused) =>
      Effect.logWarning(`the ${tool} tool returned images that were refused`, refused).pipe(
        Effect.as({ result: `${output.result}\n[the tool's images were left out: ${refused.detail}]`, refs: [] })
      ))
  )

const afterResult = (turn: Turn, call: PreparedCall, output: ToolOutput) => AgentHooks.afterResult(turn.services.hooks, call, output)

const blockedBy = (turn: Turn, call: PreparedCall): Effect.Effect<Option.Option<string>> => {
  const hook = turn.services.hooks.beforeToolCall
  return hook === undefined
    ? Effect.succeedNone
    : Effect.suspend(() => hook(call)).pipe(
      // Anything but a well-formed verdict (a misspelt `{_tag: "block"}`) is the hook's failure: it blocks.
      Effect.filterOrDieMessage(AgentHooks.wellFormed.verdict, "beforeToolCall returned no verdict"),
      Effect.map((verdict) => (verdict._tag === "Block" ? Option.some(verdict.reason) : Option.none())),
      Effect.catchAllCause((cause) =>
        Effect.logWarning("beforeToolCall failed; the call is blocked", cause).pipe(
          Effect.as(Option.some("a check before the call failed"))
        )
      )
    )
}

/** A call of the current step, with how far it got. */
export interface StepCall {
  readonly call: ToolCallInput
  readonly status: SessionState.OpenToolCall["status"]
  readonly decidedBy?: SessionState.OpenToolCall["decidedBy"]
  /** A `task` call's subagent, started before its process stopped: resumed, the call follows it to its end. */
  readonly subagent?: SessionState.OpenToolCall["subagent"]
  /** Cut by the model's output limit before its arguments were whole: answered, never run. */
  readonly cut?: boolean
}

/**
 * Whether a call of a response is one the model's output limit cut: the response ended `length`
 * and the call's arguments did not parse (the adapters keep what came as a string: `""` for a last
 * call the limit cut before its first byte, where a finished call with none is `{}`). Arguments that
 * parse are a whole JSON object — a cut leaves its braces open — so a response's earlier calls, and
 * a last one the limit spared, run.
 */
export const cutByLimit = (finishReason: string | undefined, call: ToolCallInput): boolean =>
  finishReason === "length" && typeof call.args === "string"

/** What the model is told of a cut call: why it did not run, and what to do instead. */
export const cutMessage =
  "The call was not run: your response reached the model's output limit (max tokens) before this call's arguments were complete. " +
  "Send smaller calls instead — for a long file, write a first part with write_file, then add the rest in further calls (edit_file)."

/** A `task` call a stopped process left running, resumed: it follows its subagent, then stores the call's end. */
const resumeTask = (turn: Turn, call: Subagents.WaitingCall): Effect.Effect<void, EventStoreFailure> =>
  Effect.flatMap(Subagents.resume(turn, call), (outcome) =>
    Either.isLeft(outcome)
      ? toolFailed(turn, call.toolCallId, outcome.left.errorCode, outcome.left.message)
      // Its result goes through `afterToolResult` as a live one's does (a redaction holds across a restart).
      : Effect.flatMap(afterResult(turn, AgentHooks.storedCall(call), outcome.right), (output) =>
        turn.commit([EventDraft.toolCompleted(call.toolCallId, output.result)])))

/**
 * Runs the tool calls of one model response to their end — or, when a paused turn is resumed in a
 * new process, the calls it left open, each from where it stopped: a call that was running is
 * closed `interrupted` (whether it finished is unknown), an answered one runs or ends denied, a
 * waiting one waits for the user again, and undecided ones are decided.
 *
 * The running calls live in a scope of this phase: interrupting the phase (a cancel) interrupts
 * them and waits until they are stopped, before the turn closes them.
 */
export const run = (turn: Turn, calls: ReadonlyArray<StepCall>): Effect.Effect<void, EventStoreFailure> =>
  // One call runs in this fiber (see below): it needs no scope to fork into, nor slots.
  calls.length === 1 ? runCalls(turn, calls, undefined) : Effect.scoped(Effect.flatMap(
    Effect.all([Effect.scope, Effect.makeSemaphore(Math.max(1, turn.services.options.toolConcurrency))]),
    ([scope, slots]) =>
      runCalls(turn, calls, {
        inSlot: (call) => Effect.forkIn(slots.withPermits(1)(call), scope),
        free: (call) => Effect.forkIn(call, scope)
      })
  ))

/** Starts a call beside the others, in the phase's scope. */
type Fork = (call: Effect.Effect<void, EventStoreFailure>) => Effect.Effect<Fiber.Fiber<void, EventStoreFailure>>

/**
 * The calls of `run`. `forks` start a call beside the others: `inSlot` within the slots, `free`
 * holding none (a call waiting on its subagent); none with a single call, which runs in this fiber.
 */
const runCalls = (
  turn: Turn,
  calls: ReadonlyArray<StepCall>,
  forks: { readonly inSlot: Fork; readonly free: Fork } | undefined
): Effect.Effect<void, EventStoreFailure> =>
  Effect.gen(function*() {
    const running: Array<Fiber.Fiber<void, EventStoreFailure>> = []
    for (let index = 0; index < calls.length; index++) {
      const { call, cut, decidedBy, status, subagent } = calls[index]!
      if (cut === true) {
        yield* toolFailed(turn, call.toolCallId, "invalid_arguments", cutMessage)
        continue
      }
      if (status === "running" && subagent !== undefined) {
        // Waiting on its subagent (for the user, maybe): beside the other calls, holding no slot.
        const resumed = resumeTask(turn, { ...call, status, subagent })
        if (forks === undefined) yield* resumed
        else running.push(yield* forks.free(resumed))
        continue
      }
      if (status === "running") {
        yield* toolFailed(turn, call.toolCallId, "interrupted", "The call was running when the agent stopped; it may or may not have finished.")
        continue
      }
      if (status === "denied") {
        yield* toolFailed(turn, call.toolCallId, "permission_denied", decidedBy === "user" ? "Permission denied by the user." : "Permission denied.")
        continue
      }
      const prepared = yield* prepare(turn, call)
      if (Either.isLeft(prepared)) {
        yield* toolFailed(turn, call.toolCallId, prepared.left.errorCode, prepared.left.message)
        continue
      }
      if (status === "allowed" || status === "awaiting_approval") {
        const changed = changedSinceAsked(turn, prepared.right)
        if (changed !== undefined) {
          yield* toolFailed(turn, call.toolCallId, "path_changed", changed)
          continue
        }
      }
      if (status === "requested") {
        const blocked = yield* blockedBy(turn, prepared.right)
        if (Option.isSome(blocked)) {
          yield* toolFailed(turn, call.toolCallId, "blocked", `The call was blocked: ${blocked.value}.`)
          continue
        }
      }
      const { allowed, pending } = status === "allowed" ? { allowed: Either.void, pending: nothingPending } : yield* decide(turn, prepared.right, status)
      if (Either.isLeft(allowed)) {
        yield* turn.commit([...pending, EventDraft.toolFailed(call.toolCallId, "permission_denied", allowed.left)])
        continue
      }
      // The last call, none running beside it, has nothing to run concurrently with: it runs in this
      // fiber, its decision stored with its start. A step of one call forks nothing and commits its
      // decision once. (With calls running, it is forked as they were, so the calls start in call
      // order; a decision is stored before anything else happens, as the calls are decided in order.)
      if (index === calls.length - 1 && running.length === 0) {
        yield* execute(turn, prepared.right, pending)
        continue
      }
      if (pending.length > 0) yield* turn.commit(pending)
      if (prepared.right.sequential) {
        // A sequential call is a barrier: the calls before it finish, it runs alone, then the rest go on.
        yield* Fiber.joinAll(running.splice(0))
        yield* execute(turn, prepared.right, nothingPending)
        continue
      }
      // Not the last call (`forks` are given whenever there are several).
      running.push(yield* forks!.inSlot(execute(turn, prepared.right, nothingPending)))
    }
    if (running.length > 0) yield* Fiber.joinAll(running)
  })
