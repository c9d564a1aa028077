/**
 * Tools from MCP servers (`@modelcontextprotocol/sdk`), over stdio or Streamable HTTP, as a
 * `ToolRouter` — alone (`layer`) or beside the router below it, such as the workspace tools
 * (`extend`). Each server's tools appear as `mcp__<server>__<tool>` (the secrets the server's
 * configuration gives it hidden in `<tool>` first, then characters other than letters, digits, `_`
 * and `-` become `_`; a name two tools would share is an error, not a silent shadow).
 *
 * Every call goes through the permission engine like any tool: its risk is `network` (it leaves the
 * agent for another program), so the default mode asks, `acceptEdits` asks and `readOnly` denies;
 * a rule names the tool (`mcp__github__create_issue`) or the server (`mcp__github__*`). A call has
 * a time limit (default 60 s) and its result an output cap; a cancel reaches the server as
 * `notifications/cancelled`. A server that crashes, hangs or answers garbage ends the call with a
 * typed `tool.failed` (`mcp_server_failed`, `timeout`, `mcp_invalid_response`; the server's own
 * error is `tool_error`) and the turn goes on; the next call starts the server again.
 *
 * The servers are started when the layer is built (their tool lists are the tools the model is
 * offered) and stopped when its scope closes, a stdio server with every process of its process
 * group; the process the agent starts for it also dies with the agent's (the parent-death signal).
 *
 * @since 0.5.0
 */
import { createHash } from "node:crypto"
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import { type JsonObject, nestsDeeperThan } from "../domain/Json.js"
import * as Tokens from "../domain/Tokens.js"
import {
  type PreparedCall,
  unknownTool,
  type ToolCallInput,
  type ToolContext,
  type ToolDefinition,
  ToolFailure,
  type ToolOutput,
  ToolRouter
} from "../services/ToolRouter.js"
import * as McpConfig from "./mcp/McpConfig.js"
import * as McpConnection from "./mcp/McpConnection.js"
import * as McpInputSchema from "./mcp/McpInputSchema.js"
import { McpError } from "./mcp/McpConnection.js"
import * as McpNames from "./mcp/McpNames.js"
import * as Sandbox from "./workspace/Sandbox.js"
import type * as Environment from "./workspace/Environment.js"
import { alwaysHiddenEnv, bound } from "./WorkspaceTools.js"

/** A server that could not be started, listed or configured. */
export { McpError }
/** Configuration files and server shapes. */
export { McpConfig }

/** What the MCP tools run with. */
export interface Options {
  /** The servers, by name (the `mcpServers` of a configuration file). */
  readonly servers: McpConfig.Servers
  /** Where stdio servers start (default the process's current directory). */
  readonly cwd?: string | undefined
  /**
   * Where a server starts instead of `cwd`, by name (`McpSettings.load`'s `folders`: the user's own
   * servers start in the folder of the file that names them, not in the repository — a launcher
   * such as `npx` or `python -m` runs what it finds in the folder it starts in).
   */
  readonly folders?: Readonly<Record<string, string>> | undefined
  /** Names passed on from the agent's environment and fixed values, as for shell commands (`WorkspaceTools` `env`). */
  readonly env?: Environment.Options | undefined
  /** A server's own names and values in place of `env`, by name (the CLI's: a trusted project's servers get its `env`, no other server does). */
  readonly serverEnv?: Readonly<Record<string, Environment.Options>> | undefined
  /**
   * Checked before a server is started again in the session, by name (`McpSettings.Loaded.recheck`:
   * a trusted project's server starts again only while its `.mcp.json` and files are as trusted).
   */
  readonly mayStart?: Readonly<Record<string, Effect.Effect<void, { readonly message: string }>>> | undefined
  /**
   * The servers a trusted project's `.mcp.json` defined (`McpSettings.Loaded.recheck`'s names): their
   * calls are marked `projectServer`, which your allow rules for MCP tools do not cover (`PermissionPolicy`).
   */
  readonly projectServers?: ReadonlyArray<string> | undefined
  /** Variables never passed to a server (besides the provider keys, always removed) unless its own `env` sets them. */
  readonly hiddenEnv?: ReadonlyArray<string> | undefined
  /** A call's time limit (default 60 s); a server's own `timeout` (ms) comes first. */
  readonly callTimeout?: Duration.DurationInput | undefined
  /** How long a server may take to start and list its tools (default 30 s). */
  readonly connectTimeout?: Duration.DurationInput | undefined
  /** Longest result the model sees, in bytes (default 32 KiB). */
  readonly maxResultBytes?: number | undefined
  /**
   * When given, a server that cannot start or list its tools, or whose tools would take names already
   * taken, is left out and reported here, and the other servers' tools are offered; unless every
   * server failed, which fails as without it (with the first failure). Without it, any server's
   * failure fails the whole (`McpError` naming it).
   */
  readonly onServerFailed?: ((error: McpError) => Effect.Effect<void>) | undefined
  /**
   * Told of each tool left out because its input schema is not a JSON Schema a vendor takes
   * (`McpInputSchema`), or its output schema is larger than 64 KiB or nests more than 256 levels
   * (`McpConnection.maxOutputSchemaBytes`), in one line naming the server, the tool and why; once per tool and reason in
   * the session (default: a warning in Effect's log). The server's other tools are offered.
   */
  readonly onToolLeftOut?: ((note: string) => Effect.Effect<void>) | undefined
  /** The most bytes an HTTP server's answer may have, or one line of its event stream (default 16 MiB); past it the call fails `mcp_invalid_response`. */
  readonly maxAnswerBytes?: number | undefined
}

/** One server's tools as offered to the model, and their hash (what the log records). */
export interface Listing {
  readonly server: string
  readonly tools: ReadonlyArray<ToolDefinition>
  /** SHA-256 of the tools' names, descriptions and schemas. */
  readonly hash: string
  /** Estimated tokens the tools' descriptions cost in every request. */
  readonly tokens: number
  /** The server's tools not offered, by its own names, and why (`Options.onToolLeftOut`). */
  readonly leftOut: ReadonlyArray<LeftOut>
}

/** A server's tool not offered: its input schema is not a JSON Schema a vendor takes, or its output schema is past `McpConnection.maxOutputSchemaBytes`. */
export interface LeftOut {
  /** The server's own name for it, with the secrets its configuration gives it hidden. */
  readonly tool: string
  readonly reason: string
}

/** The MCP tools, with what each server offers. */
export interface McpTools {
  readonly router: ToolRouter.Service
  /** Each server's tools, in configuration order. */
  readonly listings: () => ReadonlyArray<Listing>
}


/**
 * What a stdio server runs under: the parent-death signal alone (`setpriv --pdeathsig KILL`), so the
 * process started for it dies with the agent. Not the workspace sandbox of shell commands: a server is a program the user
 * chose, and servers commonly need the network and their own caches.
 */
const parentDeath: Effect.Effect<ReadonlyArray<string>> = Effect.map(Sandbox.detect, (isolation) =>
  isolation._tag === "Workspace" ? [isolation.programs.setpriv, "--pdeathsig", "KILL", "--"] : isolation.prefix.slice(0, 4))

/** The prefix of every MCP tool's name. */
export const prefix = McpNames.prefix
/** The name a server's tool is offered under: `mcp__<server>__<tool>`, at most 64 characters. */
export const toolName = McpNames.toolName
/** Whether a name is an MCP tool's, or a rule's pattern for one (`mcp__<server>__<tool>` or `mcp__<server>__*`). */
export const isToolName = McpNames.isToolName

/** The hash of a server's tool list, as recorded. */
export const hashOf = (tools: ReadonlyArray<ToolDefinition>): string =>
  createHash("sha256").update(JSON.stringify(tools.map(({ description, inputSchema, name }) => [name, description, inputSchema]))).digest("hex")

const definitionOf = (server: string, tool: McpConnection.ServerTool): ToolDefinition => ({
  name: toolName(server, tool.shownName),
  description: tool.description,
  inputSchema: (typeof tool.inputSchema === "object" && tool.inputSchema !== null ? tool.inputSchema : { type: "object" }) as JsonObject,
  sequential: false
})

/** A tool result's content as the text the model sees. */
export const resultText = (result: CallToolResult): string => {
  const parts = (result.content ?? []).map((part) => {
    switch (part.type) {
      case "text":
        return part.text
      case "image":
      case "audio":
        return `[${part.type} ${part.mimeType}, ${Math.floor((part.data.length * 3) / 4)} bytes]`
      case "resource":
        return "text" in part.resource ? part.resource.text : `[resource ${part.resource.uri}]`
      case "resource_link":
        return `[resource ${part.uri}]`
      default:
        return ""
    }
  })
  const text = parts.filter((p) => p !== "").join("\n")
  if (text === "" && result.structuredContent !== undefined) return JSON.stringify(result.structuredContent)
  return text
}

interface Bound {
  readonly connection: McpConnection.Connection
  readonly server: string
  /** The server's own name for the tool (what a call sends). */
  readonly tool: string
  /** That name with the server's secrets hidden (what messages show). */
  readonly shownName: string
}

/**
 * The MCP tools of `options.servers`, falling back to `base` for other names. Starts every server and
 * reads its tool list; fails with `McpError` naming the server when one does not start, or when two
 * tools would have the same name. The servers stop when the scope closes.
 */
export const make = (options: Options, base?: ToolRouter.Service): Effect.Effect<McpTools, McpError, Scope.Scope> =>
  Effect.gen(function*() {
    const sandboxPrefix = yield* parentDeath
    const callTimeout = Duration.decode(options.callTimeout ?? Duration.seconds(60))
    const maxResult = options.maxResultBytes ?? 32 * 1024
    const names = Object.keys(options.servers)
    const badName = names.find((name) => !McpNames.isServerName(name))
    if (badName !== undefined) {
      return yield* new McpError({ reason: "invalid_config", message: `MCP server ${JSON.stringify(badName)}: ${McpNames.serverNameRule}` })
    }
    const connections = yield* Effect.forEach(names, (name) => {
      const server = options.servers[name]!
      return McpConnection.make({
        name,
        server,
        cwd: options.folders?.[name] ?? options.cwd ?? process.cwd(),
        env: options.serverEnv !== undefined && Object.hasOwn(options.serverEnv, name) ? options.serverEnv[name] : options.env,
        hiddenEnv: [...alwaysHiddenEnv, ...(options.hiddenEnv ?? [])],
        prefix: sandboxPrefix,
        connectTimeout: Duration.decode(options.connectTimeout ?? Duration.seconds(30)),
        callTimeout: server.timeout === undefined ? callTimeout : Duration.millis(server.timeout),
        maxAnswerBytes: options.maxAnswerBytes,
        mayStart: options.mayStart?.[name]
      })
    })
    yield* Effect.addFinalizer(() => Effect.forEach(connections, (c) => c.close, { concurrency: "unbounded", discard: true }))

    let listings: ReadonlyArray<Listing> = []
    let byName = new Map<string, Bound>()
    let definitions: ReadonlyArray<ToolDefinition> = base?.definitions ?? []
    const listedAt = new Map<string, number>()

    // Each server's tools as it described them, last read, but for those left out.
    const offered = new Map<string, ReadonlyArray<McpConnection.ServerTool>>()
    const leftOut = new Map<string, ReadonlyArray<LeftOut>>()
    // What was told (`onToolLeftOut`): a server read again after each restart is not told of again.
    const told = new Set<string>()
    const tellLeftOut = options.onToolLeftOut ?? ((note: string) => Effect.logWarning(note))

    // Servers left out (`onServerFailed`): their tools are not offered.
    const excluded = new Set<string>()

    /** Offers every server's tools, or says which server's tool would take a name already taken. */
    const build = (): { readonly server: string; readonly error: McpError } | undefined => {
      const table = new Map<string, Bound>()
      const next: Array<Listing> = []
      for (const connection of connections) {
        if (excluded.has(connection.name)) continue
        const tools = offered.get(connection.name) ?? []
        const defs: Array<ToolDefinition> = []
        for (const tool of tools) {
          const definition = definitionOf(connection.name, tool)
          const other = table.get(definition.name)
          if (other !== undefined || base?.definitions.some((d) => d.name === definition.name)) {
            return {
              server: connection.name,
              error: new McpError({
                reason: "name_collision",
                message: `MCP server "${connection.name}": its tool ${McpNames.shown(tool.shownName)} would be named ${definition.name}, as ${
                  other === undefined ? "a tool already is" : `the tool ${McpNames.shown(other.shownName)} of "${other.server}" is`
                }`
              })
            }
          }
          table.set(definition.name, { connection, server: connection.name, tool: tool.name, shownName: tool.shownName })
          defs.push(definition)
        }
        next.push({
          server: connection.name,
          tools: defs,
          hash: hashOf(defs),
          tokens: defs.length === 0 ? 0 : Tokens.estimateJson(defs.map(({ description, inputSchema, name }) => ({ name, description, inputSchema }))),
          leftOut: leftOut.get(connection.name) ?? []
        })
        listedAt.set(connection.name, connection.starts())
      }
      byName = table
      listings = next
      definitions = [...(base?.definitions ?? []), ...next.flatMap((l) => l.tools)]
      return undefined
    }
    const rebuild = Effect.suspend(() => {
      const collision = build()
      return collision === undefined ? Effect.void : Effect.fail(collision.error)
    })

    /** Reads `connection`'s tools: those whose input schema a vendor takes are offered, the others left out and told of. */
    const list = (connection: McpConnection.Connection) =>
      Effect.flatMap(connection.listTools, (tools) => {
        const kept: Array<McpConnection.ServerTool> = []
        const refused: Array<LeftOut> = []
        for (const listed of tools) {
          // Draft-04's boolean exclusive bounds as numbers first: the form every vendor takes.
          const tool = { ...listed, inputSchema: McpInputSchema.withNumericBounds(listed.inputSchema) }
          const problem = McpInputSchema.problem(tool.inputSchema)
          const reason = problem !== undefined
            ? `its input schema is not a valid JSON Schema (${problem})`
            : tool.outputSchemaBytes > McpConnection.maxOutputSchemaBytes
            ? `its output schema ${
              tool.outputSchemaBytes === Infinity ? `nests more than ${McpConnection.maxJsonDepth} levels deep` : `is larger than ${McpConnection.maxOutputSchemaBytes / 1024} KiB`
            }, past what the agent compiles to check the tool's results`
            : undefined
          if (reason === undefined) kept.push(tool)
          else refused.push({ tool: tool.shownName, reason })
        }
        offered.set(connection.name, kept)
        leftOut.set(connection.name, refused)
        const untold = refused.filter(({ reason, tool }) => !told.has(JSON.stringify([connection.name, tool, reason])))
        return Effect.forEach(untold, ({ reason, tool }) => {
          told.add(JSON.stringify([connection.name, tool, reason]))
          return tellLeftOut(`MCP server "${connection.name}": its tool ${McpNames.shown(tool)} is left out: ${reason}`)
        }, { discard: true })
      })
    const onServerFailed = options.onServerFailed
    if (onServerFailed === undefined) {
      yield* Effect.forEach(connections, list, { concurrency: "unbounded", discard: true })
      yield* rebuild
    } else {
      // One server's failure leaves the others' tools offered, as other agents do; it is reported.
      const failures = new Map<string, McpError>()
      const leaveOut = (connection: McpConnection.Connection, error: McpError) =>
        Effect.zipRight(connection.close, Effect.sync(() => {
          excluded.add(connection.name)
          failures.set(connection.name, error)
        }))
      yield* Effect.forEach(connections, (connection) => Effect.catchAll(list(connection), (error) => leaveOut(connection, error)), { concurrency: "unbounded", discard: true })
      for (let collision = build(); collision !== undefined; collision = build()) {
        yield* leaveOut(connections.find((c) => c.name === collision!.server)!, collision.error)
      }
      // In the configuration's order, whichever failed first.
      const failed = connections.flatMap((c) => failures.get(c.name) ?? [])
      if (failed.length > 0 && failed.length === connections.length) return yield* Effect.fail(failed[0]!)
      yield* Effect.forEach(failed, onServerFailed, { discard: true })
    }

    /**
     * After a call that stopped its server (a crash, a timeout, garbage), the server is started again
     * and its tools read again, so a changed list is what the next request offers (and the log
     * records); after a start by someone else, the same.
     */
    const refreshIfRestarted = (connection: McpConnection.Connection) =>
      Effect.suspend(() =>
        connection.isLive() && connection.starts() === listedAt.get(connection.name)
          ? Effect.void
          : list(connection).pipe(
            Effect.zipRight(rebuild),
            Effect.catchAll((error) => Effect.logWarning("an MCP server's tools could not be read again", error.message))
          )
      )

    /** Whether the router below answers a tool: every one not an MCP tool's, and another server's below (a session's servers over its cwd's). */
    const belowHas = (tool: string) => !tool.startsWith(prefix) || base!.definitions.some((d) => d.name === tool)

    const prepare = (call: ToolCallInput, cwd: string): Effect.Effect<PreparedCall, ToolFailure> => {
      const target = byName.get(call.tool)
      if (target === undefined) {
        return base !== undefined && belowHas(call.tool)
          ? base.prepare(call, cwd)
          : Effect.fail(unknownTool(call.tool, definitions.map((d) => d.name)))
      }
      if (typeof call.args !== "object" || call.args === null || Array.isArray(call.args)) {
        return Effect.fail(new ToolFailure({ errorCode: "invalid_arguments", message: `${call.tool} takes an object of arguments` }))
      }
      const fromProject = options.projectServers?.includes(target.server) === true
      return Effect.succeed({ ...call, risk: "network", sequential: false, paths: [], scope: call.tool, input: call.args, ...(fromProject ? { projectServer: true as const } : {}) })
    }

    const execute = (call: PreparedCall, context: ToolContext): Effect.Effect<ToolOutput, ToolFailure> => {
      const target = byName.get(call.tool)
      if (target === undefined) {
        return base !== undefined && belowHas(call.tool)
          ? base.execute(call, context)
          : Effect.fail(unknownTool(call.tool))
      }
      return target.connection.callTool(target.tool, call.input as Record<string, unknown>).pipe(
        Effect.filterOrFail(
          (result) => result.structuredContent === undefined || !nestsDeeperThan(result.structuredContent, McpConnection.maxJsonDepth),
          () => new ToolFailure({ errorCode: "mcp_invalid_response", message: `MCP server "${target.server}": its result nests more than ${McpConnection.maxJsonDepth} levels deep` })
        ),
        Effect.flatMap((result) => {
          const text = bound(target.connection.redact(resultText(result)), maxResult)
          return result.isError === true
            ? Effect.fail(new ToolFailure({ errorCode: "tool_error", message: text === "" ? `${call.tool} failed` : text }))
            : Effect.succeed({ result: text === "" ? "(no output)" : text })
        }),
        Effect.ensuring(refreshIfRestarted(target.connection))
      )
    }

    const router: ToolRouter.Service = {
      // Getters: a server started again may offer other tools, and the next request shows them.
      get definitions() {
        return definitions
      },
      prepare,
      execute,
      sources: () => [...(base?.sources?.() ?? []), ...listings.map(({ hash, server, tools }) => ({ server, tools, hash }))]
    }
    return { router, listings: () => listings }
  })

/** The MCP tools of `options.servers` as the `ToolRouter`. */
export const layer = (options: Options): Layer.Layer<ToolRouter, McpError> =>
  Layer.scoped(ToolRouter, Effect.map(make(options), (tools) => tools.router))

/**
 * The MCP tools added to the `ToolRouter` provided below this layer — for instance
 * `McpTools.extend({ servers }).pipe(Layer.provide(WorkspaceTools.layer()))`.
 */
export const extend = (options: Options): Layer.Layer<ToolRouter, McpError, ToolRouter> =>
  Layer.scoped(ToolRouter, Effect.flatMap(ToolRouter, (base) => Effect.map(make(options, base), (tools) => tools.router)))
