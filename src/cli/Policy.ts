/**
 * The CLI's permission engine: the rule-based policy, configured once the CLI knows the session —
 * and so the working directory whose settings file applies — which is after the engine is built.
 * (Writes into `.effect-agent/` and `.git/`, where a model could change what later runs do, are
 * guarded by the policy itself: they ask in every mode that asks, and "always" never covers them.)
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { PermissionEngine, PermissionPolicy, type WorkspaceTools } from "../index.js"

/** What commands' environment the settings add: names passed on, and fixed values. */
export type Env = NonNullable<WorkspaceTools.Options["env"]>

/** A policy (and the tools' environment) whose options are set after the engine that uses them is built. */
export interface Configurable {
  readonly layer: Layer.Layer<PermissionEngine.PermissionEngine>
  /** A live view for `WorkspaceTools.layer({ env })`: the tools read it for each command. */
  readonly env: Env
  readonly configure: (options: PermissionPolicy.Options, env?: Env) => Effect.Effect<void>
  /**
   * Why the policy asked about a call, when a rule of the user's did not cover it (see
   * `PermissionDecision.reason`), taken once by the question that asks it. The events record only
   * the ask, so the reason is carried here, from the decision to this process' own question.
   */
  readonly takeAskReason: (sessionId: string, toolCallId: string) => AskReason | undefined
  /** The ask about a call, with its reason if any, taken once: a subagent's question's (`PermissionPolicy.subagentAskReason`). */
  readonly takeAsk: PermissionPolicy.AskReasons["takeAsk"]
}

/**
 * What a command's questions read of the policy: the reasons of its asks; and, to ask a paused
 * turn's calls again after a restart, the engine's tools and policy, which decide them again for
 * their reasons (`PermissionPolicy.reasonAgain`).
 */
export interface Questions extends Pick<Configurable, "takeAskReason" | "takeAsk"> {
  readonly again?: PermissionPolicy.DecideAgain | undefined
}

/** What a question adds about a call the user's rule did not cover. */
export type AskReason = PermissionPolicy.AskReason

/** A configurable policy; until configured it decides as the default mode with no rules. */
export const configurable = (): Configurable => {
  let options: PermissionPolicy.Options = { mode: "default" }
  let env: Env = {}
  const reasons = PermissionPolicy.askReasons()
  const decide = (request: PermissionEngine.PermissionRequest) => reasons.note(request, PermissionPolicy.decide(options, request))
  return {
    layer: Layer.succeed(PermissionEngine.PermissionEngine, {
      decide: (request) => Effect.sync(() => decide(request)),
      // The grep tool's walk leaves out what the rules fence, rather than asking (`PermissionPolicy.fence`).
      fence: (request) => PermissionPolicy.fence(options, request)
    }),
    takeAskReason: reasons.take,
    takeAsk: reasons.takeAsk,
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
