/**
 * The driver of one turn, top-down: open it (`turn.started`, `user.message`; for a paused turn, the
 * calls it left open), then steps — build the request (`StepRequest`), stream the model's response
 * (`ModelResponse`), run its tool calls (`ToolPhase`) — until a response asks for no tools; then
 * close, with exactly one `turn.completed` however the turn ends: final, provider error, a limit, a
 * cancel or an unexpected defect. The steps run in the run's own fiber, interruptible, which a cancel
 * interrupts while they run (see `Turn.Cancel`); then the driver closes the turn. A store failure stops the turn
 * at once: it stays open in the log until the session's next run closes it.
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
import * as AgentHooks from "../services/AgentHooks.js"
import type { FinishReason } from "../services/ModelProvider.js"
import * as EventDraft from "./EventDraft.js"
import type * as LiveSession from "./LiveSession.js"
import * as ModelResponse from "./ModelResponse.js"
import * as OwnedSpan from "./OwnedSpan.js"
import * as ResumedSpend from "./ResumedSpend.js"
import * as StepRequest from "./StepRequest.js"
import type { Services } from "./Services.js"
import * as Subagents from "./Subagents.js"
import * as ToolPhase from "./ToolPhase.js"
import { type Commit, storeAccepted, type Turn } from "./Turn.js"

/** How a turn ends, as `turn.completed` records it. */
export type Completion = AgentEvent.PayloadOf<"turn.completed">

/** How a turn's run ended, for its session's driver (see `SessionDriver`'s `turnEnded`). */
export type Ending =
  /** `turn.completed` is stored. */
  | { readonly _tag: "Closed" }
  /** The engine shut down while the turn waited for the user: it stays paused in the log, to be resumed. */
  | { readonly _tag: "Paused" }
  /** A queued follow-up dropped before its turn could start: nothing was stored. */
  | { readonly _tag: "NotStarted" }
  /** The store failed (or a defect stopped the driver): the turn stays open in the log. */
  | { readonly _tag: "Failed"; readonly cause: Cause.Cause<EventStoreFailure> }

/** Where the steps start: the tool calls a paused turn left open, how many model requests it made and what it spent. */
interface Opened {
  readonly open: ReadonlyArray<ToolPhase.StepCall>
  readonly stepsDone: number
  readonly spent: ResumedSpend.Spent
}

/**
 * Runs a turn to its end. Uninterruptible but for its steps: a cancel or a shutdown interrupts them
 * and the turn closes — cancelled, or, for a shutdown, left paused when it waits for the user (only
 * the calls it cut short are closed). The steps were a fiber of their own until December 2026; run
 * here, a turn costs a fork, a wait and the fiber's copy of the run's fiber refs fewer.
 */
export const run = (turn: Turn): Effect.Effect<Ending> =>
  // Its span is a child of the caller's (none for a follow-up's turn); its logs name it (`SessionDriver` annotates them).
  OwnedSpan.around("TurnDriver.run", {
    captureStackTrace: false,
    attributes: { sessionId: turn.session.sessionId, turnId: turn.turnId, work: turn.work._tag },
    ...(turn.parentSpan === undefined ? { root: true } : { parent: turn.parentSpan })
  }, Effect.uninterruptible(Effect.gen(function*() {
    const opened = yield* open(turn)
    if (opened === undefined) return { _tag: "NotStarted" } as const
    const tally: ModelResponse.Tally = { usage: opened.spent.usage, fresh: undefined, compacted: opened.spent.compacted }
    // The steps run in this fiber, interruptible: no fiber of their own to fork, wait for and join.
    yield* Effect.withFiberRuntime((fiber) => turn.cancel.attach(fiber))
    const exit = yield* Effect.exit(Effect.interruptible(stepsOf(turn, tally, opened)))
    yield* turn.cancel.detach
    return yield* finish(turn, exit, tally, opened.spent.answered)
  })).pipe(Effect.catchAllCause((cause) => Effect.succeed<Ending>({ _tag: "Failed", cause }))))

/**
 * Opens the turn: a new one or a follow-up's stores `turn.started` and `user.message` — a follow-up
 * only while it is still queued (one dropped meanwhile never runs: `undefined`); a paused one picks up
 * its open calls, and counts on from what it spent before the pause (its log's, `ResumedSpend`): its
 * usage, and its tree's budget, steps and subagents (`Subagents.seed`).
 */
const open = (turn: Turn): Effect.Effect<Opened | undefined, EventStoreFailure> =>
  Effect.gen(function*() {
    const { work } = turn
    switch (work._tag) {
      case "New": {
        // One batch: nothing can refuse a new turn's start, so its two events cost one commit.
        yield* turn.commit([EventDraft.turnStarted(work.userMessage, undefined, work.budget), EventDraft.userMessage(work.userMessage, work.images)])
        return { open: [], stepsDone: 0, spent: ResumedSpend.none }
      }
      case "Queued": {
        const { content, queueId } = work
        const started = yield* turn.commit(
          [EventDraft.turnStarted(content, queueId)],
          (live) => live.state.followUps.some((f) => f.queueId === queueId)
        )
        if (started.length === 0) return undefined
        yield* turn.commit([EventDraft.userMessage(content, undefined)])
        return { open: [], stepsDone: 0, spent: ResumedSpend.none }
      }
      case "Resume": {
        const { state, transcript } = turn.session.live
        const open = (state.openTurn?.toolCalls ?? []).map(({ args, decidedBy, status, subagent, tool, toolCallId }): ToolPhase.StepCall => ({
          call: { toolCallId, tool, args },
          status,
          ...(decidedBy === undefined ? {} : { decidedBy }),
          ...(subagent === undefined ? {} : { subagent })
        }))
        const stepsDone = Transcript.all(transcript).filter((e) => e.role === "assistant" && e.turnId === turn.turnId).length
        // From the turn's start (the live session saw it go by): not the whole log a second time.
        const start = turn.session.transcript.turnStart
        const spent = yield* ResumedSpend.read(
          turn.services.store,
          turn.session.sessionId,
          turn.turnId,
          start?.turnId === turn.turnId ? start.sequence : 1,
          turn.services.subagents?.maxSubagents
        )
        Subagents.seed(turn, spent, stepsDone)
        return { open, stepsDone, spent }
      }
    }
  })

/**
 * The steps of a turn, to the completion they end with: the tool calls still open (a resumed turn's),
 * then steps until one ends the turn.
 */
const stepsOf = (turn: Turn, tally: ModelResponse.Tally, opened: Opened): Effect.Effect<Completion, EventStoreFailure> =>
  Effect.gen(function*() {
    if (opened.open.length > 0) {
      yield* ToolPhase.run(turn, opened.open)
      if (yield* shouldStop(turn)) return { stopReason: "final" }
    }
    for (let step = opened.stepsDone + 1;; step++) {
      const completion = yield* oneStep(turn, tally, step).pipe(
        OwnedSpan.within("TurnDriver.step", { captureStackTrace: false, attributes: { sessionId: turn.session.sessionId, turnId: turn.turnId, step } })
      )
      if (completion !== undefined) return completion
    }
  })

/**
 * One step: the request, the model's response, and the tool calls it asked for. Returns the
 * completion when the step ends the turn.
 */
const oneStep = (turn: Turn, tally: ModelResponse.Tally, step: number): Effect.Effect<Completion | undefined, EventStoreFailure> =>
  Effect.gen(function*() {
    const { options } = turn.services
    // Looked at here, in the step's own run: most steps have no steer to store, and take no effect for none.
    if (turn.steers.length > 0) yield* storeSteers(turn)
    // The tree's budget and a subagent's own step limit are checked at every step boundary.
    const stopped = Subagents.beforeStep(turn, step, tally)
    if (stopped !== undefined) return stopped
    const request = yield* StepRequest.build(turn, step, tally)
    if (Option.isNone(request)) return { stopReason: "error", errorCode: "context_overflow" }
    const response = yield* ModelResponse.stream(turn, request.value, tally)
    if (response._tag === "Failed") {
      yield* Effect.logWarning("model provider failed; the turn ends with an error").pipe(
        Effect.annotateLogs({ reason: response.failure.reason, detail: response.failure.detail })
      )
      return { stopReason: "error", errorCode: response.failure.reason }
    }
    // The calls it stored before the limit are closed with the turn.
    if (response._tag === "TooLarge") return { stopReason: "error", errorCode: "response_too_large" }
    if (response.calls.length === 0) {
      // A steer that came while the model answered is a step boundary of its own: the model answers it.
      if (turn.steers.length > 0 && step < options.maxSteps) return undefined
      // Decided in the same step as the check above: no steer can slip in between.
      turn.cancel.close()
      return withCut({ stopReason: "final" }, response.finishReason)
    }
    const { state } = turn.session.live
    // No results of these calls could reach the model: the turn ends, and closing it closes them.
    if (step >= options.maxSteps || (state.openTurn?.toolCallCount ?? 0) > options.maxToolCalls) {
      return { stopReason: "error", errorCode: "max_steps" }
    }
    yield* ToolPhase.run(turn, response.calls.map((call) => ({ call, status: "requested" as const, cut: ToolPhase.cutByLimit(response.finishReason, call) })))
    if (yield* shouldStop(turn)) return { stopReason: "final" }
    return undefined
  })

/**
 * The step boundary: the messages steered into the turn since the last one are stored as
 * `turn.steered`, in arrival order, before the request is built — so the model sees them after
 * the previous step's tool results.
 */
const storeSteers = (turn: Turn): Effect.Effect<void, EventStoreFailure> =>
  Effect.suspend(() => {
    if (turn.steers.length === 0) return Effect.void
    const steers = turn.steers.splice(0)
    return Effect.asVoid(storeAccepted(
      turn,
      steers.map((steer) => steer.idempotencyKey),
      steers.map((steer) => EventDraft.turnSteered(steer.content, steer.idempotencyKey))
    ))
  })

/** A final answer the model cut short (its output limit, a content filter) says so in `turn.completed`. */
const withCut = (completion: Completion, reason: FinishReason | undefined): Completion =>
  reason === "length" || reason === "content_filter" ? { ...completion, finishReason: reason } : completion

const shouldStop = (turn: Turn) => {
  const hook = turn.services.hooks.shouldStopAfterStep
  return hook === undefined
    ? Effect.succeed(false)
    : Effect.suspend(() => hook(turn.session.live.state)).pipe(
      Effect.filterOrDieMessage(AgentHooks.wellFormed.stop, "shouldStopAfterStep returned no boolean"),
      Effect.catchAllCause((cause) => Effect.logWarning("shouldStopAfterStep failed; the turn goes on", cause).pipe(Effect.as(false)))
    )
}

/** The completion with the turn's usage and what it cost (`ResumedSpend.costOfAnswers`), when its model reported usage. */
const withUsage = (turn: Turn, completion: Completion, tally: ModelResponse.Tally, earlier: ReadonlyArray<ResumedSpend.Answered>): Completion =>
  tally.usage === undefined ? completion : { ...completion, usage: tally.usage, ...ResumedSpend.costOfAnswers(turn.services, earlier, tally.fresh) }

/**
 * Ends a turn from how its steps ended. Interrupted with no cancel asked for — the engine is
 * shutting down — a turn waiting for the user stays paused in the log, to be resumed by any process;
 * only the calls the shutdown cut short are closed, as `interrupted`.
 */
const finish = (
  turn: Turn,
  exit: Exit.Exit<Completion, EventStoreFailure>,
  tally: ModelResponse.Tally,
  earlier: ReadonlyArray<ResumedSpend.Answered>
): Effect.Effect<Ending, EventStoreFailure> =>
  Effect.gen(function*() {
    turn.cancel.close()
    if (Exit.isSuccess(exit)) {
      yield* close(turn.session, turn.commit, withUsage(turn, exit.value, tally, earlier))
      return { _tag: "Closed" } as const
    }
    const storeFailure = Cause.failureOption(exit.cause)
    if (Option.isSome(storeFailure)) return yield* storeFailure.value
    if (Cause.isInterruptedOnly(exit.cause)) {
      const { state } = turn.session.live
      // Waiting on the user, or on subagents that do: left paused, its `task` calls open with them.
      if (!turn.cancel.requested && (SessionState.isPaused(state) || (yield* Subagents.treeWaits(turn.services, state)))) {
        // A `task` call stays open with its subagent: one that waits is followed again when resumed,
        // and one whose subagent's end is stored (the stop came before the call's result) has its
        // result read from the subagent's log then — its subagent finished, nothing was cut short.
        const running = state.openTurn?.toolCalls.filter((c) => c.status === "running" && c.subagent === undefined) ?? []
        yield* turn.commit(running.map((call) => EventDraft.toolFailed(call.toolCallId, "interrupted", "The call was stopped when the agent shut down.")))
        return { _tag: "Paused" } as const
      }
      yield* close(turn.session, turn.commit, withUsage(turn, { stopReason: "cancelled" }, tally, earlier))
      return { _tag: "Closed" } as const
    }
    // A defect in the turn's work: logged with its cause, never written into an event.
    yield* Effect.logError("the turn failed unexpectedly", exit.cause)
    yield* close(turn.session, turn.commit, withUsage(turn, { stopReason: "error", errorCode: "internal_error" }, tally, earlier))
    return { _tag: "Closed" } as const
  })

/**
 * Closes the open turn no run drives (a paused turn cancelled, a turn a crash left open) with what
 * its log says it spent (`ResumedSpend`: its responses' `model.usage`), as a run's close counts it:
 * the session's totals count `turn.completed`, so a close without the usage lost the spending.
 */
export const closeUndriven = (
  services: Services,
  session: LiveSession.LiveSession,
  commit: Commit,
  completion: Completion
): Effect.Effect<void, EventStoreFailure> =>
  Effect.gen(function*() {
    const open = session.live.state.openTurn
    if (open === undefined) return yield* close(session, commit, completion)
    const start = session.transcript.turnStart
    const spent = yield* ResumedSpend.read(services.store, session.sessionId, open.turnId, start?.turnId === open.turnId ? start.sequence : 1, 0)
    yield* close(session, commit, spent.usage === undefined ? completion : { ...completion, usage: spent.usage, ...ResumedSpend.costOfAnswers(services, spent.answered, undefined) })
  })

/**
 * Closes a turn as one batch: `compaction.failed` for a compaction still open (left by a crash),
 * `tool.failed` for each call still open (the completion's errorCode, or `cancelled`), then
 * `turn.completed`. Also how the session's driver closes a turn no run drives.
 */
export const close = (session: LiveSession.LiveSession, commit: Commit, completion: Completion): Effect.Effect<void, EventStoreFailure> =>
  Effect.suspend(() => {
    const errorCode = completion.errorCode ?? "cancelled"
    const { compaction, openTurn } = session.live.state
    const open = openTurn?.toolCalls ?? []
    return commit([
      ...(compaction === undefined ? [] : [EventDraft.compactionFailed(compaction.compactionId, errorCode)]),
      ...open.map((call) => EventDraft.toolFailed(call.toolCallId, errorCode, `The tool call did not finish: ${errorCode}.`)),
      EventDraft.turnCompleted(completion)
    ])
  }).pipe(Effect.asVoid)
