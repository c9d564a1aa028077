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
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { SessionEngine } from "../index.js"
import { engineLayer } from "./Engine.js"
import * as Flags from "./Flags.js"
import * as Models from "./Models.js"
import * as Render from "./Render.js"
import * as Help from "./Help.js"

/** The `compact` command. */
export const command = Command.make(
  "compact",
  {
    sessionId: Args.text({ name: "sessionId" }).pipe(Args.withDescription("The session to compact")),
    keepRecentTokens: Options.integer("keep-recent-tokens").pipe(
      Options.optional,
      Options.withDescription("Tokens of the most recent context kept verbatim (default: a fifth of the model's window)")
    ),
    ...Models.options,
    ...Flags.storage
  },
  ({ keepRecentTokens, sessionId, ...options }) =>
    Effect.gen(function*() {
      const model = yield* Models.layer(options)
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
).pipe(Command.withDescription(
  Help.described(
    "Compact a session's context now: the model summarises all but the most recent context (session.compacted); prints the summary. Exit codes: 0 compacted; 1 nothing to compact, the summary failed, a turn in progress, or the session or store could not be used; 130 interrupted",
    ["effect-agent compact <id>"]
  )
))
