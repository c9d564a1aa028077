/**
 * `effect-agent acp`: the agent as an Agent Client Protocol server on stdin/stdout, for editors such
 * as Zed. The model and the store come from the same flags and environment as `run`, and so do the
 * permissions: `--mode`, `--allow`, `--deny`, the user's own settings and the project settings of
 * each session's cwd as far as the user trusts them (read when the session is opened). Commands get
 * the environment of the user's own settings (a project's `env` applies to `run`, `chat` and `serve`
 * in their own directory). The editor can switch a session's mode (`session/set_mode`).
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { IdGenerator, type McpConfig, PermissionPolicy, ProjectSettings, PromptComposer, SessionEngine, TaskTool, TrustStore } from "../index.js"
import { CliError } from "./CliError.js"
import { toolsLayer } from "./Engine.js"
import * as FlagLayers from "./FlagLayers.js"
import * as Flags from "./Flags.js"
import * as McpServers from "./McpServers.js"
import * as Models from "./Models.js"
import * as NodeServices from "./NodeServices.js"
import * as Settings from "./Settings.js"
import type { Input } from "./commands/Acp.js"


/**
 * While serving, stdout is the protocol channel: a client that closes it is a disconnect, handled
 * by the connection (the turn is cancelled and its log closed), not a reason to exit at once as
 * `replay | head` does.
 */
const keepRunningOnBrokenStdout = Effect.acquireRelease(
  Effect.sync(() => {
    const previous = process.stdout.listeners("error") as Array<(error: Error) => void>
    for (const listener of previous) process.stdout.off("error", listener)
    const ignore = () => {}
    process.stdout.on("error", ignore)
    return { previous, ignore }
  }),
  ({ ignore, previous }) =>
    Effect.sync(() => {
      process.stdout.off("error", ignore)
      for (const listener of previous) process.stdout.on("error", listener)
    })
)

/** `acp`. */
export const handler = ({ allow, deny, mode, noInstructions, ...options }: Input) =>
  Effect.gen(function*() {
    const flagRules = yield* Settings.parseFlags({ allow, deny })
    // Commands run with the environment of the user's own settings.
    const configDir = yield* TrustStore.configDir
    const user = yield* ProjectSettings.readUser(configDir).pipe(
      Effect.mapError((error) => new CliError({ reason: "invalid_file", message: error.message })),
      Effect.provide(NodeServices.layer)
    )
    // Nothing is said at start: stdout is the protocol, and an editor starts the agent before anyone
    // asks it anything (Zed at each new thread), filing whatever it writes on stderr in its log. Which
    // model answers goes there once, at the first model request, where it explains the answers.
    const model = Models.announcedAtFirstRequest(yield* Models.chosen(options))
    // Loaded only here: the ACP SDK costs start-up time for every other command.
    const { AcpAgent, AcpPermissions } = yield* Effect.promise(() => import("../acp.js"))
    // Each session's MCP servers: those its client names, the user's mcp.json and a trusted .mcp.json of its cwd.
    const mcp = McpServers.configurable()
    const engineOptions = yield* Flags.limitedBy(Flags.engineOptions(user), options)
    const tools = mcp.layer.pipe(Layer.provide(toolsLayer({ env: user?.env ?? {}, ...Flags.toolOptions(options) }, options)))
    const engine = SessionEngine.layer(engineOptions).pipe(
      Layer.provide(FlagLayers.storeLayer(options)),
      // Beside the engine too: the agent reads the model's window for `usage_update`.
      Layer.provideMerge(model),
      Layer.provide(IdGenerator.layer),
      // Beside the engine too: a paused call asked again after a load is decided again, for its ask's reason.
      Layer.provideMerge(options.subagents ? TaskTool.layer.pipe(Layer.provide(tools)) : tools),
      Layer.provide(PromptComposer.layer(Flags.composerOptions(noInstructions, user, configDir))),
      Layer.provide(NodeServices.layer),
      // One table of session policies, read by the engine's permission decisions and written by
      // session/new, session/load and session/set_mode; decided as `run` decides (settings folder guarded),
      // and the grep tool's walk fenced as `run` fences it.
      Layer.provideMerge(AcpPermissions.layer({ decide: PermissionPolicy.decide, fence: PermissionPolicy.fence }))
    )
    // Each session follows the settings of its own cwd, with the flags first, as `run` does; what a
    // project's file asked for and did not get is said on stderr (stdout is the protocol).
    const sessionPolicy = (cwd: string) =>
      Settings.load(cwd, { mode: Option.getOrUndefined(mode), rules: flagRules, dataDir: options.dataDir }, { prefix: "effect-agent acp:" }).pipe(
        Effect.map((loaded) => loaded.policy),
        Effect.provide(NodeServices.layer)
      )
    yield* keepRunningOnBrokenStdout
    yield* Effect.logDebug("effect-agent acp: serving on stdio")
    const sessionServers = (cwd: string, servers: McpConfig.Servers) =>
      mcp.startForSession(cwd, servers, { env: user?.env ?? {}, userEnv: user?.env ?? {}, prefix: "effect-agent acp:" }).pipe(Effect.provide(NodeServices.layer))
    let inputError: unknown
    yield* AcpAgent.serve(AcpAgent.stdio({ onInputError: (error) => inputError = error }), { sessionPolicy, sessionServers, releaseServers: mcp.releaseSession }).pipe(Effect.provide(engine))
    // The connection ended because of what the client sent, not because it closed: exit 1, saying why.
    if (inputError !== undefined) return yield* new CliError({ reason: "invalid_input", message: `acp: ${AcpAgent.inputErrorMessage(inputError)}` })
  }).pipe(Effect.scoped)
