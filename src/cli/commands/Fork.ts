/**
 * `fork`: the command tree; the handler is in ../Fork.ts.
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
  sessionId: Args.text({ name: "sessionId" }).pipe(Args.withDescription("The session to fork")),
  at: Help.number("at", "integer").pipe(
    Options.optional,
    Options.withDescription("The sequence to fork at: the end of a closed turn or a session-level event between turns (default: the last such point, the session as it is now)")
  ),
  ...Flags.storage
}
export type Input = Command.Command.ParseConfig<typeof config>

/** The `fork` command. */
export const command = Command.make("fork", config, (input) => Lazy.handler(() => import("../Fork.js"), (m) => m.handler(input))).pipe(Command.withDescription(Help.described("Fork a session at a closed point (default: as it is now, but a turn still open); prints the new session's id", ["effect-agent fork <id>", "effect-agent run --session \"$(effect-agent fork <id>)\" \"Try it another way\""])))
