/**
 * A cassette standing in for MCP servers: each server's tool list as the log recorded it
 * (`mcp.tools_listed`) and the results its tools gave, read from a session's log, so a replay (a
 * test, `run --script`) binds the same tools and gets the same answers with no server process.
 *
 * The router offers each server's recorded tools (the first list the log has for it) with the
 * recorded hash, so the replay records the same `mcp.tools_listed`. A call answers the next recorded
 * result for the same tool and arguments (compared as JSON with sorted keys), in recorded order; a
 * call the recording does not have fails at once, typed (`mcp_not_recorded`, naming the call) —
 * it never waits for a server. Calls go through the permission engine as MCP calls do (risk
 * `network`, scope the tool's name). No SDK is loaded.
 *
 * @since 0.6.0
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { type AgentEvent, ListedTool } from "../../domain/AgentEvent.js"
import { Json } from "../../domain/Json.js"
import {
  type PreparedCall,
  type ToolCallInput,
  type ToolDefinition,
  ToolFailure,
  type ToolOutput,
  type ToolRouter,
  unknownTool
} from "../../services/ToolRouter.js"
import * as McpNames from "./McpNames.js"

/** One recorded call of a server's tool: its arguments and what it answered (a result, or a failure of the tool's own). */
export const RecordedCall = Schema.Struct({
  tool: Schema.String,
  args: Json,
  result: Schema.optional(Schema.String),
  failure: Schema.optional(Schema.Struct({ errorCode: Schema.String, message: Schema.String }))
})
/** One recorded call of a server's tool. */
export type RecordedCall = typeof RecordedCall.Type

/** One server as recorded: its tool list (as the model was shown it) with its hash, and its calls in order. */
export const RecordedServer = Schema.Struct({
  tools: Schema.Array(ListedTool),
  hash: Schema.String,
  calls: Schema.Array(RecordedCall)
})
/** One server as recorded. */
export type RecordedServer = typeof RecordedServer.Type

/** The MCP servers of a cassette, by name. */
export const Recording = Schema.Record({ key: Schema.String, value: RecordedServer })
/** The MCP servers of a cassette, by name. */
export type Recording = typeof Recording.Type

/** The error code of a call the cassette has no recorded answer for. */
export const notRecorded = "mcp_not_recorded"

/**
 * Failures the engine or the router gave, not the server: a replay gives them again by itself, so
 * they are not the server's answers to record.
 */
const engineCodes: ReadonlySet<string> = new Set(["permission_denied", "unknown_tool", "invalid_arguments", "blocked", "cancelled", "interrupted", notRecorded])

/** JSON with sorted keys: the same arguments are the same key whatever order the model wrote them in. */
const canonical = (value: unknown): string =>
  Array.isArray(value)
    ? `[${value.map(canonical).join(",")}]`
    : typeof value === "object" && value !== null
    ? `{${Object.keys(value).sort().map((key) => `${JSON.stringify(key)}:${canonical((value as Record<string, unknown>)[key])}`).join(",")}}`
    : JSON.stringify(value)

const keyOf = (tool: string, args: unknown) => `${tool}\u0000${canonical(args)}`

/**
 * The MCP servers of a session's log: each server's first recorded tool list, and every call of one
 * of its tools that reached it, with its result or its own failure. Undefined when the log has none.
 */
export const fromEvents = (events: Iterable<AgentEvent>): Recording | undefined => {
  const servers: Record<string, { tools: ReadonlyArray<ListedTool>; hash: string; calls: Array<RecordedCall> }> = {}
  const serverOf = new Map<string, string>()
  const requested = new Map<string, { readonly server: string; readonly tool: string; readonly args: Json }>()
  for (const event of events) {
    switch (event.type) {
      case "mcp.tools_listed":
        if (servers[event.payload.server] === undefined) {
          servers[event.payload.server] = { tools: event.payload.tools, hash: event.payload.hash, calls: [] }
          for (const tool of event.payload.tools) serverOf.set(tool.name, event.payload.server)
        }
        break
      case "model.tool_call_requested": {
        const server = serverOf.get(event.payload.tool)
        if (server !== undefined) requested.set(event.payload.toolCallId, { server, tool: event.payload.tool, args: event.payload.args })
        break
      }
      case "tool.completed": {
        const call = requested.get(event.payload.toolCallId)
        if (call !== undefined) servers[call.server]!.calls.push({ tool: call.tool, args: call.args, result: event.payload.result })
        break
      }
      case "tool.failed": {
        const call = requested.get(event.payload.toolCallId)
        if (call !== undefined && !engineCodes.has(event.payload.errorCode)) {
          servers[call.server]!.calls.push({ tool: call.tool, args: call.args, failure: { errorCode: event.payload.errorCode, message: event.payload.message } })
        }
        break
      }
      default:
        break
    }
  }
  return Object.keys(servers).length === 0 ? undefined : servers
}

/**
 * The recorded servers as a tool router, beside `base` (the workspace tools) for other names. Each
 * router answers from its own copy of the recording: calls are taken in order as they are made.
 */
export const router = (recording: Recording, base?: ToolRouter.Service): ToolRouter.Service => {
  const answers = new Map<string, Array<RecordedCall>>()
  const own = new Set<string>()
  const recordedDefinitions: Array<ToolDefinition> = []
  for (const server of Object.values(recording)) {
    for (const tool of server.tools) {
      own.add(tool.name)
      recordedDefinitions.push({ name: tool.name, description: tool.description, inputSchema: tool.inputSchema as ToolDefinition["inputSchema"], sequential: false })
    }
    for (const call of server.calls) {
      const key = keyOf(call.tool, call.args)
      answers.set(key, [...(answers.get(key) ?? []), call])
    }
  }
  const definitions = [...(base?.definitions ?? []), ...recordedDefinitions]
  const sources = Object.entries(recording).map(([server, { hash, tools }]) => ({
    server,
    hash,
    tools: tools.map((tool) => ({ name: tool.name, description: tool.description, inputSchema: tool.inputSchema as ToolDefinition["inputSchema"] }))
  }))

  const prepare = (call: ToolCallInput, cwd: string): Effect.Effect<PreparedCall, ToolFailure> => {
    if (!own.has(call.tool)) {
      return base !== undefined && !call.tool.startsWith(McpNames.prefix)
        ? base.prepare(call, cwd)
        : Effect.fail(unknownTool(call.tool, definitions.map((d) => d.name)))
    }
    if (typeof call.args !== "object" || call.args === null || Array.isArray(call.args)) {
      return Effect.fail(new ToolFailure({ errorCode: "invalid_arguments", message: `${call.tool} takes an object of arguments` }))
    }
    return Effect.succeed({ ...call, risk: "network", sequential: false, paths: [], scope: call.tool, input: call.args })
  }

  const execute: ToolRouter.Service["execute"] = (call, context): Effect.Effect<ToolOutput, ToolFailure> => {
    if (!own.has(call.tool)) {
      return base !== undefined && !call.tool.startsWith(McpNames.prefix)
        ? base.execute(call, context)
        : Effect.fail(unknownTool(call.tool))
    }
    return Effect.suspend(() => {
      const answer = answers.get(keyOf(call.tool, call.args))?.shift()
      if (answer === undefined) {
        return Effect.fail(new ToolFailure({ errorCode: notRecorded, message: `the cassette has no recorded answer for ${call.tool} ${canonical(call.args)}` }))
      }
      return answer.failure !== undefined
        ? Effect.fail(new ToolFailure(answer.failure))
        : Effect.succeed({ result: answer.result ?? "" })
    })
  }

  return { definitions, prepare, execute, sources: () => [...(base?.sources?.() ?? []), ...sources] }
}
