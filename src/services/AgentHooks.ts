/**
 * Hooks into the turn loop, all optional, provided as one Layer. Each hook's failure mode is fixed
 * here, so an extension cannot end a turn by accident.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type { SessionState } from "../domain/SessionState.js"
import type { ModelRequest } from "./ModelProvider.js"
import type { PreparedCall, ToolOutput } from "./ToolRouter.js"

/** A `beforeToolCall` verdict. */
export type ToolCallVerdict = { readonly _tag: "Proceed" } | { readonly _tag: "Block"; readonly reason: string }

/** The hooks (also `AgentHooks.Service`). */
export interface Hooks {
  /**
   * Rewrites each model request before it is sent (trim, inject, redact). A failure keeps the
   * original request and is logged; it never ends the turn.
   */
  readonly transformContext?: (request: ModelRequest) => Effect.Effect<ModelRequest, unknown>
  /** May block a validated call before its permission is decided: it ends `tool.failed {errorCode: "blocked"}`. A failure blocks too. */
  readonly beforeToolCall?: (call: PreparedCall) => Effect.Effect<ToolCallVerdict, unknown>
  /** May rewrite a tool's result before it is stored and sent to the model. A failure keeps the original. */
  readonly afterToolResult?: (call: PreparedCall, output: ToolOutput) => Effect.Effect<ToolOutput, unknown>
  /** After each step with tool calls: `true` ends the turn (`final`) instead of asking the model again. A failure continues. */
  readonly shouldStopAfterStep?: (state: SessionState) => Effect.Effect<boolean, unknown>
}

/** The hooks service; when absent, no hooks run. */
export class AgentHooks extends Context.Tag("effect-agent/AgentHooks")<AgentHooks, AgentHooks.Service>() {}

/** The hooks service. */
export declare namespace AgentHooks {
  /** What the hooks service holds: the hooks. */
  export type Service = Hooks
}
