/**
 * The CLI's permission engine: the rule-based policy, configured once the CLI knows the session —
 * and so the working directory whose settings file applies — which is after the engine is built.
 *
 * It adds one guard of its own: a write into `<cwd>/.effect-agent/` (the settings file, and by
 * default the session logs) is never allowed by a mode or by an "always", only by a rule that
 * names it, or in `bypass`. Otherwise a model in `acceptEdits` could write itself a settings file
 * with `"mode": "bypass"` for the next run.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as path from "node:path"
import { PermissionEngine, PermissionPolicy, type WorkspaceTools } from "../index.js"

/** What commands' environment the settings add: names passed on, and fixed values. */
export type Env = NonNullable<WorkspaceTools.Options["env"]>

/** A policy (and the tools' environment) whose options are set after the engine that uses them is built. */
export interface Configurable {
  readonly layer: Layer.Layer<PermissionEngine.PermissionEngine>
  /** A live view for `WorkspaceTools.layer({ env })`: the tools read it for each command. */
  readonly env: Env
  readonly configure: (options: PermissionPolicy.Options, env?: Env) => Effect.Effect<void>
}

const protectedFolder = ".effect-agent"

const writesProtected = (request: PermissionEngine.PermissionRequest) => {
  const folder = path.join(request.cwd, protectedFolder)
  return request.call.paths.some((p) => p.access === "write" && (p.resolved === folder || p.resolved.startsWith(folder + path.sep)))
}

/** The decision of the CLI's policy: the rule-based policy's, with the settings folder guarded. */
export const decide = (options: PermissionPolicy.Options, request: PermissionEngine.PermissionRequest): PermissionEngine.PermissionDecision => {
  const decision = PermissionPolicy.decide(options, request)
  if (decision.decision !== "allow" || options.mode === "bypass") return decision
  if ((options.rules ?? []).some((rule) => rule.name === decision.policy)) return decision
  return writesProtected(request) ? { decision: "ask", policy: "protected/settings-folder" } : decision
}

/** A configurable policy; until configured it decides as the default mode with no rules. */
export const configurable = (): Configurable => {
  let options: PermissionPolicy.Options = { mode: "default" }
  let env: Env = {}
  return {
    layer: Layer.succeed(PermissionEngine.PermissionEngine, { decide: (request) => Effect.sync(() => decide(options, request)) }),
    // Getters: the tools spread this object when a command starts, so they see what `configure` set.
    env: {
      get allow() {
        return env.allow
      },
      get set() {
        return env.set
      }
    },
    configure: (next, nextEnv = {}) =>
      Effect.sync(() => {
        options = next
        env = nextEnv
      })
  }
}
