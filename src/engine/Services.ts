/**
 * What the engine's work runs on, as one bundle: the ports (store, ids, model, tools, permissions,
 * context builder, hooks), the watcher hub, and the limits and timings of turns. Built once by
 * `SessionEngine.make`; every driver, turn and step reads it.
 *
 * @since 0.5.0
 * @internal
 */
import * as Duration from "effect/Duration"
import type { EventStoreFailure } from "../domain/Errors.js"
import type { PriceTable } from "../domain/Pricing.js"
import type { Hooks } from "../services/AgentHooks.js"
import type { BlobStore } from "../services/BlobStore.js"
import type { WorkspaceCheckpoints } from "../services/WorkspaceCheckpoints.js"
import type { ContextBuilder } from "../services/ContextBuilder.js"
import type { EventStore } from "../services/EventStore.js"
import type { IdGenerator } from "../services/IdGenerator.js"
import type { ModelProvider, ToolSpec } from "../services/ModelProvider.js"
import type { PermissionEngine } from "../services/PermissionEngine.js"
import type { PathFence, ToolDefinition, ToolRouter } from "../services/ToolRouter.js"
import type { RememberedPermission } from "../domain/SessionState.js"
import type * as Task from "../domain/Task.js"
import * as Retry from "./Retry.js"
import type * as Subagents from "./Subagents.js"
import type { Watchers } from "./Watchers.js"

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
  /**
   * Tool calls per turn (default 100). A response that asks for more stores the calls up to the
   * first past the limit (closed `max_steps` with the turn); the rest are never stored.
   */
  readonly maxToolCalls: number
  /**
   * What one model response may be (default 4 Mi characters of text, and 512 Ki deltas and tool
   * calls): past either, the response is no longer read and the turn ends `response_too_large`,
   * what was stored so far kept (its calls closed with the turn). Real models stay far below (128k output tokens is about 512 KB); an endpoint a
   * `baseURL` points at is not held to any vendor's limit.
   */
  readonly maxResponse?: { readonly chars?: number | undefined; readonly deltas?: number | undefined } | undefined
  /**
   * How long a model response's later deltas gather before they are committed together (default
   * 2 milliseconds; 0: only what arrives within one turn of the event loop). A response's first
   * batch is committed as it arrives; each later one once this long has passed since the batch
   * before it was taken, 1,024 pieces wait, or the response's stream has ended or failed, whichever
   * comes first. A longer window makes fewer commits (each a lock, a store append, a span, the fold
   * and a hand-over to watchers and the consumer) for a provider that hands over one delta at a
   * time; the deltas a watcher sees come up to this much later, the events are the same.
   */
  readonly commitWindow?: Duration.DurationInput | undefined
  /** Tool calls of one response running at once (default 4). */
  readonly toolConcurrency: number
  /** How long a call waits for the user before it is denied (default: no limit). */
  readonly approvalTimeout: Duration.DurationInput | undefined
  /** When a model request that failed before any of its response was stored is sent again (summary requests too). */
  readonly retry: Retry.Policy
  /** When and how the context is compacted. */
  readonly compaction: CompactionOptions
  /**
   * Prices per model (US dollars per million tokens) over the built-in table (`Pricing.builtin`):
   * what `turn.completed`'s `cost` is computed from. A model in neither has `cost: null`, and so
   * does one whose price here is outside `Pricing.Price`'s bounds (finite, 0 to 1,000,000).
   */
  readonly prices?: PriceTable | undefined
  /** How deep subagents (`task` calls) nest (default 2: a subagent may start subagents, theirs may not). */
  readonly maxSubagentDepth?: number | undefined
  /**
   * How many subagent sessions one top turn's tree may start in all, at any depth (default: `maxToolCalls`,
   * so a model's widest single step is also all its tree gets); a `task` call past it fails `subagents_exceeded`.
   */
  readonly maxSubagents?: number | undefined
  /** The budget of every top turn and the subagents it starts (a turn's own, `runTurn`'s `budget`, wins); default none. */
  readonly budget?: Task.Budget | undefined
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

/** {@link TurnOptions.maxResponse} with its defaults: 4 Mi characters, 512 Ki deltas and calls. */
export const responseLimits = (options: TurnOptions): { readonly chars: number; readonly deltas: number } => ({
  chars: options.maxResponse?.chars ?? 4 * 1024 * 1024,
  deltas: options.maxResponse?.deltas ?? 512 * 1024
})

/**
 * {@link TurnOptions.commitWindow} in milliseconds, with its default (2 ms): from 0 to a Node timer's
 * longest (an infinite window is one that only enough pieces or the stream's end close).
 */
export const commitWindowMs = (options: TurnOptions): number =>
  options.commitWindow === undefined ? 2 : Math.min(Math.max(0, Duration.toMillis(Duration.decode(options.commitWindow))), 2_147_483_647)

/** The engine's services and limits. */
export interface Services {
  readonly store: EventStore.Service
  /** The store's blob area (images); none when the store has none. */
  readonly blobs: BlobStore.Service | undefined
  readonly ids: IdGenerator["Type"]
  /** Who watches sessions' live events (`watchSession`): every commit hands its events to them. */
  readonly watchers: Watchers<EventStoreFailure>
  readonly provider: ModelProvider.Service
  /** The tools; none when no `ToolRouter` is provided. */
  readonly tools: ToolRouter.Service | undefined
  /** Workspace checkpoints (pre-images of the files tool calls change, for rewinds); none when not provided. */
  readonly checkpoints?: WorkspaceCheckpoints.Service | undefined
  readonly permissions: PermissionEngine["Type"]
  readonly context: ContextBuilder.Service
  readonly hooks: Hooks
  readonly options: TurnOptions
  /** The turns' trees and budgets, and the subagents the `task` tool starts (`offersTask`); absent only in engines built by hand. */
  readonly subagents?: Subagents.Runtime | undefined
}

/** The specs made of a list of definitions, and the definitions they were made of (the list's elements then). */
interface Specs {
  readonly specs: ReadonlyArray<ToolSpec>
  readonly of: ReadonlyArray<ToolDefinition>
}

const specsOf = new WeakMap<ReadonlyArray<ToolDefinition>, Specs>()
const noTools: ReadonlyArray<ToolSpec> = []

/** Whether `definitions` still holds the definitions `made` was made of, the same objects in the same order. */
const holds = (made: Specs, definitions: ReadonlyArray<ToolDefinition>): boolean => {
  if (made.of.length !== definitions.length) return false
  for (let i = 0; i < definitions.length; i++) if (made.of[i] !== definitions[i]) return false
  return true
}

/**
 * The tools as a model request describes them. Made once per list of definitions: every step's
 * request reuses it, and with it the token estimate `ContextBuilder` and the hash `PromptCache` keep
 * per list. A router that changes its list in place (a definition pushed, removed or replaced) gets
 * new specs at the next request: the list's elements are compared by identity, a few pointers a step.
 * A definition object itself is not read again: change a tool by replacing its definition.
 */
/**
 * What the session's read rules fence, for what a context builder reads on its own (project
 * instructions, `ContextInput.leaveOut`): the permission engine's fence of a `read_file` walk of the
 * whole cwd, so a deny or ask rule for `read_file` leaves the files it names out of the prompt as
 * it would answer a read of them. Undefined when the engine has no fence or no rule fences anything.
 */
export const readFence = (
  services: Services,
  state: { readonly sessionId: string; readonly cwd: string; readonly remembered: ReadonlyArray<RememberedPermission> }
): PathFence | undefined =>
  services.permissions.fence?.({
    sessionId: state.sessionId,
    cwd: state.cwd,
    remembered: state.remembered,
    call: {
      toolCallId: "context:instructions",
      tool: "read_file",
      args: { path: "." },
      input: { path: "." },
      risk: "read",
      sequential: false,
      scope: "read_file",
      paths: [{ requested: ".", resolved: state.cwd, insideCwd: true, relative: ".", access: "read", walked: true, leavesOut: true }]
    }
  })

export const toolSpecs = (services: Services): ReadonlyArray<ToolSpec> => {
  const definitions = services.tools?.definitions
  if (definitions === undefined) return noTools
  let made = specsOf.get(definitions)
  if (made === undefined || !holds(made, definitions)) {
    made = { specs: definitions.map(({ description, inputSchema, name }) => ({ name, description, inputSchema })), of: [...definitions] }
    specsOf.set(definitions, made)
  }
  return made.specs
}
