/**
 * The engine the commands that drive turns (`run`, `approve`, `deny`, `chat`) build, and the
 * permission policy they configure once they know the session's working directory.
 *
 * @since 0.3.0
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import {
  FakeModelProvider,
  IdGenerator,
  InvalidInput,
  ModelProvider,
  PermissionEngine,
  PermissionPolicy,
  PreImages,
  ProjectSettings,
  PromptComposer,
  SessionEngine,
  TaskTool,
  ToolRouter,
  TrustStore,
  WebFetch,
  WorkingDirectory,
  WorkspaceTools
} from "../index.js"
import { CliError } from "./CliError.js"
import * as FlagLayers from "./FlagLayers.js"
import * as Flags from "./Flags.js"
import * as McpServers from "./McpServers.js"
import * as Models from "./Models.js"
import * as NodeServices from "./NodeServices.js"
import * as Policy from "./Policy.js"
import * as Settings from "./Settings.js"

/** The engine's service, for the handlers that load this module lazily (see Lazy.ts). */
export { SessionEngine }

/**
 * The policy of a session: the flags, the user's own settings, then the session's project settings
 * as far as the user trusts them (`ProjectSettings.load`); and their `env` for commands. Returns the
 * user's own `env`, for the MCP servers not the project's. Fails with one line on a bad flag or file.
 */
const configurePolicy = (
  policy: Policy.Configurable,
  cwd: string,
  flags: PolicyFlags,
  dataDir: string
) =>
  Effect.gen(function*() {
    const rules = yield* Settings.parseFlags(flags)
    const loaded = yield* Settings.load(cwd, { mode: Option.getOrUndefined(flags.mode), rules, dataDir })
    yield* policy.configure(loaded.policy, loaded.env)
    return loaded.userEnv
  })

/** The current directory, canonical; one that was removed meanwhile is an `InvalidInput`, not a crash. */
export const currentDirectory = Effect.try({
  try: () => process.cwd(),
  catch: () => new InvalidInput({ field: "cwd", detail: "the current directory no longer exists" })
}).pipe(Effect.flatMap(WorkingDirectory.canonical))

/** The tools of a command that drives turns: the workspace tools and `web_fetch`. */
export const toolsLayer = (workspace: WorkspaceTools.Options, options: { readonly allowPrivateNetwork: boolean }) =>
  WebFetch.layer({ allowPrivate: options.allowPrivateNetwork }).pipe(Layer.provide(WorkspaceTools.layer(workspace)))

/** The tools of a command: the workspace tools, `web_fetch` when the flags are given, the session's MCP servers' when configured. */
const toolsOf = (
  tools: WorkspaceTools.Options,
  mcp: McpServers.Configurable | undefined,
  web: { readonly allowPrivateNetwork: boolean } | undefined,
  subagents: boolean
) => {
  const base = web === undefined ? WorkspaceTools.layer(tools) : toolsLayer(tools, web)
  const all = mcp === undefined ? base : mcp.layer.pipe(Layer.provide(base))
  // The task tool beside all the others: a subagent may be given any of them.
  return subagents ? TaskTool.layer.pipe(Layer.provide(all)) : all
}

/** The engine the CLI runs: the chosen store, the workspace tools, the rule-based policy, the prompt composer. */
export const engineLayer = <E, R>(
  storage: Flags.Storage,
  model: Layer.Layer<ModelProvider.ModelProvider, E, R>,
  permissions: Layer.Layer<PermissionEngine.PermissionEngine> = PermissionPolicy.layer(),
  tools: WorkspaceTools.Options = {},
  mcp?: McpServers.Configurable,
  composer: PromptComposer.Options = {},
  web?: { readonly allowPrivateNetwork: boolean },
  engineOptions: SessionEngine.Options = {},
  subagents = false
) =>
  SessionEngine.layer(engineOptions).pipe(
    // Workspace checkpoints: the files tool calls change are kept in the store's blob area, so a rewind restores them.
    Layer.provide(PreImages.layer().pipe(Layer.provideMerge(FlagLayers.storeLayer(storage)))),
    // Beside the engine too: `run` and `chat` refuse a message the model's window could never hold before a session is made.
    Layer.provideMerge(model),
    Layer.provide(IdGenerator.layer),
    // Beside the engine too: `chat` decides a paused call again, for the reason of its ask (PermissionPolicy.reasonAgain).
    Layer.provideMerge(toolsOf(tools, mcp, web, subagents)),
    Layer.provideMerge(permissions),
    Layer.provide(PromptComposer.layer(composer)),
    Layer.provide(NodeServices.layer)
  )

/**
 * The prompt composer's options for `--no-instructions` and the user's own settings (`"instructions":
 * false`), and the engine's options from those settings (`prices`).
 */
export const composerFor = (noInstructions: boolean) =>
  Effect.gen(function*() {
    const configDir = yield* TrustStore.configDir
    const user = yield* ProjectSettings.readUser(configDir).pipe(
      Effect.mapError((error) => new CliError({ reason: "invalid_file", message: error.message }))
    )
    return { composer: Flags.composerOptions(noInstructions, user, configDir), engine: Flags.engineOptions(user) }
  }).pipe(Effect.provide(NodeServices.layer))

/**
 * The engine of the commands that only read (`sessions`, `replay`, `pending`, `export-script`,
 * `watch`): the store opened read-only, no model called, no tools, no writer lock taken.
 */
export const readingEngineLayer = (storage: Flags.Storage) =>
  readingEngineOnStore.pipe(Layer.provide(FlagLayers.storeLayer(storage, { readOnly: true })), Layer.provide(NodeServices.layer))

/** The engine of {@link readingEngineLayer} on a store the command has opened already (`pending`, after the listing). */
export const readingEngineOnStore = SessionEngine.layer().pipe(
  Layer.provide(FakeModelProvider.layer()),
  Layer.provide(IdGenerator.layer)
)

/**
 * The engine of the commands that write a session without calling a model (`fork`, `rewind`,
 * `sessions rename`): the store opened for writing, the workspace checkpoints (a rewind restores
 * files), no tools.
 */
export const storeOnlyEngineLayer = (storage: Flags.Storage) =>
  SessionEngine.layer().pipe(
    Layer.provide(PreImages.layer().pipe(Layer.provideMerge(FlagLayers.storeLayer(storage)))),
    Layer.provide(FakeModelProvider.layer()),
    Layer.provide(IdGenerator.layer),
    Layer.provide(NodeServices.layer)
  )

/** The flags that set a session's policy and tools: `--mode`, `--allow`, `--deny`, `--mcp-config`. */
export interface PolicyFlags {
  readonly mode: Option.Option<PermissionPolicy.Mode>
  readonly allow: ReadonlyArray<string>
  readonly deny: ReadonlyArray<string>
  readonly mcpConfig?: Option.Option<string> | undefined
}

/**
 * Runs `body` on the engine of a command that drives turns: the model the flags chose, and the
 * policy of the session's working directory (the session's, else the current directory), configured
 * before anything is stored.
 */
export const withDrivingEngine = <A, E, R>(
  options: Flags.Storage & Models.Choice & Flags.Subagents & { readonly network: boolean; readonly noInstructions: boolean; readonly allowPrivateNetwork: boolean },
  flags: PolicyFlags,
  sessionId: string | undefined,
  body: (engine: SessionEngine.SessionEngine.Service, cwd: string, policy: Policy.Questions, model: ModelProvider.Capabilities) => Effect.Effect<A, E, R>
) =>
  Effect.gen(function*() {
    if (sessionId !== undefined) yield* FlagLayers.requireStarted(options, sessionId).pipe(Effect.provide(NodeServices.layer))
    // Which model answers is said once the session's settings and MCP servers are read: an error in them comes first and alone.
    const { layer: model, notice } = yield* Models.chosen(options)
    const recorded = yield* Models.recordedMcp(options)
    const { composer, engine: composed } = yield* composerFor(options.noInstructions)
    const engineOptions = yield* Flags.limitedBy(composed, options)
    const policy = Policy.configurable()
    const mcp = McpServers.configurable()
    return yield* Effect.gen(function*() {
      const engine = yield* SessionEngine.SessionEngine
      // A new session's cwd is the current directory's real path (as every adapter stores it: WorkingDirectory).
      const cwd = sessionId === undefined ? yield* currentDirectory : (yield* engine.sessionState({ sessionId })).cwd
      const userEnv = yield* configurePolicy(policy, cwd, flags, options.dataDir)
      // The session's MCP servers start once its cwd (and so its .mcp.json) is known — unless a
      // cassette recorded them: then its recording answers, and no server starts.
      if (Option.isSome(recorded)) yield* mcp.useRecorded(recorded.value)
      else yield* mcp.configure(cwd, { configFile: flags.mcpConfig ?? Option.none(), env: policy.env, userEnv })
      yield* notice
      const again = { tools: yield* ToolRouter.ToolRouter, permissions: yield* PermissionEngine.PermissionEngine, take: policy.takeAskReason }
      const { capabilities } = yield* ModelProvider.ModelProvider
      return yield* body(engine, cwd, { takeAskReason: policy.takeAskReason, takeAsk: policy.takeAsk, again }, capabilities)
    }).pipe(Effect.provide(engineLayer(options, model, policy.layer, { env: policy.env, ...Flags.toolOptions(options) }, mcp, composer, options, engineOptions, options.subagents === true)))
  })
