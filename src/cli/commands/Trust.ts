/**
 * `trust`: the command tree; the handler is in ../Trust.ts.
 *
 * @since 0.10.0
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Help from "../Help.js"
import * as Lazy from "../Lazy.js"

export const config = {
  dir: Args.text({ name: "dir" }).pipe(Args.withDescription("The project (default: the current directory)"), Args.optional),
  yes: Options.boolean("yes").pipe(Options.withDescription("Trust without asking (after you have read the summary, e.g. from an earlier run)")),
  list: Options.boolean("list").pipe(Options.withDescription("List the trusted files and whether each is still as it was trusted")),
  revoke: Options.boolean("revoke").pipe(Options.withDescription("Stop trusting the project's settings file"))
  }
export type Input = Command.Command.ParseConfig<typeof config>

/** The `trust` command. */
export const command = Command.make("trust", config, (input) => Lazy.handler(() => import("../Trust.js"), (m) => m.handler(input))).pipe(Command.withDescription(
  Help.described(
    "Review a project's .effect-agent/settings.json and .mcp.json and trust those exact files (by SHA-256): until then the settings can only make the agent more careful and no MCP server of the project starts. --list, --revoke",
    ["effect-agent trust", "effect-agent trust --list", "effect-agent trust --revoke"]
  )
))
