/**
 * `effect-agent serve`: the HTTP + SSE API and the web session viewer (CONTRACT.md §7.1, §7.3) on
 * 127.0.0.1 (by default). The model, the store and the permissions come from the same flags and
 * environment as `run`: each session follows `--mode`, `--allow`, `--deny` and then the settings
 * file of its own cwd (read once per cwd while the server runs; a file that cannot be read makes
 * every call of its sessions ask). The commands' environment (`env` of a settings file) is the one of
 * the directory `serve` starts in, which is also the cwd of new sessions that name none.
 *
 * The token is `EFFECT_AGENT_TOKEN`, else a random one for this start; either way it is printed
 * once to stderr with a one-time URL that opens the viewer (it sets the token as a cookie).
 *
 * @since 0.2.0
 */
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { IdGenerator, PermissionEngine, PermissionPolicy, PromptComposer, SessionEngine, WorkspaceTools } from "../index.js"
import { CliError } from "./CliError.js"
import * as Flags from "./Flags.js"
import * as Models from "./Models.js"
import * as Policy from "./Policy.js"
import * as Settings from "./Settings.js"

const mode = Flags.mode("Permissions of every session: default, acceptEdits, readOnly, bypass (default: the mode of ./.effect-agent/settings.json, else default)")

const port = Options.integer("port").pipe(
  Options.withDefault(4477),
  Options.withDescription("The port to listen on (0: any free port)")
)
const host = Options.text("host").pipe(
  Options.withDefault("127.0.0.1"),
  Options.withDescription("The address to listen on (default 127.0.0.1: this machine only)")
)

/**
 * The policy of each session from its cwd's settings file (and the flags), as `run` decides for its
 * one session. Files are read once per cwd; one that cannot be read makes its sessions' calls ask.
 */
const perCwd = (
  serverCwd: string,
  serverFile: Settings.SettingsFile,
  options: (file: Settings.SettingsFile) => PermissionPolicy.Options
) => {
  const known = new Map<string, PermissionPolicy.Options | undefined>([[serverCwd, options(serverFile)]])
  const optionsOf = (cwd: string) =>
    known.has(cwd) ? Effect.succeed(known.get(cwd)) : Settings.load(cwd).pipe(
      Effect.map(options),
      Effect.tapError((error) => Console.error(`effect-agent serve: ${error.message}; calls in sessions of ${cwd} will ask`)),
      Effect.option,
      Effect.map(Option.getOrUndefined),
      Effect.tap((found) => Effect.sync(() => known.set(cwd, found))),
      Effect.provide(NodeContext.layer)
    )
  return Layer.succeed(PermissionEngine.PermissionEngine, {
    decide: (request) =>
      Effect.map(optionsOf(request.cwd), (found) =>
        found === undefined
          ? { decision: "ask" as const, policy: "settings/unreadable", reason: "the settings file of the session's cwd cannot be read" }
          : PermissionPolicy.decide(found, request))
  })
}

const isLoopback = (address: string) => address === "localhost" || address === "::1" || address.startsWith("127.")

/** The `serve` command. */
export const command = Command.make(
  "serve",
  { port, host, mode, ...Flags.rules, ...Models.options, ...Flags.storage },
  ({ allow, deny, host, mode, port, ...options }) =>
    Effect.gen(function*() {
      if (port < 0 || port > 65535) return yield* new CliError({ reason: "invalid_arguments", message: `--port ${port} is not a port (0-65535)` })
      const cwd = process.cwd()
      const flagRules = yield* Settings.parseFlags({ allow, deny })
      const file = yield* Settings.load(cwd).pipe(Effect.provide(NodeContext.layer))
      const note = Settings.describe(file)
      if (note !== undefined) yield* Console.error(note)
      const policy = Policy.configurable()
      yield* policy.configure(Settings.policyOptions(file, { mode: Option.getOrUndefined(mode), rules: flagRules }), file.env)
      const permissions = perCwd(cwd, file, (settings) => Settings.policyOptions(settings, { mode: Option.getOrUndefined(mode), rules: flagRules }))
      const model = yield* Models.layer(options)
      // Loaded only here: the HTTP stack costs start-up time for every other command.
      const { Security, Server, ServerConfig } = yield* Effect.promise(() => import("../server.js"))
      const fromEnv = process.env["EFFECT_AGENT_TOKEN"]
      const token = fromEnv !== undefined && fromEnv !== "" ? fromEnv : Security.randomToken()
      const config = ServerConfig.make({ token, defaultCwd: cwd })
      const engine = SessionEngine.layer().pipe(
        Layer.provide(Flags.storeLayer(options)),
        Layer.provide(model),
        Layer.provide(IdGenerator.layer),
        Layer.provide(WorkspaceTools.layer({ env: policy.env })),
        Layer.provide(permissions),
        Layer.provide(PromptComposer.layer()),
        Layer.provide(NodeContext.layer)
      )
      yield* Effect.gen(function*() {
        const url = yield* Server.url
        const lines = [
          `effect-agent serve: listening on ${url} (sessions in ${options.dataDir})`,
          fromEnv !== undefined && fromEnv !== "" ? "  token: from EFFECT_AGENT_TOKEN" : `  token: ${token}`,
          `  viewer (this URL works once): ${url}/login?code=${config.loginCodes.issue()}`
        ]
        if (!isLoopback(host)) lines.push(`  warning: listening on ${host}: other machines can reach this server; anyone with the token drives the agent`)
        yield* Console.error(lines.join("\n"))
        return yield* Effect.never
      }).pipe(Effect.provide(Server.serve(config, { host, port }).pipe(Layer.provide(engine))))
    }).pipe(Effect.scoped)
).pipe(Command.withDescription("Serve the HTTP + SSE API and the web session viewer (127.0.0.1 by default; a token guards every route)"))
