/**
 * `adopt`: the command tree; the handler is in ../Adopt.ts.
 *
 * @since 0.12.0
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Flags from "../Flags.js"
import * as Help from "../Help.js"
import * as Lazy from "../Lazy.js"

export const config = {
  sessionIds: Args.text({ name: "sessionId" }).pipe(Args.withDescription("A session to adopt"), Args.repeated),
  all: Options.boolean("all").pipe(Options.withDescription("Every stored session that is not yours yet")),
  yes: Options.boolean("yes").pipe(Options.withDescription("Adopt without asking (after you have read the summary, e.g. from an earlier run)")),
  verbose: Options.boolean("verbose").pipe(Options.withDescription("With --all: a line for each session adopted or yours already, not only their counts")),
  ...Flags.storage
}
export type Input = Command.Command.ParseConfig<typeof config>

/** The `adopt` command. */
export const command = Command.make("adopt", config, (input) => Lazy.handler(() => import("../Adopt.js"), (m) => m.handler(input))).pipe(
  Command.withDescription(
    Help.described(
      "Take on sessions you did not start here (yours from before sessions were recorded, or a log that came with a repository): shows what each allowed, then records it as yours so chat, run, fork and serve drive it",
      ["effect-agent adopt <id>", "effect-agent adopt --all"]
    )
  )
)
