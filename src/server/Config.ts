/**
 * What the server is configured with: its token, the viewer's login codes and the login form's rate
 * limit, the host names it answers to, the body limit, the working directory new sessions get when
 * the request names none, and the keep-alive interval.
 *
 * @since 0.2.0
 */
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
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
  readonly defaultCwd: string
  /** How often `/live` sends a keep-alive comment while no event comes. */
  readonly keepAlive: Duration.Duration
}

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
  /** Default `process.cwd()`. */
  readonly defaultCwd?: string
  /** Default 15 seconds. */
  readonly keepAlive?: Duration.DurationInput
}

/** The configuration from options. */
export const make = (options: Options): Config => ({
  token: typeof options.token === "string" ? Redacted.make(options.token) : options.token,
  loginCodes: Security.loginCodes(),
  loginThrottle: Security.loginThrottle(),
  allowedHosts: (options.allowedHosts ?? []).map((host) => host.toLowerCase()),
  maxBodyBytes: options.maxBodyBytes ?? 1024 * 1024,
  defaultCwd: options.defaultCwd ?? process.cwd(),
  keepAlive: Duration.decode(options.keepAlive ?? "15 seconds")
})

/** The configuration as a layer. */
export const layer = (options: Options) => Layer.succeed(ServerConfig, make(options))
