/**
 * The pure mapping from the log's events to the Agent Client Protocol (CONTRACT.md §7.2): events are
 * never sent raw; each becomes the `session/update` notifications, the permission request or the
 * prompt answer an ACP client understands. No I/O here: the agent wiring sends what this returns.
 *
 * @since 0.1.0
 */
import type * as acp from "@agentclientprotocol/sdk"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { type AgentEvent, Edit, FormatCharacters, Image, type Json, McpConfig, Session, UsageText } from "../index.js"

/** What the client said it supports, beyond the updates every client must accept. */
export interface ClientSupport {
  /** `clientCapabilities.session.compaction`: the client takes `compaction_update`. */
  readonly compaction: boolean
  /** `clientCapabilities.session.notices`: the client takes `notice` (a prompt-cache break is one). */
  readonly notices: boolean
}

/** A client that advertised nothing beyond the baseline. */
export const baseline: ClientSupport = { compaction: false, notices: false }

/** The support a client advertised in `initialize`. */
export const supportOf = (capabilities: acp.ClientCapabilities | undefined): ClientSupport => ({
  compaction: capabilities?.session?.compaction !== undefined && capabilities.session.compaction !== null,
  notices: capabilities?.session?.notices !== undefined && capabilities.session.notices !== null
})

/**
 * ACP's `usage_update` after a turn that reported usage: `used`, the tokens of the turn's last
 * request (its input, cached or not — what is in the context now), `size`, the model's window, and
 * the session's cost so far in US dollars (left out while no turn could be priced, which per the
 * protocol leaves the last reported one).
 */
export const usageUpdateOf = (used: number, size: number, cost: number | undefined): acp.SessionUpdate => ({
  sessionUpdate: "usage_update",
  used,
  size,
  ...(cost === undefined ? {} : { cost: { amount: cost, currency: "USD" } })
})

/**
 * `live`: a turn being run for a prompt — the client already shows its own prompt, so `user.message`
 * is not echoed. `replay`: `session/load` — the whole conversation is rebuilt, the user's messages too.
 */
export type Phase = "live" | "replay"

/** The tool kinds of the workspace tools; anything else is `other`. */
export const toolKind = (tool: string): acp.ToolKind => {
  switch (tool) {
    case "read_file":
      return "read"
    case "write_file":
    case "edit_file":
      return "edit"
    case "list_dir":
    case "grep":
      return "search"
    case "shell":
      return "execute"
    case "web_fetch":
      return "fetch"
    default:
      return "other"
  }
}

const field = (args: Json.Json, name: string): string | undefined =>
  typeof args === "object" && args !== null && !Array.isArray(args) && typeof (args as Record<string, Json.Json>)[name] === "string"
    ? (args as Record<string, string>)[name]
    : undefined

/** One line, at most `max` characters: a title is a label, not a transcript. */
const shortLine = (text: string, max = 120) => {
  const line = FormatCharacters.escapeFormat(text.replace(/\s+/g, " ").trim())
  return line.length > max ? `${line.slice(0, max - 1)}…` : line
}

/** The whole text on one line: line breaks, tabs and other controls shown as escapes, nothing cut. */
const wholeLine = (text: string) =>
  // eslint-disable-next-line no-control-regex
  FormatCharacters.escapeFormat(text.replace(/[\x00-\x1f\x7f-\x9f]/g, (c) => (c === "\n" ? "\\n" : c === "\t" ? "\\t" : c === "\r" ? "\\r" : `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`)))

/**
 * A short human title for a call, e.g. "Read src/a.ts" or "Run `ls`"; `whole` for a permission
 * request, whose answer is about all of the call: nothing past a cut goes unseen.
 */
export const toolTitle = (tool: string, args: Json.Json, whole = false): string => {
  const oneLine = (text: string, max?: number) => (whole ? FormatCharacters.shownOrQuoted(text) : shortLine(text, max))
  // Set off by `open`/`close` as before when it shows as itself; a quoted text is set off by its quotes.
  const between = (open: string, text: string, close: string, max?: number) => {
    const shown = oneLine(text, max)
    return whole && shown !== text ? shown : `${open}${shown}${close}`
  }
  const path = field(args, "path")
  switch (tool) {
    case "read_file":
      return `Read ${oneLine(path ?? "a file")}`
    case "write_file":
      return `Write ${oneLine(path ?? "a file")}`
    case "edit_file":
      return `Edit ${oneLine(path ?? "a file")}`
    case "list_dir":
      return `List ${oneLine(path ?? ".")}`
    case "grep": {
      const pattern = field(args, "pattern")
      return `Search ${pattern === undefined ? "" : between("\"", pattern, "\"", 60)}${path === undefined ? "" : ` in ${oneLine(path)}`}`.trim()
    }
    case "shell": {
      const command = field(args, "command")
      return command === undefined ? "Run a command" : `Run ${between("`", command, "`")}`
    }
    default:
      // An MCP server's tool: its name is the server's text.
      return oneLine(tool)
  }
}

/** `path` resolved against `cwd`, `.` and `..` folded, without touching the file system. */
export const resolvePath = (cwd: string, path: string): string => {
  const parts: Array<string> = []
  for (const part of (path.startsWith("/") ? path : `${cwd}/${path}`).split("/")) {
    if (part === "" || part === ".") continue
    if (part === "..") parts.pop()
    else parts.push(part)
  }
  return `/${parts.join("/")}`
}

/** The files a call touches, absolute as ACP wants them, for the client's "follow the agent". */
export const toolLocations = (cwd: string, tool: string, args: Json.Json): Array<acp.ToolCallLocation> => {
  if (tool === "shell") return []
  const path = field(args, "path")
  return path === undefined ? [] : [{ path: resolvePath(cwd, path) }]
}

/** Whether an absolute path is `cwd` or under it (by its text: links are the engine's `outsidePaths`). */
const isUnder = (cwd: string, path: string) => path === cwd || path.startsWith(cwd.endsWith("/") ? cwd : `${cwd}/`)

/**
 * The real path of an `outsidePaths` entry: the engine writes `<real path> (<why it counts as
 * outside>)` for some (a file with several names); a location is the path alone.
 */
const outsidePathOf = (entry: string) => entry.replace(/ \(.*\)$/s, "")

/**
 * Where a call goes, for a permission request and for the call once allowed: the real targets
 * outside cwd the engine found (a link's target, `permission.requested`'s `outsidePaths`), then the
 * locations inside cwd as named — not a link's name, which is not where it writes.
 */
export const allowedLocations = (cwd: string, call: Call): Array<acp.ToolCallLocation> => {
  const outside = (call.outsidePaths ?? []).map((entry) => ({ path: outsidePathOf(entry) }))
  const named = outside.length === 0 ? toolLocations(cwd, call.tool, call.args) : []
  return [...outside, ...named]
}

/** A call's locations before it is allowed: only those inside cwd (an editor following the agent opens them at once). */
const locationsBeforeDecision = (cwd: string, call: Call) => toolLocations(cwd, call.tool, call.args).filter((l) => isUnder(cwd, l.path))

/**
 * What an edit does to its file, as ACP's `diff` content, so the client shows a diff — in the call
 * and in its permission prompt — rather than the arguments as JSON. From the arguments alone (as the
 * other ACP agents do): `write_file` is the new content (`oldText: null`), `edit_file` the replaced
 * text and its replacement.
 */
export const toolDiffs = (cwd: string, tool: string, args: Json.Json): Array<acp.ToolCallContent> => {
  const edit = Edit.of(tool, args)
  return edit === undefined ? [] : [{ type: "diff", path: resolvePath(cwd, edit.path), oldText: edit.oldText, newText: edit.newText }]
}

/** A call as ACP describes it: in `tool_call` and in a permission request. */
export const toolCallOf = (cwd: string, call: Call) => {
  const diffs = toolDiffs(cwd, call.tool, call.args)
  return {
    toolCallId: call.toolCallId,
    title: toolTitle(call.tool, call.args),
    kind: toolKind(call.tool),
    rawInput: call.args,
    locations: locationsBeforeDecision(cwd, call),
    ...(diffs.length === 0 ? {} : { content: diffs })
  }
}

/** A tool call as the mapper needs to know it. */
export interface Call {
  readonly toolCallId: string
  readonly tool: string
  readonly args: Json.Json
  /** The real paths outside cwd it would touch (`permission.requested`'s), as the engine wrote them. */
  readonly outsidePaths?: ReadonlyArray<string> | undefined
}

/** The calls of a stream as the mapper needs them: each call's request, then what its `permission.requested` adds. */
export const noteCall = (calls: Map<string, Call>, event: AgentEvent.AgentEvent): void => {
  if (event.type === "model.tool_call_requested") calls.set(event.payload.toolCallId, event.payload)
  if (event.type === "permission.requested" && event.payload.outsidePaths !== undefined && event.payload.outsidePaths.length > 0) {
    const call = calls.get(event.payload.toolCallId)
    if (call !== undefined) calls.set(call.toolCallId, { ...call, outsidePaths: event.payload.outsidePaths })
  }
}

const text = (value: string): acp.ContentBlock => ({ type: "text", text: value })

const toolContent = (value: string): Array<acp.ToolCallContent> => [{ type: "content", content: text(value) }]

/** A command's output as a terminal block (Markdown, which clients render): fenced by more backticks than it holds. */
export const consoleBlock = (output: string): string => {
  const longest = Math.max(0, ...(output.match(/`+/g) ?? []).map((run) => run.length))
  const fence = "`".repeat(Math.max(3, longest + 1))
  return `${fence}console\n${output}${output.endsWith("\n") ? "" : "\n"}${fence}`
}

/**
 * A finished call's content: ACP replaces the call's content with each update's, so an edit keeps its
 * diff (the result follows it), and a command's output is a terminal block.
 */
const completedContent = (cwd: string, call: Call | undefined, result: string): Array<acp.ToolCallContent> => {
  if (call === undefined) return toolContent(result)
  if (call.tool === "shell") return toolContent(consoleBlock(result))
  return [...toolDiffs(cwd, call.tool, call.args), ...toolContent(result)]
}

/** A payload field read defensively: the compaction events are matched by their type string (see {@link compactionUpdatesOf}). */
const payloadField = (payload: unknown, name: string): unknown =>
  typeof payload === "object" && payload !== null ? (payload as Record<string, unknown>)[name] : undefined

const stringField = (payload: unknown, name: string, fallback: string): string => {
  const value = payloadField(payload, name)
  return typeof value === "string" ? value : fallback
}

/**
 * The compaction events (`compaction.started`, `session.compacted`, `compaction.failed`), matched by
 * type string so this mapper does not depend on the schema's version. A client that advertised
 * `session.compaction` gets ACP's `compaction_update` entity (in_progress, then completed with the
 * summary, or failed / cancelled with the error code); any other client may not receive it (the
 * protocol says so), and reads one `agent_thought_chunk` line per step instead.
 */
const compactionUpdatesOf = (type: string, payload: unknown, support: ClientSupport): Array<acp.SessionUpdate> | undefined => {
  const compactionId = stringField(payload, "compactionId", "compaction")
  const tokens = (name: string) => {
    const value = payloadField(payload, name)
    return typeof value === "number" ? String(value) : "?"
  }
  const thought = (value: string): Array<acp.SessionUpdate> => [{ sessionUpdate: "agent_thought_chunk", content: text(value) }]
  switch (type) {
    case "compaction.started":
      return support.compaction
        ? [{ sessionUpdate: "compaction_update", compactionId, status: "in_progress" }]
        : thought("Compacting the conversation…")
    case "session.compacted":
      return support.compaction
        ? [{ sessionUpdate: "compaction_update", compactionId, status: "completed", summary: [text(stringField(payload, "summary", ""))] }]
        : thought(`Compacted the conversation: ${tokens("tokensBefore")} → ${tokens("tokensAfter")} tokens.`)
    case "compaction.failed": {
      const errorCode = stringField(payload, "errorCode", "error")
      return support.compaction
        ? [{ sessionUpdate: "compaction_update", compactionId, status: errorCode === "cancelled" ? "cancelled" : "failed", error: errorCode }]
        : thought(`Compaction ${errorCode === "cancelled" ? "cancelled" : `failed (${errorCode})`}; the conversation is unchanged.`)
    }
    default:
      return undefined
  }
}

/**
 * The `session/update` payloads of one event, in order; most events have none (they are the
 * engine's bookkeeping). `permission.resolved {ask}` is not an update: see {@link permissionRequestOf}.
 */
export const updatesOf = (
  event: AgentEvent.AgentEvent,
  context: {
    readonly cwd: string
    readonly phase: Phase
    readonly support: ClientSupport
    /** The calls requested so far in this stream (their diffs and commands shape the results' content). */
    readonly callOf?: (toolCallId: string) => Call | undefined
    /** The session's title before this event: an event that changes it is told as `session_info_update`. */
    readonly title?: string | undefined
  }
): Array<acp.SessionUpdate> => {
  const compaction = compactionUpdatesOf(event.type, event.payload, context.support)
  if (compaction !== undefined) return compaction
  switch (event.type) {
    case "user.message": {
      const titled = titleUpdateOf(event, context.title)
      // The title first: a replayed message's images follow its text (see withImages).
      return context.phase === "replay" ? [...titled, { sessionUpdate: "user_message_chunk", content: text(event.payload.content) }] : titled
    }
    case "session.titled":
      return titleUpdateOf(event, context.title)
    case "turn.steered":
      // Not the client's own prompt (ACP has no steering request), so it is shown live too: a user message within the turn.
      return [{ sessionUpdate: "user_message_chunk", content: text(event.payload.content) }]
    case "model.delta":
      return event.payload.text === "" ? [] : [{ sessionUpdate: "agent_message_chunk", content: text(event.payload.text) }]
    case "model.thinking_delta":
      return event.payload.text === "" ? [] : [{ sessionUpdate: "agent_thought_chunk", content: text(event.payload.text) }]
    case "model.thinking_block":
      // The signature is the vendor's, for the vendor only.
      return []
    case "model.tool_call_requested":
      return [{ sessionUpdate: "tool_call", status: "pending", ...toolCallOf(context.cwd, event.payload) }]
    case "tool.started": {
      // Allowed now: where it goes, outside cwd too, which the pending call did not say (see toolCallOf).
      const call = context.callOf?.(event.payload.toolCallId)
      const locations = call === undefined ? [] : allowedLocations(context.cwd, call)
      const more = call !== undefined && JSON.stringify(locations) !== JSON.stringify(locationsBeforeDecision(context.cwd, call))
      return [{ sessionUpdate: "tool_call_update", toolCallId: event.payload.toolCallId, status: "in_progress", ...(more ? { locations } : {}) }]
    }
    case "tool.progress":
      return [{ sessionUpdate: "tool_call_update", toolCallId: event.payload.toolCallId, content: toolContent(event.payload.message) }]
    case "tool.completed":
      return [{
        sessionUpdate: "tool_call_update",
        toolCallId: event.payload.toolCallId,
        status: "completed",
        content: completedContent(context.cwd, context.callOf?.(event.payload.toolCallId), event.payload.result),
        rawOutput: {
          result: event.payload.result,
          ...(event.payload.exitCode === undefined ? {} : { exitCode: event.payload.exitCode })
        }
      }]
    case "tool.failed":
      return [{
        sessionUpdate: "tool_call_update",
        toolCallId: event.payload.toolCallId,
        status: "failed",
        content: toolContent(`${event.payload.errorCode}: ${event.payload.message}`),
        rawOutput: { errorCode: event.payload.errorCode, message: event.payload.message }
      }]
    case "compaction.started":
    case "session.compacted":
    case "compaction.failed":
      // Mapped above (by type string, whatever the client supports).
      return []
    case "subagent.started":
      return [{ sessionUpdate: "tool_call_update", toolCallId: event.payload.toolCallId, title: `task: ${shortLine(event.payload.description)}`, content: toolContent(`subagent ${event.payload.childSessionId} started`) }]
    case "subagent.progress":
      // The tree's usage so far, as the task call's progress.
      return [{ sessionUpdate: "tool_call_update", toolCallId: event.payload.toolCallId, content: toolContent(`subagent ${event.payload.childSessionId}: ${UsageText.subagentText(event.payload)}`) }]
    case "subagent.completed":
      return [{ sessionUpdate: "tool_call_update", toolCallId: event.payload.toolCallId, content: toolContent(UsageText.subagentEndText(event.payload)) }]
    case "subagent.asked":
      // Asked as a permission request of its own (see AcpPermissions), labelled with the child's task.
      return []
    case "cache.break":
      // Live only, and only to a client that shows notices (the protocol forbids them otherwise).
      return context.phase === "live" && context.support.notices
        ? [{ sessionUpdate: "notice", severity: "warning", title: "Prompt cache break", description: UsageText.cacheBreakText(event.payload) }]
        : []
    case "session.created":
    case "turn.started":
    case "context.built":
    case "mcp.tools_listed":
    case "model.retry":
    case "model.usage":
    case "permission.requested":
    case "permission.resolved":
    case "turn.completed":
      // The client learns of these otherwise (the prompt's answer, a permission request) or not at all.
      return []
    case "workspace.changed":
    case "session.rewound":
      // The files a call changed show in its diff; ACP has no rewind.
      return []
    case "followup.queued":
    case "followup.dropped":
    case "session.forked":
      // ACP has no queue nor fork; a follow-up's turn shows through its own events (its user.message on replay).
      return []
  }
}

/** `session_info_update {title}` when the event gives the session a new title (its first message, or the user's rename). */
const titleUpdateOf = (event: AgentEvent.AgentEvent, before: string | undefined): Array<acp.SessionUpdate> => {
  const title = Session.applyTitle(before, Session.titleChange(event))
  return title === undefined || title === before ? [] : [{ sessionUpdate: "session_info_update", title }]
}

/**
 * The images an event names that the client is shown: a replayed user message's (a live one is the
 * client's own prompt) and a tool result's, in order. Their bytes are in the store's blob area; the
 * agent reads them and hands them to {@link withImages}.
 */
export const imagesShown = (event: AgentEvent.AgentEvent, phase: Phase): ReadonlyArray<Image.ImageRef> => {
  if (event.type === "user.message") return phase === "replay" ? event.payload.images ?? [] : []
  if (event.type === "tool.completed") return event.payload.images ?? []
  return []
}

/** An image read for the client, or why it could not be (shown in its place as text). */
export type ShownImage =
  | { readonly _tag: "read"; readonly mediaType: string; readonly base64: string }
  | { readonly _tag: "unavailable"; readonly ref: Image.ImageRef; readonly why: string }

const imageBlock = (image: ShownImage): acp.ContentBlock =>
  image._tag === "read"
    ? { type: "image", mimeType: image.mediaType, data: image.base64 }
    : text(`[image ${image.ref.mediaType}, ${image.ref.bytes} bytes: ${image.why}]`)

/**
 * An event's updates with its images added: a user message's as `user_message_chunk`s after its
 * text, a tool result's as content after the result's own.
 */
export const withImages = (
  event: AgentEvent.AgentEvent,
  updates: Array<acp.SessionUpdate>,
  images: ReadonlyArray<ShownImage>
): Array<acp.SessionUpdate> => {
  if (images.length === 0) return updates
  if (event.type === "user.message") {
    return [...updates, ...images.map((image): acp.SessionUpdate => ({ sessionUpdate: "user_message_chunk", content: imageBlock(image) }))]
  }
  return updates.map((update) =>
    update.sessionUpdate === "tool_call_update"
      ? { ...update, content: [...(update.content ?? []), ...images.map((image): acp.ToolCallContent => ({ type: "content", content: imageBlock(image) }))] }
      : update
  )
}

/** The four answers offered for every call the policy paused; the option id is its kind. */
export const permissionOptions: ReadonlyArray<acp.PermissionOption> = [
  { optionId: "allow_once", name: "Allow", kind: "allow_once" },
  { optionId: "allow_always", name: "Always allow", kind: "allow_always" },
  { optionId: "reject_once", name: "Reject", kind: "reject_once" },
  { optionId: "reject_always", name: "Always reject", kind: "reject_always" }
]

/** Why the policy asked: the user's rule that did not cover the call (see `PermissionDecision.reason`). */
export interface Uncovered {
  readonly reason: string
  /** A command pattern that would allow the call. */
  readonly allowCommand?: string | undefined
}

/** Suggested rules longer than this are not repeated: the title shows the command once already. */
const suggestedLength = 200

/**
 * The reason as a line of the request's content: what the rule did not cover, and the rule that
 * would allow the call (a flag or settings rule of the `tool:command` form) when one can carry the
 * command line as it is.
 */
export const uncoveredText = (tool: string, uncovered: Uncovered): string => {
  const { allowCommand } = uncovered
  const suggestion = allowCommand === undefined || allowCommand.length > suggestedLength || wholeLine(allowCommand) !== allowCommand
    ? "To allow it without asking, write a rule that spells the command out; or answer here."
    : `To allow it without asking, add the rule ${wholeLine(tool)}:${allowCommand} (--allow, or an allow rule in your settings); or answer here.`
  return `Asked because ${wholeLine(uncovered.reason)}. ${suggestion}`
}

/**
 * The `session/request_permission` params for a call waiting for the user; `uncovered` (why the
 * policy asked, when the user's own rule did not cover the call) is added to the call's content.
 */
export const permissionRequestOf = (
  sessionId: string,
  cwd: string,
  call: {
    readonly toolCallId: string
    readonly tool: string
    readonly args: Json.Json
    /** A subagent's call (listed so by `pendingApprovals` after a restart): its title labelled with the subagent. */
    readonly askedBy?: { readonly sessionId: string; readonly description: string } | undefined
    /** The real paths outside cwd it would touch (`permission.requested`'s; a paused call's `OpenToolCall.outsidePaths`). */
    readonly outsidePaths?: ReadonlyArray<string> | undefined
  },
  uncovered?: Uncovered
): acp.RequestPermissionRequest => {
  const called = toolCallOf(cwd, call)
  // Where a link really leads, as the CLI's question says it: in the title, and as a line of the content.
  const outside = call.outsidePaths === undefined || call.outsidePaths.length === 0
    ? ""
    : ` (outside the working directory: ${call.outsidePaths.map((p) => FormatCharacters.shownOrQuoted(p)).join(", ")})`
  // Editors show a permission request's title and content: the reason goes after the call's own content (a diff).
  const content = [
    ...(called.content ?? []),
    ...(outside === "" ? [] : toolContent(`Outside the working directory: ${call.outsidePaths!.map((p) => FormatCharacters.shownOrQuoted(p)).join(", ")}`)),
    ...(uncovered === undefined ? [] : toolContent(uncoveredText(call.tool, uncovered)))
  ]
  const toolCall = {
    ...called,
    title: `${toolTitle(call.tool, call.args, true)}${outside}`,
    locations: allowedLocations(cwd, call),
    ...(content.length === 0 ? {} : { content })
  }
  const title = call.askedBy === undefined ? toolCall.title : `Subagent "${wholeLine(call.askedBy.description)}" (${wholeLine(call.askedBy.sessionId)}): ${toolCall.title ?? call.tool}`
  return { sessionId, toolCall: { ...toolCall, status: "pending", ...(title === undefined ? {} : { title }) }, options: [...permissionOptions] }
}

/**
 * What a loaded session shows for a paused call whose question another live process asked (it drives
 * the session: `holder`, as `SessionBusy` names it) — instead of asking this client, whose answer
 * could not reach that process's turn. The call's card (a subagent's, not in the replay, is shown
 * new) stays pending, its content ending with where to answer.
 */
export const askedElsewhereOf = (
  sessionId: string,
  cwd: string,
  call: Parameters<typeof permissionRequestOf>[2],
  holder: string
): acp.SessionUpdate => {
  const { toolCall } = permissionRequestOf(sessionId, cwd, call)
  const note = toolContent(
    `Waiting for an answer in another process: this session is driven by ${holder}, and the question was asked there — answer it in that ` +
      "editor or terminal. It is not asked here: an answer here could not reach that turn. Once that process has ended, load the session again to answer here."
  )
  const content = [...(toolCall.content ?? []), ...note]
  return call.askedBy === undefined
    ? { sessionUpdate: "tool_call_update", toolCallId: toolCall.toolCallId, status: "pending", content }
    : { sessionUpdate: "tool_call", ...toolCallOf(cwd, call), title: toolCall.title ?? call.tool, status: "pending", content }
}

/**
 * The permission request for a subagent's call (`subagent.asked`): the subagent's call, its title
 * labelled with the subagent's task and session. The answer goes to the subagent's session.
 */
export const subagentPermissionRequestOf = (
  sessionId: string,
  cwd: string,
  asked: AgentEvent.PayloadOf<"subagent.asked">,
  uncovered?: Uncovered
): acp.RequestPermissionRequest =>
  permissionRequestOf(sessionId, cwd, {
    toolCallId: asked.childToolCallId,
    tool: asked.tool,
    args: asked.args,
    outsidePaths: asked.outsidePaths,
    askedBy: { sessionId: asked.childSessionId, description: asked.description }
  }, uncovered)

/** What the user's answer means for the engine. */
export type Answer =
  | { readonly _tag: "Decided"; readonly decision: "allow" | "deny"; readonly remember: boolean }
  | { readonly _tag: "Cancelled" }

/** The engine's reading of a permission outcome; an option id we never offered is a rejection. */
export const answerOf = (outcome: acp.RequestPermissionOutcome): Answer => {
  if (outcome.outcome === "cancelled") return { _tag: "Cancelled" }
  switch (outcome.optionId) {
    case "allow_once":
      return { _tag: "Decided", decision: "allow", remember: false }
    case "allow_always":
      return { _tag: "Decided", decision: "allow", remember: true }
    case "reject_always":
      return { _tag: "Decided", decision: "deny", remember: true }
    default:
      return { _tag: "Decided", decision: "deny", remember: false }
  }
}

/** How a turn's end answers `session/prompt`. */
export type Ending =
  | { readonly _tag: "Stop"; readonly stopReason: acp.StopReason }
  | { readonly _tag: "Failed"; readonly errorCode: string }

/** `turn.completed` as the prompt's answer: a stop reason, or an error carrying the errorCode. */
export const endingOf = (payload: AgentEvent.PayloadOf<"turn.completed">): Ending => {
  switch (payload.stopReason) {
    // ACP has the stop reasons a refusal and a cut answer need: a client shows them as such.
    case "final":
      return { _tag: "Stop", stopReason: payload.finishReason === "content_filter" ? "refusal" : payload.finishReason === "length" ? "max_tokens" : "end_turn" }
    case "cancelled":
      return { _tag: "Stop", stopReason: "cancelled" }
    case "error":
      return payload.errorCode === "max_steps"
        ? { _tag: "Stop", stopReason: "max_turn_requests" }
        : { _tag: "Failed", errorCode: payload.errorCode ?? "error" }
  }
}

/**
 * A prompt's content blocks as the user message's text. Text is kept as is; a linked or embedded
 * resource becomes a mention, with an embedded text resource's content quoted after it; images go
 * with the message as images (see {@link promptImages}); audio is not advertised, so it is only named.
 */
export const promptText = (blocks: ReadonlyArray<acp.ContentBlock>): string =>
  blocks.map((block) => {
    switch (block.type) {
      case "text":
        return block.text
      case "resource_link":
        return `@${block.uri}`
      case "resource": {
        const resource = block.resource
        return "text" in resource
          ? `@${resource.uri}\n<context uri="${resource.uri}">\n${resource.text}\n</context>`
          : `@${resource.uri}`
      }
      case "image":
        return ""
      case "audio":
        return "[an audio clip was attached; this agent cannot hear audio]"
      default:
        return ""
    }
  }).filter((part) => part !== "").join("\n")

/**
 * A prompt's `image` blocks as the message's images, in order (`data` base64, `mimeType` the type the
 * client says they are: the bytes must agree). Data that is not base64 is an error message; the
 * images themselves are checked by the engine (format, size, count).
 */
export const promptImages = (blocks: ReadonlyArray<acp.ContentBlock>): Either.Either<ReadonlyArray<Image.ImageInput>, string> => {
  const images: Array<Image.ImageInput> = []
  for (const block of blocks) {
    if (block.type !== "image") continue
    if (!Image.isBase64(block.data)) return Either.left(`image #${images.length + 1}: data must be base64`)
    images.push({ data: new Uint8Array(Buffer.from(block.data, "base64")), mediaType: block.mimeType })
  }
  return Either.right(images)
}

/**
 * The MCP servers a client named in `session/new` or `session/load`, in the configuration shape
 * (`McpConfig.Servers`): stdio and HTTP servers; names made fit for tool names (`mcp__<name>__…`).
 * An SSE server, or two that end up with one name, is an error message.
 */
export const mcpServersOf = (servers: ReadonlyArray<acp.McpServer>): Either.Either<McpConfig.Servers, string> => {
  const out: Record<string, McpConfig.Server> = {}
  for (const server of servers) {
    const name = server.name.replace(/[^A-Za-z0-9_-]/g, "_").replace(/_{2,}/g, "_").slice(0, 40) || "server"
    // Own keys only: a server named `constructor` or `toString` is no duplicate of the object's prototype.
    if (Object.hasOwn(out, name)) return Either.left(`two MCP servers are named ${JSON.stringify(name)}`)
    if ("type" in server && server.type === "sse") return Either.left(`MCP server ${JSON.stringify(server.name)}: the SSE transport is not supported; use its Streamable HTTP endpoint`)
    if ("command" in server) {
      out[name] = { command: server.command, args: server.args, env: Object.fromEntries(server.env.map((v) => [v.name, v.value])) }
      continue
    }
    // The configuration files' check (an http: or https: URL): a client's `not a url` failed later as an internal error, and a `file:` one reached fetch.
    const url = Schema.decodeUnknownEither(McpConfig.Http.fields.url)(server.url)
    if (Either.isLeft(url)) return Either.left(`MCP server ${JSON.stringify(server.name)}: url ${JSON.stringify(server.url)} is not an http: or https: URL`)
    out[name] = { url: server.url, headers: Object.fromEntries(server.headers.map((h) => [h.name, h.value])) }
  }
  return Either.right(out)
}
