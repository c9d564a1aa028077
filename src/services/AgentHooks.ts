/**
 * Hooks into the turn loop, all optional, provided as one Layer. Each hook's failure mode is fixed
 * here, so an extension cannot end a turn by accident: a hook that throws (rather than failing its
 * Effect) or answers something of the wrong shape is taken as a failure (see `wellFormed`).
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
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

/**
 * What the engine takes a hook's answer for: anything else is the hook's failure, with its
 * documented fallback — `Proceed` only when it is exactly that (a misspelt `{_tag: "block"}` blocks),
 * a result whose `result` is a string, a request whose `messages` and `tools` are arrays, a boolean.
 *
 * @internal
 */
export const wellFormed = {
  verdict: (v: unknown): v is ToolCallVerdict =>
    isObject(v) && (v._tag === "Proceed" || (v._tag === "Block" && typeof v.reason === "string")),
  output: (o: unknown): o is ToolOutput =>
    isObject(o) && typeof o.result === "string" && (o.exitCode === undefined || typeof o.exitCode === "number") &&
    (o.images === undefined || Array.isArray(o.images)),
  request: (r: unknown): r is ModelRequest =>
    isObject(r) && typeof r.system === "string" && Array.isArray(r.messages) && Array.isArray(r.tools),
  stop: (b: unknown): b is boolean => typeof b === "boolean"
}

/**
 * A tool's result through `afterToolResult`, wherever the engine stores one (a live call, a `task`
 * call resumed or settled after a restart): a hook that fails, throws or answers no `ToolOutput`
 * keeps the original, logged.
 *
 * @internal
 */
export const afterResult = (hooks: Hooks, call: PreparedCall, output: ToolOutput): Effect.Effect<ToolOutput> => {
  const hook = hooks.afterToolResult
  return hook === undefined
    ? Effect.succeed(output)
    : Effect.suspend(() => hook(call, output)).pipe(
      Effect.filterOrDieMessage(wellFormed.output, "afterToolResult returned no ToolOutput"),
      Effect.catchAllCause((cause) => Effect.logWarning("afterToolResult failed; the original result is kept", cause).pipe(Effect.as(output)))
    )
}

/**
 * The call a `task` call's result is given to `afterToolResult` with when it ends in another process
 * than the one that started it: the call as stored (its arguments as the model sent them).
 *
 * @internal
 */
export const storedCall = (call: { readonly toolCallId: string; readonly tool: string; readonly args: unknown; readonly risk?: PreparedCall["risk"] | undefined }): PreparedCall => ({
  toolCallId: call.toolCallId,
  tool: call.tool,
  args: call.args as PreparedCall["args"],
  input: call.args,
  risk: call.risk ?? "write",
  sequential: false,
  paths: [],
  scope: call.tool
})

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null

/** The hooks service; when absent, no hooks run. */
export class AgentHooks extends Context.Tag("effect-agent/AgentHooks")<AgentHooks, AgentHooks.Service>() {}

/** The hooks service. */
export declare namespace AgentHooks {
  /** What the hooks service holds: the hooks. */
  export type Service = Hooks
}
