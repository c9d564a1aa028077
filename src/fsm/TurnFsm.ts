/**
 * The turn state machine (CONTRACT.md §3): `idle → running → completed | cancelled | failed`.
 * One enum, one transition function, no I/O, nothing of the log: the engine never changes a turn's
 * state except by committing an event, and the session's state derives the input from that event
 * (`SessionState.inputOf`), so the log and the state machine cannot disagree.
 *
 * @since 0.1.0
 */
import * as Data from "effect/Data"
import * as Either from "effect/Either"

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
