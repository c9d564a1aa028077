/**
 * `sessions` (with `rename`) and `pending`: the command tree; the handlers are in ../Sessions.ts.
 *
 * @since 0.10.0
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Flags from "../Flags.js"
import * as Help from "../Help.js"
import * as Lazy from "../Lazy.js"

const load = () => import("../Sessions.js")

export const renameConfig = {
  sessionId: Args.text({ name: "sessionId" }).pipe(Args.withDescription("The session to name")),
  title: Args.text({ name: "title" }).pipe(Args.withDescription("Its title: one line, 1 to 200 characters (control characters are dropped)")),
  ...Flags.storage
}
export type RenameInput = Command.Command.ParseConfig<typeof renameConfig>

const rename = Command.make("rename", renameConfig, (input) => Lazy.handler(load, (m) => m.rename(input))).pipe(Command.withDescription(Help.described(
  "Name a session (stored as session.titled; its first message named it until then). Fails while another process drives the session",
  ["effect-agent sessions rename <id> \"Parser refactor\""]
)))

export const listConfig = {
  cwd: Options.text("cwd").pipe(Options.withPseudoName("dir"), Options.optional, Options.withDescription("Only the sessions of this directory or a directory under it")),
  search: Options.text("search").pipe(Options.optional, Options.withDescription("Only the sessions whose title or id holds every word of this text (any case)")),
  ...Flags.storage
}
export type ListInput = Command.Command.ParseConfig<typeof listConfig>

/** The `sessions` command, with `rename`. */
export const command = Command.make("sessions", listConfig, (input) => Lazy.handler(load, (m) => m.list(input))).pipe(
  Command.withDescription(Help.described("List stored sessions, most recently active first, each with its title", [
    "effect-agent sessions",
    "effect-agent sessions --cwd . --search parser",
    "effect-agent sessions --store sqlite"
  ])),
  Command.withSubcommands([rename])
)

export const pendingConfig = {
  sessionId: Args.text({ name: "sessionId" }).pipe(Args.withDescription("Only this session's calls (default: every session's)"), Args.optional),
  ...Flags.storage
}
export type PendingInput = Command.Command.ParseConfig<typeof pendingConfig>

/** The `pending` command. */
export const pending = Command.make("pending", pendingConfig, (input) => Lazy.handler(load, (m) => m.pending(input))).pipe(
  Command.withDescription(Help.described("List tool calls waiting for approval (answer them with approve or deny)", ["effect-agent pending"]))
)
