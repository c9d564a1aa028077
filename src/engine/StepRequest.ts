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
import type { EventStoreFailure } from "../domain/Errors.js"
import * as ContextBuilder from "../services/ContextBuilder.js"
import type { ModelRequest } from "../services/ModelProvider.js"
import * as Compaction from "./Compaction.js"
import * as EventDraft from "./EventDraft.js"
import type { TurnEnv } from "./TurnEnv.js"

/** The request of a step as built now, and its token estimate; nothing is stored. */
const prepare = (env: TurnEnv): Effect.Effect<{ readonly request: ModelRequest; readonly tokens: ContextBuilder.TokenEstimate }> =>
  Effect.gen(function*() {
    const { state, transcript } = env.session.live
    const built = yield* env.context.build({ sessionId: state.sessionId, cwd: state.cwd, transcript, tools: Compaction.toolSpecs(env) })
    const request = env.hooks.transformContext === undefined
      ? built.request
      : yield* env.hooks.transformContext(built.request).pipe(
        Effect.catchAllCause((cause) =>
          Effect.logWarning("transformContext failed; the request is sent as built", cause).pipe(Effect.as(built.request))
        )
      )
    return { request, tokens: request === built.request ? built.tokens : ContextBuilder.estimate(request) }
  })

/**
 * Stores `mcp.tools_listed` for each outside source whose tools the session has not recorded yet, or
 * whose list changed since: the log says which tools a request offered before the request is made.
 */
const recordToolLists = (env: TurnEnv): Effect.Effect<void, EventStoreFailure> => {
  const sources = env.tools?.sources?.() ?? []
  if (sources.length === 0) return Effect.void
  const recorded = env.session.live.state.toolLists ?? {}
  const changed = sources.filter((source) => recorded[source.server] !== source.hash)
  return changed.length === 0 ? Effect.void : Effect.asVoid(env.commit(changed.map(EventDraft.mcpToolsListed)))
}

/**
 * Builds the request of a step; `context.built` is stored for the first step when the runtime
 * added anything. A request past the compaction threshold, or over the window, compacts the context
 * first (once per step) and is built again. Returns `None` when the request would not fit the
 * model's context window.
 */
export const build = (env: TurnEnv, step: number): Effect.Effect<Option.Option<ModelRequest>, EventStoreFailure> =>
  Effect.gen(function*() {
    yield* recordToolLists(env)
    let { request, tokens } = yield* prepare(env)
    const reason = Compaction.trigger(env, tokens.total)
    if (reason !== undefined) {
      const outcome = yield* Compaction.run({ services: env, session: env.session, commit: (drafts) => env.commit(drafts) }, reason, tokens.total)
      // Failed or nothing to compact: the request goes on as it was, if it fits.
      if (outcome._tag === "Compacted") ({ request, tokens } = yield* prepare(env))
    }
    if (step === 1 && (tokens.instruction > 0 || tokens.tools > 0)) {
      yield* env.commit([EventDraft.contextBuilt(tokens)])
    }
    // The overflow preflight: a request over the context window is never sent.
    const limit = env.provider.capabilities.maxContextTokens
    if (tokens.total > limit) {
      yield* Effect.logWarning("the context does not fit the model's window; no request sent").pipe(
        Effect.annotateLogs({ estimatedTokens: tokens.total, maxContextTokens: limit, model: env.provider.capabilities.model })
      )
      return Option.none<ModelRequest>()
    }
    return Option.some(request)
  })
