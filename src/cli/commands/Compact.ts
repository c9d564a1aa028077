/**
 * `compact`: the command tree; the handler is in ../Compact.ts.
 *
 * @since 0.10.0
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Flags from "../Flags.js"
import * as Help from "../Help.js"
import * as ModelFlags from "../ModelFlags.js"
import * as Lazy from "../Lazy.js"

export const config = {
  sessionId: Args.text({ name: "sessionId" }).pipe(Args.withDescription("The session to compact")),
  keepRecentTokens: Help.number("keep-recent-tokens", "integer").pipe(
    Options.optional,
    Options.withDescription("Tokens of the most recent context kept verbatim (default: a fifth of the model's window)")
  ),
  ...ModelFlags.options,
  ...Flags.storage
}
export type Input = Command.Command.ParseConfig<typeof config>

/** The `compact` command. */
export const command = Command.make("compact", config, (input) => Lazy.handler(() => import("../Compact.js"), (m) => m.handler(input))).pipe(Command.withDescription(
  Help.described(
  "Compact a session's context now: the model summarises all but the most recent context (session.compacted); prints the summary. Exit codes: 0 compacted; 1 nothing to compact, the summary failed, a turn in progress, or the session or store could not be used; 130 interrupted",
  ["effect-agent compact <id>"]
  )
))
