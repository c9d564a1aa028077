/**
 * The events of a session's append-only log (CONTRACT.md §2). Every event is stored before it is
 * emitted, and every store, wire adapter and projection reads these schemas.
 *
 * @since 0.1.0
 */
import type * as Either from "effect/Either"
import type * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import type { ParseOptions } from "effect/SchemaAST"
import { ImageRef } from "./Image.js"
import { Json } from "./Json.js"

/** Who created a session. */
export const Client = Schema.Literal("web", "cli", "acp", "test")
/** Who created a session. */
export type Client = typeof Client.Type

/** How dangerous a tool call is; shown to the user when asking for approval. */
export const Risk = Schema.Literal("read", "write", "destructive", "network")
/** How dangerous a tool call is; shown to the user when asking for approval. */
export type Risk = typeof Risk.Type

/** A permission decision. `ask` pauses the call until the user decides. */
export const Decision = Schema.Literal("allow", "deny", "ask")
/** A permission decision. `ask` pauses the call until the user decides. */
export type Decision = typeof Decision.Type

/** How a turn ended. There is no separate cancelled or failed event. */
export const StopReason = Schema.Literal("final", "cancelled", "error")
/** How a turn ended. There is no separate cancelled or failed event. */
export type StopReason = typeof StopReason.Type

const Count = Schema.Int.pipe(Schema.nonNegative())

/** Token usage of a turn, summed over its model requests. */
export const Usage = Schema.Struct({
  inputTokens: Count,
  outputTokens: Count,
  cacheReadTokens: Schema.optional(Count),
  cacheWriteTokens: Schema.optional(Count)
})
/** Token usage of a turn, summed over its model requests. */
export type Usage = typeof Usage.Type

const envelope = {
  id: Schema.String,
  sessionId: Schema.String,
  sequence: Schema.Int.pipe(Schema.positive()),
  timestamp: Schema.String
}

const sessionEvent = <const T extends string, P extends Schema.Struct.Fields>(type: T, payload: P) =>
  Schema.Struct({ ...envelope, type: Schema.Literal(type), payload: Schema.Struct(payload) }).annotations({
    identifier: type
  })

// Field order is the on-disk key order, so it stays: id, sessionId, turnId, sequence, timestamp, type, payload.
const turnEvent = <const T extends string, P extends Schema.Struct.Fields>(type: T, payload: P) =>
  Schema.Struct({
    id: envelope.id,
    sessionId: envelope.sessionId,
    turnId: Schema.String,
    sequence: envelope.sequence,
    timestamp: envelope.timestamp,
    type: Schema.Literal(type),
    payload: Schema.Struct(payload)
  }).annotations({ identifier: type })

// Compaction runs inside a turn (threshold, overflow) or on its own (manual, no turn open): its
// events carry the turn's id in the first case only. Same key order as the others.
const turnOrSessionEvent = <const T extends string, P extends Schema.Struct.Fields>(type: T, payload: P) =>
  Schema.Struct({
    id: envelope.id,
    sessionId: envelope.sessionId,
    turnId: Schema.optional(Schema.String),
    sequence: envelope.sequence,
    timestamp: envelope.timestamp,
    type: Schema.Literal(type),
    payload: Schema.Struct(payload)
  }).annotations({ identifier: type })

/** The first event of every session; it fixes the session's cwd for life. */
export const SessionCreated = sessionEvent("session.created", {
  cwd: Schema.String,
  client: Client,
  /** Present in a fork: the session and sequence (a closed point: the end of a turn, or a session-level event between turns) it was copied from. */
  forkedFrom: Schema.optional(Schema.Struct({ sessionId: Schema.String, sequence: Schema.Int.pipe(Schema.positive()) })),
  /** Present in a subagent's session: the session and the `task` call that started it, and how deep it is (1 for a child of a top session). */
  parent: Schema.optional(Schema.Struct({ sessionId: Schema.String, toolCallId: Schema.String, depth: Schema.Int.pipe(Schema.positive()) }))
})

/** A bound on what a turn and the subagents it starts may use (see `Task.Budget`); each field finite. */
export const TurnBudget = Schema.Struct({
  maxTokens: Schema.optional(Schema.Number.pipe(Schema.finite())),
  maxCost: Schema.optional(Schema.Number.pipe(Schema.finite())),
  maxSteps: Schema.optional(Schema.Number.pipe(Schema.finite()))
})

/**
 * A turn began; `promptPreview` is the first 80 characters of the user input. `queueId`: present
 * when the turn runs a queued follow-up (`followup.queued`). `budget`: present when the turn was
 * given a budget of its own (`runTurn({budget})`), so that a process resuming it holds it to the same.
 */
export const TurnStarted = turnEvent("turn.started", {
  promptPreview: Schema.String,
  queueId: Schema.optional(Schema.String),
  budget: Schema.optional(TurnBudget)
})

/**
 * The full user input of a turn. `images`: the images sent with it, by reference to the store's blob
 * area (see `Image.ImageRef`), present only when there are some.
 */
export const UserMessage = turnEvent("user.message", { content: Schema.String, images: Schema.optional(Schema.Array(ImageRef)) })

/**
 * An instructions file that went into the system prompt (`AGENTS.md`, `CLAUDE.md`, the user's own):
 * the part's name, where it came from (relative to the session's cwd, or `<config>/AGENTS.md`), the
 * sha256 of the bytes read, its tokens, and whether it was cut at the cap.
 */
export const InstructionPart = Schema.Struct({
  name: Schema.String,
  source: Schema.Literal("project", "user-file"),
  path: Schema.String,
  sha256: Schema.String,
  tokens: Count,
  truncated: Schema.optional(Schema.Boolean)
})
/** An instructions file that went into the system prompt. */
export type InstructionPart = typeof InstructionPart.Type

/**
 * The token budget of the context sent to the model, once per turn before the first request.
 * `instructions`: the instructions files in its system prompt, present only when there are some.
 */
export const ContextBuilt = turnEvent("context.built", {
  tokens: Schema.Struct({ instruction: Count, transcript: Count, tools: Count, total: Count }),
  instructions: Schema.optional(Schema.Array(InstructionPart))
})

/** A piece of streamed model text. */
export const ModelDelta = turnEvent("model.delta", { text: Schema.String })

/**
 * A piece of the model's streamed thinking (Anthropic extended thinking): shown to the user, never
 * part of the answer's text. A response's thinking deltas up to its next `model.thinking_block`
 * are that block's text.
 */
export const ThinkingDelta = turnEvent("model.thinking_delta", { text: Schema.String })

/**
 * A thinking block of the response ended: its text is the `model.thinking_delta`s since the
 * previous block (none: empty). `signature`: the vendor's signature of a thinking block;
 * `redacted`: the opaque `data` of a redacted one. With either, the block is sent back, as it came,
 * in the requests that follow — only to the `provider` and `model` that wrote it; with neither (a
 * block the stream never signed) it is shown only.
 */
export const ThinkingBlock = turnEvent("model.thinking_block", {
  provider: Schema.String,
  model: Schema.String,
  signature: Schema.optional(Schema.String),
  redacted: Schema.optional(Schema.String)
})

/** A retryable provider failure before any chunk of the response was stored; the request is sent again. */
export const ModelRetry = turnEvent("model.retry", {
  attempt: Schema.Int.pipe(Schema.positive()),
  delayMs: Count,
  errorCode: Schema.String
})

/** The model asked for a tool call. */
export const ToolCallRequested = turnEvent("model.tool_call_requested", {
  toolCallId: Schema.String,
  tool: Schema.String,
  args: Json
})

/**
 * A tool call's permission is being decided. `outsidePaths`: the real paths outside the session's
 * cwd the call would touch (links resolved, a dangling link's target included), present only when
 * there are some, so that an approval prompt names the real target rather than the link's name.
 */
export const PermissionRequested = turnEvent("permission.requested", {
  toolCallId: Schema.String,
  tool: Schema.String,
  risk: Risk,
  outsidePaths: Schema.optional(Schema.Array(Schema.String))
})

/**
 * A permission decision: by the policy (`ask` pauses the call), then, after an `ask`, by the user.
 * `remember: true` on a user decision applies it to later calls with the same `scope` (a tool, or
 * for `shell` a program) in this session. `idempotencyKey`: the key of the user's answer, when it
 * came with one: the same answer delivered again is answered from the log (`SessionState.applied`).
 */
export const PermissionResolved = turnEvent("permission.resolved", {
  toolCallId: Schema.String,
  decision: Decision,
  policy: Schema.optional(Schema.String),
  actor: Schema.Literal("policy", "user"),
  remember: Schema.optional(Schema.Boolean),
  scope: Schema.optional(Schema.String),
  idempotencyKey: Schema.optional(Schema.String)
})

/** An allowed tool call began running. */
export const ToolStarted = turnEvent("tool.started", { toolCallId: Schema.String, tool: Schema.String, args: Json })

/** A running tool reported progress (a long command's latest output). Never after the call ended. */
export const ToolProgress = turnEvent("tool.progress", { toolCallId: Schema.String, message: Schema.String })

/**
 * A tool call finished; `result` is what the model sees. `images`: images the tool returned (e.g.
 * `read_file` of a PNG for a model that takes images), by reference to the store's blob area; present
 * only when there are some.
 */
export const ToolCompleted = turnEvent("tool.completed", {
  toolCallId: Schema.String,
  result: Schema.String,
  exitCode: Schema.optional(Schema.Int),
  images: Schema.optional(Schema.Array(ImageRef))
})

/** A tool call ended without a result: denied, invalid, unknown, failed, cancelled or interrupted. */
export const ToolFailed = turnEvent("tool.failed", {
  toolCallId: Schema.String,
  errorCode: Schema.String,
  message: Schema.String
})

/**
 * What model requests used and cost: `usage` when the provider reported it; with it, the cost in US
 * dollars from the price table (see `Pricing`), `null` when the table has no price for the model,
 * which `costUnknown` names.
 */
const costFields = {
  usage: Schema.optional(Usage),
  cost: Schema.optional(Schema.NullOr(Schema.Number.pipe(Schema.finite(), Schema.nonNegative()))),
  costUnknown: Schema.optional(Schema.String)
}

/** The last event of every turn. */
export const TurnCompleted = turnEvent("turn.completed", {
  stopReason: StopReason,
  errorCode: Schema.optional(Schema.String),
  /**
   * Present when the turn's final answer was cut short by the model: `length` (its output token
   * limit) or `content_filter`. The turn still ends `final`; the answer is incomplete.
   */
  finishReason: Schema.optional(Schema.Literal("length", "content_filter")),
  ...costFields
})

/** One part of a model request, by a cheap hash of its content: a system prompt part or the tools. */
export const PromptPartHash = Schema.Struct({ part: Schema.String, source: Schema.String, hash: Schema.String })
/** One part of a model request, by a cheap hash of its content. */
export type PromptPartHash = typeof PromptPartHash.Type

/**
 * One model response's usage, as its provider reported it (stored only when it reported some), the
 * provider and model that answered, and the hashes of the request's parts (its system prompt's named
 * parts and its tools), so the next request can tell which part changed when the prompt cache's
 * reads drop (`cache.break`).
 */
export const ModelUsage = turnEvent("model.usage", {
  usage: Usage,
  provider: Schema.String,
  model: Schema.String,
  parts: Schema.optional(Schema.Array(PromptPartHash))
})

/**
 * A response read less from the prompt cache than the session's previous one: the prompt's prefix
 * changed. `changed`: the parts whose content differs from the previous request's, and
 * `{part: "history", source: "compaction"}` after a compaction; empty when none did (the cache expired).
 */
export const CacheBreak = turnEvent("cache.break", {
  previousCacheRead: Count,
  cacheRead: Count,
  changed: Schema.Array(Schema.Struct({ part: Schema.String, source: Schema.String }))
})

/**
 * A message the user sent into the running turn (`steer`), stored at the next step boundary —
 * after the step's tool results, before the next model request. The model sees it as a user message.
 * `idempotencyKey`: the steer's key, when it came with one.
 */
export const TurnSteered = turnEvent("turn.steered", { content: Schema.String, idempotencyKey: Schema.optional(Schema.String) })

/** One tool as an outside source (an MCP server) offered it to the model. */
export const ListedTool = Schema.Struct({ name: Schema.String, description: Schema.String, inputSchema: Json })
/** One tool as an outside source offered it. */
export type ListedTool = typeof ListedTool.Type

/**
 * The tools an MCP server offered, as the model was shown them (names `mcp__<server>__<tool>`,
 * descriptions, input schemas) and their SHA-256 (`hash`): stored before the first request of the
 * session that offers them, and again before a request whenever the server's list changed (a
 * restarted or updated server). Replay, cassettes and a resumed session read from here which tools
 * were bound; the hash says whether a server offers the same ones now.
 */
export const McpToolsListed = turnEvent("mcp.tools_listed", { server: Schema.String, tools: Schema.Array(ListedTool), hash: Schema.String })

/**
 * A message queued to run as its own turn once the session is idle (session-level: no turnId).
 * `idempotencyKey`: the follow-up's key, when it came with one.
 */
export const FollowUpQueued = sessionEvent("followup.queued", {
  queueId: Schema.String,
  content: Schema.String,
  idempotencyKey: Schema.optional(Schema.String)
})

/** Queued follow-ups dropped before they ran (`dropFollowUps`), by queue id (session-level: no turnId). */
export const FollowUpDropped = sessionEvent("followup.dropped", { queueIds: Schema.Array(Schema.String) })

/** The last event a fork copies: this session continues `fromSessionId` as it was at `atSequence` (session-level). */
export const SessionForked = sessionEvent("session.forked", { fromSessionId: Schema.String, atSequence: Schema.Int.pipe(Schema.positive()) })

/**
 * The user named the session (session-level): from now on its title is `title`, whatever its first
 * message says. Stored in the log, so replay and forks carry it; a later one replaces an earlier one.
 */
export const SessionTitled = sessionEvent("session.titled", { title: Schema.String })

/**
 * A `task` call started a subagent: a child session (`childSessionId`, whose `session.created` names
 * this session and call) running `description` in `cwd` with the tools `tools` (absent: the same as
 * this session's) and the permission mode `mode` (`inherit` or `readOnly`), at most `maxSteps` model
 * requests. Stored in the parent's turn, after the call's `tool.started`.
 */
export const SubagentStarted = turnEvent("subagent.started", {
  toolCallId: Schema.String,
  childSessionId: Schema.String,
  description: Schema.String,
  cwd: Schema.String,
  tools: Schema.optional(Schema.Array(Schema.String)),
  mode: Schema.Literal("inherit", "readOnly"),
  maxSteps: Schema.optional(Schema.Int.pipe(Schema.positive()))
})

/**
 * What a running subagent (its own steps and those of its subagents) has used so far: model
 * requests, token usage, cost. Stored in the parent's turn once per model response or tool result of
 * the child, never per delta; the numbers are totals, so the last one is what it used.
 */
export const SubagentProgress = turnEvent("subagent.progress", {
  toolCallId: Schema.String,
  childSessionId: Schema.String,
  steps: Count,
  usage: Schema.optional(Usage),
  cost: Schema.optional(Schema.Number.pipe(Schema.finite(), Schema.nonNegative())),
  /** The subagent's call (or a call of a subagent below it) the user just answered: its `subagent.asked` is settled. */
  answered: Schema.optional(Schema.String)
})

/**
 * A subagent's call waits for the user: shown to whoever answers this session, labelled with the
 * child's task, and answered on the child session (`resolvePermission({sessionId: childSessionId,
 * toolCallId: childToolCallId})`), whose log records the answer.
 */
export const SubagentAsked = turnEvent("subagent.asked", {
  toolCallId: Schema.String,
  childSessionId: Schema.String,
  description: Schema.String,
  childToolCallId: Schema.String,
  tool: Schema.String,
  args: Json,
  risk: Risk,
  /** The real paths outside the child's cwd the call would touch: its `permission.requested`'s (absent when none, and in older logs). */
  outsidePaths: Schema.optional(Schema.Array(Schema.String))
})

/**
 * A subagent ended: how its turn ended (`outcome`, and `errorCode` when it is `error`) and what its
 * tree used in all. Stored before the `task` call's `tool.completed` / `tool.failed`.
 */
export const SubagentCompleted = turnEvent("subagent.completed", {
  toolCallId: Schema.String,
  childSessionId: Schema.String,
  outcome: StopReason,
  errorCode: Schema.optional(Schema.String),
  steps: Count,
  usage: Schema.optional(Usage),
  cost: Schema.optional(Schema.Number.pipe(Schema.finite(), Schema.nonNegative()))
})

/**
 * A file's content before a change, kept in the store's blob area: its SHA-256 (`blob`) and its
 * permission bits. What a rewind writes back.
 */
export const FileImage = Schema.Struct({ blob: Schema.String, mode: Count })
/** A file's content before a change, kept in the store's blob area. */
export type FileImage = typeof FileImage.Type

/**
 * One file a tool call (or a rewind) changed, relative to the session's cwd with `/` separators.
 * `before`: what it held before (absent: there was no file). `after`: the SHA-256 of what it held
 * after (absent: no file), what a rewind expects to find there.
 */
export const FileChange = Schema.Struct({ path: Schema.String, before: Schema.optional(FileImage), after: Schema.optional(Schema.String) })
/** One file a tool call or a rewind changed. */
export type FileChange = typeof FileChange.Type

/**
 * The files of the session's cwd a tool call changed (`write_file`, `edit_file`, a shell command
 * that can write), with their pre-images: stored before the call's `tool.completed`/`tool.failed`,
 * only when a file changed and the engine keeps workspace checkpoints (`WorkspaceCheckpoints`).
 * `incomplete`: why the snapshot may have missed changes (the scan passed its file or byte cap).
 */
export const WorkspaceChanged = turnEvent("workspace.changed", {
  toolCallId: Schema.String,
  changes: Schema.Array(FileChange),
  incomplete: Schema.optional(Schema.String)
})

/**
 * The session went back to `toSequence` (session-level): the events after it and before this one
 * are an abandoned branch — still in the log, no longer in the conversation — and the files the
 * agent changed since were restored. `changes`: what the rewind itself wrote, with pre-images of
 * what it overwrote (so a rewind can be rewound). `forced`: files changed outside the agent that
 * the caller chose to overwrite. `incomplete`: why some changes could not be known (a shell
 * snapshot past its caps), so were not undone. `observed` (since 0.15): the files of `changes` a
 * command's snapshot had recorded — changed while a command ran, by it or by anyone else (an editor).
 */
export const SessionRewound = sessionEvent("session.rewound", {
  toSequence: Schema.Int.pipe(Schema.positive()),
  changes: Schema.Array(FileChange),
  forced: Schema.optional(Schema.Array(Schema.String)),
  incomplete: Schema.optional(Schema.Array(Schema.String)),
  observed: Schema.optional(Schema.Array(Schema.String))
})

/** Why a compaction ran: `compactSession`, the threshold share of the window, or a request over the window. */
export const CompactionReason = Schema.Literal("manual", "threshold", "overflow")
/** Why a compaction ran: `compactSession`, the threshold share of the window, or a request over the window. */
export type CompactionReason = typeof CompactionReason.Type

/**
 * A compaction began: older context is being summarised by the model. `tokensBefore`: the estimated
 * tokens of the request (system prompt, transcript, tools) before it. Carries the turn's id when it
 * runs inside a turn (threshold, overflow); none for a manual compaction.
 */
export const CompactionStarted = turnOrSessionEvent("compaction.started", {
  compactionId: Schema.String,
  reason: CompactionReason,
  tokensBefore: Count
})

/**
 * A compaction ended: from now on the model sees `summary` (as a user message, see `Transcript`) in
 * place of every transcript entry that began before `firstKeptSequence`; the entries from there on
 * are kept verbatim. Replay rebuilds the compacted context from this event alone.
 */
export const SessionCompacted = turnOrSessionEvent("session.compacted", {
  compactionId: Schema.String,
  reason: CompactionReason,
  summary: Schema.String,
  firstKeptSequence: Schema.Int.pipe(Schema.positive()),
  tokensBefore: Count,
  tokensAfter: Count,
  /** The summary request's usage and cost, when the provider reported usage (counted in the session's totals, not a turn's). */
  ...costFields
})

/**
 * A compaction ended without a summary (`cancelled`, `interrupted`, a provider's reason …): the context is left as it was.
 * `usage`, `cost`, `costUnknown`: a summary request that returned and was still refused (`empty_summary`,
 * `summary_cut_short`, `response_too_large`, `summary_too_large`: its `session.compacted` larger than the store takes as
 * one event) was spent all the same — counted as `session.compacted`'s are; absent otherwise.
 */
export const CompactionFailed = turnOrSessionEvent("compaction.failed", {
  compactionId: Schema.String,
  errorCode: Schema.String,
  ...costFields
})

/** Any event of a session's log. */
export const AgentEvent = Schema.Union(
  SessionCreated,
  TurnStarted,
  UserMessage,
  ContextBuilt,
  ModelDelta,
  ModelRetry,
  ToolCallRequested,
  PermissionRequested,
  PermissionResolved,
  ToolStarted,
  ToolProgress,
  ToolCompleted,
  ToolFailed,
  TurnCompleted,
  TurnSteered,
  McpToolsListed,
  ModelUsage,
  CacheBreak,
  FollowUpQueued,
  FollowUpDropped,
  SessionForked,
  CompactionStarted,
  SessionCompacted,
  CompactionFailed,
  SessionTitled,
  SubagentStarted,
  SubagentProgress,
  SubagentAsked,
  SubagentCompleted,
  WorkspaceChanged,
  SessionRewound,
  ThinkingDelta,
  ThinkingBlock
).annotations({ identifier: "AgentEvent" })

/** Any event of a session's log. */
export type AgentEvent = typeof AgentEvent.Type

/** The `type` of an event. */
export type EventType = AgentEvent["type"]

/** The event of one type. */
export type EventOfType<T extends EventType> = Extract<AgentEvent, { readonly type: T }>

/** The payload of one event type. */
export type PayloadOf<T extends EventType> = EventOfType<T>["payload"]

/** The events that belong to no turn and carry no `turnId`. */
export type SessionLevelEvent = Extract<AgentEvent, { readonly type: "session.created" | "followup.queued" | "followup.dropped" | "session.forked" | "session.titled" | "session.rewound" }>

/** Whether an event belongs to no turn (it carries no `turnId`): a session-level event, or a manual compaction's. */
export const isSessionLevel = (event: AgentEvent): event is SessionLevelEvent | CompactionEvent => !("turnId" in event) || event.turnId === undefined

/** The events of a compaction: in a turn (with its `turnId`) or on their own (none). */
export type CompactionEvent = Extract<AgentEvent, { readonly type: "compaction.started" | "session.compacted" | "compaction.failed" }>

/** Whether an event belongs to a compaction. */
export const isCompactionEvent = (event: AgentEvent): event is CompactionEvent =>
  event.type === "compaction.started" || event.type === "session.compacted" || event.type === "compaction.failed"

/**
 * An event of a turn (every type but the session-level ones). Compaction events are among them;
 * their `turnId` is absent when no turn was open (a manual compaction).
 */
export type TurnEvent = Exclude<AgentEvent, SessionLevelEvent>

/** A session-level event after `session.created`, before the engine gives it an id, a sequence and a timestamp. */
export type SessionEventDraft = SessionLevelEvent extends infer E
  ? E extends Exclude<SessionLevelEvent, { readonly type: "session.created" }> ? { readonly type: E["type"]; readonly payload: E["payload"] } : never
  : never

/** A turn event before the engine gives it an id, a sequence and a timestamp. */
export type TurnEventDraft = TurnEvent extends infer E
  ? E extends TurnEvent ? { readonly type: E["type"]; readonly payload: E["payload"] } : never
  : never

/** Every event type, in the order of CONTRACT.md §2. */
export const eventTypes: ReadonlyArray<EventType> = AgentEvent.members.map((member) => member.fields.type.literals[0])

/** How many characters of the user input `turn.started` previews. */
export const promptPreviewLength = 80

/** The `promptPreview` of a user input: its first 80 characters (by code point, so no half surrogate). */
export const promptPreview = (content: string): string => Array.from(content).slice(0, promptPreviewLength).join("")

// The codecs below are compiled on their first call, not as the module loads: compiling the union's
// parsers took a third of this module's load time, which every command paid, though a listing or
// `--help` decodes nothing through the schema and the stores' fast path (EventCodec) encodes the
// engine's events without it.
let encode: ((event: AgentEvent) => unknown) | undefined
let decodeFromJson: ((input: unknown, options?: ParseOptions) => Either.Either<AgentEvent, ParseResult.ParseError>) | undefined
let decode: ((input: unknown, options?: ParseOptions) => Either.Either<AgentEvent, ParseResult.ParseError>) | undefined

/** Encodes an event as one JSON line (no trailing newline), keys in envelope order. */
export const encodeJson = (event: AgentEvent): string => JSON.stringify((encode ??= Schema.encodeSync(AgentEvent))(event))

/** Decodes and validates an event from its JSON text. */
export const decodeJson = (input: unknown, options?: ParseOptions): Either.Either<AgentEvent, ParseResult.ParseError> =>
  (decodeFromJson ??= Schema.decodeUnknownEither(Schema.parseJson(AgentEvent)))(input, options)

/** Validates an unknown value as an event. */
export const decodeUnknown = (input: unknown, options?: ParseOptions): Either.Either<AgentEvent, ParseResult.ParseError> =>
  (decode ??= Schema.decodeUnknownEither(AgentEvent))(input, options)
