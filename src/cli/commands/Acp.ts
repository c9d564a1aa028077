/**
 * `acp`: the command tree; the handler is in ../Acp.ts.
 *
 * @since 0.10.0
 */
import * as Command from "@effect/cli/Command"
import * as Flags from "../Flags.js"
import * as Help from "../Help.js"
import * as Lazy from "../Lazy.js"
import * as ModelFlags from "../ModelFlags.js"

const mode = Flags.mode(
  "The permission mode sessions start in (default: the mode of your settings, else of the session's trusted .effect-agent/settings.json, else default; a project's file may narrow it); the editor can switch it per session"
)

export const config = { mode, ...Flags.rules, ...Flags.sandbox, ...Flags.instructions, ...Flags.web, ...Flags.subagents, ...ModelFlags.options, ...Flags.storage }
export type Input = Command.Command.ParseConfig<typeof config>

/** The `acp` command. */
export const command = Command.make("acp", config, (input) => Lazy.handler(() => import("../Acp.js"), (m) => m.handler(input))).pipe(
  Command.withDescription(Help.described(
    "Serve the agent to an editor over the Agent Client Protocol (JSON-RPC on stdin/stdout)",
    ["node /path/to/effect-agent/dist/cli/bin.js acp   (the command an editor's agent_servers entry runs)"]
  ))
)
