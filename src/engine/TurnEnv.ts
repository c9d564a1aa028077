/**
 * Everything one turn's driver works with: the ports, the options, the session's log, and the
 * turn's own `commit`.
 *
 * @since 0.1.0
 * @internal
 */
import type * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type * as Ref from "effect/Ref"
import type { AgentEvent, TurnEventDraft } from "../domain/AgentEvent.js"
import type { EventStoreFailure } from "../domain/Errors.js"
import type { Hooks } from "../services/AgentHooks.js"
import type { ContextBuilder } from "../services/ContextBuilder.js"
import type { ModelProvider } from "../services/ModelProvider.js"
import type { PermissionEngine } from "../services/PermissionEngine.js"
import type { ToolRouter } from "../services/ToolRouter.js"
import * as Retry from "./Retry.js"
import type * as SessionLog from "./SessionLog.js"

/** Limits and timings of turns. */
export interface TurnOptions {
  /** Model requests per turn (default 25). */
  readonly maxSteps: number
  /** Tool calls per turn (default 100). */
  readonly maxToolCalls: number
  /** Tool calls of one response running at once (default 4). */
  readonly toolConcurrency: number
  /** How long a call waits for the user before it is denied (default: no limit). */
  readonly approvalTimeout: Duration.DurationInput | undefined
  /** When a model request that failed before any of its response was stored is sent again. */
  readonly retry: Retry.Policy
}

/** The defaults of {@link TurnOptions}. */
export const defaultOptions: TurnOptions = {
  maxSteps: 25,
  maxToolCalls: 100,
  toolConcurrency: 4,
  approvalTimeout: undefined,
  retry: Retry.defaultPolicy
}

/** The services a turn runs on. */
export interface TurnServices {
  readonly ports: SessionLog.Ports
  readonly provider: ModelProvider.Service
  readonly tools: ToolRouter.Service | undefined
  readonly permissions: PermissionEngine["Type"]
  readonly context: ContextBuilder["Type"]
  readonly hooks: Hooks
  readonly options: TurnOptions
}

/** One turn's environment. */
export interface TurnEnv extends TurnServices {
  readonly log: SessionLog.SessionLog
  readonly turnId: string
  /** Set before the driver is interrupted; from then on no model output is stored. */
  readonly cancelRequested: Ref.Ref<boolean>
  readonly emit: (event: AgentEvent) => Effect.Effect<unknown>
  /** Commits an event of this turn (see `SessionLog.commit`). */
  readonly commit: (draft: TurnEventDraft, guard?: SessionLog.Guard) => Effect.Effect<Option.Option<AgentEvent>, EventStoreFailure>
}
