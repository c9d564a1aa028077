/**
 * `mcp` (`mcp list`): the command tree; the handler is in ../Mcp.ts.
 *
 * @since 0.10.0
 */
import * as Command from "@effect/cli/Command"
import * as Flags from "../Flags.js"
import * as Help from "../Help.js"
import * as Lazy from "../Lazy.js"

export const listConfig = { mcpConfig: Flags.mcpConfig }
export type ListInput = Command.Command.ParseConfig<typeof listConfig>

const list = Command.make("list", listConfig, (input) => Lazy.handler(() => import("../Mcp.js"), (m) => m.list(input))).pipe(Command.withDescription(Help.described(
    "Start each MCP server configured here once, list its tools and what they cost in every request's context (estimated tokens)",
    ["effect-agent mcp list", "effect-agent mcp list --mcp-config servers.json"]
  )))

/** The `mcp` command. */
export const command = Command.make("mcp").pipe(
  Command.withDescription(Help.described("MCP servers: list what is configured here and what it costs in context", ["effect-agent mcp list"])),
  Command.withSubcommands([list])
)
