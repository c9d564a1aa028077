/**
 * Compaction, the effects (CONTRACT.md §8): `compaction.started`, a summary of the older context
 * from the session's own model (the fixed instruction of `domain/Compaction`, the turn's retry
 * policy), then `session.compacted` — or `compaction.failed` with the context left as it was.
 *
 * - Inside a turn (threshold, overflow) the events carry the turn's id and go to its consumer; a
 *   manual compaction (`compactSession`) runs with no turn open and its events carry no turnId.
 * - Interrupted while the model writes the summary (a cancel, the caller going away):
 *   `compaction.failed {cancelled}` is stored, then the interruption goes on (a turn then closes
 *   as usual, `turn.completed {cancelled}`).
 * - A summary request over the window: its oldest entries are dropped until it fits; one the
 *   provider refuses as `context_overflow` is sent again with the older half of what is left dropped,
 *   at most {@link maxOverflowRetries} times; then `compaction.failed {context_overflow}`.
 * - A retryable provider failure is retried as a turn's request is (the same policy and waits
 *   through `Clock`); the retries are logged, not stored: `model.retry` belongs to a turn's
 *   response. Any other failure: `compaction.failed {<reason>}`.
 * - A summary request that returned and is refused (`empty_summary`, `response_too_large`;
 *   `summary_cut_short` when the model stopped it at its output limit or a content filter — finish
 *   `length`, `content_filter`; `summary_too_large` when its `session.compacted` is larger than the
 *   store takes as one event, `line_too_long`) was spent: its `compaction.failed` carries the usage
 *   and cost, counted as `session.compacted`'s are (the session's totals, the turn's budget, a
 *   subagent's tree).
 *
 * @since 0.4.0
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Stream from "effect/Stream"
import type * as AgentEvent from "../domain/AgentEvent.js"
import * as Cut from "../domain/Compaction.js"
import type { EventStoreFailure, ProviderFailure } from "../domain/Errors.js"
import * as Transcript from "../domain/Transcript.js"
import type * as ModelProvider from "../services/ModelProvider.js"
import * as ChunkShape from "./ChunkShape.js"
import * as EventDraft from "./EventDraft.js"
import type * as LiveSession from "./LiveSession.js"
import * as ModelResponse from "./ModelResponse.js"
import * as PromptCache from "./PromptCache.js"
import * as Retry from "./Retry.js"
import { readFence, responseLimits, type Services, toolSpecs } from "./Services.js"
import type { Commit } from "./Turn.js"

/** What a compaction stored: the payload of its `session.compacted`. */
export type CompactionResult = AgentEvent.PayloadOf<"session.compacted">

/** How many times a summary request the provider refuses as too long is sent again, shorter. */
export const maxOverflowRetries = 3

/** How a compaction ended. */
export type Outcome =
  | { readonly _tag: "Compacted"; readonly result: CompactionResult }
  /** `usage`: what a summary request that returned and was refused spent (stored in `compaction.failed`). */
  | { readonly _tag: "Failed"; readonly compactionId: string; readonly errorCode: string; readonly usage: AgentEvent.Usage | undefined }
  /** Nothing before the cut to summarise: no event was stored. */
  | { readonly _tag: "NothingToCompact" }

/** The tokens of recent context kept verbatim: the option, else a fifth of the model's window. */
export const keepRecentTokens = (services: Services): number =>
  Math.max(0, services.options.compaction.keepRecentTokens ?? Math.floor(services.provider.capabilities.maxContextTokens / 5))

/**
 * What triggers a compaction before a request of `tokens` estimated tokens: over the window (unless
 * `onOverflow` is off), or past the threshold share of it; `undefined` for none.
 */
export const trigger = (services: Services, tokens: number): AgentEvent.CompactionReason | undefined => {
  const { onOverflow, threshold } = services.options.compaction
  const window = services.provider.capabilities.maxContextTokens
  if (tokens > window) return onOverflow === false ? undefined : "overflow"
  return threshold !== undefined && tokens > threshold * window ? "threshold" : undefined
}

/** The estimated tokens of a request built from `transcript` (the system prompt and tools included). */
const tokensOf = (services: Services, session: LiveSession.LiveSession, transcript: Transcript.Transcript): Effect.Effect<number> =>
  Effect.map(
    services.context.build({
      sessionId: session.sessionId,
      cwd: session.live.state.cwd,
      transcript,
      tools: toolSpecs(services),
      sendsTo: services.provider.capabilities,
      leaveOut: readFence(services, session.live.state)
    }),
    (built) => built.tokens.total
  )

/** A summary request's answer: its text, and its usage when the provider reported it. */
interface Answer {
  readonly text: string
  readonly usage: AgentEvent.Usage | undefined
  /** Why the model stopped (its `Finish`); `length`, `content_filter`: the summary was cut short. */
  readonly finishReason?: ModelProvider.FinishReason
  /** Past the engine's `maxResponse`: the rest was not read. */
  readonly tooLarge?: true
  /** A chunk of a shape its type does not allow (ChunkShape): the rest was not read; the request failed. */
  readonly refused?: ProviderFailure
}

const noAnswer: Answer = { text: "", usage: undefined }

/**
 * The model's text for one summary request, retried as a turn's request is. Read up to
 * `maxResponse`, as a turn's response is: a summary without end was gathered whole in memory.
 */
const summarise = (services: Services, request: Cut.SummaryRequest): Effect.Effect<Either.Either<Answer, ProviderFailure>> => {
  const limits = responseLimits(services.options)
  return Retry.loop(
    services.options.retry,
    () =>
      Effect.suspend(() => {
        let pieces = 0
        return services.provider.stream(request).pipe(
          Stream.runFoldWhile(noAnswer, (answer) => answer.tooLarge !== true && answer.refused === undefined, (answer, piece): Answer => {
            const chunk = ChunkShape.read(piece)
            if (typeof chunk === "string") return { ...answer, refused: ChunkShape.refused(chunk) }
            if (++pieces > limits.deltas) return { ...answer, tooLarge: true }
            if (chunk._tag === "TextDelta") {
              const text = answer.text + chunk.text
              return text.length > limits.chars ? { ...answer, tooLarge: true } : { ...answer, text }
            }
            // Counts as `session.compacted` stores them, so that what `compactSession` returns and the turn's budget reads is the same.
            return chunk._tag === "Finish"
              ? { text: answer.text, usage: ModelResponse.addUsage(answer.usage, chunk.usage === undefined ? undefined : EventDraft.usageOf(chunk.usage)), finishReason: chunk.reason }
              : answer
          }),
          Effect.flatMap((answer) => answer.refused === undefined ? Effect.succeed(answer) : Effect.fail(answer.refused)),
          Effect.either
        )
      }),
    (answer) => (Either.isLeft(answer) ? answer.left : undefined),
    (failure, attempt, delayMs) =>
      Effect.logInfo("summary request failed; retrying").pipe(
        Effect.annotateLogs({ reason: failure.reason, detail: failure.detail, attempt, delayMs })
      )
  )
}

/**
 * Why a compaction has no summary; `usage` when its request returned and was refused all the same
 * (`empty_summary`, `response_too_large`, `summary_cut_short`): the tokens were spent.
 */
interface Refusal {
  readonly errorCode: string
  readonly usage?: AgentEvent.Usage | undefined
}

/** The summary of the entries before the cut (with the request's usage), or why there is none. */
const summaryOf = (services: Services, summarised: ReadonlyArray<Transcript.TranscriptEntry>): Effect.Effect<Either.Either<Answer, Refusal>> =>
  Effect.gen(function*() {
    let entries = Cut.fitting(summarised, services.provider.capabilities.maxContextTokens)
    for (let retries = 0;; retries++) {
      if (entries.length === 0) return Either.left({ errorCode: "context_overflow" })
      if (entries.length < summarised.length) {
        yield* Effect.logWarning("the summary request is over the window; its oldest entries are left out").pipe(
          Effect.annotateLogs({ dropped: summarised.length - entries.length })
        )
      }
      const answer = yield* summarise(services, Cut.summaryRequest(entries))
      if (Either.isRight(answer)) {
        if (answer.right.tooLarge === true) {
          yield* Effect.logWarning("the summary is larger than a response may be; the context is left as it was")
          return Either.left({ errorCode: "response_too_large", usage: answer.right.usage })
        }
        const { finishReason, usage } = answer.right
        if (finishReason === "length" || finishReason === "content_filter") {
          // A summary stopped at the output limit (Anthropic's max_tokens, OpenAI's length) or by a filter would replace the context cut short.
          yield* Effect.logWarning("the summary was cut short; the context is left as it was").pipe(Effect.annotateLogs({ finishReason }))
          return Either.left({ errorCode: "summary_cut_short", usage })
        }
        const summary = answer.right.text.trim()
        return summary === "" ? Either.left({ errorCode: "empty_summary", usage: answer.right.usage }) : Either.right({ text: summary, usage: answer.right.usage })
      }
      if (answer.left.reason !== "context_overflow" || retries >= maxOverflowRetries) {
        yield* Effect.logWarning("the summary request failed; the context is left as it was").pipe(
          Effect.annotateLogs({ reason: answer.left.reason, detail: answer.left.detail })
        )
        return Either.left({ errorCode: answer.left.reason })
      }
      entries = entries.slice(Math.max(1, Math.ceil(entries.length / 2)))
    }
  })

/** A summary request's usage with its cost, as a compaction's end stores them; nothing without usage. */
const priced = (services: Services, usage: AgentEvent.Usage | undefined): EventDraft.SummarySpent =>
  usage === undefined ? {} : { usage, ...PromptCache.costOf(services, usage) }

/**
 * Runs one compaction of the session's context, its events committed by `commit`: in the running
 * turn, or session-level for a manual one. `tokensBefore`: the estimate that triggered it (estimated
 * here when not given). Uninterruptible but for the model's answer: interrupting that stores
 * `compaction.failed {cancelled}` and then interrupts the caller.
 */
export const run = (
  services: Services,
  session: LiveSession.LiveSession,
  commit: Commit,
  reason: AgentEvent.CompactionReason,
  tokensBefore?: number,
  /** A compaction the user asked for, with no window of their own: when the window keeps everything, all but the last turn is summarised. */
  allButLastTurn = false
): Effect.Effect<Outcome, EventStoreFailure> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.gen(function*() {
      const plan = Cut.cut(session.live.transcript, keepRecentTokens(services), session.live.state.lastSequence + 1, services.provider.capabilities) ??
        (allButLastTurn ? Cut.cutBeforeLastTurn(session.live.transcript) : undefined)
      if (plan === undefined) return { _tag: "NothingToCompact" } as const
      const before = tokensBefore ?? (yield* tokensOf(services, session, session.live.transcript))
      const compactionId = yield* services.ids.next("compaction")
      const [started] = yield* commit([EventDraft.compactionStarted(compactionId, reason, before)])
      const exit = yield* Effect.exit(restore(summaryOf(services, plan.summarised)))
      if (Exit.isFailure(exit)) {
        // Interrupted (a cancel), or a defect: the compaction ends failed, then so does the caller.
        const errorCode = Cause.isInterruptedOnly(exit.cause) ? "cancelled" : "internal_error"
        if (errorCode === "internal_error") yield* Effect.logError("the compaction failed unexpectedly", exit.cause)
        yield* commit([EventDraft.compactionFailed(compactionId, errorCode)])
        return yield* Effect.failCause(exit.cause)
      }
      if (Either.isLeft(exit.value)) {
        const { errorCode, usage } = exit.value.left
        yield* commit([EventDraft.compactionFailed(compactionId, errorCode, priced(services, usage))])
        return { _tag: "Failed", compactionId, errorCode, usage } as const
      }
      const { text: summary, usage } = exit.value.right
      const turnId = started !== undefined && "turnId" in started ? started.turnId : undefined
      const after = yield* tokensOf(
        services,
        session,
        Transcript.compacted(session.live.transcript, {
          compactionId,
          summary,
          firstKeptSequence: plan.firstKeptSequence,
          sequence: session.live.state.lastSequence + 1,
          turnId
        })
      )
      const result: CompactionResult = {
        compactionId,
        reason,
        summary,
        firstKeptSequence: plan.firstKeptSequence,
        tokensBefore: before,
        tokensAfter: after,
        ...priced(services, usage)
      }
      const stored = yield* Effect.either(commit([EventDraft.sessionCompacted(result)]))
      if (Either.isLeft(stored)) {
        // A summary larger than the store takes as one event (JSONL's line): nothing was stored (a
        // failed append changes nothing), but the request was spent — its usage is kept, as a refused summary's is.
        if (stored.left.reason !== "line_too_long") return yield* Effect.fail(stored.left)
        yield* Effect.logWarning("the summary is larger than the store takes as one event; the context is left as it was").pipe(
          Effect.annotateLogs({ detail: stored.left.detail })
        )
        yield* commit([EventDraft.compactionFailed(compactionId, "summary_too_large", priced(services, usage))])
        return { _tag: "Failed", compactionId, errorCode: "summary_too_large", usage } as const
      }
      return { _tag: "Compacted", result } as const
    })
  )
