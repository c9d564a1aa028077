/**
 * The one place the engine builds the payloads of turn events. Each builder is total: whatever its
 * inputs (a jittered wait of 1166.2 ms, a tool's output holding NUL bytes or terminal escapes, a
 * provider's arguments that are not JSON), it returns a draft the `AgentEvent` schema accepts, so
 * no store can refuse an event the engine made and no turn ends `internal_error` because of one.
 * A property test (test/engine/eventDraft.test.ts) runs every builder on generated inputs and
 * decodes each result with the schema.
 *
 * @since 0.1.0
 * @internal
 */
import * as Either from "effect/Either"
import type * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as AgentEvent from "../domain/AgentEvent.js"
import type { ImageRef } from "../domain/Image.js"
import * as Json from "../domain/Json.js"
import type * as Task from "../domain/Task.js"

type Draft<T extends AgentEvent.TurnEvent["type"]> = {
  readonly type: T
  readonly payload: AgentEvent.PayloadOf<T>
}

/**
 * Tool output made safe to store and to show: C0 control characters other than tab, newline and
 * carriage return, DEL and the C1 controls become visible escapes (`\x00`, `\x1b`, `\x9b`), so a
 * NUL byte or an escape sequence in a command's output can neither truncate a reader of the log nor
 * drive the user's terminal. Everything else is kept as it is.
 */
export const escapeControls = (text: string): string =>
  // eslint-disable-next-line no-control-regex
  text.replace(/[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`)

/** A count the schema accepts: a safe, non-negative integer. */
const count = (n: number): number => (Number.isFinite(n) ? Math.min(Number.MAX_SAFE_INTEGER, Math.max(0, Math.round(n))) : 0)

/** A value the `Json` schema accepts: JSON as it is, anything else through a JSON round trip. */
export const toJson = (value: unknown): Json.Json => {
  if (Json.isJson(value)) return value
  try {
    const text = JSON.stringify(value)
    return text === undefined ? null : (JSON.parse(text) as Json.Json)
  } catch {
    return null
  }
}

/**
 * `turn.started`: the preview is the first characters of the user's message; `queueId` when it runs a
 * follow-up; `budget`, its finite bounds, when the turn was given one (none, or none finite: no field).
 */
export const turnStarted = (userMessage: string, queueId?: string, budget?: Task.Budget): Draft<"turn.started"> => {
  const bounds = budget === undefined ? [] : budgetFields.filter((field) => Number.isFinite(budget[field])).map((field) => [field, budget[field]!] as const)
  return {
    type: "turn.started",
    payload: {
      promptPreview: AgentEvent.promptPreview(userMessage),
      ...(queueId === undefined ? {} : { queueId }),
      ...(bounds.length === 0 ? {} : { budget: Object.fromEntries(bounds) })
    }
  }
}

const budgetFields = ["maxTokens", "maxCost", "maxSteps"] as const

/** `turn.steered`: a message the user sent into the running turn, with its idempotency key if it came with one. */
export const turnSteered = (content: string, idempotencyKey?: string): Draft<"turn.steered"> => ({
  type: "turn.steered",
  payload: idempotencyKey === undefined ? { content } : { content, idempotencyKey }
})

/** `followup.queued` (session-level), with its idempotency key if it came with one. */
export const followUpQueued = (queueId: string, content: string, idempotencyKey?: string): AgentEvent.SessionEventDraft => ({
  type: "followup.queued",
  payload: idempotencyKey === undefined ? { queueId, content } : { queueId, content, idempotencyKey }
})

/** `followup.dropped` (session-level). */
export const followUpDropped = (queueIds: ReadonlyArray<string>): AgentEvent.SessionEventDraft => ({
  type: "followup.dropped",
  payload: { queueIds: [...queueIds] }
})

/** `session.titled` (session-level): the title as `SessionTitle.normalize` made it. */
export const sessionTitled = (title: string): AgentEvent.SessionEventDraft => ({
  type: "session.titled",
  payload: { title }
})

/** `compaction.started`: token counts whole and non-negative. */
export const compactionStarted = (compactionId: string, reason: AgentEvent.CompactionReason, tokensBefore: number): Draft<"compaction.started"> => ({
  type: "compaction.started",
  payload: { compactionId, reason, tokensBefore: count(tokensBefore) }
})

/** `session.compacted`: token counts whole and non-negative, the cut a positive sequence. */
export const sessionCompacted = (payload: AgentEvent.PayloadOf<"session.compacted">): Draft<"session.compacted"> => ({
  type: "session.compacted",
  payload: {
    compactionId: payload.compactionId,
    reason: payload.reason,
    summary: payload.summary,
    firstKeptSequence: Math.max(1, count(payload.firstKeptSequence)),
    tokensBefore: count(payload.tokensBefore),
    tokensAfter: count(payload.tokensAfter),
    ...(payload.usage === undefined ? {} : { usage: usageOf(payload.usage), ...costOf(payload) })
  }
})

/** What a summary request spent, priced (`PromptCache.costOf`): the cost fields of the compaction's end. */
export type SummarySpent = Pick<AgentEvent.PayloadOf<"compaction.failed">, "usage" | "cost" | "costUnknown">

/** `compaction.failed`; with what its summary request spent when it returned and was refused (counts as `sessionCompacted`'s). */
export const compactionFailed = (compactionId: string, errorCode: string, spent: SummarySpent = {}): Draft<"compaction.failed"> => ({
  type: "compaction.failed",
  payload: { compactionId, errorCode, ...(spent.usage === undefined ? {} : { usage: usageOf(spent.usage), ...costOf(spent) }) }
})

/** `user.message`. */
export const userMessage = (content: string, images?: ReadonlyArray<ImageRef>): Draft<"user.message"> => ({
  type: "user.message",
  // `images` only when there are some: a message without stays byte for byte what it was.
  payload: images === undefined || images.length === 0 ? { content } : { content, images }
})

/** `context.built`: token counts are whole and non-negative (an estimator may give fractions). */
export const contextBuilt = (
  tokens: AgentEvent.PayloadOf<"context.built">["tokens"],
  instructions: ReadonlyArray<AgentEvent.InstructionPart> = []
): Draft<"context.built"> => ({
  type: "context.built",
  payload: {
    tokens: { instruction: count(tokens.instruction), transcript: count(tokens.transcript), tools: count(tokens.tools), total: count(tokens.total) },
    ...(instructions.length === 0 ? {} : {
      instructions: instructions.map((part) => ({
        name: part.name,
        source: part.source,
        path: part.path,
        sha256: part.sha256,
        tokens: count(part.tokens),
        ...(part.truncated === true ? { truncated: true } : {})
      }))
    })
  }
})

/** `mcp.tools_listed`: one server's tools as the model is shown them, and their hash. */
export const mcpToolsListed = (source: { readonly server: string; readonly tools: ReadonlyArray<AgentEvent.ListedTool>; readonly hash: string }): Draft<"mcp.tools_listed"> => ({
  type: "mcp.tools_listed",
  payload: { server: source.server, tools: source.tools.map(({ description, inputSchema, name }) => ({ name, description, inputSchema })), hash: source.hash }
})

/** `model.delta`. */
export const modelDelta = (text: string): Draft<"model.delta"> => ({ type: "model.delta", payload: { text } })

/** `model.thinking_delta`. */
export const thinkingDelta = (text: string): Draft<"model.thinking_delta"> => ({ type: "model.thinking_delta", payload: { text } })

/** `model.thinking_block`: who wrote the block, and its signature or redacted data (each only when there is one). */
export const thinkingBlock = (block: {
  readonly provider: string
  readonly model: string
  readonly signature?: string | undefined
  readonly redacted?: string | undefined
}): Draft<"model.thinking_block"> => ({
  type: "model.thinking_block",
  payload: {
    provider: block.provider,
    model: block.model,
    ...(block.signature === undefined ? {} : { signature: block.signature }),
    ...(block.redacted === undefined ? {} : { redacted: block.redacted })
  }
})

/** `model.retry`: the attempt is at least 1 and the wait whole, non-negative milliseconds. */
export const modelRetry = (attempt: number, delayMs: number, errorCode: string): Draft<"model.retry"> => ({
  type: "model.retry",
  payload: { attempt: Math.max(1, count(attempt)), delayMs: count(delayMs), errorCode }
})

/** The deepest nesting of a tool call's arguments that is kept: no tool takes anything near it. */
export const maxArgumentDepth = 64

/**
 * A tool call's arguments as the model sent them, unless they nest deeper than `maxArgumentDepth`:
 * then a string saying so, which every tool's schema refuses (`invalid_arguments`, the model is
 * told). Arguments nested 100k deep would otherwise overflow the stack of whatever walks them next
 * (the check, the schema's error message, the store's encoder).
 */
export const toolArguments = (args: unknown): Json.Json =>
  Json.nestsDeeperThan(args, maxArgumentDepth) ? `[arguments nested more than ${maxArgumentDepth} levels deep were dropped]` : args as Json.Json

/** `model.tool_call_requested`. */
export const toolCallRequested = (call: { readonly toolCallId: string; readonly tool: string; readonly args: unknown }): Draft<"model.tool_call_requested"> => ({
  type: "model.tool_call_requested",
  payload: { toolCallId: call.toolCallId, tool: call.tool, args: toJson(call.args) }
})

/** `permission.requested`. */
export const permissionRequested = (payload: AgentEvent.PayloadOf<"permission.requested">): Draft<"permission.requested"> => ({
  type: "permission.requested",
  payload: {
    toolCallId: payload.toolCallId,
    tool: payload.tool,
    risk: payload.risk,
    ...(payload.outsidePaths === undefined || payload.outsidePaths.length === 0 ? {} : { outsidePaths: [...payload.outsidePaths] })
  }
})

/** `permission.resolved`. */
export const permissionResolved = (payload: AgentEvent.PayloadOf<"permission.resolved">): Draft<"permission.resolved"> => ({
  type: "permission.resolved",
  payload
})

/** `tool.started`. */
export const toolStarted = (toolCallId: string, tool: string, args: unknown): Draft<"tool.started"> => ({
  type: "tool.started",
  payload: { toolCallId, tool, args: toJson(args) }
})

/** `tool.progress`: the message is tool output, escaped. */
export const toolProgress = (toolCallId: string, message: string): Draft<"tool.progress"> => ({
  type: "tool.progress",
  payload: { toolCallId, message: escapeControls(message) }
})

/** `tool.completed`: the result is tool output, escaped; an exit code that is not an integer is left out. */
export const toolCompleted = (toolCallId: string, result: string, exitCode?: number, images?: ReadonlyArray<ImageRef>): Draft<"tool.completed"> => ({
  type: "tool.completed",
  payload: {
    toolCallId,
    result: escapeControls(result),
    ...(exitCode === undefined || !Number.isSafeInteger(exitCode) ? {} : { exitCode }),
    ...(images === undefined || images.length === 0 ? {} : { images })
  }
})

/** `tool.failed`: the message may quote tool output, so it is escaped too. */
export const toolFailed = (toolCallId: string, errorCode: string, message: string): Draft<"tool.failed"> => ({
  type: "tool.failed",
  payload: { toolCallId, errorCode, message: escapeControls(message) }
})

/** Usage counts made whole and non-negative (what is stored, and what a turn's cost is computed from). */
export const usageOf = (usage: AgentEvent.Usage): AgentEvent.Usage => ({
  inputTokens: count(usage.inputTokens),
  outputTokens: count(usage.outputTokens),
  ...(usage.cacheReadTokens === undefined ? {} : { cacheReadTokens: count(usage.cacheReadTokens) }),
  ...(usage.cacheWriteTokens === undefined ? {} : { cacheWriteTokens: count(usage.cacheWriteTokens) })
})

/** A cost the schema accepts: finite and non-negative dollars, or `null` (no price: `costUnknown` names the model). */
const costOf = (completion: Pick<AgentEvent.PayloadOf<"turn.completed">, "cost" | "costUnknown">) => {
  const { cost, costUnknown } = completion
  if (cost === undefined) return {}
  if (cost === null || !Number.isFinite(cost) || cost < 0) return { cost: null, ...(costUnknown === undefined ? {} : { costUnknown }) }
  return { cost }
}

/** `turn.completed`: usage counts are whole and non-negative; a cost only with usage. */
export const turnCompleted = (completion: AgentEvent.PayloadOf<"turn.completed">): Draft<"turn.completed"> => {
  const { usage } = completion
  return {
    type: "turn.completed",
    payload: {
      stopReason: completion.stopReason,
      ...(completion.errorCode === undefined ? {} : { errorCode: completion.errorCode }),
      ...(completion.finishReason === undefined ? {} : { finishReason: completion.finishReason }),
      ...(usage === undefined ? {} : { usage: usageOf(usage), ...costOf(completion) })
    }
  }
}

/** `model.usage`: one response's usage, and the hashes of its request's parts when there are some. */
export const modelUsage = (
  usage: AgentEvent.Usage,
  answeredBy: { readonly provider: string; readonly model: string },
  parts: ReadonlyArray<AgentEvent.PromptPartHash>
): Draft<"model.usage"> => ({
  type: "model.usage",
  payload: {
    usage: usageOf(usage),
    provider: answeredBy.provider,
    model: answeredBy.model,
    ...(parts.length === 0 ? {} : { parts })
  }
})

/** `cache.break`: the prompt cache's reads dropped against the session's previous response; which parts changed. */
export const cacheBreak = (
  previousCacheRead: number,
  cacheRead: number,
  changed: ReadonlyArray<{ readonly part: string; readonly source: string }>
): Draft<"cache.break"> => ({
  type: "cache.break",
  payload: { previousCacheRead: count(previousCacheRead), cacheRead: count(cacheRead), changed }
})

const payloadSchemas: ReadonlyMap<string, Schema.Schema.Any> = new Map(
  AgentEvent.AgentEvent.members.map((member) => [member.fields.type.literals[0], member.fields.payload as Schema.Schema.Any])
)

/** Checks a draft's payload against the schema of its event type, as a store will when it encodes the event. */
export const check = (draft: AgentEvent.TurnEventDraft): Either.Either<AgentEvent.TurnEventDraft, ParseResult.ParseError> => {
  const schema = payloadSchemas.get(draft.type)
  if (schema === undefined) return Either.right(draft)
  return Either.map(Schema.validateEither(schema as Schema.Schema<unknown>)(draft.payload), () => draft)
}

/** What a subagent's tree used, as its events carry it: whole, non-negative counts; dollars finite and non-negative, else left out. */
export interface SubagentUsed {
  readonly steps: number
  readonly usage?: AgentEvent.Usage | undefined
  readonly cost?: number | undefined
}

const subagentUsed = (used: SubagentUsed) => ({
  steps: count(used.steps),
  ...(used.usage === undefined ? {} : { usage: usageOf(used.usage) }),
  ...(used.cost === undefined || !Number.isFinite(used.cost) || used.cost < 0 ? {} : { cost: used.cost })
})

/** `subagent.started`: the task's description is the model's text, escaped. */
export const subagentStarted = (started: AgentEvent.PayloadOf<"subagent.started">): Draft<"subagent.started"> => ({
  type: "subagent.started",
  payload: {
    toolCallId: started.toolCallId,
    childSessionId: started.childSessionId,
    description: escapeControls(started.description),
    cwd: started.cwd,
    ...(started.tools === undefined ? {} : { tools: started.tools }),
    mode: started.mode,
    ...(started.maxSteps === undefined || !(Number.isSafeInteger(started.maxSteps) && started.maxSteps > 0) ? {} : { maxSteps: started.maxSteps })
  }
})

/** `subagent.progress`: what the child's tree used so far. */
export const subagentProgress = (toolCallId: string, childSessionId: string, used: SubagentUsed, answered?: string): Draft<"subagent.progress"> => ({
  type: "subagent.progress",
  payload: { toolCallId, childSessionId, ...subagentUsed(used), ...(answered === undefined ? {} : { answered }) }
})

/** `subagent.asked`: the child's call, its arguments as JSON, the description escaped. */
export const subagentAsked = (asked: {
  readonly toolCallId: string
  readonly childSessionId: string
  readonly description: string
  readonly childToolCallId: string
  readonly tool: string
  readonly args: unknown
  readonly risk: AgentEvent.Risk
  readonly outsidePaths?: ReadonlyArray<string> | undefined
}): Draft<"subagent.asked"> => {
  const { outsidePaths, ...rest } = asked
  return {
    type: "subagent.asked",
    payload: {
      ...rest,
      description: escapeControls(asked.description),
      args: toJson(asked.args),
      ...(outsidePaths === undefined || outsidePaths.length === 0 ? {} : { outsidePaths: [...outsidePaths] })
    }
  }
}

/** `subagent.completed`: how the child's turn ended and what its tree used in all. */
export const subagentCompleted = (
  toolCallId: string,
  childSessionId: string,
  outcome: AgentEvent.StopReason,
  errorCode: string | undefined,
  used: SubagentUsed
): Draft<"subagent.completed"> => ({
  type: "subagent.completed",
  payload: { toolCallId, childSessionId, outcome, ...(errorCode === undefined ? {} : { errorCode }), ...subagentUsed(used) }
})

/**
 * `workspace.changed`: the files a call changed with their pre-images (see `WorkspaceCheckpoints`);
 * `incomplete` when the snapshot passed a cap. A mode is a count, whatever a file system reported.
 */
export const workspaceChanged = (
  toolCallId: string,
  changes: ReadonlyArray<AgentEvent.FileChange>,
  incomplete?: string
): Draft<"workspace.changed"> => ({
  type: "workspace.changed",
  payload: {
    toolCallId,
    changes: changes.map((change) => change.before === undefined ? change : { ...change, before: { ...change.before, mode: count(change.before.mode) } }),
    ...(incomplete === undefined ? {} : { incomplete })
  }
})
