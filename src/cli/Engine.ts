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
import type * as Policy from "./Policy.js"
import * as Settings from "./Settings.js"

/**
 * The policy of a session: `--mode` or the settings file's mode, the flags' rules, then the settings
 * file's rules, read from the session's working directory; and the file's `env` for commands. Fails
 * with one line on a bad flag or file.
 */
export const configurePolicy = (
  policy: Policy.Configurable,
  cwd: string,
  flags: { readonly mode: Option.Option<PermissionPolicy.Mode>; readonly allow: ReadonlyArray<string>; readonly deny: ReadonlyArray<string> }
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
