/**
 * The engine the commands that drive turns (`run`, `approve`, `deny`, `chat`) build, and the
 * permission policy they configure once they know the session's working directory.
 *
 * @since 0.3.0
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import {
  IdGenerator,
  type ModelProvider,
  type PermissionEngine,
  PermissionPolicy,
  PromptComposer,
  SessionEngine,
  WorkspaceTools
} from "../index.js"
import * as Flags from "./Flags.js"
import * as Models from "./Models.js"
import * as Policy from "./Policy.js"
import * as Settings from "./Settings.js"

/**
 * The policy of a session: `--mode` or the settings file's mode, the flags' rules, then the settings
 * file's rules, read from the session's working directory; and the file's `env` for commands. Fails
 * with one line on a bad flag or file.
 */
const configurePolicy = (
  policy: Policy.Configurable,
  cwd: string,
  flags: PolicyFlags
) =>
  Effect.gen(function*() {
    const flagRules = yield* Settings.parseFlags(flags)
    const file = yield* Settings.load(cwd)
    const note = Settings.describe(file)
    if (note !== undefined) yield* Console.error(note)
    yield* policy.configure(Settings.policyOptions(file, { mode: Option.getOrUndefined(flags.mode), rules: flagRules }), file.env)
  })

/** The engine the CLI runs: the chosen store, the workspace tools, the rule-based policy, the prompt composer. */
export const engineLayer = <E, R>(
  storage: Flags.Storage,
  model: Layer.Layer<ModelProvider.ModelProvider, E, R>,
  permissions: Layer.Layer<PermissionEngine.PermissionEngine> = PermissionPolicy.layer(),
  tools: WorkspaceTools.Options = {}
) =>
  SessionEngine.layer().pipe(
    Layer.provide(Flags.storeLayer(storage)),
    Layer.provide(model),
    Layer.provide(IdGenerator.layer),
    Layer.provide(WorkspaceTools.layer(tools)),
    Layer.provide(permissions),
    Layer.provide(PromptComposer.layer()),
    Layer.provide(NodeContext.layer)
  )

/** The flags that set a session's policy: `--mode`, `--allow`, `--deny`. */
export interface PolicyFlags {
  readonly mode: Option.Option<PermissionPolicy.Mode>
  readonly allow: ReadonlyArray<string>
  readonly deny: ReadonlyArray<string>
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
    return yield* Effect.gen(function*() {
      const engine = yield* SessionEngine.SessionEngine
      const cwd = sessionId === undefined ? process.cwd() : (yield* engine.sessionState({ sessionId })).cwd
      yield* configurePolicy(policy, cwd, flags)
      return yield* body(engine, cwd)
    }).pipe(Effect.provide(engineLayer(options, model, policy.layer, { env: policy.env, ...Flags.toolOptions(options) })))
  })
