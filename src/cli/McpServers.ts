/**
 * The MCP tools of the CLI's adapters. The servers of a session are known only once its working
 * directory is (its `.mcp.json` may apply, if trusted), which is after the engine is built; ACP and
 * HTTP clients may name servers for one session. So the engine's tool router starts as the workspace
 * tools and gains servers' tools: for every session (`configure`, the CLI's one session) or for one
 * (`configureSession`, ACP `session/new` and the HTTP body). Servers stop when the command ends, or
 * when their session's servers are configured again. The MCP SDK is loaded only when there is a
 * server to start.
 *
 * @since 0.5.0
 */
import * as NodePath from "node:path"
import type * as FileSystem from "@effect/platform/FileSystem"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as ExecutionStrategy from "effect/ExecutionStrategy"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import { McpCassette, type McpConfig, McpSettings, type PendingServers, ToolRouter } from "../index.js"
import type { McpTools } from "../mcp.js"
import { CliError } from "./CliError.js"

/** What servers start with besides their configuration. */
export interface StartOptions {
  /** The commands' environment (your settings' `env` and a trusted project's): a trusted project's own `.mcp.json` servers run with it. */
  readonly env?: McpTools.Options["env"]
  /**
   * Your own settings' `env` alone (`ProjectSettings.Loaded.userEnv`): every other server runs with
   * it — yours, `--mcp-config`'s, a client's — outside the sandbox and with your tokens, so a
   * project's `env` never reaches them. None given, they get neither.
   */
  readonly userEnv?: McpTools.Options["env"]
  /** How notes begin on stderr (default `effect-agent:`). */
  readonly prefix?: string
}

/** A tool router that gains MCP servers' tools once configured. */
export interface Configurable {
  /** The router: the one below it, plus the servers' tools once configured. */
  readonly layer: Layer.Layer<ToolRouter.ToolRouter, never, ToolRouter.ToolRouter>
  /**
   * Resolves the servers of a session in `cwd` (`--mcp-config`, the user's `mcp.json`, the project's
   * `.mcp.json` once trusted), says what of the project's file was not started, and starts them for
   * every session.
   */
  readonly configure: (cwd: string, options: StartOptions & { readonly configFile: Option.Option<string> }) => Effect.Effect<void, CliError, FileSystem.FileSystem>
  /**
   * Binds the MCP servers a cassette recorded (`--script` with `mcp`) for every session, in place of
   * any configured server: their recorded tools and answers, and no process started.
   */
  readonly useRecorded: (recording: McpCassette.Recording, options?: StartOptions) => Effect.Effect<void>
  /** Stops a session's own servers (ACP `session/close`): its tools are then the shared ones again. */
  readonly releaseSession: (sessionId: string) => Effect.Effect<void>
  /** Whether a session has servers of its own in this process. */
  readonly hasSession: (sessionId: string) => boolean
  /** The same for one session, with the servers its client named (they win over the files'). */
  readonly configureSession: (sessionId: string, cwd: string, servers: McpConfig.Servers, options?: StartOptions) => Effect.Effect<void, CliError, FileSystem.FileSystem>
  /**
   * Starts them for a session not created yet, in `cwd`: a server that cannot start refuses the
   * creation before anything is stored. `bind` makes them the session's once it exists; `discard` stops them.
   */
  readonly startForSession: (cwd: string, servers: McpConfig.Servers, options?: StartOptions) => Effect.Effect<PendingServers.PendingServers, CliError, FileSystem.FileSystem>
}

interface Started {
  readonly router: ToolRouter.ToolRouter.Service
  readonly scope: Scope.CloseableScope
}

/** A configurable router; until configured it is the router below it. */
export const configurable = (): Configurable => {
  let base: ToolRouter.ToolRouter.Service | undefined
  let scope: Scope.Scope | undefined
  let shared: ToolRouter.ToolRouter.Service | undefined
  const perSession = new Map<string, Started>()
  const router = (): ToolRouter.ToolRouter.Service => shared ?? base!

  /** Starts `servers` in a scope of their own (closed with the command's), or nothing when there are none. */
  const start = ({ folders, recheck, servers }: Pick<McpSettings.Loaded, "servers" | "folders" | "recheck">, cwd: string, options: StartOptions) =>
    Effect.gen(function*() {
      if (Object.keys(servers).length === 0 || base === undefined || scope === undefined) return undefined
      // The SDK is loaded only by a run that starts a server (see scripts/bundle-cli.mjs).
      const { McpTools } = yield* Effect.promise(() => import("../mcp.js"))
      const own = yield* Scope.fork(scope, ExecutionStrategy.sequential)
      // A trusted project's server is started again (after a crash) only while its files are as trusted.
      // One server that does not start leaves the others' tools offered, and says so; every one failing is an error.
      const onServerFailed = (error: McpTools.McpError) =>
        Console.error(`${options.prefix ?? "effect-agent:"} ${error.message} (${error.reason}); its tools are not offered in this session, the other servers' are`)
      // The project's own servers (those `recheck` holds: from its trusted `.mcp.json`, not replaced) get its env; the others only yours.
      const serverEnv = Object.fromEntries(Object.keys(recheck).map((name) => [name, options.env ?? {}]))
      const onToolLeftOut = (note: string) => Console.error(`${options.prefix ?? "effect-agent:"} ${note}; the server's other tools are offered`)
      return yield* McpTools.make({ servers, cwd, folders, env: options.userEnv, serverEnv, mayStart: recheck, onServerFailed, onToolLeftOut }, base).pipe(
        Scope.extend(own),
        Effect.map((tools): Started => ({ router: tools.router, scope: own })),
        Effect.onError((cause) => Scope.close(own, Exit.failCause(cause)))
      )
    })

  const load = (cwd: string, servers: McpConfig.Servers | undefined, serversFolder: string | undefined, options: StartOptions) =>
    Effect.gen(function*() {
      const loaded = yield* McpSettings.load({ cwd, servers, serversFolder })
      yield* Effect.forEach(loaded.notes, (note) => Console.error(`${options.prefix ?? "effect-agent:"} ${note}`), { discard: true })
      return loaded
    })

  const asCliError = <A, R>(effect: Effect.Effect<A, McpSettings.SettingsError | McpTools.McpError, R>) =>
    effect.pipe(Effect.mapError((error) => new CliError({ reason: error._tag === "SettingsError" ? "invalid_file" : "invalid_arguments", message: error.message })))

  /** A session's servers before it exists: bound to it once created, stopped when it is not. */
  const startForSession = (cwd: string, servers: McpConfig.Servers, options: StartOptions = {}): Effect.Effect<PendingServers.PendingServers, CliError, FileSystem.FileSystem> =>
    Effect.gen(function*() {
      // The client's servers start where your own do, not in the repository (see `McpSettings.clientFolder`).
      const folder = yield* McpSettings.clientFolder()
      const started = yield* start(yield* load(cwd, servers, folder, options), cwd, options)
      return {
        bind: (sessionId) =>
          Effect.suspend(() => {
            const previous = perSession.get(sessionId)
            if (started === undefined) perSession.delete(sessionId)
            else perSession.set(sessionId, started)
            return previous === undefined ? Effect.void : Scope.close(previous.scope, Exit.void)
          }),
        discard: started === undefined ? Effect.void : Scope.close(started.scope, Exit.void)
      } satisfies PendingServers.PendingServers
    }).pipe(asCliError)

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
          sources: () => router().sources?.() ?? [],
          forSession: (sessionId) => perSession.get(sessionId)?.router ?? router()
        } satisfies ToolRouter.ToolRouter.Service
      })
    ),
    configure: (cwd, options) =>
      Effect.gen(function*() {
        const given = Option.isSome(options.configFile) ? yield* McpSettings.readFile(options.configFile.value) : undefined
        const folder = Option.isSome(options.configFile) ? NodePath.dirname(NodePath.resolve(options.configFile.value)) : undefined
        const started = yield* start(yield* load(cwd, given?.mcpServers, folder, options), cwd, options)
        if (started !== undefined) shared = started.router
      }).pipe(asCliError),
    useRecorded: (recording, options = {}) =>
      Effect.gen(function*() {
        if (base === undefined) return
        shared = McpCassette.router(recording, base)
        yield* Console.error(`${options.prefix ?? "effect-agent:"} MCP servers answered from the script's recording (${Object.keys(recording).join(", ")}); no server is started.`)
      }),
    releaseSession: (sessionId) =>
      Effect.suspend(() => {
        const own = perSession.get(sessionId)
        perSession.delete(sessionId)
        return own === undefined ? Effect.void : Scope.close(own.scope, Exit.void)
      }),
    hasSession: (sessionId) => perSession.has(sessionId),
    configureSession: (sessionId, cwd, servers, options = {}) => Effect.flatMap(startForSession(cwd, servers, options), (pending) => pending.bind(sessionId)),
    startForSession
  }
}
