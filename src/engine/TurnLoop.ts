/**
 * The driver of one turn: `turn.started`, `user.message`, then steps — build the context, stream a
 * model response, run its tool calls — until a response asks for no tools; and exactly one
 * `turn.completed` however the turn ends: final, provider error, a limit, cancellation
 * (interruption of the driver) or an unexpected defect. A store failure stops the driver at once
 * and reaches the caller; the turn stays open in the log until the engine closes it.
 *
 * @since 0.1.0
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as Stream from "effect/Stream"
import * as SynchronizedRef from "effect/SynchronizedRef"
import * as AgentEvent from "../domain/AgentEvent.js"
import * as SessionState from "../domain/SessionState.js"
import * as Transcript from "../domain/Transcript.js"
import type { EventStoreFailure, ProviderFailure } from "../domain/Errors.js"
import * as ContextBuilder from "../services/ContextBuilder.js"
import type { ModelRequest } from "../services/ModelProvider.js"
import type { ToolCallInput } from "../services/ToolRouter.js"
import * as EventDraft from "./EventDraft.js"
import * as Retry from "./Retry.js"
import * as SessionLog from "./SessionLog.js"
import type { TurnEnv } from "./TurnEnv.js"
import * as ToolPhase from "./ToolPhase.js"

/** How a turn ends, as `turn.completed` records it. */
export type Completion = AgentEvent.PayloadOf<"turn.completed">

/**
 * Closes a turn: `tool.failed` for each call still open (the completion's errorCode, or
 * `cancelled`), then `turn.completed`.
 */
export const closeTurn = (
  ports: SessionLog.Ports,
  log: SessionLog.SessionLog,
  turnId: string,
  completion: Completion,
  emit: (event: AgentEvent.AgentEvent) => Effect.Effect<unknown>
): Effect.Effect<void, EventStoreFailure> =>
  Effect.gen(function*() {
    const { state } = yield* SynchronizedRef.get(log.live)
    const errorCode = completion.errorCode ?? "cancelled"
    for (const call of state.openTurn?.toolCalls ?? []) {
      yield* SessionLog.commit(ports, log, turnId, EventDraft.toolFailed(call.toolCallId, errorCode, `The tool call did not finish: ${errorCode}.`), emit)
    }
    yield* SessionLog.commit(ports, log, turnId, EventDraft.turnCompleted(completion), emit)
  })

const addUsage = (a: AgentEvent.Usage | undefined, b: AgentEvent.Usage | undefined): AgentEvent.Usage | undefined => {
  if (a === undefined || b === undefined) return a ?? b
  const sum = (x: number | undefined, y: number | undefined) => (x === undefined && y === undefined ? undefined : (x ?? 0) + (y ?? 0))
  const cacheReadTokens = sum(a.cacheReadTokens, b.cacheReadTokens)
  const cacheWriteTokens = sum(a.cacheWriteTokens, b.cacheWriteTokens)
  return {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    ...(cacheReadTokens === undefined ? {} : { cacheReadTokens }),
    ...(cacheWriteTokens === undefined ? {} : { cacheWriteTokens })
  }
}

const withUsage = (completion: Completion, usage: AgentEvent.Usage | undefined): Completion =>
  usage === undefined ? completion : { ...completion, usage }

/** A streamed response: its tool calls, or the provider failure that ended it and whether any of it was stored. */
type Response =
  | { readonly _tag: "Answered"; readonly calls: ReadonlyArray<ToolCallInput> }
  | { readonly _tag: "Failed"; readonly failure: ProviderFailure; readonly stored: boolean }

/**
 * Streams one response, storing each delta and tool call as it arrives. The post-cancel guard: once
 * cancel is requested no model output is stored, even if the provider still yields.
 */
const respond = (env: TurnEnv, request: ModelRequest, usage: Ref.Ref<AgentEvent.Usage | undefined>): Effect.Effect<Response, EventStoreFailure> =>
  Effect.suspend(() => {
    const notCancelled: SessionLog.Guard = () => Effect.map(Ref.get(env.cancelRequested), (cancelled) => !cancelled)
    const calls: Array<ToolCallInput> = []
    let stored = false
    const markStored = (event: Option.Option<AgentEvent.AgentEvent>) =>
      Effect.sync(() => {
        stored ||= Option.isSome(event)
      })
    return env.provider.stream(request).pipe(
      Stream.runForEach((chunk) => {
        switch (chunk._tag) {
          case "TextDelta":
            return chunk.text === ""
              ? Effect.void
              : env.commit(EventDraft.modelDelta(chunk.text), notCancelled).pipe(Effect.tap(markStored))
          case "ToolCall": {
            const call = { toolCallId: chunk.toolCallId, tool: chunk.tool, args: chunk.args }
            // A call id the turn already used would make two calls indistinguishable: refuse the repeat.
            const fresh: SessionLog.Guard = (live) =>
              Effect.map(notCancelled(live), (ok) => ok && !live.state.openTurn?.toolCalls.some((c) => c.toolCallId === call.toolCallId))
            return env.commit(EventDraft.toolCallRequested(call), fresh).pipe(
              Effect.tap(markStored),
              Effect.tap((event) =>
                Option.isSome(event)
                  ? Effect.sync(() => calls.push(call))
                  : Effect.unlessEffect(
                    Effect.logWarning("effect-agent: the model repeated a tool call id; the repeat is ignored").pipe(
                      Effect.annotateLogs({ toolCallId: call.toolCallId, tool: call.tool })
                    ),
                    Ref.get(env.cancelRequested)
                  ))
            )
          }
          case "Finish":
            return Ref.update(usage, (u) => addUsage(u, chunk.usage))
        }
      }),
      Effect.as<Response>({ _tag: "Answered", calls }),
      Effect.catchTag("ProviderFailure", (failure) => Effect.succeed<Response>({ _tag: "Failed", failure, stored }))
    )
  })

/**
 * Streams a response, sending the request again after a retryable failure that came before any
 * of the response was stored: `model.retry` is stored, then the engine waits (through `Clock`).
 */
const respondWithRetry = (env: TurnEnv, request: ModelRequest, usage: Ref.Ref<AgentEvent.Usage | undefined>) =>
  Effect.gen(function*() {
    const attempts = yield* Retry.start(env.options.retry)
    for (let attempt = 1;; attempt++) {
      const response = yield* respond(env, request, usage)
      if (response._tag === "Answered" || response.stored) return response
      const wait = yield* attempts.next(response.failure)
      if (Option.isNone(wait)) return response
      yield* Effect.logInfo("effect-agent: model request failed; retrying").pipe(
        Effect.annotateLogs({ reason: response.failure.reason, detail: response.failure.detail, attempt, delayMs: wait.value })
      )
      yield* env.commit(EventDraft.modelRetry(attempt, wait.value, response.failure.reason))
      yield* Effect.sleep(Duration.millis(wait.value))
    }
  })

/**
 * Builds the request of a step; `context.built` is stored for the first step when the runtime
 * added anything. Returns `None` when the request would not fit the model's context window.
 */
const buildRequest = (env: TurnEnv, step: number) =>
  Effect.gen(function*() {
    const { state, transcript } = yield* SynchronizedRef.get(env.log.live)
    const tools = env.tools?.definitions.map(({ description, inputSchema, name }) => ({ name, description, inputSchema })) ?? []
    const built = yield* env.context.build({ sessionId: state.sessionId, cwd: state.cwd, transcript, tools })
    const request = env.hooks.transformContext === undefined
      ? built.request
      : yield* env.hooks.transformContext(built.request).pipe(
        Effect.catchAllCause((cause) =>
          Effect.logWarning("effect-agent: transformContext failed; the request is sent as built", cause).pipe(Effect.as(built.request))
        )
      )
    const tokens = request === built.request ? built.tokens : ContextBuilder.estimate(request)
    if (step === 1 && (tokens.instruction > 0 || tokens.tools > 0)) {
      yield* env.commit(EventDraft.contextBuilt(tokens))
    }
    // The overflow preflight: a request over the context window is never sent.
    const limit = env.provider.capabilities.maxContextTokens
    if (tokens.total > limit) {
      yield* Effect.logWarning("effect-agent: the context does not fit the model's window; no request sent").pipe(
        Effect.annotateLogs({ estimatedTokens: tokens.total, maxContextTokens: limit, model: env.provider.capabilities.model })
      )
      return Option.none<ModelRequest>()
    }
    return Option.some(request)
  })

const shouldStop = (env: TurnEnv) =>
  env.hooks.shouldStopAfterStep === undefined
    ? Effect.succeed(false)
    : Effect.flatMap(SynchronizedRef.get(env.log.live), ({ state }) =>
      env.hooks.shouldStopAfterStep!(state).pipe(
        Effect.catchAllCause((cause) => Effect.logWarning("effect-agent: shouldStopAfterStep failed; the turn goes on", cause).pipe(Effect.as(false)))
      ))

/**
 * The steps of a turn, to the completion they end with: the tool calls still open (a resumed
 * turn's), then model requests and their tool calls until a response asks for no tools.
 * `stepsDone` counts the model requests the turn already made, for `maxSteps`.
 */
const steps = (
  env: TurnEnv,
  usage: Ref.Ref<AgentEvent.Usage | undefined>,
  open: ReadonlyArray<ToolPhase.StepCall>,
  stepsDone: number
): Effect.Effect<Completion, EventStoreFailure> =>
  Effect.gen(function*() {
    let calls = open
    for (let step = stepsDone;;) {
      if (calls.length > 0) {
        yield* ToolPhase.run(env, calls)
        if (yield* shouldStop(env)) return { stopReason: "final" }
      }
      step++
      const request = yield* buildRequest(env, step)
      if (Option.isNone(request)) return { stopReason: "error", errorCode: "context_overflow" }
      const response = yield* respondWithRetry(env, request.value, usage)
      if (response._tag === "Failed") {
        yield* Effect.logWarning("effect-agent: model provider failed; the turn ends with an error").pipe(
          Effect.annotateLogs({ reason: response.failure.reason, detail: response.failure.detail })
        )
        return { stopReason: "error", errorCode: response.failure.reason }
      }
      if (response.calls.length === 0) return { stopReason: "final" }
      const { state } = yield* SynchronizedRef.get(env.log.live)
      // No results of these calls could reach the model: the turn ends, and closing it closes them.
      if (step >= env.options.maxSteps || (state.openTurn?.toolCallCount ?? 0) > env.options.maxToolCalls) {
        return { stopReason: "error", errorCode: "max_steps" }
      }
      calls = response.calls.map((call) => ({ call, status: "requested" as const }))
    }
  })

/**
 * Ends a turn from how its steps ended. Interrupted with no cancel requested — the engine is
 * shutting down — a turn waiting for the user stays paused in the log, to be resumed by any
 * process; only the calls the shutdown cut short are closed, as `interrupted`.
 */
const finish = (env: TurnEnv, exit: Exit.Exit<Completion, EventStoreFailure>, usage: AgentEvent.Usage | undefined) =>
  Effect.gen(function*() {
    const { emit, log, ports, turnId } = env
    if (Exit.isSuccess(exit)) return yield* closeTurn(ports, log, turnId, withUsage(exit.value, usage), emit)
    const storeFailure = Cause.failureOption(exit.cause)
    if (Option.isSome(storeFailure)) return yield* storeFailure.value
    if (Cause.isInterruptedOnly(exit.cause)) {
      const { state } = yield* SynchronizedRef.get(log.live)
      if (!(yield* Ref.get(env.cancelRequested)) && SessionState.isPaused(state)) {
        for (const call of state.openTurn?.toolCalls.filter((c) => c.status === "running") ?? []) {
          yield* env.commit(EventDraft.toolFailed(call.toolCallId, "interrupted", "The call was stopped when the agent shut down."))
        }
        return
      }
      return yield* closeTurn(ports, log, turnId, withUsage({ stopReason: "cancelled" }, usage), emit)
    }
    // A defect in the turn's work: logged with its cause, never written into an event.
    yield* Effect.logError("effect-agent: the turn failed unexpectedly", exit.cause)
    return yield* closeTurn(ports, log, turnId, withUsage({ stopReason: "error", errorCode: "internal_error" }, usage), emit)
  })

/**
 * Runs one turn to its end. Uninterruptible except for the steps in the middle: interrupting the
 * driver there is how a turn is cancelled, and the closing events are still committed.
 */
export const drive = (env: TurnEnv, userMessage: string, beforeStart: Effect.Effect<void, EventStoreFailure>): Effect.Effect<void, EventStoreFailure> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.gen(function*() {
      yield* beforeStart
      yield* env.commit(EventDraft.turnStarted(userMessage))
      yield* env.commit(EventDraft.userMessage(userMessage))
      const usage = yield* Ref.make<AgentEvent.Usage | undefined>(undefined)
      const exit = yield* Effect.exit(restore(steps(env, usage, [], 0)))
      return yield* finish(env, exit, yield* Ref.get(usage))
    })
  )

/**
 * Continues the paused turn the log holds open: its open calls from where they stopped, then the
 * usual steps. Usage counts from here: what the turn used before the pause was never stored.
 */
export const resume = (env: TurnEnv): Effect.Effect<void, EventStoreFailure> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.gen(function*() {
      const { state, transcript } = yield* SynchronizedRef.get(env.log.live)
      const open = (state.openTurn?.toolCalls ?? []).map(({ args, decidedBy, status, tool, toolCallId }): ToolPhase.StepCall => ({
        call: { toolCallId, tool, args },
        status,
        ...(decidedBy === undefined ? {} : { decidedBy })
      }))
      const stepsDone = Transcript.all(transcript).filter((e) => e.role === "assistant" && e.turnId === env.turnId).length
      const usage = yield* Ref.make<AgentEvent.Usage | undefined>(undefined)
      const exit = yield* Effect.exit(restore(steps(env, usage, open, stepsDone)))
      return yield* finish(env, exit, yield* Ref.get(usage))
    })
  )
