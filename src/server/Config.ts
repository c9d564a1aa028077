/**
 * What the server is configured with: its token, the viewer's login codes and the login form's rate
 * limit, the host names it answers to, the body limit, the working directory new sessions get when
 * the request names none, and the keep-alive interval.
 *
 * @since 0.2.0
 */
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import type * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import type { McpConfig, PendingServers as Pending } from "../index.js"
import * as Security from "./Security.js"

/** The server's configuration. */
export interface Config {
  readonly token: Redacted.Redacted<string>
  readonly loginCodes: Security.LoginCodes
  readonly loginThrottle: Security.LoginThrottle
  /** Host names besides `localhost` and IP addresses that requests may name (see `Access`). */
  readonly allowedHosts: ReadonlyArray<string>
  /** Request bodies larger than this are refused 413. */
  readonly maxBodyBytes: number
  /** The limit of a `POST /sessions/:id/turns` body instead, which may carry images. */
  readonly maxTurnBodyBytes: number
  readonly defaultCwd: string
  /** How often `/live` sends a keep-alive comment while no event comes. */
  readonly keepAlive: Duration.Duration
  /** Starts the MCP servers a `POST /sessions` body names for that session; none: such a body is refused. */
  readonly sessionServers: SessionServers | undefined
  /** Before a session's turn: starts again the servers its creation named, when this process has not (after a restart). */
  readonly restoreServers: RestoreServers | undefined
}

/**
 * Starts the MCP servers of a session about to be created in `cwd` (with the user's and a trusted
 * project's, as the embedder decides); the failure's message is the answer's. Before the session is
 * created: a server that cannot start refuses `POST /sessions` and stores nothing (the log is
 * append-only, and the client, never given the id, could not use nor remove the session).
 */
export type SessionServers = (cwd: string, servers: McpConfig.Servers) => Effect.Effect<PendingServers, { readonly message: string }>

/** A session's MCP servers started before the session was created (`bind` once it is, `discard` if it is not). */
export type PendingServers = Pending.PendingServers

/** Starts again, for a session about to run a turn, the MCP servers its creation named, if this process has not; never fails the turn. */
export type RestoreServers = (session: { readonly sessionId: string; readonly cwd: string }) => Effect.Effect<void>

/** The server's configuration. */
export class ServerConfig extends Context.Tag("effect-agent/server/ServerConfig")<ServerConfig, Config>() {}

/** Options of the server; only the token is required. */
export interface Options {
  /** The token clients must present (e.g. `Security.randomToken()` or `EFFECT_AGENT_TOKEN`). */
  readonly token: string | Redacted.Redacted<string>
  /**
   * Host names (besides `localhost` and IP addresses) requests may name in `Host`: the names a
   * reverse proxy or the machine's DNS name reach the server by. Any other name is refused 403, which
   * stops DNS rebinding. `["*"]` turns the check off (only behind a proxy that checks `Host` itself).
   */
  readonly allowedHosts?: ReadonlyArray<string>
  /** Default 1 MiB. */
  readonly maxBodyBytes?: number
  /** The limit of a turn's body, which may carry images in base64 (default 32 MiB: a few full-size images). */
  readonly maxTurnBodyBytes?: number
  /** Default `process.cwd()`. */
  readonly defaultCwd?: string
  /** Default 15 seconds. */
  readonly keepAlive?: Duration.DurationInput
  /** Starts the MCP servers a session's creation names (default: none; such a request is refused 400). */
  readonly sessionServers?: SessionServers | undefined
  /** Starts them again after a restart, before the session's next turn (default: never). */
  readonly restoreServers?: RestoreServers | undefined
}

/**
 * A server given no token, or an empty one (`token: process.env.MY_TOKEN!` with the variable unset):
 * its layer fails to build with this, rather than start and answer every route 500. Read the token
 * with `Config.redacted("MY_TOKEN")` to fail earlier, naming the variable.
 */
export class ServerTokenMissing extends Data.TaggedError("ServerTokenMissing")<{ readonly message: string }> {}

/** `config` as it is when its token is a non-blank string; else `ServerTokenMissing`. */
export const checked = (config: Config): Effect.Effect<Config, ServerTokenMissing> => {
  const token: unknown = Redacted.isRedacted(config.token) ? Redacted.value(config.token) : config.token
  return typeof token === "string" && token.trim() !== ""
    ? Effect.succeed(config)
    : Effect.fail(new ServerTokenMissing({ message: "The server has no token: give ServerConfig.make a non-empty token (for instance Config.redacted(\"MY_TOKEN\"), read before)." }))
}

/** The configuration from options; its login codes' time is `clock` (default: the live clock). */
export const make = (options: Options, clock?: Clock.Clock): Config => ({
  token: typeof options.token === "string" ? Redacted.make(options.token) : options.token,
  loginCodes: Security.loginCodes(clock === undefined ? {} : { clock }),
  loginThrottle: Security.loginThrottle(),
  allowedHosts: (options.allowedHosts ?? []).map((host) => host.toLowerCase()),
  maxBodyBytes: options.maxBodyBytes ?? 1024 * 1024,
  maxTurnBodyBytes: options.maxTurnBodyBytes ?? Math.max(32 * 1024 * 1024, options.maxBodyBytes ?? 0),
  defaultCwd: options.defaultCwd ?? process.cwd(),
  keepAlive: Duration.decode(options.keepAlive ?? "15 seconds"),
  sessionServers: options.sessionServers,
  restoreServers: options.restoreServers
})

/**
 * The configuration as a layer, its login codes on the `Clock` of the fiber that builds it (a test's
 * `TestClock`); without a token it fails `ServerTokenMissing`.
 */
export const layer = (options: Options) => Layer.effect(ServerConfig, Effect.flatMap(Effect.clock, (clock) => checked(make(options, clock))))
