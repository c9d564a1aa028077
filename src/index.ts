/**
 * effect-agent: an Effect-TS runtime for coding agents. One user request becomes an auditable,
 * replayable chain of events in an append-only log.
 *
 * This entry point loads no vendor SDK, no native module and no CLI library: the integrations that
 * do live in their own subpaths — `effect-agent/anthropic`, `effect-agent/openai`, `effect-agent/sqlite`,
 * `effect-agent/acp`.
 *
 * @since 0.1.0
 */

/** The events of a session's log, and their schemas. */
export * as AgentEvent from "./domain/AgentEvent.js"
/** JSON values, the shape of tool arguments. */
export * as Json from "./domain/Json.js"
export * as Edit from "./domain/Edit.js"
/** Sessions and session summaries. */
export * as Session from "./domain/Session.js"
/** Session titles: derived from the first message, or given by the user; made plain, one line. */
export * as SessionTitle from "./domain/SessionTitle.js"
export * as Task from "./domain/Task.js"
/** State replay: the pure reducer from events to session state. */
export * as SessionState from "./domain/SessionState.js"
/** Transcript replay: the pure reducer from events to the conversation. */
export * as Transcript from "./domain/Transcript.js"
/** What a UI shows of a session: the log folded into turns, calls and notes (the web viewer's fold). */
export * as SessionView from "./domain/SessionView.js"
export * as Pricing from "./domain/Pricing.js"
export * as UsageText from "./domain/UsageText.js"
/** "1 line", "2 lines": a count with its noun. */
export * as Plural from "./domain/Plural.js"
/** How much of a model's Markdown a UI may hand to a Markdown parser (the chat's and the viewer's caps). */
export * as MarkdownLimits from "./domain/MarkdownLimits.js"
/** The bidirectional and invisible format characters a UI escapes or drops before showing text (Trojan Source). */
export * as FormatCharacters from "./domain/FormatCharacters.js"
/** Time for durations inside one process (monotonic: a step of the wall clock moves it neither way), from the `Clock`. */
export * as MonotonicTime from "./domain/MonotonicTime.js"
/** Blobs: bytes named by their SHA-256 in a store's blob area, and the blob area's typed errors. */
export * as Blob from "./domain/Blob.js"
/** Images of messages and tool results: accepted formats (by magic bytes), caps, references, `ImageRefused`. */
export * as Image from "./domain/Image.js"
/** The typed errors. */
export {
  ApprovalNotPending,
  CompactionFailed,
  EventStoreFailure,
  InvalidInput,
  NothingToCompact,
  NothingToResume,
  NoTurnInProgress,
  ProviderFailure,
  RewindRefused,
  SessionBusy,
  SessionNotFound,
  TurnInProgress
} from "./domain/Errors.js"
/** A URL as a message may name it: no userinfo, query or fragment. */
export * as Address from "./domain/Address.js"
/** Whether an API key can be sent at all (a character no HTTP header carries is refused up front). */
export * as ApiKey from "./domain/ApiKey.js"
/** Compaction's pure part: where a compaction cuts, and the summary request. */
export * as Compaction from "./domain/Compaction.js"
/** Token estimates. */
export * as Tokens from "./domain/Tokens.js"
/** The package's version, as the CLI, the ACP agent and the server report it. */
export { version } from "./domain/Version.js"
/** Log format versions and their migrations. */
export * as LogFormat from "./domain/LogFormat.js"
export type { EventStoreFailureReason, ProviderFailureReason } from "./domain/Errors.js"

/** The turn state machine. */
export * as TurnFsm from "./fsm/TurnFsm.js"

/** The event store port. */
export * as EventStore from "./services/EventStore.js"
/** The blob store port: a store's content-addressed blob area. */
export * as BlobStore from "./services/BlobStore.js"
/** The id generator port and its random and sequential layers. */
export * as IdGenerator from "./services/IdGenerator.js"
/** The model provider port. */
export * as ModelProvider from "./services/ModelProvider.js"
/** The tool router port. */
export * as ToolRouter from "./services/ToolRouter.js"
/** The permission engine port. */
export * as PermissionEngine from "./services/PermissionEngine.js"
/** The context builder port. */
export * as ContextBuilder from "./services/ContextBuilder.js"
/** Hooks into the turn loop. */
export * as AgentHooks from "./services/AgentHooks.js"
/** Workspace checkpoints: pre-images of the files tool calls change, so that a rewind restores them. */
export * as WorkspaceCheckpoints from "./services/WorkspaceCheckpoints.js"

/** Event store in memory. */
export * as MemoryEventStore from "./layers/MemoryEventStore.js"
/** Event store in JSONL files: the embedded default. */
export * as JsonlEventStore from "./layers/JsonlEventStore.js"
/** The scripted fake model, also the built-in echo model. */
export * as FakeModelProvider from "./layers/FakeModelProvider.js"
/** The workspace tools: read, write, edit, list, grep, shell. */
export * as WorkspaceTools from "./layers/WorkspaceTools.js"
/** Workspace checkpoints kept in the store's blob area, with cwd snapshots for shell commands. */
export * as PreImages from "./layers/workspace/PreImages.js"
/** Cassettes: a recorded session as a script for the scripted model, for regression tests. */
export * as Cassette from "./layers/Cassette.js"
/** Tools of your own, from a Schema and an Effect, alone or beside the workspace tools. */
export * as Toolkit from "./layers/Toolkit.js"
export * as TaskTool from "./layers/TaskTool.js"
export * as WebFetch from "./layers/web/WebFetch.js"
export * as ProjectInstructions from "./layers/instructions/ProjectInstructions.js"
/** The rule-based permission engine. */
export * as PermissionPolicy from "./layers/PermissionPolicy.js"
/** Permission settings from the user and the project, and how far a project's file is trusted: one loader for every adapter. */
export * as ProjectSettings from "./layers/ProjectSettings.js"
/** Which MCP servers a session starts: the user's choices, the user's mcp.json, and a project's .mcp.json once trusted (the SDK itself is in `effect-agent/mcp`). */
export * as McpSettings from "./layers/mcp/McpSettings.js"
/** MCP configuration files: the `{"mcpServers": {…}}` shape. */
export * as McpConfig from "./layers/mcp/McpConfig.js"
/** A session's MCP servers started before it is created, then bound to it or stopped: the shape of the adapters' `sessionServers`. */
export * as PendingServers from "./layers/mcp/PendingServers.js"
/** The names MCP tools are offered under: `mcp__<server>__<tool>`. */
export * as McpNames from "./layers/mcp/McpNames.js"
/** A cassette standing in for MCP servers: their recorded tool lists and answers as a tool router (no SDK). */
export * as McpCassette from "./layers/mcp/McpCassette.js"
/** The project files the user trusts, by content hash, in the user's config folder. */
export * as TrustStore from "./layers/TrustStore.js"
/** The sessions this user started, recorded in the user's config folder, and a store that drives only those. */
export * as StartedSessions from "./layers/StartedSessions.js"
/** The default context builder: a system prompt of named parts. */
export * as PromptComposer from "./layers/PromptComposer.js"
/** A session's working directory, checked and made canonical (its real path) before the session is created. */
export * as WorkingDirectory from "./layers/WorkingDirectory.js"

/** The session engine. */
export * as SessionEngine from "./engine/SessionEngine.js"
/** The retry policy of model requests. */
export * as Retry from "./engine/Retry.js"

/** The engine for callers outside Effect: Promises and async iterables. */
export { EngineDisposed, makeSessionEngine } from "./promise/PromiseSessionEngine.js"
export type { Options as PromiseSessionEngineOptions, PromiseSessionEngine } from "./promise/PromiseSessionEngine.js"
