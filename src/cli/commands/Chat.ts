/**
 * `chat`: the command tree; the handler is in ../Chat.ts.
 *
 * @since 0.10.0
 */
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Help from "../Help.js"
import * as Lazy from "../Lazy.js"
import { driving } from "./Run.js"

/** A line starting with this is queued as a follow-up instead of steering the running turn. */
export const followUpPrefix = ">>"

export const config = {
  session: Options.text("session").pipe(Options.withPseudoName("id"), Options.optional, Options.withDescription("Continue this session instead of starting one")),
  continue: Options.boolean("continue").pipe(Options.withAlias("c"), Options.withDescription("Continue the most recently active session of the current directory")),
  resume: Options.boolean("resume").pipe(Options.withDescription("Choose a session of the current directory to continue, from a list with each one's title (on a terminal)")),
  ...driving("Permissions, as for run (default: your settings' mode, else a trusted .effect-agent/settings.json's, else default)")
}
export type Input = Command.Command.ParseConfig<typeof config>

/** The `chat` command. */
export const command = Command.make("chat", config, (input) => Lazy.handler(() => import("../Chat.js"), (m) => m.handler(input))).pipe(Command.withDescription(
  Help.described(
    `An interactive session: each line is a message; while a turn runs a line steers it, and a line starting with ${followUpPrefix} is queued as a follow-up. Ctrl+C cancels the running turn, and at the idle prompt exits; end of input waits for the work in progress, then exits 0`,
    ["effect-agent chat", "effect-agent chat --continue", "effect-agent chat --resume", "effect-agent chat --session <id> --mode acceptEdits"]
  )
))
