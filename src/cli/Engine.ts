/**
 * The engine the commands that drive turns (`run`, `approve`, `deny`, `chat`) build, and the
 * permission policy they configure once they know the session's working directory.
 *
 * @since 0.3.0
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import {
  FakeModelProvider,
  IdGenerator,
  InvalidInput,
  type ModelProvider,
  type PermissionEngine,
  PermissionPolicy,
  PromptComposer,
  SessionEngine,
  WorkingDirectory,
  WorkspaceTools
} from "../index.js"
import * as Flags from "./Flags.js"
import * as McpServers from "./McpServers.js"
import * as Models from "./Models.js"
import * as Policy from "./Policy.js"
import * as Settings from "./Settings.js"

/**
 * The policy of a session: the flags, the user's own settings, then the session's project settings
 * as far as the user trusts them (`ProjectSettings.load`); and their `env` for commands. Fails with
 * one line on a bad flag or file.
 */
const configurePolicy = (
  policy: Policy.Configurable,
  cwd: string,
  flags: PolicyFlags
) =>
  Effect.gen(function*() {
    const rules = yield* Settings.parseFlags(flags)
    const loaded = yield* Settings.load(cwd, { mode: Option.getOrUndefined(flags.mode), rules })
    yield* policy.configure(loaded.policy, loaded.env)
  })

/** The current directory, canonical; one that was removed meanwhile is an `InvalidInput`, not a crash. */
const currentDirectory = Effect.try({
  try: () => process.cwd(),
  catch: () => new InvalidInput({ field: "cwd", detail: "the current directory no longer exists" })
}).pipe(Effect.flatMap(WorkingDirectory.canonical))

/** The engine the CLI runs: the chosen store, the workspace tools, the rule-based policy, the prompt composer. */
export const engineLayer = <E, R>(
  storage: Flags.Storage,
  model: Layer.Layer<ModelProvider.ModelProvider, E, R>,
  permissions: Layer.Layer<PermissionEngine.PermissionEngine> = PermissionPolicy.layer(),
  tools: WorkspaceTools.Options = {},
  mcp?: McpServers.Configurable
) =>
  SessionEngine.layer().pipe(
    Layer.provide(Flags.storeLayer(storage)),
    Layer.provide(model),
    Layer.provide(IdGenerator.layer),
    Layer.provide(mcp === undefined ? WorkspaceTools.layer(tools) : mcp.layer.pipe(Layer.provide(WorkspaceTools.layer(tools)))),
    Layer.provide(permissions),
    Layer.provide(PromptComposer.layer()),
    Layer.provide(NodeContext.layer)
  )

/**
 * The engine of the commands that only read (`sessions`, `replay`, `pending`, `export-script`,
 * `watch`): the store opened read-only, no model called, no tools, no writer lock taken.
 */
export const readingEngineLayer = (storage: Flags.Storage) =>
  SessionEngine.layer().pipe(
    Layer.provide(Flags.storeLayer(storage, { readOnly: true })),
    Layer.provide(FakeModelProvider.layer()),
    Layer.provide(IdGenerator.layer),
    Layer.provide(NodeContext.layer)
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
  options: Flags.Storage & Models.Choice & { readonly network: boolean },
  flags: PolicyFlags,
  sessionId: string | undefined,
  body: (engine: SessionEngine.SessionEngine.Service, cwd: string) => Effect.Effect<A, E, R>
) =>
  Effect.gen(function*() {
    const model = yield* Models.layer(options)
    const policy = Policy.configurable()
    const mcp = McpServers.configurable()
    return yield* Effect.gen(function*() {
      const engine = yield* SessionEngine.SessionEngine
      // A new session's cwd is the current directory's real path (as every adapter stores it: WorkingDirectory).
      const cwd = sessionId === undefined ? yield* currentDirectory : (yield* engine.sessionState({ sessionId })).cwd
      yield* configurePolicy(policy, cwd, flags)
      // The session's MCP servers start once its cwd (and so its .mcp.json) is known.
      yield* mcp.configure(cwd, { configFile: flags.mcpConfig ?? Option.none(), env: policy.env })
      return yield* body(engine, cwd)
    }).pipe(Effect.provide(engineLayer(options, model, policy.layer, { env: policy.env, ...Flags.toolOptions(options) }, mcp)))
  })
