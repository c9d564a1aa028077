/**
 * Cassettes: a recorded session turned into a script for the scripted model. Each model response the
 * log holds — its text deltas and tool calls, a failure that ended it, a failed attempt the engine
 * retried — becomes one scripted response, so a session run once against a real model replays as a
 * deterministic test of your own agent: same requests answered the same way, same events.
 *
 * Read from the log alone:
 * - A response is a run of `model.delta` / `model.tool_call_requested` events; any other event ends it.
 * - `model.retry` is a failed attempt before any output: a response failing with its `errorCode`,
 *   retried after exactly the recorded wait (`retryDelayMs`), whatever the replaying engine's retry
 *   policy: the replay waits what the recording waited, so every later timestamp matches.
 * - A turn that ended with a provider's error code after output ends its last response with that
 *   failure after the chunks it had; one that ended before any output fails a response at once. A
 *   turn that ended `context_overflow` before any output is taken as the preflight (no request sent).
 * - A turn's `usage` is the sum over its responses; it is given to the turn's last response.
 * - A compaction's summary request is a response too: `session.compacted` answers with its summary,
 *   `compaction.failed` with a provider's reason that is not retried fails one at once, and
 *   `empty_summary` is a response without text; either gives its recorded usage (the summary's spend
 *   is the session's and the turn's budget's: a replay without it spent nothing).
 * - A log whose messages or tool results carry images was made with a model that takes them: the
 *   script says so (`images: true`), so the replay's requests and `read_file` results are the same.
 * - A log that used MCP servers gives the script each server's recorded tool list and answers
 *   (`mcp`, see `McpCassette`): the cassette stands in for the servers too.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import { absurd } from "effect/Function"
import type { AgentEvent, Usage } from "../domain/AgentEvent.js"
import { ProviderFailureReason, retryableReasons } from "../domain/Errors.js"
import type { Json } from "../domain/Json.js"
import type { Script, ScriptedResponse } from "./FakeModelProvider.js"
import * as McpCassette from "./mcp/McpCassette.js"

interface Response {
  chunks: Array<string>
  toolCalls: Array<{ readonly tool: string; readonly args: Json; readonly id: string }>
  failure?: NonNullable<ScriptedResponse["failure"]>
  usage?: Usage
}

const isProviderReason = (code: string | undefined): code is ProviderFailureReason =>
  code !== undefined && (ProviderFailureReason.literals as ReadonlyArray<string>).includes(code)

const encode = (response: Response): ScriptedResponse => ({
  ...(response.chunks.length === 0 ? {} : { chunks: response.chunks }),
  ...(response.toolCalls.length === 0 ? {} : { toolCalls: response.toolCalls }),
  ...(response.failure === undefined ? {} : { failure: response.failure }),
  ...(response.usage === undefined ? {} : { usage: response.usage })
})

/** The script that answers a session's model requests as its log recorded them. */
export const fromEvents = (events: Iterable<AgentEvent>): Script => {
  const logged = Array.from(events)
  const responses: Array<Response> = []
  let open: Response | undefined
  let lastOfTurn: Response | undefined
  // Whether the turn's responses recorded their own usage (`model.usage`): then its total says nothing more.
  let usagePerResponse = false
  // The model that answered (the last `model.usage` names it): the replay says it is that one, so it prices turns alike.
  let answeredBy: { provider: string; model: string } | undefined
  let images = false
  for (const event of logged) {
    switch (event.type) {
      case "user.message":
      case "tool.completed":
        // Only a model that takes images gets a tool's images: the replay's read_file must return them too.
        images ||= event.payload.images !== undefined
        break
      case "model.delta":
        open ??= pushed(responses, { chunks: [], toolCalls: [] })
        open.chunks.push(event.payload.text)
        lastOfTurn = open
        continue
      case "model.thinking_delta":
      case "model.thinking_block":
        // Thinking is the vendor's: the scripted model gives none, and it does not end the response being read.
        continue
      case "model.tool_call_requested":
        open ??= pushed(responses, { chunks: [], toolCalls: [] })
        open.toolCalls.push({ tool: event.payload.tool, args: event.payload.args, id: event.payload.toolCallId })
        lastOfTurn = open
        continue
      case "model.retry":
        if (isProviderReason(event.payload.errorCode)) {
          pushed(responses, { chunks: [], toolCalls: [], failure: { reason: event.payload.errorCode, retryDelayMs: event.payload.delayMs } })
        }
        break
      case "session.compacted":
        // With its usage: the replay's `session.compacted` says what the recording's spent (and budgets count it).
        pushed(responses, { chunks: [event.payload.summary], toolCalls: [], ...usageOf(event.payload.usage) })
        break
      case "compaction.failed": {
        const { errorCode } = event.payload
        if (errorCode === "empty_summary") pushed(responses, { chunks: [], toolCalls: [], ...usageOf(event.payload.usage) })
        else if (isProviderReason(errorCode) && errorCode !== "context_overflow" && !retryableReasons.has(errorCode)) {
          pushed(responses, { chunks: [], toolCalls: [], failure: { reason: errorCode } })
        }
        break
      }
      case "turn.started":
        lastOfTurn = undefined
        usagePerResponse = false
        break
      case "model.usage":
        // The usage of the response just read (one without text or calls is a response too).
        lastOfTurn = open ?? pushed(responses, { chunks: [], toolCalls: [] })
        lastOfTurn.usage = event.payload.usage
        usagePerResponse = true
        answeredBy = { provider: event.payload.provider, model: event.payload.model }
        break
      case "turn.completed": {
        const { errorCode, stopReason, usage } = event.payload
        if (stopReason === "error" && isProviderReason(errorCode)) {
          if (open !== undefined) {
            open.failure = { reason: errorCode, afterChunks: open.chunks.length + open.toolCalls.length }
          } else if (errorCode !== "context_overflow") {
            lastOfTurn = pushed(responses, { chunks: [], toolCalls: [], failure: { reason: errorCode } })
          }
        }
        if (usage !== undefined && lastOfTurn !== undefined && !usagePerResponse) lastOfTurn.usage = usage
        break
      }
      case "session.created":
      case "turn.steered":
      case "context.built":
      case "mcp.tools_listed":
      case "cache.break":
      case "permission.requested":
      case "permission.resolved":
      case "tool.started":
      case "tool.progress":
      case "tool.failed":
      case "followup.queued":
      case "followup.dropped":
      case "session.forked":
      case "session.titled":
      case "session.rewound":
      case "workspace.changed":
      case "compaction.started":
      case "subagent.started":
      case "subagent.progress":
      case "subagent.asked":
      case "subagent.completed":
        // Not the model's: they only end the response being read.
        break
      default:
        absurd(event)
    }
    open = undefined
  }
  const mcp = McpCassette.fromEvents(logged)
  return { responses: responses.map(encode), ...(images ? { images } : {}), ...(mcp === undefined ? {} : { mcp }), ...answeredBy }
}

/** A summary request's usage, when its event recorded one. */
const usageOf = (usage: Usage | undefined): { usage?: Usage } => usage === undefined ? {} : { usage }

const pushed = (responses: Array<Response>, response: Response): Response => {
  responses.push(response)
  return response
}

/**
 * The script of a session and of the subagents its `task` calls started, theirs included: the
 * session's responses as {@link fromEvents} gives them, and each subagent's under its task's prompt
 * (`Script.subagents`), so that a replay answers parent and subagents alike. Subagents given the
 * same prompt share one list, in the order they started: they replay exactly when they ran one
 * after the other.
 */
export const fromTree = <E, R>(
  events: ReadonlyArray<AgentEvent>,
  read: (sessionId: string) => Effect.Effect<ReadonlyArray<AgentEvent>, E, R>
): Effect.Effect<Script, E, R> =>
  Effect.gen(function*() {
    const subagents: Record<string, Array<ScriptedResponse>> = {}
    // Each session read once: a log's `childSessionId` is any id its author wrote, its own or an
    // ancestor's included, and a cycle was followed for good (memory growing with each round).
    const seen = new Set<string>(events[0] === undefined ? [] : [events[0].sessionId])
    const visit = (log: ReadonlyArray<AgentEvent>): Effect.Effect<void, E, R> =>
      Effect.forEach(log.filter((e) => e.type === "subagent.started"), (started) =>
        Effect.gen(function*() {
          const childSessionId = (started.payload as { childSessionId: string }).childSessionId
          if (seen.has(childSessionId)) return
          seen.add(childSessionId)
          const child = yield* read(childSessionId)
          const prompt = child.find((e) => e.type === "user.message")?.payload as { content: string } | undefined
          if (prompt === undefined) return
          const list = subagents[prompt.content] ??= []
          list.push(...fromEvents(child).responses)
          yield* visit(child)
        }), { discard: true })
    yield* visit(events)
    const script = fromEvents(events)
    return Object.keys(subagents).length === 0 ? script : { ...script, subagents }
  })
