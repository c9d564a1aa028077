/**
 * `watch`: the command tree; the handler is in ../Watch.ts.
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
  sessionId: Args.text({ name: "sessionId" }).pipe(Args.withDescription("The session to watch")),
  json: Options.boolean("json").pipe(Options.withDescription("Print the stored events, one JSON object per line")),
  ...Flags.storage
}
export type Input = Command.Command.ParseConfig<typeof config>

/** The `watch` command. */
export const command = Command.make("watch", config, (input) => Lazy.handler(() => import("../Watch.js"), (m) => m.handler(input))).pipe(Command.withDescription(Help.described("Print a session live, whichever process drives it, until Ctrl+C (--json: its events, one per line)", ["effect-agent watch <id>", "effect-agent watch <id> --json"])))
