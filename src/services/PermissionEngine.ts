/**
 * The permission engine port: decides allow, ask or deny for a prepared tool call. Implementation:
 * the rule-based policy.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type { Decision } from "../domain/AgentEvent.js"
import type { RememberedPermission } from "../domain/SessionState.js"
import type { PathFence, PreparedCall } from "./ToolRouter.js"

/** What the engine asks about. */
export interface PermissionRequest {
  readonly sessionId: string
  readonly cwd: string
  readonly call: PreparedCall
  /** The user's "always" decisions so far in this session. */
  readonly remembered: ReadonlyArray<RememberedPermission>
  /**
   * For a subagent's call: the session at the top of its tree (its parent, or its parent's parent…),
   * whose configuration the subagent's session shares: a subagent's session is never configured
   * itself, so an engine that keeps a policy per session (ACP's session modes) or per cwd (a
   * server's settings) decides the call with the top session's. Absent for a session's own calls.
   */
  readonly topSession?: { readonly sessionId: string; readonly cwd: string } | undefined
  /**
   * Whether the engine that runs the call leaves out of a tool's own walk (`PathAccess.leavesOut`)
   * what this engine's `fence` answers: set only when the engine asked has a `fence`. A decision may
   * count on the fence only then; without it (an engine wrapping the policy with `decide` alone), a
   * walk that may reach a rule's paths is decided as any other walk.
   */
  readonly fenced?: boolean | undefined
}

/** A decision and the name of the rule that made it (recorded as `policy` in the event). */
export interface PermissionDecision {
  readonly decision: Decision
  readonly policy: string
  /**
   * Why, in words the model can act on; sent with a denial. On an ask, what the user's own rule did
   * not cover, for the question (never stored: the events keep their shape).
   */
  readonly reason?: string
  /** On an ask: a command pattern that would allow this call (the command line itself, checked against the policy). */
  readonly allowCommand?: string
}

/** The permission engine port. */
export class PermissionEngine extends Context.Tag("effect-agent/PermissionEngine")<PermissionEngine, PermissionEngine.Service>() {}

/** The permission engine port. */
export declare namespace PermissionEngine {
  /** What a permission engine does. */
  export interface Service {
    /** Decides one validated call: allow, ask the user, or deny. */
    readonly decide: (request: PermissionRequest) => Effect.Effect<PermissionDecision>
    /**
     * The paths a tool's own walk of the call must leave out (its `PathAccess.leavesOut` walks),
     * asked for when an allowed call runs. An engine that has it decides such a walk without asking
     * about the rules' paths below it; one without it leaves the walk whole (it asked, if it cared).
     */
    readonly fence?: (request: PermissionRequest) => PathFence | undefined
  }
}

/**
 * The engine's permission engine when none is provided: every call asks the user. Safe, if chatty;
 * provide `PermissionPolicy.layer` to decide by rules and modes instead.
 */
export const askAlways: PermissionEngine.Service = {
  decide: () => Effect.succeed({ decision: "ask", policy: "no-permission-engine" })
}
