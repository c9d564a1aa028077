/**
 * `effect-agent compact <sessionId> [--keep-recent-tokens <n>]`: compacts a session's context now
 * (a manual compaction): the session's model summarises everything before the recent context, which
 * is kept verbatim. Prints the token estimates and the summary. Exit codes: 0 compacted; 1 nothing
 * to compact, the model gave no summary (`compaction.failed` is stored, the context is unchanged), a
 * turn in progress, or the session or store could not be used; 130 interrupted (`compaction.failed
 * {cancelled}` is stored).
 *
 * @since 0.4.0
 */
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { SessionEngine } from "../index.js"
import { engineLayer } from "./Engine.js"
import * as FlagLayers from "./FlagLayers.js"
import type { Input } from "./commands/Compact.js"
import * as Models from "./Models.js"
import * as NodeServices from "./NodeServices.js"
import * as Render from "./Render.js"

/** `compact`. */
export const handler = ({ keepRecentTokens, sessionId, ...options }: Input) =>
  Effect.gen(function*() {
    // An unknown session is refused before the model is chosen (and its note printed).
    yield* FlagLayers.requireExisting(options, sessionId).pipe(Effect.provide(NodeServices.layer))
    // Which model answers is said when it is asked: a session with nothing to compact says only that.
    const model = Models.announcedAtFirstRequest(yield* Models.chosen(options))
    yield* Effect.gen(function*() {
      const engine = yield* SessionEngine.SessionEngine
      const result = yield* engine.compactSession({
        sessionId,
        ...(Option.isSome(keepRecentTokens) ? { keepRecentTokens: keepRecentTokens.value } : {})
      })
      yield* Console.log(
        `compacted ${sessionId} (${result.compactionId}): ~${result.tokensBefore} → ~${result.tokensAfter} tokens; kept verbatim from sequence ${result.firstKeptSequence}`
      )
      yield* Console.log(Render.terminalSafe(result.summary))
    }).pipe(Effect.provide(engineLayer(options, model)))
  })
