/**
 * The driver of one turn, top-down: start (`turn.started`, `user.message`), then steps — build the
 * request (`StepRequest`), stream the model's response (`ModelResponse`), run its tool calls
 * (`ToolPhase`) — until a response asks for no tools; then close, with exactly one
 * `turn.completed` however the turn ends: final, provider error, a limit, cancellation
 * (interruption of the driver) or an unexpected defect. A store failure stops the driver at once
 * and reaches the caller; the turn stays open in the log until the engine closes it.
 *
 * @since 0.1.0
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import type * as AgentEvent from "../domain/AgentEvent.js"
import type { EventStoreFailure } from "../domain/Errors.js"
import * as SessionState from "../domain/SessionState.js"
import * as Transcript from "../domain/Transcript.js"
import type { FinishReason } from "../services/ModelProvider.js"
import * as EventDraft from "./EventDraft.js"
import * as ModelResponse from "./ModelResponse.js"
import * as StepRequest from "./StepRequest.js"
import * as ToolPhase from "./ToolPhase.js"
import type { TurnEnv } from "./TurnEnv.js"

/** How a turn ends, as `turn.completed` records it. */
export type Completion = AgentEvent.PayloadOf<"turn.completed">

/**
 * Runs a new turn to its end; with `queueId`, the turn of that queued follow-up (nothing happens
 * when it is no longer queued). Uninterruptible except for the steps in the middle: interrupting the
 * driver there is how a turn is cancelled, and the closing events are still committed.
 */
export const drive = (env: TurnEnv, userMessage: string, queueId?: string): Effect.Effect<void, EventStoreFailure> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.gen(function*() {
      // A follow-up starts only while it is still queued: one dropped meanwhile never runs.
      const started = yield* env.commit(
        [EventDraft.turnStarted(userMessage, queueId)],
        queueId === undefined ? undefined : (live) => live.state.followUps.some((f) => f.queueId === queueId)
      )
      if (started.length === 0) return
      // One driver may run several turns (queued follow-ups, then a new one): each starts open to steers.
      env.control.closing = false
      yield* env.commit([EventDraft.userMessage(userMessage)])
      const tally: ModelResponse.Tally = { usage: undefined }
      const exit = yield* Effect.exit(restore(steps(env, tally, [], 0)))
      return yield* finish(env, exit, tally.usage)
    })
  )

/**
 * Continues the paused turn the log holds open: its open calls from where they stopped, then the
 * usual steps. Usage counts from here: what the turn used before the pause was never stored.
 */
export const resume = (env: TurnEnv): Effect.Effect<void, EventStoreFailure> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.gen(function*() {
      const { state, transcript } = env.session.live
      const open = (state.openTurn?.toolCalls ?? []).map(({ args, decidedBy, status, tool, toolCallId }): ToolPhase.StepCall => ({
        call: { toolCallId, tool, args },
        status,
        ...(decidedBy === undefined ? {} : { decidedBy })
      }))
      const stepsDone = Transcript.all(transcript).filter((e) => e.role === "assistant" && e.turnId === env.turnId).length
      const tally: ModelResponse.Tally = { usage: undefined }
      const exit = yield* Effect.exit(restore(steps(env, tally, open, stepsDone)))
      return yield* finish(env, exit, tally.usage)
    })
  )

/**
 * The steps of a turn, to the completion they end with: the tool calls still open (a resumed
 * turn's), then steps until one ends the turn. `stepsDone` counts the model requests the turn
 * already made, for `maxSteps`.
 */
const steps = (
  env: TurnEnv,
  tally: ModelResponse.Tally,
  open: ReadonlyArray<ToolPhase.StepCall>,
  stepsDone: number
): Effect.Effect<Completion, EventStoreFailure> =>
  Effect.gen(function*() {
    if (open.length > 0) {
      yield* ToolPhase.run(env, open)
      if (yield* shouldStop(env)) return { stopReason: "final" }
    }
    for (let step = stepsDone + 1;; step++) {
      const completion = yield* oneStep(env, tally, step).pipe(
        Effect.withSpan("effect-agent.step", { captureStackTrace: false, attributes: { sessionId: env.session.sessionId, turnId: env.turnId, step } })
      )
      if (completion !== undefined) return completion
    }
  })

/**
 * One step: the request, the model's response, and the tool calls it asked for. Returns the
 * completion when the step ends the turn.
 */
const oneStep = (env: TurnEnv, tally: ModelResponse.Tally, step: number): Effect.Effect<Completion | undefined, EventStoreFailure> =>
  Effect.gen(function*() {
    yield* storeSteers(env)
    const request = yield* StepRequest.build(env, step)
    if (Option.isNone(request)) return { stopReason: "error", errorCode: "context_overflow" }
    const response = yield* ModelResponse.stream(env, request.value, tally)
    if (response._tag === "Failed") {
      yield* Effect.logWarning("model provider failed; the turn ends with an error").pipe(
        Effect.annotateLogs({ reason: response.failure.reason, detail: response.failure.detail })
      )
      return { stopReason: "error", errorCode: response.failure.reason }
    }
    if (response.calls.length === 0) {
      // A steer that came while the model answered is a step boundary of its own: the model answers it.
      if (env.session.steers.length > 0 && step < env.options.maxSteps) return undefined
      // Decided in the same step as the check above: no steer can slip in between.
      env.control.closing = true
      return withCut({ stopReason: "final" }, response.finishReason)
    }
    const { state } = env.session.live
    // No results of these calls could reach the model: the turn ends, and closing it closes them.
    if (step >= env.options.maxSteps || (state.openTurn?.toolCallCount ?? 0) > env.options.maxToolCalls) {
      return { stopReason: "error", errorCode: "max_steps" }
    }
    yield* ToolPhase.run(env, response.calls.map((call) => ({ call, status: "requested" as const })))
    if (yield* shouldStop(env)) return { stopReason: "final" }
    return undefined
  })

/**
 * The step boundary: the messages steered into the turn since the last one are stored as
 * `turn.steered`, in arrival order, before the request is built — so the model sees them after
 * the previous step's tool results.
 */
const storeSteers = (env: TurnEnv): Effect.Effect<void, EventStoreFailure> =>
  Effect.suspend(() => {
    if (env.session.steers.length === 0) return Effect.void
    const steers = env.session.steers.splice(0)
    return env.commit(steers.map((steer) => EventDraft.turnSteered(steer.content, steer.idempotencyKey))).pipe(
      // Stored: from now on the log answers a steer delivered again.
      Effect.ensuring(Effect.sync(() => steers.forEach((steer) => steer.idempotencyKey !== undefined && env.session.accepted.delete(steer.idempotencyKey))))
    )
  })

/** A final answer the model cut short (its output limit, a content filter) says so in `turn.completed`. */
const withCut = (completion: Completion, reason: FinishReason | undefined): Completion =>
  reason === "length" || reason === "content_filter" ? { ...completion, finishReason: reason } : completion

const shouldStop = (env: TurnEnv) =>
  env.hooks.shouldStopAfterStep === undefined
    ? Effect.succeed(false)
    : env.hooks.shouldStopAfterStep(env.session.live.state).pipe(
      Effect.catchAllCause((cause) => Effect.logWarning("shouldStopAfterStep failed; the turn goes on", cause).pipe(Effect.as(false)))
    )

const withUsage = (completion: Completion, usage: AgentEvent.Usage | undefined): Completion =>
  usage === undefined ? completion : { ...completion, usage }

/**
 * Ends a turn from how its steps ended. Interrupted with no cancel requested — the engine is
 * shutting down — a turn waiting for the user stays paused in the log, to be resumed by any
 * process; only the calls the shutdown cut short are closed, as `interrupted`.
 */
const finish = (env: TurnEnv, exit: Exit.Exit<Completion, EventStoreFailure>, usage: AgentEvent.Usage | undefined) =>
  Effect.gen(function*() {
    env.control.closing = true
    if (Exit.isSuccess(exit)) return yield* close(env, withUsage(exit.value, usage))
    const storeFailure = Cause.failureOption(exit.cause)
    if (Option.isSome(storeFailure)) return yield* storeFailure.value
    if (Cause.isInterruptedOnly(exit.cause)) {
      const { state } = env.session.live
      if (!env.control.cancelRequested && SessionState.isPaused(state)) {
        const running = state.openTurn?.toolCalls.filter((c) => c.status === "running") ?? []
        return yield* env.commit(running.map((call) =>
          EventDraft.toolFailed(call.toolCallId, "interrupted", "The call was stopped when the agent shut down.")
        ))
      }
      return yield* close(env, withUsage({ stopReason: "cancelled" }, usage))
    }
    // A defect in the turn's work: logged with its cause, never written into an event.
    yield* Effect.logError("the turn failed unexpectedly", exit.cause)
    return yield* close(env, withUsage({ stopReason: "error", errorCode: "internal_error" }, usage))
  }).pipe(Effect.asVoid)

/**
 * Closes a turn as one batch: `compaction.failed` for a compaction still open (left by a crash),
 * `tool.failed` for each call still open (the completion's errorCode, or `cancelled`), then
 * `turn.completed`. Also how the engine closes a turn no driver runs.
 */
export const close = (env: TurnEnv, completion: Completion): Effect.Effect<void, EventStoreFailure> =>
  Effect.suspend(() => {
    const errorCode = completion.errorCode ?? "cancelled"
    const { compaction, openTurn } = env.session.live.state
    const open = openTurn?.toolCalls ?? []
    return env.commit([
      ...(compaction === undefined ? [] : [EventDraft.compactionFailed(compaction.compactionId, errorCode)]),
      ...open.map((call) => EventDraft.toolFailed(call.toolCallId, errorCode, `The tool call did not finish: ${errorCode}.`)),
      EventDraft.turnCompleted(completion)
    ])
  }).pipe(Effect.asVoid)
