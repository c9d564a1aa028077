/**
 * The second part of a step: the model's response, streamed and stored as it arrives — what the
 * provider has produced since the last commit committed as one batch (group commit) — and the request sent again after a retryable
 * failure that came before any of the response was stored.
 *
 * @since 0.2.0
 * @internal
 */
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as AgentEvent from "../domain/AgentEvent.js"
import type { EventStoreFailure, ProviderFailure } from "../domain/Errors.js"
import { type FinishReason, type ModelChunk, nextMacrotask, type RunAhead, runAheadIn, takeWithin } from "../services/ModelProvider.js"
import { shownName, type ToolCallInput } from "../services/ToolRouter.js"
import { addCounts } from "../domain/Tokens.js"
import { commitWindowMs, responseLimits, type TurnOptions } from "./Services.js"
import * as ChunkShape from "./ChunkShape.js"
import * as EventDraft from "./EventDraft.js"
import * as LiveSession from "./LiveSession.js"
import * as OwnedSpan from "./OwnedSpan.js"
import * as PromptCache from "./PromptCache.js"
import * as Retry from "./Retry.js"
import * as ToolCallIds from "./ToolCallIds.js"
import type { Turn } from "./Turn.js"

/** What a turn's responses add up to; owned by the turn's driver, updated as responses finish. */
export interface Tally {
  usage: AgentEvent.Usage | undefined
  /** This process's responses' share of `usage` (a resumed turn's started from its log's), priced at its model. */
  fresh: AgentEvent.Usage | undefined
  /**
   * What the summaries of the compactions inside the turn used (`session.compacted.usage`, and
   * `compaction.failed.usage` of a summary request that returned and was refused): spent by the
   * turn, so counted against its budget (`spent`), but not in `turn.completed.usage` — the
   * session's totals count each compaction's end on its own.
   */
  compacted: AgentEvent.Usage | undefined
}

/** What a turn has spent so far, for its budget: its responses and its compactions. */
export const spent = (tally: Tally): AgentEvent.Usage | undefined =>
  tally.compacted === undefined ? tally.usage : addUsage(tally.usage, tally.compacted)

/**
 * A streamed response: its tool calls and why it finished (and whether its end came with its last
 * pieces, for {@link stream}'s wait), or the provider failure that ended it and whether any of it was stored.
 */
export type Response =
  | { readonly _tag: "Answered"; readonly calls: ReadonlyArray<ToolCallInput>; readonly finishReason: FinishReason | undefined; readonly endWithLast: boolean }
  | { readonly _tag: "Failed"; readonly failure: ProviderFailure; readonly stored: boolean }
  | { readonly _tag: "TooLarge" }

/** Two usages summed (cache counts only when one of them has them). */
export const addUsage = (a: AgentEvent.Usage | undefined, b: AgentEvent.Usage | undefined): AgentEvent.Usage | undefined => {
  // One of them alone is copied, its known counts only (`ChunkShape.usageCounts`): a total is never a provider's object.
  if (a === undefined || b === undefined) {
    const one = a ?? b
    return one === undefined ? undefined : ChunkShape.usageCounts(one)
  }
  const sum = (x: number | undefined, y: number | undefined) => (x === undefined && y === undefined ? undefined : addCounts(x ?? 0, y ?? 0))
  const cacheReadTokens = sum(a.cacheReadTokens, b.cacheReadTokens)
  const cacheWriteTokens = sum(a.cacheWriteTokens, b.cacheWriteTokens)
  return {
    inputTokens: addCounts(a.inputTokens, b.inputTokens),
    outputTokens: addCounts(a.outputTokens, b.outputTokens),
    ...(cacheReadTokens === undefined ? {} : { cacheReadTokens }),
    ...(cacheWriteTokens === undefined ? {} : { cacheWriteTokens })
  }
}

/**
 * The post-cancel guard: once cancel is requested no model output is stored, even if the provider
 * still yields. (A call id used before never reaches it: `ToolCallIds` gives the call another.)
 */
const guardOf = (turn: Turn): LiveSession.Guard => () => !turn.cancel.requested

/** How many pieces of a response may wait for their commit before the provider's stream is held back. */
const pendingCapacity = 4096

/**
 * How many pieces end a later batch's commit window early: a commit of that many already costs
 * little a piece, and the provider's stream is never held back by a batch that waits for its window.
 */
const windowPieces = 1024

/**
 * The engine's log lines for calls stored under another id than the model's (`ToolCallIds`): a
 * warning for an id used before (a model's slip), debug for one no vendor takes (routine for some
 * compatible servers). Only a batch that renamed a call pays for it: a commit is the hot path.
 */
const renamedLogged = (renamed: ReadonlyArray<Renamed>) =>
  Effect.forEach(renamed, ({ from, to, tool }) =>
    (ToolCallIds.vendorsTake(from)
      ? Effect.logWarning("the model's tool call id was used before in this session; the call is stored under another")
      : Effect.logDebug("the model's tool call id is one the vendors refuse; the call is stored under another")).pipe(
      Effect.annotateLogs({ toolCallId: to, modelToolCallId: logged(from), tool: logged(tool) })
    ), { discard: true })

/**
 * A model's string as a log line shows it: bounded, its control and format characters escaped — an
 * id holding `ESC ]0;…BEL` retitled the terminal, a bidi override reordered the line, under any
 * logger that writes annotations as they are (Effect's own do).
 */
const logged = shownName

/** A call stored under another id than the model's (`ToolCallIds`). */
type Renamed = { readonly from: string; readonly to: string; readonly tool: string }

/**
 * What one response has read so far, and the reading of its pieces into batches of drafts: a class,
 * so that the per-piece work is one function of the process's. It was closures made per response
 * (the batch's commit) and per batch (the read of a piece); V8 compiles the hot loop of a commit
 * inlining the closure it saw, and every later batch — a new closure — left that code at once
 * ("wrong call target"), over and over in a process that keeps its engine, and per response in one
 * that makes an engine a turn (docs/benchmarks.md, "perf63core").
 */
class Reading {
  readonly calls: Array<ToolCallInput> = []
  stored = false
  finishReason: FinishReason | undefined = undefined
  /**
   * The ids this response's calls are stored under, the batch being built included: the log's are
   * the transcript's once committed.
   */
  readonly ids = new Set<string>()
  // What a hostile endpoint could otherwise stream without end (TurnOptions.maxResponse): the
  // text's characters, and its deltas and calls, counted as they come.
  readonly maxToolCalls: number
  readonly maxChars: number
  readonly maxDeltas: number
  chars = 0
  deltas = 0
  tooLarge = false
  /**
   * Calls past the first one over the turn's limit are never stored: the turn ends at that one
   * (TurnDriver), so 100,000 calls in one response cost what 101 do.
   */
  callsOver = 0
  /** A piece of a shape its type does not allow (ChunkShape): the response ends at it, failed. */
  malformed: ProviderFailure | undefined = undefined
  /**
   * The batch being read: its events as the commit will store them (`LiveSession.madeEvent`: no
   * draft a piece that the commit then copies), the calls it asks for, and the calls stored under another id.
   */
  drafts: Array<LiveSession.Made> = []
  asked: Array<ToolCallInput> = []
  renamed: Array<Renamed> = []
  readonly guard: LiveSession.Guard
  readonly taken: (id: string) => boolean
  /**
   * The session's and the turn's ids, which each made event carries: read from here, the read of a
   * piece touches no object of the turn's (a turn's shape, embedded in its optimized code, went at a
   * full GC with no turn alive, and the code with it: keptShapes.integration.test.ts).
   */
  readonly sessionId: string
  readonly turnId: string

  constructor(readonly turn: Turn, readonly built: PromptCache.RequestParts, readonly tally: Tally, options: TurnOptions) {
    this.sessionId = turn.session.sessionId
    this.turnId = turn.turnId
    this.guard = guardOf(turn)
    this.taken = (id) => this.ids.has(id) || turn.session.transcript.hasCallId(id)
    this.maxToolCalls = options.maxToolCalls
    const { chars, deltas } = responseLimits(options)
    this.maxChars = chars
    this.maxDeltas = deltas
  }

  /** Whether the response has ended at a piece: too large, or malformed. */
  get ended(): boolean {
    return this.tooLarge || this.malformed !== undefined
  }

  /** Reads `pieces` into a batch and commits it (nothing when none makes a draft). */
  commitBatch(pieces: Chunk.Chunk<ModelChunk>): Effect.Effect<void, EventStoreFailure> {
    const drafts: Array<LiveSession.Made> = this.drafts = []
    const asked: Array<ToolCallInput> = this.asked = []
    const renamed: Array<Renamed> = this.renamed = []
    // Indexed: a `for…of` over the chunk made an iterator result a piece wherever this loop is not optimized.
    const array = Chunk.toReadonlyArray(pieces)
    for (let i = 0; i < array.length; i++) {
      if (this.tooLarge || this.malformed !== undefined) break
      const piece = array[i]!
      // A piece that is no object (`null`, a string) is refused as one of no known tag is.
      if (typeof piece !== "object" || piece === null) {
        this.malformed = ChunkShape.refused(ChunkShape.faults.notObject)
        break
      }
      // Each field is read once, into a local, before anything of the piece is kept: a getter that
      // throws (an adapter's object, a Proxy) ends the response as an unreadable chunk, and one
      // that answers otherwise the second time cannot make what is stored differ from what was checked.
      try {
        this.readPiece(piece)
      } catch {
        this.malformed = ChunkShape.refused(ChunkShape.faults.unreadable)
      }
    }
    if (drafts.length === 0) return Effect.void
    // `LiveSession`'s commit itself, as `turn.commit` would call it: a call to the turn's own closure was
    // inlined by this loop's optimized code, which then held that closure weakly and was thrown away
    // at the first full GC after the turn — every turn, in a process that makes an engine a turn (perf64core).
    const { turn } = this
    const commit = LiveSession.commitMade(turn.services, turn.session, turn.turnId, drafts, this.guard, turn.sink)
    return Effect.flatMap(renamed.length === 0 ? commit : Effect.zipRight(renamedLogged(renamed), commit), (events) => {
      // The guard stores a batch whole or, once a cancel is requested, not at all: its calls run
      // exactly when they were stored.
      if (events.length > 0) {
        this.stored = true
        for (const call of asked) this.calls.push(call)
      }
      return Effect.void
    })
  }

  /** A draft of this turn as the event its commit stores (a piece that is no delta: a call, a thinking block's end, the usage). */
  made(draft: AgentEvent.TurnEventDraft): LiveSession.Made {
    return LiveSession.madeEvent(this.sessionId, this.turnId, draft.type, draft.payload as never)
  }

  /** Reads one piece into the batch (or marks the response too large or malformed). */
  readPiece(piece: ModelChunk): void {
    const { turn } = this
    switch (piece._tag) {
      case "TextDelta":
      case "ThinkingDelta": {
        // Thinking counts against the response's limits as its text does: a thinking stream without end ends like one of text.
        const thinking = piece._tag === "ThinkingDelta"
        const { text } = piece as { readonly text: unknown }
        if (typeof text !== "string") {
          this.malformed = ChunkShape.refused(thinking ? ChunkShape.faults.thinking : ChunkShape.faults.text)
          break
        }
        this.chars += text.length
        if (++this.deltas > this.maxDeltas || this.chars > this.maxChars) this.tooLarge = true
        else if (text !== "") this.drafts.push(LiveSession.madeEvent(this.sessionId, this.turnId, thinking ? "model.thinking_delta" : "model.delta", { text }))
        break
      }
      case "ThinkingBlock": {
        const end = ChunkShape.thinkingEnd(piece)
        if (typeof end === "string") {
          this.malformed = ChunkShape.refused(end)
          break
        }
        this.chars += (end.signature?.length ?? 0) + (end.redacted?.length ?? 0)
        if (++this.deltas > this.maxDeltas || this.chars > this.maxChars) this.tooLarge = true
        else {
          const { model, provider } = turn.services.provider.capabilities
          this.drafts.push(this.made(EventDraft.thinkingBlock({ provider, model, ...end })))
        }
        break
      }
      case "ToolCall": {
        // A call is a piece of the response too: a stream of calls without end ends like one of text.
        if (++this.deltas > this.maxDeltas) {
          this.tooLarge = true
          break
        }
        if ((turn.session.live.state.openTurn?.toolCallCount ?? 0) + this.asked.length > this.maxToolCalls) {
          this.callsOver++
          break
        }
        // What is stored is what runs: the arguments read once into plain data (too deep to walk
        // replaced) before either, and an id the session used or no vendor takes gets another (ToolCallIds).
        const { tool, toolCallId: modelId } = piece
        const args = ChunkShape.callArguments(piece.args)
        const fault = ChunkShape.callFault({ toolCallId: modelId, tool }, args)
        if (fault !== undefined) {
          this.malformed = ChunkShape.refused(fault)
          break
        }
        const toolCallId = ToolCallIds.storedId(modelId, this.taken, turn.session.transcript.renamedCallIds)
        this.ids.add(toolCallId)
        if (toolCallId !== modelId) this.renamed.push({ from: modelId, to: toolCallId, tool })
        // `args` is JSON here: `callFault` refused the call otherwise.
        const call = { toolCallId, tool, args: args! }
        this.asked.push(call)
        this.drafts.push(this.made(EventDraft.toolCallRequested(call)))
        break
      }
      case "Finish": {
        const { reason, usage: reported } = piece
        const fault = ChunkShape.finishFault({ reason, usage: reported })
        if (fault !== undefined) {
          this.malformed = ChunkShape.refused(fault)
          break
        }
        // Made counts here, as the events store them (`EventDraft.usageOf`): a count that is NaN,
        // negative or missing (a compatible server leaving out `completion_tokens`) is 0 in the
        // turn's total too, which its budget and `turn.completed` read — not a NaN that no limit trips.
        const usage = reported === undefined ? undefined : EventDraft.usageOf(ChunkShape.usageCounts(reported))
        const { tally } = this
        tally.usage = addUsage(tally.usage, usage)
        tally.fresh = addUsage(tally.fresh, usage)
        this.finishReason = reason
        // Stored in the response's last batch: no append of its own when the response has text or calls.
        if (usage !== undefined) {
          for (const draft of PromptCache.usageDrafts(turn.session.live.state.lastRequest, usage, turn.services.provider.capabilities, this.built)) this.drafts.push(this.made(draft))
        }
        break
      }
      default:
        this.malformed = ChunkShape.refused(ChunkShape.faults.unknownTag)
    }
  }
}

/**
 * A reading of no response, for `KeptShapes` to keep: its shape (hidden class) and the code built on
 * it outlive a full GC between turns. Made as every reading is, nothing of it ever read.
 */
export const keptReading = (options: TurnOptions): unknown =>
  new Reading({ cancel: { requested: false }, session: { sessionId: "" }, turnId: "" } as unknown as Turn, undefined as unknown as PromptCache.RequestParts, { usage: undefined, fresh: undefined, compacted: undefined }, options)

/**
 * Streams one response with group commit: the provider's stream runs ahead into a buffer, and each
 * commit takes everything that has arrived since the last one, so a provider handing over one
 * delta per chunk costs one lock, append, span and timestamp per batch, not per delta. The first
 * batch of a response is committed as soon as it arrives; a later one gathers what arrives until the
 * commit window (`TurnOptions.commitWindow`, 2 ms) has passed since the batch before it, 1,024 pieces
 * wait, or the stream has ended — so a provider pacing one delta a millisecond is a commit every
 * couple of deltas, not one a delta — and grows by itself while a commit is in flight. A cancel cuts
 * the wait at once (the post-cancel guard then stores none of it).
 */
const respond = (turn: Turn, built: PromptCache.RequestParts, tally: Tally): Effect.Effect<Response, EventStoreFailure> =>
  Effect.suspend(() => {
    const reading = new Reading(turn, built, tally, turn.services.options)

    /**
     * Takes what has arrived (waiting for a first piece), commits it, and goes on until the stream
     * ends. The first batch is taken as it arrives; a later one gathers until the commit window has
     * passed since the batch before it was taken (`TurnOptions.commitWindow`), enough pieces wait, or
     * the stream has ended or failed.
     */
    const drain = (run: RunAhead<ModelChunk, ProviderFailure>, first: boolean): Effect.Effect<void, EventStoreFailure | ProviderFailure> =>
      Effect.flatMap(first ? run.arrived.takeAll : takeWithin(run, lastTaken + windowMs, windowPieces), ([pieces, done]) => {
        lastTaken = performance.now()
        // Whether the stream's end is in already (taken with these pieces, or next, without a wait).
        endWithLast = done ? endWithLast || pieces.length > 0 : Option.isNone(run.arrived.unsafeSize())
        // The batch is read as its commit is made: past the limit, nothing more is taken.
        const committed = reading.commitBatch(pieces)
        return done || reading.ended ? committed : Effect.zipRight(committed, drain(run, false))
      })
    const windowMs = commitWindowMs(turn.services.options)
    // When the last batch was taken (`performance.now()`): the commit window runs from there.
    let lastTaken = 0

    let endWithLast = false
    // Leaving the scope early (too large, a cancel) aborts the provider's request. The scope is made
    // here and handed on rather than put into the fiber's context (`Effect.scoped`), which a response's
    // start and end — and a cancel's unwinding — would pay for (bench/cancel-ops.ts).
    return Effect.scopedWith((scope) =>
      Effect.flatMap(runAheadIn(turn.services.provider.stream(built.request), pendingCapacity, scope, windowMs), (started) => {
        endWithLast = started.whole
        return drain(started, true)
      })
    ).pipe(
      // One step for what is said at the end and the response (its fields are final once the scope is closed).
      Effect.flatMap(() => {
        const { calls, callsOver, finishReason, malformed, maxChars, maxDeltas, maxToolCalls, tooLarge } = reading
        if (malformed !== undefined) return Effect.fail(malformed)
        const response: Response = tooLarge ? { _tag: "TooLarge" } : { _tag: "Answered", calls, finishReason, endWithLast }
        const said = tooLarge
          ? Effect.logWarning("the model's response is larger than a response may be; the turn ends").pipe(Effect.annotateLogs({ maxChars, maxDeltas }))
          : finishReason === "length" || finishReason === "content_filter"
          ? Effect.zipRight(
            Effect.annotateCurrentSpan("finishReason", finishReason),
            Effect.logWarning("the model's response was cut short").pipe(Effect.annotateLogs({ finishReason }))
          )
          : undefined
        // A response's usual end takes no step more (the commit path is hot).
        const answered = said === undefined ? Effect.succeed(response) : Effect.as(said, response)
        return callsOver === 0 ? answered : Effect.zipRight(
          Effect.logWarning("the model asked for more tool calls than a turn allows; those past the limit were not stored").pipe(
            Effect.annotateLogs({ maxToolCalls, notStored: callsOver })
          ),
          answered
        )
      }),
      Effect.catchTag("ProviderFailure", (failure) =>
        Effect.as(Effect.annotateCurrentSpan("failure", failure.reason), { _tag: "Failed", failure, stored: reading.stored } as Response))
    )
  })

/**
 * Streams a response, sending the request again after a retryable failure that came before any
 * of the response was stored: `model.retry` is stored, then the engine waits (through `Clock`).
 *
 * A response whose end came with its last pieces — read whole as it started, or ended while its
 * last batch gathered in the commit window — is committed without a wait before its end is seen;
 * the event loop then runs once, as the end of one still running ahead comes (`runAhead`), so that a
 * steer sent on seeing its last delta makes one more step. That wait is here, once everything that read the
 * response is let go — its scope (the provider stream's channel executors, the buffer), its span, the
 * retry loop — rather than inside them: each of many turns waiting at once kept them (bench row 21:
 * `bench/heap.ts … whole`, 109 → 90 KB a turn in flight).
 */
export const stream = (turn: Turn, built: PromptCache.RequestParts, tally: Tally): Effect.Effect<Response, EventStoreFailure> =>
  Effect.tap(attempts(turn, built, tally), (response) => response._tag === "Answered" && response.endWithLast ? nextMacrotask : Effect.void)

const attempts = (turn: Turn, built: PromptCache.RequestParts, tally: Tally): Effect.Effect<Response, EventStoreFailure> =>
  Retry.loop(
    turn.services.options.retry,
    (attempt) =>
      respond(turn, built, tally).pipe(
        OwnedSpan.within("ModelResponse.request", {
          captureStackTrace: false,
          attributes: {
            sessionId: turn.session.sessionId,
            turnId: turn.turnId,
            attempt,
            provider: turn.services.provider.capabilities.provider,
            model: turn.services.provider.capabilities.model
          }
        })
      ),
    // Only a request none of whose response was stored is sent again.
    (response) => response._tag !== "Failed" || response.stored ? undefined : response.failure,
    (failure, attempt, delayMs) =>
      Effect.logInfo("model request failed; retrying").pipe(
        Effect.annotateLogs({ reason: failure.reason, detail: failure.detail, attempt, delayMs }),
        Effect.zipRight(turn.commit([EventDraft.modelRetry(attempt, delayMs, failure.reason)]))
      )
  )
