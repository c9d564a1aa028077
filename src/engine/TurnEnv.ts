/**
 * Everything one turn's driver works with: the ports, the options, the live session, and the
 * turn's own `commit` — the one way a turn's events are written.
 *
 * @since 0.1.0
 * @internal
 */
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type { AgentEvent, TurnEventDraft } from "../domain/AgentEvent.js"
import type { EventStoreFailure } from "../domain/Errors.js"
import type { Hooks } from "../services/AgentHooks.js"
import type { ContextBuilder } from "../services/ContextBuilder.js"
import type { ModelProvider } from "../services/ModelProvider.js"
import type { PermissionEngine } from "../services/PermissionEngine.js"
import type { ToolRouter } from "../services/ToolRouter.js"
import * as LiveSession from "./LiveSession.js"
import * as Retry from "./Retry.js"

/**
 * When and how a session's context is compacted (see `Compaction`). Every field has a default:
 * compaction on overflow is on, the threshold trigger is off.
 */
export interface CompactionOptions {
  /**
   * Compact before a model request whose estimated tokens pass this share of the model's window
   * (0 < threshold < 1, e.g. 0.8). Default: none (only overflow and `compactSession` compact).
   */
  readonly threshold?: number | undefined
  /** Tokens of the most recent context kept verbatim by a compaction (default: a fifth of the model's window). */
  readonly keepRecentTokens?: number | undefined
  /**
   * A request over the window compacts once and is sent again, instead of ending the turn
   * `context_overflow` at once (default true).
   */
  readonly onOverflow?: boolean | undefined
}

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
  /** When a model request that failed before any of its response was stored is sent again (summary requests too). */
  readonly retry: Retry.Policy
  /** When and how the context is compacted. */
  readonly compaction: CompactionOptions
}

/** The defaults of {@link TurnOptions}. */
export const defaultOptions: TurnOptions = {
  maxSteps: 25,
  maxToolCalls: 100,
  toolConcurrency: 4,
  approvalTimeout: undefined,
  retry: Retry.defaultPolicy,
  compaction: {}
}

/** The services a turn runs on. */
export interface TurnServices {
  readonly ports: LiveSession.Ports
  readonly provider: ModelProvider.Service
  readonly tools: ToolRouter.Service | undefined
  readonly permissions: PermissionEngine["Type"]
  readonly context: ContextBuilder.Service
  readonly hooks: Hooks
  readonly options: TurnOptions
}

/** One turn's environment. */
export interface TurnEnv extends TurnServices {
  readonly session: LiveSession.LiveSession
  readonly turnId: string
  /** What a cancel sets before it interrupts the driver; from then on no model output is stored. */
  readonly control: LiveSession.TurnControl
  /**
   * Commits drafts of this turn as one batch (see `LiveSession.commit`): stored, folded, watched,
   * then emitted to the turn's consumer. Returns the events committed.
   */
  readonly commit: (drafts: ReadonlyArray<TurnEventDraft>, guard?: LiveSession.Guard) => Effect.Effect<ReadonlyArray<AgentEvent>, EventStoreFailure>
}

/** A turn's environment; its events go to `emit` once stored. */
export const make = (
  services: TurnServices,
  session: LiveSession.LiveSession,
  turnId: string,
  control: LiveSession.TurnControl,
  emit: LiveSession.Emit
): TurnEnv => ({
  ...services,
  // A session may have tools of its own (MCP servers its client named).
  tools: services.tools?.forSession?.(session.sessionId) ?? services.tools,
  session,
  turnId,
  control,
  commit: (drafts, guard) => LiveSession.commit(services.ports, session, turnId, drafts, emit, guard)
})

/** The environment of a write made with no driver (closing a dangling turn, an answer to a paused one): nobody consumes its events. */
export const detached = (services: TurnServices, session: LiveSession.LiveSession, turnId: string): TurnEnv =>
  make(services, session, turnId, { cancelRequested: false }, () => Effect.void)
