/**
 * The turn state machine (CONTRACT.md §3): `idle → running → completed | cancelled | failed`.
 * One enum, one transition function, no I/O. The engine never changes a turn's state except by
 * committing an event, and it derives the transition from that event with {@link inputOf}, so the
 * log and the state machine cannot disagree.
 *
 * @since 0.1.0
 */
import * as Data from "effect/Data"
import * as Either from "effect/Either"
import type { TurnEvent } from "../domain/AgentEvent.js"

/** The states of a turn. */
export const TurnState = {
  Idle: "idle",
  Running: "running",
  Completed: "completed",
  Cancelled: "cancelled",
  Failed: "failed"
} as const
/** The states of a turn. */
export type TurnState = (typeof TurnState)[keyof typeof TurnState]

/** What a running turn is doing; visible to tests and UIs, not a separate machine. */
export const RunningPhase = {
  ContextBuilding: "context_building",
  ModelStreaming: "model_streaming",
  ToolPending: "tool_pending",
  PermissionPending: "permission_pending",
  AwaitingApproval: "awaiting_approval",
  ToolRunning: "tool_running",
  /** Older context is being summarised (`compaction.started` until it ends) before the next request. */
  Compaction: "compaction"
} as const
/** What a running turn is doing; visible to tests and UIs, not a separate machine. */
export type RunningPhase = (typeof RunningPhase)[keyof typeof RunningPhase]

/** A turn's state, with the phase while it runs. */
export type TurnStatus =
  | { readonly state: "idle" }
  | { readonly state: "running"; readonly phase: RunningPhase }
  | { readonly state: "completed" | "cancelled" | "failed" }

/** What can happen to a turn. */
export type TurnInput =
  | { readonly _tag: "Start" }
  | { readonly _tag: "Enter"; readonly phase: RunningPhase }
  | { readonly _tag: "Complete" }
  | { readonly _tag: "Cancel" }
  | { readonly _tag: "Fail" }

/** An input the turn's current state does not accept. */
export class IllegalTransition extends Data.TaggedError("IllegalTransition")<{
  readonly from: TurnState
  readonly input: TurnInput["_tag"]
}> {
  override get message(): string {
    return `Illegal turn transition: ${this.input} from ${this.from}`
  }
}

/** A fresh turn. */
export const initial: TurnStatus = { state: TurnState.Idle }

/** Whether a state has no exits. */
export const isTerminal = (status: TurnStatus): boolean =>
  status.state === TurnState.Completed || status.state === TurnState.Cancelled || status.state === TurnState.Failed

/** The one transition function. Only `idle → running` and `running → running | terminal` are legal. */
export const transition = (status: TurnStatus, input: TurnInput): Either.Either<TurnStatus, IllegalTransition> => {
  switch (status.state) {
    case TurnState.Idle:
      return input._tag === "Start"
        ? Either.right({ state: TurnState.Running, phase: RunningPhase.ContextBuilding })
        : Either.left(new IllegalTransition({ from: status.state, input: input._tag }))
    case TurnState.Running:
      switch (input._tag) {
        case "Enter":
          return Either.right({ state: TurnState.Running, phase: input.phase })
        case "Complete":
          return Either.right({ state: TurnState.Completed })
        case "Cancel":
          return Either.right({ state: TurnState.Cancelled })
        case "Fail":
          return Either.right({ state: TurnState.Failed })
        case "Start":
          return Either.left(new IllegalTransition({ from: status.state, input: input._tag }))
      }
    // falls through: terminal states have no exits
    default:
      return Either.left(new IllegalTransition({ from: status.state, input: input._tag }))
  }
}

/**
 * The input a turn event feeds the machine. Events that do not move the turn (a delta while
 * streaming, a tool completing while others still run) enter the phase they imply.
 */
export const inputOf = (event: TurnEvent): TurnInput => {
  switch (event.type) {
    case "turn.started":
      return { _tag: "Start" }
    case "turn.completed":
      return event.payload.stopReason === "final"
        ? { _tag: "Complete" }
        : event.payload.stopReason === "cancelled"
        ? { _tag: "Cancel" }
        : { _tag: "Fail" }
    case "user.message":
    case "turn.steered":
    case "context.built":
    case "mcp.tools_listed":
      return { _tag: "Enter", phase: RunningPhase.ContextBuilding }
    case "model.delta":
    case "model.retry":
    case "tool.completed":
    case "tool.failed":
      return { _tag: "Enter", phase: RunningPhase.ModelStreaming }
    case "model.tool_call_requested":
      return { _tag: "Enter", phase: RunningPhase.ToolPending }
    case "permission.requested":
      return { _tag: "Enter", phase: RunningPhase.PermissionPending }
    case "permission.resolved":
      return {
        _tag: "Enter",
        phase: event.payload.decision === "ask" ? RunningPhase.AwaitingApproval : RunningPhase.ToolPending
      }
    case "tool.started":
    case "tool.progress":
      return { _tag: "Enter", phase: RunningPhase.ToolRunning }
    case "compaction.started":
      return { _tag: "Enter", phase: RunningPhase.Compaction }
    case "session.compacted":
    case "compaction.failed":
      // The request is built again, from the compacted (or unchanged) context.
      return { _tag: "Enter", phase: RunningPhase.ContextBuilding }
  }
}
