/**
 * `rewind`: the command tree; the handler is in ../Rewind.ts.
 *
 * @since 0.10.0
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Flags from "../Flags.js"
import * as Help from "../Help.js"
import * as Lazy from "../Lazy.js"

export const config = {
  sessionId: Args.text({ name: "sessionId" }).pipe(Args.withDescription("The session to rewind")),
  to: Help.number("to", "integer").pipe(Options.withDescription("The sequence to go back to: the end of a closed turn (see `replay`)")),
  force: Options.boolean("force").pipe(Options.withDescription("Overwrite files changed outside the agent since it wrote them (a rewind without it lists them)")),
  ...Flags.storage
}
export type Input = Command.Command.ParseConfig<typeof config>

/** The `rewind` command. */
export const command = Command.make("rewind", config, (input) => Lazy.handler(() => import("../Rewind.js"), (m) => m.handler(input))).pipe(Command.withDescription(Help.described(
  "Rewind a session to the end of a closed turn: the conversation continues from there and the files the agent changed since are restored (session.rewound; the rest of the log stays, an abandoned branch). Exit codes: 0 rewound; 1 refused (files changed outside the agent are listed: --force overwrites them), a turn in progress, or the session or store could not be used",
  ["effect-agent replay <id>", "effect-agent rewind <id> --to 6", "effect-agent rewind <id> --to 6 --force"]
)))
