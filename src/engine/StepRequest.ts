/**
 * The first part of a step: the model request, built by the context builder from the session's
 * transcript and the tools, passed through the `transformContext` hook, compacted when it passes
 * the threshold or the window (see `Compaction`), and checked against the model's context window.
 *
 * @since 0.2.0
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as AgentEvent from "../domain/AgentEvent.js"
import type { EventStoreFailure } from "../domain/Errors.js"
import * as Image from "../domain/Image.js"
import * as Tokens from "../domain/Tokens.js"
import * as AgentHooks from "../services/AgentHooks.js"
import * as ContextBuilder from "../services/ContextBuilder.js"
import type { ModelRequest } from "../services/ModelProvider.js"
import * as Compaction from "./Compaction.js"
import * as EventDraft from "./EventDraft.js"
import * as Images from "./Images.js"
import { addUsage, type Tally } from "./ModelResponse.js"
import type * as PromptCache from "./PromptCache.js"
import { readFence, toolSpecs } from "./Services.js"
import type { Turn } from "./Turn.js"

interface Prepared {
  /** The request as sent: its images' bytes attached, or notes in their place. */
  readonly request: ModelRequest
  readonly parts: ReadonlyArray<ContextBuilder.PromptPart>
  readonly tokens: ContextBuilder.TokenEstimate
  readonly instructions: ReadonlyArray<AgentEvent.InstructionPart>
}

/** The instructions files a built request's system prompt holds, as `context.built` records them. */
const instructionsOf = (parts: ReadonlyArray<ContextBuilder.PromptPart>): ReadonlyArray<AgentEvent.InstructionPart> =>
  parts.flatMap((part) =>
    (part.source === "project" || part.source === "user-file") && part.path !== undefined && part.sha256 !== undefined
      ? [{ name: part.id, source: part.source, path: part.path, sha256: part.sha256, tokens: Tokens.estimate(part.content), truncated: part.truncated }]
      : []
  )

/**
 * The estimate of the request as it is sent (`sent`: `request` with its images attached, see
 * `Images.attach`): each image it carries counts `Image.estimatedTokens` in the transcript; an image
 * sent as a note instead (a model that takes none, a blob that cannot be read, one over a request's
 * limits) counts as the note's text, which `estimate` — of the request before the notes — left out.
 */
const withImages = (tokens: ContextBuilder.TokenEstimate, request: ModelRequest, sent: ModelRequest): ContextBuilder.TokenEstimate => {
  // No message named an image (`Images.attach` answered the request itself): nothing to count.
  if (sent === request) return tokens
  let images = 0
  // How much longer the messages' JSON got: notes added to their text, references of the images they replace taken out.
  let chars = 0
  // A loop, not a closure made per call: a full GC between turns takes a per-call closure's optimized code with it (perf64steps).
  for (let i = 0; i < request.messages.length; i++) {
    const message = request.messages[i]!
    const out = sent.messages[i]
    if (message.role === "assistant" || out === undefined || out.role === "assistant") continue
    images += out.images?.length ?? 0
    if (out.content !== message.content || out.images?.length !== message.images?.length) chars += JSON.stringify(out).length - JSON.stringify(message).length
  }
  const extra = images * Image.estimatedTokens + Math.ceil(chars / 4)
  return extra === 0 ? tokens : { ...tokens, transcript: tokens.transcript + extra, total: tokens.total + extra }
}

/** The request of a step as built now, before its images are read: its estimate leaves them out. */
interface Built {
  readonly request: ModelRequest
  readonly parts: ReadonlyArray<ContextBuilder.PromptPart>
  readonly tokens: ContextBuilder.TokenEstimate
}

/** The request of a step as built now, the `transformContext` hook applied; nothing is read from the blob area, nothing stored. */
const buildRequest = (turn: Turn): Effect.Effect<Built> =>
  Effect.gen(function*() {
    const { services } = turn
    const { state, transcript } = turn.session.live
    const built = yield* services.context.build({
      sessionId: state.sessionId,
      turnId: turn.turnId,
      cwd: state.cwd,
      transcript,
      tools: toolSpecs(services),
      // The live transcript keeps its messages rendered: only what changed since the last request is rendered again.
      rendered: () => turn.session.transcript.renderingOf(transcript),
      sendsTo: services.provider.capabilities,
      leaveOut: readFence(services, state)
    })
    const transform = services.hooks.transformContext
    const request = transform === undefined
      ? built.request
      : yield* Effect.suspend(() => transform(built.request)).pipe(
        Effect.filterOrDieMessage(AgentHooks.wellFormed.request, "transformContext returned no ModelRequest"),
        Effect.catchAllCause((cause) =>
          Effect.logWarning("transformContext failed; the request is sent as built", cause).pipe(Effect.as(built.request))
        )
      )
    return { request, parts: built.parts, tokens: request === built.request ? built.tokens : ContextBuilder.estimate(request, services.provider.capabilities) }
  })

/**
 * The least the request's estimate can be once its images are read, whatever each turns out to be:
 * sent (`Image.estimatedTokens`) or a note in the message's text (longer text) — its references
 * taken out of the JSON at most. Over the window, the request overflows without reading one.
 */
const leastTokens = ({ request, tokens }: Built): number => {
  let references = 0
  for (const message of request.messages) {
    if (message.role === "assistant" || message.images === undefined) continue
    const { images: _, ...rest } = message
    references += JSON.stringify(message).length - JSON.stringify(rest).length
  }
  return references === 0 ? tokens.total : tokens.total + Math.ceil(-references / 4)
}

/**
 * The request with its images' bytes, read from the blob area (`blobs`: the step's, each blob read
 * once — see `Images.readOnce`), and its estimate: which images are sent and which become notes
 * decides what the request counts.
 */
const attach = (turn: Turn, blobs: ReturnType<typeof Images.readOnce>, built: Built): Effect.Effect<Prepared> =>
  // Most requests name no image (this runs every step): prepared as built, with no `Effect.map`.
  built.request.messages.some(Images.namesImages)
    ? Effect.map(Images.attach(blobs, turn.services.provider.capabilities, built.request), (sent) => prepared(built, sent))
    : Effect.succeed(prepared(built, built.request))

/** The request as sent (`sent`: with its images' bytes, or `built`'s own when it names none), and its estimate. */
const prepared = (built: Built, sent: ModelRequest): Prepared => ({
  request: sent,
  parts: built.parts,
  tokens: withImages(built.tokens, built.request, sent),
  instructions: instructionsOf(built.parts)
})

/**
 * Stores `mcp.tools_listed` for each outside source whose tools the session has not recorded yet, or
 * whose list changed since: the log says which tools a request offered before the request is made.
 */
const recordToolLists = (turn: Turn): Effect.Effect<void, EventStoreFailure> => {
  const sources = turn.services.tools?.sources?.() ?? []
  if (sources.length === 0) return Effect.void
  const recorded = turn.session.live.state.toolLists ?? {}
  const changed = sources.filter((source) => recorded[source.server] !== source.hash)
  return changed.length === 0 ? Effect.void : Effect.asVoid(turn.commit(changed.map(EventDraft.mcpToolsListed)))
}

/**
 * The turns whose compaction did not bring the context under the threshold (stored and still past
 * it: a summary about as long as what it replaced): another summary of the same context would do no
 * better, so the turn asks for no other threshold compaction (one a step, each spent); an overflow
 * compaction is still tried, the request does not fit otherwise.
 */
const pastThreshold = new WeakSet<Turn>()

/**
 * Builds the request of a step; `context.built` is stored for the first step when the runtime
 * added anything. A request past the compaction threshold, or over the window, compacts the context
 * first (once per step) and is built again. Returns `None` when the request would not fit the
 * model's context window. The images' blobs are read once in a step (a compaction's second build
 * reuses them), and not at all for a request that overflows whatever they turn out to be, unless
 * something records its estimate first (`context.built`, a compaction). A compaction's usage goes
 * into the turn's `tally`, for its budget.
 */
export const build = (turn: Turn, step: number, tally: Tally): Effect.Effect<Option.Option<PromptCache.RequestParts>, EventStoreFailure> =>
  Effect.gen(function*() {
    const { provider } = turn.services
    const limit = provider.capabilities.maxContextTokens
    // Made only when a request is refused, not at every step.
    const refused = (annotations: Record<string, unknown>) =>
      Effect.zipRight(
        Effect.logWarning("the context does not fit the model's window; no request sent").pipe(Effect.annotateLogs(annotations)),
        Effect.succeed(Option.none<PromptCache.RequestParts>())
      )
    yield* recordToolLists(turn)
    const blobs = Images.readOnce(turn.services.blobs)
    let built = yield* buildRequest(turn)
    // Over the window with or without its images, and nothing to record (no compaction on overflow,
    // no `context.built`): refused before any image is read.
    const records = step === 1 && (built.tokens.instruction > 0 || built.tokens.tools > 0)
    const least = records ? 0 : leastTokens(built)
    if (least > limit && Compaction.trigger(turn.services, least) === undefined) {
      return yield* refused({ leastEstimatedTokens: least, maxContextTokens: limit, model: provider.capabilities.model })
    }
    let { instructions, parts, request, tokens } = yield* attach(turn, blobs, built)
    const reason = Compaction.trigger(turn.services, tokens.total)
    if (reason !== undefined && !(reason === "threshold" && pastThreshold.has(turn))) {
      const outcome = yield* Compaction.run(turn.services, turn.session, turn.commit, reason, tokens.total)
      // A summary request that returned was spent, whether or not it gave a summary.
      if (outcome._tag !== "NothingToCompact") tally.compacted = addUsage(tally.compacted, outcome._tag === "Compacted" ? outcome.result.usage : outcome.usage)
      if (
        outcome._tag === "Compacted" && Compaction.trigger(turn.services, outcome.result.tokensAfter) !== undefined
      ) pastThreshold.add(turn)
      // Failed or nothing to compact: the request goes on as it was, if it fits.
      if (outcome._tag === "Compacted") {
        built = yield* buildRequest(turn)
        const leastAfter = records ? 0 : leastTokens(built)
        if (leastAfter > limit) {
          return yield* refused({ leastEstimatedTokens: leastAfter, maxContextTokens: limit, model: provider.capabilities.model })
        }
        ;({ instructions, parts, request, tokens } = yield* attach(turn, blobs, built))
      }
    }
    if (records) {
      yield* turn.commit([EventDraft.contextBuilt(tokens, instructions)])
    }
    // The overflow preflight: a request over the context window is never sent.
    if (tokens.total > limit) {
      return yield* refused({ estimatedTokens: tokens.total, maxContextTokens: limit, model: provider.capabilities.model })
    }
    return Option.some({ parts, request })
  })
