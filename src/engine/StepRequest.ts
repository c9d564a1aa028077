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
import * as ContextBuilder from "../services/ContextBuilder.js"
import type { ModelRequest } from "../services/ModelProvider.js"
import * as Compaction from "./Compaction.js"
import * as EventDraft from "./EventDraft.js"
import * as Images from "./Images.js"
import type * as PromptCache from "./PromptCache.js"
import { toolSpecs } from "./Services.js"
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
  let images = 0
  // How much longer the messages' JSON got: notes added to their text, references of the images they replace taken out.
  let chars = 0
  request.messages.forEach((message, i) => {
    const out = sent.messages[i]
    if (message.role === "assistant" || out === undefined || out.role === "assistant") return
    images += out.images?.length ?? 0
    if (out.content !== message.content || out.images?.length !== message.images?.length) chars += JSON.stringify(out).length - JSON.stringify(message).length
  })
  const extra = images * Image.estimatedTokens + Math.ceil(chars / 4)
  return extra === 0 ? tokens : { ...tokens, transcript: tokens.transcript + extra, total: tokens.total + extra }
}

/** The request of a step as built now, and its token estimate; nothing is stored. */
const prepare = (turn: Turn): Effect.Effect<Prepared> =>
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
      rendered: () => turn.session.transcript.renderingOf(transcript)
    })
    const transform = services.hooks.transformContext
    const request = transform === undefined
      ? built.request
      : yield* transform(built.request).pipe(
        Effect.catchAllCause((cause) =>
          Effect.logWarning("transformContext failed; the request is sent as built", cause).pipe(Effect.as(built.request))
        )
      )
    // The images' bytes, read from the blob area for this request (never part of the estimate's JSON):
    // which are sent and which become notes decides what the request counts.
    const sent = yield* Images.attach(services.blobs, services.provider.capabilities, request)
    return {
      request: sent,
      parts: built.parts,
      tokens: withImages(request === built.request ? built.tokens : ContextBuilder.estimate(request), request, sent),
      instructions: instructionsOf(built.parts)
    }
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
 * Builds the request of a step; `context.built` is stored for the first step when the runtime
 * added anything. A request past the compaction threshold, or over the window, compacts the context
 * first (once per step) and is built again. Returns `None` when the request would not fit the
 * model's context window.
 */
export const build = (turn: Turn, step: number): Effect.Effect<Option.Option<PromptCache.RequestParts>, EventStoreFailure> =>
  Effect.gen(function*() {
    const { provider } = turn.services
    yield* recordToolLists(turn)
    let { instructions, parts, request, tokens } = yield* prepare(turn)
    const reason = Compaction.trigger(turn.services, tokens.total)
    if (reason !== undefined) {
      const outcome = yield* Compaction.run(turn.services, turn.session, turn.commit, reason, tokens.total)
      // Failed or nothing to compact: the request goes on as it was, if it fits.
      if (outcome._tag === "Compacted") ({ instructions, parts, request, tokens } = yield* prepare(turn))
    }
    if (step === 1 && (tokens.instruction > 0 || tokens.tools > 0)) {
      yield* turn.commit([EventDraft.contextBuilt(tokens, instructions)])
    }
    // The overflow preflight: a request over the context window is never sent.
    const limit = provider.capabilities.maxContextTokens
    if (tokens.total > limit) {
      yield* Effect.logWarning("the context does not fit the model's window; no request sent").pipe(
        Effect.annotateLogs({ estimatedTokens: tokens.total, maxContextTokens: limit, model: provider.capabilities.model })
      )
      return Option.none<PromptCache.RequestParts>()
    }
    return Option.some({ parts, request })
  })
