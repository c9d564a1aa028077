/**
 * `effect-agent mcp list`: the MCP servers a session in the current directory would start (your
 * `mcp.json`, a trusted `.mcp.json`, `--mcp-config`), each started once to read its tools, and what
 * their descriptions and schemas cost in every request's context (estimated tokens, as
 * `context.built` counts them). Each server starts on its own: one that fails is shown with its
 * reason (`start_failed`, `list_failed`, …) and the exit code is non-zero only when every one failed.
 *
 * @since 0.5.0
 */
import * as NodePath from "node:path"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import { McpNames, McpSettings, Plural, Tokens } from "../index.js"
import { CliError } from "./CliError.js"
import * as NodeServices from "./NodeServices.js"
import { terminalSafe } from "./Render.js"
import type { ListInput } from "./commands/Mcp.js"

/** `mcp list`. */
export const list = ({ mcpConfig }: ListInput) =>
  Effect.gen(function*() {
    const cwd = process.cwd()
    const given = Option.isSome(mcpConfig) ? yield* McpSettings.readFile(mcpConfig.value) : undefined
    const serversFolder = Option.isSome(mcpConfig) ? NodePath.dirname(NodePath.resolve(mcpConfig.value)) : undefined
    const loaded = yield* McpSettings.load({ cwd, servers: given?.mcpServers, serversFolder })
    yield* Effect.forEach(loaded.notes, (note) => Console.error(`effect-agent: ${note}`), { discard: true })
    if (Object.keys(loaded.servers).length === 0) return yield* Console.error("No MCP servers are configured here.")
    const { McpTools } = yield* Effect.promise(() => import("../mcp.js"))
    // Each server on its own: one that does not start is shown with its reason, and the others are still listed.
    const results = yield* Effect.forEach(Object.entries(loaded.servers), ([name, server]) =>
      Effect.either(Effect.map(McpTools.make({ servers: { [name]: server }, cwd, folders: loaded.folders, onToolLeftOut: () => Effect.void }), (tools) => tools.listings())).pipe(
        Effect.map((result) => ({ name, result }))
      ), { concurrency: "unbounded" })
    let total = 0
    let failed = 0
    for (const { name, result } of results) {
      if (Either.isLeft(result)) {
        failed++
        yield* Console.log(`${terminalSafe(name)}  failed (${result.left.reason}): ${terminalSafe(result.left.message)}`)
        continue
      }
      for (const listing of result.right) {
        total += listing.tokens
        yield* Console.log(`${terminalSafe(listing.server)}  ${Plural.count(listing.tools.length, "tool")}  ~${listing.tokens} tokens`)
        for (const tool of listing.tools) {
          const tokens = Tokens.estimateJson({ name: tool.name, description: tool.description, inputSchema: tool.inputSchema })
          yield* Console.log(`  ${terminalSafe(tool.name)}  ~${tokens} tokens`)
        }
        // Shown here, not on stderr: what a session would leave out, beside what it would offer.
        for (const { reason, tool } of listing.leftOut) yield* Console.log(`  ${terminalSafe(McpNames.toolName(listing.server, tool))}  left out: ${terminalSafe(reason)}`)
      }
    }
    yield* Console.log(`total  ~${total} tokens in every request`)
    // Non-zero only when nothing could be listed at all.
    if (failed === results.length) {
      return yield* new CliError({ reason: "invalid_arguments", message: `no MCP server started (${failed} failed)` })
    }
  }).pipe(
    Effect.scoped,
    Effect.mapError((error) => new CliError({ reason: error._tag === "SettingsError" ? "invalid_file" : "invalid_arguments", message: error.message })),
    Effect.provide(NodeServices.layer)
  )
