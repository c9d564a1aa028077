/**
 * `replay` and `export-script`: the command tree; the handlers are in ../Replay.ts.
 *
 * @since 0.10.0
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Flags from "../Flags.js"
import * as Help from "../Help.js"
import * as Lazy from "../Lazy.js"

const load = () => import("../Replay.js")

export const replayConfig = {
  sessionId: Args.text({ name: "sessionId" }).pipe(Args.withDescription("The session to print (its id, as sessions lists it)")),
  json: Options.boolean("json").pipe(Options.withDescription("Print the stored events, one JSON object per line")),
  ...Flags.storage
}
export type ReplayInput = Command.Command.ParseConfig<typeof replayConfig>

/** The `replay` command. */
export const replay = Command.make("replay", replayConfig, (input) => Lazy.handler(load, (m) => m.replay(input))).pipe(
  Command.withDescription(Help.described("Print a session's transcript (or, with --json, its events)", ["effect-agent replay <id>", "effect-agent replay <id> --json | jq -c 'select(.type == \"tool.completed\")'"]))
)

export const exportScriptConfig = { sessionId: Args.text({ name: "sessionId" }).pipe(Args.withDescription("The session whose model responses to print")), ...Flags.storage }
export type ExportScriptInput = Command.Command.ParseConfig<typeof exportScriptConfig>

/** The `export-script` command. */
export const exportScript = Command.make("export-script", exportScriptConfig, (input) => Lazy.handler(load, (m) => m.exportScript(input))).pipe(
  Command.withDescription(Help.described(
    "Print a session's model responses as a --script file: replay it as a deterministic test (a cassette)",
    ["effect-agent export-script <id> > cassette.json && effect-agent run --script cassette.json \"same request\""]
  ))
)
