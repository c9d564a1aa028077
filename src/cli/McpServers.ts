/**
 * The CLI's MCP tools: the servers of a session are known only once the CLI knows the session's
 * working directory (whose `.mcp.json` may apply, if trusted), which is after the engine is built.
 * So the tool router the engine gets starts with the workspace tools alone and gains the servers'
 * tools when `configure` starts them; they stop when the command ends. The MCP SDK is loaded only
 * when there is a server to start.
 *
 * @since 0.5.0
 */
import type * as FileSystem from "@effect/platform/FileSystem"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import { McpSettings, ToolRouter } from "../index.js"
import type { McpTools } from "../mcp.js"
import { CliError } from "./CliError.js"

/** A tool router that gains MCP servers' tools once configured. */
export interface Configurable {
  /** The router: the one below it until `configure`, then that one plus the servers' tools. */
  readonly layer: Layer.Layer<ToolRouter.ToolRouter, never, ToolRouter.ToolRouter>
  /**
   * Resolves the servers of a session in `cwd` (`--mcp-config`, the user's `mcp.json`, the project's
   * `.mcp.json` once trusted), says what of the project's file was not started, and starts them.
   */
  readonly configure: (cwd: string, options: {
    readonly configFile: Option.Option<string>
    readonly env?: McpTools.Options["env"]
    readonly prefix?: string
  }) => Effect.Effect<void, CliError, FileSystem.FileSystem>
}

/** A configurable router; until configured it is the router below it. */
export const configurable = (): Configurable => {
  let base: ToolRouter.ToolRouter.Service | undefined
  let scope: Scope.Scope | undefined
  let current: ToolRouter.ToolRouter.Service | undefined
  const router = (): ToolRouter.ToolRouter.Service => current ?? base!
  return {
    layer: Layer.scoped(
      ToolRouter.ToolRouter,
      Effect.gen(function*() {
        base = yield* ToolRouter.ToolRouter
        scope = yield* Effect.scope
        return {
          get definitions() {
            return router().definitions
          },
          prepare: (call, cwd) => router().prepare(call, cwd),
          execute: (call, context) => router().execute(call, context),
          sources: () => router().sources?.() ?? []
        } satisfies ToolRouter.ToolRouter.Service
      })
    ),
    configure: (cwd, options) =>
      Effect.gen(function*() {
        const given = Option.isSome(options.configFile) ? yield* McpSettings.readFile(options.configFile.value) : undefined
        const loaded = yield* McpSettings.load({ cwd, servers: given?.mcpServers })
        yield* Effect.forEach(loaded.notes, (note) => Console.error(`${options.prefix ?? "effect-agent:"} ${note}`), { discard: true })
        if (Object.keys(loaded.servers).length === 0 || base === undefined || scope === undefined) return
        // The SDK is loaded only by a run that starts a server (see scripts/bundle-cli.mjs).
        const { McpTools } = yield* Effect.promise(() => import("../mcp.js"))
        const tools = yield* McpTools.make({ servers: loaded.servers, cwd, env: options.env }, base).pipe(Scope.extend(scope))
        current = tools.router
      }).pipe(
        Effect.catchTags({
          SettingsError: (error) => Effect.fail(new CliError({ reason: "invalid_file", message: error.message })),
          McpError: (error) => Effect.fail(new CliError({ reason: "invalid_arguments", message: error.message }))
        })
      )
  }
}
