/**
 * The MCP tools of the CLI's adapters. The servers of a session are known only once its working
 * directory is (its `.mcp.json` may apply, if trusted), which is after the engine is built; ACP and
 * HTTP clients may name servers for one session. So the engine's tool router starts as the workspace
 * tools and gains servers' tools: for every session (`configure`, the CLI's one session) or for one
 * (`configureSession`, ACP `session/new` and the HTTP body). For sessions, the workspace files'
 * servers start once per cwd and its sessions share them; a session starts only the servers its
 * client named. A session's own stop when it is released (ACP `session/close`), when its servers are
 * configured again, or past `maxSessionsWithServers` (serve); a cwd's when its last session is
 * released or its files changed and no session uses them; all when the command ends. The MCP SDK is
 * loaded only when there is a server to start.
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
  /** Stops a session's own servers (ACP `session/close`), and its cwd's shared ones when it was their last session. */
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

/**
 * The servers of the workspace files (your `mcp.json`, a trusted `.mcp.json`) for one cwd, shared by
 * its sessions. `key` is what they were started from: files that changed since (a trust given or
 * revoked, an edited `mcp.json`, another `env`) start a new set for the sessions made after, and the
 * old one stops once no session uses it.
 */
interface CwdServers {
  readonly cwd: string
  readonly key: string
  readonly started: Started | undefined
  /** The servers' names: a session naming one of them has the files' and its own started for it alone. */
  readonly names: ReadonlyArray<string>
  /** The sessions bound to them, and how many are being created with them (not bound yet). */
  readonly users: Set<string>
  pending: number
}

/** A session's servers: its cwd's shared ones, and those only it named (on top of them, or alone when one replaces a file's server). */
interface Bound {
  readonly shared: CwdServers | undefined
  readonly own: Started | undefined
  readonly router: ToolRouter.ToolRouter.Service | undefined
}

/** What `configurable` is told. */
export interface ConfigurableOptions {
  /**
   * The most sessions whose own servers (those their client named) run at once; past it the least
   * recently used session's stop, to start again before its next turn (`serve`, whose sessions have
   * no close: `ServerRestores`). None: each session's run until it is released (ACP `session/close`).
   */
  readonly maxSessionsWithServers?: number | undefined
}

/** A configurable router; until configured it is the router below it. */
export const configurable = (configurableOptions: ConfigurableOptions = {}): Configurable => {
  let base: ToolRouter.ToolRouter.Service | undefined
  let scope: Scope.Scope | undefined
  let shared: ToolRouter.ToolRouter.Service | undefined
  /** Sessions bound in this process, least recently used first (a touch moves one to the end). */
  const perSession = new Map<string, Bound>()
  /** The current shared servers of each cwd. */
  const perCwd = new Map<string, CwdServers>()
  const cwdLock = Effect.unsafeMakeSemaphore(1)
  const router = (): ToolRouter.ToolRouter.Service => shared ?? base!

  /** Starts `servers` in a scope of their own (closed with the command's), or nothing when there are none. */
  const start = ({ folders, recheck, servers }: Pick<McpSettings.Loaded, "servers" | "folders" | "recheck">, cwd: string, options: StartOptions, below?: ToolRouter.ToolRouter.Service) =>
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
      const projectServers = Object.keys(recheck)
      return yield* McpTools.make({ servers, cwd, folders, env: options.userEnv, serverEnv, mayStart: recheck, projectServers, onServerFailed, onToolLeftOut }, below ?? base).pipe(
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

  const stop = (started: Started | undefined) => started === undefined ? Effect.void : Scope.close(started.scope, Exit.void)

  /** Stops a cwd's shared servers once no session uses them: the next session of that cwd starts them again. */
  const letGo = (set: CwdServers | undefined) =>
    Effect.suspend(() => {
      if (set === undefined || set.users.size > 0 || set.pending > 0) return Effect.void
      if (perCwd.get(set.cwd) === set) perCwd.delete(set.cwd)
      return stop(set.started)
    })

  /** Unbinds a session: stops its own servers, and its cwd's when it was their last session. */
  const unbind = (sessionId: string) =>
    Effect.suspend(() => {
      const bound = perSession.get(sessionId)
      if (bound === undefined) return Effect.void
      perSession.delete(sessionId)
      bound.shared?.users.delete(sessionId)
      return Effect.zipRight(stop(bound.own), letGo(bound.shared))
    })

  /** The cwd's shared servers as its files say now: the running set when they say the same, else a new one. */
  const sharedFor = (cwd: string, options: StartOptions) =>
    cwdLock.withPermits(1)(Effect.gen(function*() {
      const loaded = yield* load(cwd, undefined, undefined, options)
      const key = JSON.stringify([loaded.servers, loaded.folders, Object.keys(loaded.recheck), loaded.project?.sha256, options.env, options.userEnv])
      const running = perCwd.get(cwd)
      if (running !== undefined && running.key === key) {
        running.pending++
        return running
      }
      const started = yield* start(loaded, cwd, options)
      const set: CwdServers = { cwd, key, started, names: Object.keys(loaded.servers), users: new Set(), pending: 0 }
      perCwd.set(cwd, set)
      if (running !== undefined) yield* letGo(running)
      set.pending++
      return set
    }))

  /** Past `maxSessionsWithServers`, the least recently used sessions' own servers stop (started again before their next turn). */
  const evict = Effect.suspend(() => {
    const most = configurableOptions.maxSessionsWithServers
    if (most === undefined) return Effect.void
    const withOwn = [...perSession].filter(([, bound]) => bound.own !== undefined)
    return Effect.forEach(withOwn.slice(0, Math.max(0, withOwn.length - most)), ([sessionId]) => unbind(sessionId), { discard: true })
  })

  /**
   * A session's servers before it exists: the cwd's shared ones (started once per cwd), and only the
   * servers it names started for it; bound to it once created, stopped when it is not.
   */
  const startForSession = (cwd: string, servers: McpConfig.Servers, options: StartOptions = {}): Effect.Effect<PendingServers.PendingServers, CliError, FileSystem.FileSystem> =>
    Effect.gen(function*() {
      // The client's servers start where your own do, not in the repository (see `McpSettings.clientFolder`).
      const folder = yield* McpSettings.clientFolder()
      const set = yield* sharedFor(cwd, options)
      const named = Object.keys(servers)
      // A named server replacing a file's of the same name: this session's servers are all its own (the files' and its list, as one).
      const replaces = named.some((name) => set.names.includes(name))
      if (replaces) {
        set.pending--
        yield* letGo(set)
      }
      const own = named.length === 0
        ? undefined
        : replaces
        ? yield* start(yield* load(cwd, servers, folder, options), cwd, options)
        : yield* start({ servers, folders: Object.fromEntries(named.map((name) => [name, NodePath.resolve(folder)])), recheck: {} }, cwd, options, set.started?.router).pipe(
          Effect.onError(() => Effect.suspend(() => {
            set.pending--
            return letGo(set)
          }))
        )
      const bound: Bound = replaces ? { shared: undefined, own, router: own?.router } : { shared: set, own, router: own?.router ?? set.started?.router }
      let settled = false
      /** Once: the session is created (bound) or not (discarded). */
      const settle = () => {
        if (settled) return false
        settled = true
        if (bound.shared !== undefined) bound.shared.pending--
        return true
      }
      return {
        bind: (sessionId) =>
          Effect.suspend(() => {
            if (!settle()) return Effect.void
            const previous = perSession.get(sessionId)
            perSession.delete(sessionId)
            if (previous !== undefined && previous.shared !== bound.shared) previous.shared?.users.delete(sessionId)
            bound.shared?.users.add(sessionId)
            perSession.set(sessionId, bound)
            const released = previous === undefined ? Effect.void : Effect.zipRight(stop(previous.own), letGo(previous.shared))
            return Effect.zipRight(released, evict)
          }),
        discard: Effect.suspend(() => settle() ? Effect.zipRight(stop(own), letGo(bound.shared)) : Effect.void)
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
    releaseSession: unbind,
    hasSession: (sessionId) => {
      const bound = perSession.get(sessionId)
      if (bound === undefined) return false
      // Asked before each turn: the session is the most recently used now (see `maxSessionsWithServers`).
      perSession.delete(sessionId)
      perSession.set(sessionId, bound)
      return true
    },
    configureSession: (sessionId, cwd, servers, options = {}) => Effect.flatMap(startForSession(cwd, servers, options), (pending) => pending.bind(sessionId)),
    startForSession
  }
}
