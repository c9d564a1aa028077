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
import type { EventStoreFailure } from "../domain/Errors.js"
import type { OpenToolCall } from "../domain/SessionState.js"
import type { PermissionDecision } from "../services/PermissionEngine.js"
import { type PreparedCall, type ToolCallInput, ToolFailure, type ToolOutput } from "../services/ToolRouter.js"
import * as EventDraft from "./EventDraft.js"
import type * as LiveSession from "./LiveSession.js"
import type { TurnEnv } from "./TurnEnv.js"

const toolFailed = (env: TurnEnv, toolCallId: string, errorCode: string, message: string) =>
  env.commit([EventDraft.toolFailed(toolCallId, errorCode, message)])

/** A guard that lets an event through only while the call is running (late progress is dropped). */
const whileRunning = (toolCallId: string): LiveSession.Guard => (live) =>
  live.state.openTurn?.toolCalls.some((c) => c.toolCallId === toolCallId && c.status === "running") === true

const prepare = (env: TurnEnv, call: ToolCallInput): Effect.Effect<Either.Either<PreparedCall, ToolFailure>> =>
  Effect.gen(function*() {
    if (env.tools === undefined) {
      return Either.left(new ToolFailure({ errorCode: "unknown_tool", message: `There is no tool named "${call.tool}": no tools are available.` }))
    }
    const { state } = env.session.live
    return yield* Effect.either(env.tools.prepare(call, state.cwd))
  })

/**
 * Stores the `ask` and waits for the user's answer. The wait is registered before the `ask` is
 * stored, so whoever sees that event can answer at once, and unregistered however the wait ends.
 * An approval timeout answers `None`.
 */
const askUser = (env: TurnEnv, toolCallId: string, storeAsk: Effect.Effect<unknown, EventStoreFailure>) =>
  Effect.gen(function*() {
    // A resumed turn registered its waits before it started; a fresh ask registers here.
    const answer = env.session.approvals.get(toolCallId) ?? (yield* Deferred.make<LiveSession.UserDecision>())
    const timeout = env.options.approvalTimeout
    const wait = timeout === undefined
      ? Effect.map(Deferred.await(answer), Option.some)
      : Effect.timeoutOption(Deferred.await(answer), Duration.decode(timeout))
    return yield* Effect.sync(() => env.session.approvals.set(toolCallId, answer)).pipe(
      Effect.zipRight(storeAsk),
      Effect.zipRight(wait),
      Effect.ensuring(Effect.sync(() => env.session.approvals.delete(toolCallId)))
    )
  })

/** Where a call's decision starts: fresh, after `permission.requested` was stored, or waiting for the user. */
type DecideFrom = "requested" | "permission_pending" | "awaiting_approval"

/** Waits for the user's answer to a paused call, then stores it. */
const userDecision = (env: TurnEnv, call: PreparedCall, storeAsk: Effect.Effect<unknown, EventStoreFailure>) =>
  Effect.gen(function*() {
    const { toolCallId } = call
    const answer = yield* askUser(env, toolCallId, storeAsk)
    if (Option.isNone(answer)) {
      yield* env.commit([EventDraft.permissionResolved({ toolCallId, decision: "deny", policy: "approval-timeout", actor: "policy" })])
      return Either.left("Permission denied: nobody approved the call in time.")
    }
    const { decision, remember } = answer.value
    yield* env.commit([EventDraft.permissionResolved({ toolCallId, decision, actor: "user", ...(remember ? { remember: true, scope: call.scope } : {}) })])
    return decision === "allow" ? Either.void : Either.left("Permission denied by the user.")
  })

/**
 * Decides a call: the policy, then, when it asks, the user. Returns whether the call may run. A
 * call resumed after a restart picks up where its decision stopped.
 */
const decide = (env: TurnEnv, call: PreparedCall, from: DecideFrom): Effect.Effect<Either.Either<void, string>, EventStoreFailure> =>
  Effect.withSpan(decideOnce(env, call, from), "effect-agent.permission", { attributes: callAttributes(env, call) })

/** What every span of a call carries. */
const callAttributes = (env: TurnEnv, call: ToolCallInput) => ({
  sessionId: env.session.sessionId,
  turnId: env.turnId,
  toolCallId: call.toolCallId,
  tool: call.tool
})

const decideOnce = (env: TurnEnv, call: PreparedCall, from: DecideFrom): Effect.Effect<Either.Either<void, string>, EventStoreFailure> =>
  Effect.gen(function*() {
    const { toolCallId } = call
    if (from === "awaiting_approval") return yield* userDecision(env, call, Effect.void)
    if (from === "requested") {
      // Paths outside cwd are named by their real target, so the approval shows where a link leads
      // (and, for one that only counts as outside, why).
      const outsidePaths = [...new Set(call.paths.filter((p) => !p.insideCwd).map((p) => p.note === undefined ? p.resolved : `${p.resolved} (${p.note})`))]
      yield* env.commit([EventDraft.permissionRequested({ toolCallId, tool: call.tool, risk: call.risk, outsidePaths })])
    }
    const { state } = env.session.live
    const policy: PermissionDecision = yield* env.permissions.decide({
      sessionId: state.sessionId,
      cwd: state.cwd,
      call,
      remembered: state.remembered
    })
    yield* Effect.annotateCurrentSpan({ decision: policy.decision, policy: policy.policy })
    const resolved = env.commit([EventDraft.permissionResolved({ toolCallId, decision: policy.decision, policy: policy.policy, actor: "policy" })])
    if (policy.decision === "ask") return yield* userDecision(env, call, resolved)
    yield* resolved
    return policy.decision === "allow"
      ? Either.void
      : Either.left(`Permission denied by policy "${policy.policy}"${policy.reason === undefined ? "" : `: ${policy.reason}`}.`)
  })

/** Runs an allowed call: `tool.started`, the tool, then `tool.completed` or `tool.failed`. */
const execute = (env: TurnEnv, call: PreparedCall): Effect.Effect<void, EventStoreFailure> =>
  Effect.withSpan(executeOnce(env, call), "effect-agent.tool", { attributes: callAttributes(env, call) })

const executeOnce = (env: TurnEnv, call: PreparedCall): Effect.Effect<void, EventStoreFailure> =>
  Effect.gen(function*() {
    const { toolCallId, tool, args } = call
    yield* env.commit([EventDraft.toolStarted(toolCallId, tool, args)])
    const { state } = env.session.live
    const outcome = yield* env.tools!.execute(call, {
      sessionId: state.sessionId,
      turnId: env.turnId,
      cwd: state.cwd,
      progress: (message) =>
        env.commit([EventDraft.toolProgress(toolCallId, message)], whileRunning(toolCallId)).pipe(
          // Progress is best effort: a store failure here is the tool result's to report, not the progress'.
          Effect.catchTag("EventStoreFailure", (e) => Effect.logWarning("could not store tool progress", e)),
          Effect.asVoid
        )
    }).pipe(
      Effect.catchAllDefect((defect) =>
        Effect.logError("a tool failed unexpectedly", defect).pipe(
          Effect.zipRight(Effect.fail(new ToolFailure({ errorCode: "tool_error", message: `The ${tool} tool failed unexpectedly.` })))
        )
      ),
      Effect.either
    )
    if (Either.isLeft(outcome)) return yield* toolFailed(env, toolCallId, outcome.left.errorCode, outcome.left.message)
    const output = yield* afterResult(env, call, outcome.right)
    // Tool output is escaped here, in the one builder, before it reaches the log, the model or a terminal.
    yield* env.commit([EventDraft.toolCompleted(toolCallId, output.result, output.exitCode)])
  })

const afterResult = (env: TurnEnv, call: PreparedCall, output: ToolOutput) =>
  env.hooks.afterToolResult === undefined
    ? Effect.succeed(output)
    : env.hooks.afterToolResult(call, output).pipe(
      Effect.catchAllCause((cause) =>
        Effect.logWarning("afterToolResult failed; the original result is kept", cause).pipe(Effect.as(output))
      )
    )

const blockedBy = (env: TurnEnv, call: PreparedCall): Effect.Effect<Option.Option<string>> =>
  env.hooks.beforeToolCall === undefined
    ? Effect.succeedNone
    : env.hooks.beforeToolCall(call).pipe(
      Effect.map((verdict) => (verdict._tag === "Block" ? Option.some(verdict.reason) : Option.none())),
      Effect.catchAllCause((cause) =>
        Effect.logWarning("beforeToolCall failed; the call is blocked", cause).pipe(
          Effect.as(Option.some("a check before the call failed"))
        )
      )
    )

/** A call of the current step, with how far it got. */
export interface StepCall {
  readonly call: ToolCallInput
  readonly status: OpenToolCall["status"]
  readonly decidedBy?: OpenToolCall["decidedBy"]
}

/**
 * Runs the tool calls of one model response to their end — or, when a paused turn is resumed in a
 * new process, the calls it left open, each from where it stopped: a call that was running is
 * closed `interrupted` (whether it finished is unknown), an answered one runs or ends denied, a
 * waiting one waits for the user again, and undecided ones are decided.
 *
 * The running calls live in a scope of this phase: interrupting the phase (a cancel) interrupts
 * them and waits until they are stopped, before the turn closes them.
 */
export const run = (env: TurnEnv, calls: ReadonlyArray<StepCall>): Effect.Effect<void, EventStoreFailure> =>
  Effect.scoped(Effect.gen(function*() {
    const permits = Math.max(1, env.options.toolConcurrency)
    const slots = yield* Effect.makeSemaphore(permits)
    const running: Array<Fiber.Fiber<void, EventStoreFailure>> = []
    for (const { call, decidedBy, status } of calls) {
      if (status === "running") {
        yield* toolFailed(env, call.toolCallId, "interrupted", "The call was running when the agent stopped; it may or may not have finished.")
        continue
      }
      if (status === "denied") {
        yield* toolFailed(env, call.toolCallId, "permission_denied", decidedBy === "user" ? "Permission denied by the user." : "Permission denied.")
        continue
      }
      const prepared = yield* prepare(env, call)
      if (Either.isLeft(prepared)) {
        yield* toolFailed(env, call.toolCallId, prepared.left.errorCode, prepared.left.message)
        continue
      }
      if (status === "requested") {
        const blocked = yield* blockedBy(env, prepared.right)
        if (Option.isSome(blocked)) {
          yield* toolFailed(env, call.toolCallId, "blocked", `The call was blocked: ${blocked.value}.`)
          continue
        }
      }
      const allowed = status === "allowed" ? Either.void : yield* decide(env, prepared.right, status)
      if (Either.isLeft(allowed)) {
        yield* toolFailed(env, call.toolCallId, "permission_denied", allowed.left)
        continue
      }
      if (prepared.right.sequential) {
        // A sequential call is a barrier: the calls before it finish, it runs alone, then the rest go on.
        yield* Fiber.joinAll(running.splice(0))
        yield* execute(env, prepared.right)
        continue
      }
      running.push(yield* Effect.forkScoped(slots.withPermits(1)(execute(env, prepared.right))))
    }
    yield* Fiber.joinAll(running)
  }))
