/**
 * The driver of one turn: `turn.started`, `user.message`, the model's streamed response, and
 * exactly one `turn.completed` however the turn ends — final, provider error, cancellation
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
import * as Ref from "effect/Ref"
import * as Stream from "effect/Stream"
import * as SynchronizedRef from "effect/SynchronizedRef"
import * as AgentEvent from "../domain/AgentEvent.js"
import type { EventStoreFailure } from "../domain/Errors.js"
import * as Transcript from "../domain/Transcript.js"
import type { ModelProvider } from "../services/ModelProvider.js"
import * as SessionLog from "./SessionLog.js"

/** How a turn ends, as `turn.completed` records it. */
export type Completion = AgentEvent.PayloadOf<"turn.completed">

/** What the driver of one turn needs. */
export interface DriveOptions {
  readonly ports: SessionLog.Ports
  readonly provider: ModelProvider.Service
  readonly log: SessionLog.SessionLog
  readonly turnId: string
  readonly userMessage: string
  readonly cancelRequested: Ref.Ref<boolean>
  readonly emit: (event: AgentEvent.AgentEvent) => Effect.Effect<unknown>
  /** Runs before `turn.started`: the engine closes a dangling turn here. */
  readonly beforeStart: Effect.Effect<void, EventStoreFailure>
}

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
      yield* SessionLog.commit(ports, log, turnId, {
        type: "tool.failed",
        payload: { toolCallId: call.toolCallId, errorCode, message: `The tool call did not finish: ${errorCode}.` }
      }, emit)
    }
    yield* SessionLog.commit(ports, log, turnId, { type: "turn.completed", payload: completion }, emit)
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

/** The model part of a turn: one request, its streamed response stored delta by delta. */
const respond = (options: DriveOptions, usage: Ref.Ref<AgentEvent.Usage | undefined>) =>
  Effect.gen(function*() {
    const { log, ports, turnId, emit, provider, cancelRequested } = options
    const { transcript } = yield* SynchronizedRef.get(log.live)
    const request = { system: "", messages: Transcript.messages(transcript), tools: [] }
    // The post-cancel guard: once cancel is requested no model output is stored, even if the provider still yields.
    const notCancelled = () => Effect.map(Ref.get(cancelRequested), (cancelled) => !cancelled)
    yield* provider.stream(request).pipe(
      Stream.runForEach((chunk) => {
        switch (chunk._tag) {
          case "TextDelta":
            return chunk.text === ""
              ? Effect.void
              : SessionLog.commit(ports, log, turnId, { type: "model.delta", payload: { text: chunk.text } }, emit, notCancelled)
          case "ToolCall":
            return Effect.logWarning("effect-agent: the model requested a tool, but no tools are configured").pipe(
              Effect.annotateLogs({ tool: chunk.tool })
            )
          case "Finish":
            return Ref.update(usage, (u) => addUsage(u, chunk.usage))
        }
      })
    )
    return { stopReason: "final" } satisfies Completion
  }).pipe(
    Effect.catchTag("ProviderFailure", (failure) =>
      Effect.logWarning("effect-agent: model provider failed; the turn ends with an error").pipe(
        Effect.annotateLogs({ reason: failure.reason, detail: failure.detail }),
        Effect.as({ stopReason: "error", errorCode: failure.reason } satisfies Completion)
      ))
  )

/**
 * Runs one turn to its end. Uninterruptible except for the model and tool work in the middle:
 * interrupting the driver there is how a turn is cancelled, and the closing events are still
 * committed.
 */
export const drive = (options: DriveOptions): Effect.Effect<void, EventStoreFailure> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.gen(function*() {
      const { log, ports, turnId, emit, userMessage } = options
      const commit = (draft: AgentEvent.TurnEventDraft) => SessionLog.commit(ports, log, turnId, draft, emit)
      yield* options.beforeStart
      yield* commit({ type: "turn.started", payload: { promptPreview: AgentEvent.promptPreview(userMessage) } })
      yield* commit({ type: "user.message", payload: { content: userMessage } })
      const usage = yield* Ref.make<AgentEvent.Usage | undefined>(undefined)
      const exit = yield* Effect.exit(restore(respond(options, usage)))
      const used = yield* Ref.get(usage)
      if (Exit.isSuccess(exit)) return yield* closeTurn(ports, log, turnId, withUsage(exit.value, used), emit)
      const storeFailure = Cause.failureOption(exit.cause)
      if (Option.isSome(storeFailure)) return yield* storeFailure.value
      if (Cause.isInterruptedOnly(exit.cause)) {
        return yield* closeTurn(ports, log, turnId, withUsage({ stopReason: "cancelled" }, used), emit)
      }
      // A defect in the turn's work: logged with its cause, never written into an event.
      yield* Effect.logError("effect-agent: the turn failed unexpectedly", exit.cause)
      return yield* closeTurn(ports, log, turnId, withUsage({ stopReason: "error", errorCode: "internal_error" }, used), emit)
    })
  )
