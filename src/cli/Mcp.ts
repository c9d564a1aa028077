/**
 * `effect-agent mcp list`: the MCP servers a session in the current directory would start (your
 * `mcp.json`, a trusted `.mcp.json`, `--mcp-config`), each started once to read its tools, and what
 * their descriptions and schemas cost in every request's context (estimated tokens, as
 * `context.built` counts them).
 *
 * @since 0.5.0
 */
import * as Command from "@effect/cli/Command"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { McpSettings, Tokens } from "../index.js"
import { CliError } from "./CliError.js"
import * as Flags from "./Flags.js"
import { terminalSafe } from "./Render.js"
import * as Help from "./Help.js"

const list = Command.make("list", { mcpConfig: Flags.mcpConfig }, ({ mcpConfig }) =>
  Effect.gen(function*() {
    const cwd = process.cwd()
    const given = Option.isSome(mcpConfig) ? yield* McpSettings.readFile(mcpConfig.value) : undefined
    const loaded = yield* McpSettings.load({ cwd, servers: given?.mcpServers })
    yield* Effect.forEach(loaded.notes, (note) => Console.error(`effect-agent: ${note}`), { discard: true })
    if (Object.keys(loaded.servers).length === 0) return yield* Console.error("No MCP servers are configured here.")
    const { McpTools } = yield* Effect.promise(() => import("../mcp.js"))
    const tools = yield* McpTools.make({ servers: loaded.servers, cwd })
    let total = 0
    for (const listing of tools.listings()) {
      total += listing.tokens
      yield* Console.log(`${terminalSafe(listing.server)}  ${listing.tools.length} tool${listing.tools.length === 1 ? "" : "s"}  ~${listing.tokens} tokens`)
      for (const tool of listing.tools) {
        const tokens = Tokens.estimateJson({ name: tool.name, description: tool.description, inputSchema: tool.inputSchema })
        yield* Console.log(`  ${terminalSafe(tool.name)}  ~${tokens} tokens`)
      }
    }
    yield* Console.log(`total  ~${total} tokens in every request`)
  }).pipe(
    Effect.scoped,
    Effect.mapError((error) => new CliError({ reason: error._tag === "SettingsError" ? "invalid_file" : "invalid_arguments", message: error.message })),
    Effect.provide(NodeContext.layer)
  )).pipe(Command.withDescription(Help.described(
    "Start each MCP server configured here once, list its tools and what they cost in every request's context (estimated tokens)",
    ["effect-agent mcp list", "effect-agent mcp list --mcp-config servers.json"]
  )))

/** The `mcp` command. */
export const command = Command.make("mcp").pipe(
  Command.withDescription(Help.described("MCP servers: list what is configured here and what it costs in context", ["effect-agent mcp list"])),
  Command.withSubcommands([list])
)
