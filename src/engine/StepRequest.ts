/**
 * The first part of a step: the model request, built by the context builder from the session's
 * transcript and the tools, passed through the `transformContext` hook, and checked against the
 * model's context window.
 *
 * @since 0.2.0
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { EventStoreFailure } from "../domain/Errors.js"
import * as ContextBuilder from "../services/ContextBuilder.js"
import type { ModelRequest } from "../services/ModelProvider.js"
import * as EventDraft from "./EventDraft.js"
import type { TurnEnv } from "./TurnEnv.js"

/**
 * Builds the request of a step; `context.built` is stored for the first step when the runtime
 * added anything. Returns `None` when the request would not fit the model's context window.
 */
export const build = (env: TurnEnv, step: number): Effect.Effect<Option.Option<ModelRequest>, EventStoreFailure> =>
  Effect.gen(function*() {
    const { state, transcript } = env.session.live
    const tools = env.tools?.definitions.map(({ description, inputSchema, name }) => ({ name, description, inputSchema })) ?? []
    const built = yield* env.context.build({ sessionId: state.sessionId, cwd: state.cwd, transcript, tools })
    const request = env.hooks.transformContext === undefined
      ? built.request
      : yield* env.hooks.transformContext(built.request).pipe(
        Effect.catchAllCause((cause) =>
          Effect.logWarning("transformContext failed; the request is sent as built", cause).pipe(Effect.as(built.request))
        )
      )
    const tokens = request === built.request ? built.tokens : ContextBuilder.estimate(request)
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
