/**
 * One MCP server as the agent uses it: started (or connected to) on first need, its tool list read,
 * calls made with a time limit and the caller's cancellation (an interrupted call aborts the SDK's
 * request, which sends `notifications/cancelled` to the server). A server whose process exits, whose
 * connection drops, that writes what is not JSON-RPC or does not answer in time is closed; the next
 * use starts it again.
 *
 * A stdio server runs with the same environment allow-list as shell commands (`Environment`) plus
 * the configuration's `env`, under the sandbox's parent-death prefix (`Sandbox`): when the agent
 * dies, so does the process it started (not what that started in turn: `StdioTransport` stops those
 * with it, as a process group, when the agent stops the server).
 *
 * @since 0.5.0
 * @internal
 */
import { accessSync, constants } from "node:fs"
import * as NodePath from "node:path"
import { dirname, isAbsolute, relative, resolve as resolvePath } from "node:path"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import type { JsonSchemaType, JsonSchemaValidator, jsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/index.js"
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv"
import { type CallToolResult, ErrorCode, McpError as SdkError, type Tool as SdkTool } from "@modelcontextprotocol/sdk/types.js"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Json from "../../domain/Json.js"
import { ToolFailure } from "../../services/ToolRouter.js"
import * as Environment from "../workspace/Environment.js"
import * as Paths from "../workspace/Paths.js"
import * as PythonShadows from "../workspace/PythonShadows.js"
import * as BoundedFetch from "./BoundedFetch.js"
import * as McpConfig from "./McpConfig.js"
import * as McpFiles from "./McpFiles.js"
import * as McpNames from "./McpNames.js"
import * as McpSecrets from "./McpSecrets.js"
import { StdioTransport, UnreadError } from "./StdioTransport.js"

/** A server that could not be started, listed or configured; `message` is one line naming the server. */
export class McpError extends Schema.TaggedError<McpError>()("McpError", {
  reason: Schema.Literal("start_failed", "list_failed", "invalid_config", "name_collision"),
  message: Schema.String
}) {}

/** The most pages of a tool list read from one server. */
const maxPages = 100
/**
 * The most tools one server may list, and the most bytes its tools (names, descriptions, input
 * schemas as JSON) may come to. A server's list goes into every model request and into the log: a
 * list past these is refused (`list_failed`), not sent, since alone it passes any model's context
 * or request size (Anthropic's is 32 MB) and every later request of the session would fail.
 */
export const maxTools = 1000
export const maxListBytes = 1024 * 1024

/**
 * The largest output schema a tool may have (its JSON's bytes): checking the tool's results compiles
 * it (Ajv generates code for it, synchronously, on the agent's thread), and compiling grows with the
 * schema — one of 0.87 MB took 13–18 s (`McpInputSchema`'s measures). A tool past it is left out
 * (`McpTools.Options.onToolLeftOut`), as one whose input schema no vendor takes.
 */
export const maxOutputSchemaBytes = 64 * 1024

/** The longest tool description kept (a server's text goes into every request and into the log). */
export const maxDescriptionChars = 4096
const capped = (description: string): string =>
  description.length <= maxDescriptionChars ? description : `${description.slice(0, maxDescriptionChars)}… (description cut at ${maxDescriptionChars} characters)`

/**
 * The deepest nesting kept of what a server sends to be written out again (a tool's input schema, a
 * result's `structuredContent`): far deeper than any schema or result needs, far below what
 * `JSON.stringify` — which recurses — can write. JSON.parse reads a value nested 200,000 deep, and
 * writing it again threw `RangeError` from where it was hashed or shown: a hostile server's list
 * ended the run with "unexpected error".
 */
export const maxJsonDepth = 256

/** A tool as a server describes it: its own name, description and input schema. */
export interface ServerTool {
  /** The server's own name for it: what a call sends, never shown or offered as it is. */
  readonly name: string
  /**
   * `name` with the secrets the server's configuration gives it hidden (`McpSecrets`): what the tool
   * is offered under (`McpNames.toolName`) and named in messages. A name is text of the server's as
   * a description is: a server that names a tool after its key put the key into every request.
   */
  readonly shownName: string
  readonly description: string
  readonly inputSchema: Readonly<Record<string, unknown>>
  /**
   * The bytes of its output schema as JSON (0: none), `Infinity` for one nesting deeper than
   * `maxJsonDepth`: what checking its results would compile (`lazyOutputValidator`).
   */
  readonly outputSchemaBytes: number
}

/** How a connection is made and used. */
export interface Options {
  readonly name: string
  readonly server: McpConfig.Server
  /** Where a stdio server starts. */
  readonly cwd: string
  /** What the user passes on to commands (and so to servers) besides the default allow-list. */
  readonly env?: Environment.Options | undefined
  /** The agent's own environment, the source of what is passed on (default `process.env`). */
  readonly sourceEnv?: Readonly<Record<string, string | undefined>> | undefined
  readonly hiddenEnv?: ReadonlyArray<string> | undefined
  readonly prefix: ReadonlyArray<string>
  readonly connectTimeout: Duration.Duration
  readonly callTimeout: Duration.Duration
  /** The most bytes of one answer of an HTTP server (default `BoundedFetch.maxAnswerBytes`). */
  readonly maxAnswerBytes?: number | undefined
  /**
   * Checked before the server is started again (after a crash, a timeout): a project's server runs
   * the workspace's files as they are then, so it starts again only while they are as trusted
   * (`McpSettings.Loaded.recheck`). Its failure's message says why.
   */
  readonly mayStart?: Effect.Effect<void, { readonly message: string }> | undefined
}

interface Live {
  readonly client: Client
  /** Completed when the transport closes or errs: a call in flight fails at once instead of waiting for its timeout. */
  readonly broken: Deferred.Deferred<string>
}

/** A connection that starts its server when needed. */
export interface Connection {
  readonly name: string
  /** Starts the server if it is not running and reads its tool list. */
  readonly listTools: Effect.Effect<ReadonlyArray<ServerTool>, McpError>
  /** Calls a tool by the server's own name; a failure is a typed `ToolFailure`, never a defect. */
  readonly callTool: (tool: string, args: Record<string, unknown>) => Effect.Effect<CallToolResult, ToolFailure>
  /** How many times the server was started (or connected to). */
  readonly starts: () => number
  /** Whether the server is running (or connected) now. */
  readonly isLive: () => boolean
  /** Stops the server. */
  readonly close: Effect.Effect<void>
  /** `text` (a result of one of its tools) with the secrets its configuration gives it hidden (`McpSecrets`). */
  readonly redact: (text: string) => string
}

/**
 * What `server` runs: the program found — a command with a `/` as it is, a bare one in the real
 * folders of its `PATH` (`McpFiles.searchFolders`, those through `/proc` or `/dev` never searched)
 * and spawned by that absolute path — and that `PATH`, or why it cannot start. Never the bare name:
 * the child, started in the server's folder, would search its `PATH` itself, and `/proc/self/cwd/bin`
 * would mean the project there (review 64a). A program that is the project's file (by real path)
 * reached through a name trust does not bind (a link outside it, the agent's own `PATH`) is
 * refused: only the names `McpFiles.pathCandidates` gives — a `PATH` folder of the server's `env`,
 * an absolute command, by real path — and a relative command are bound.
 */
const programOf = (server: McpConfig.Stdio, cwd: string, path: string | undefined): { readonly program: string; readonly path: string | undefined } | string => {
  const { folders } = McpFiles.searchFolders(path)
  const searched = path === undefined ? undefined : folders.join(NodePath.delimiter)
  const executable = (file: string) => {
    try {
      accessSync(file, constants.X_OK)
      return true
    } catch {
      return false
    }
  }
  const program = server.command.includes("/")
    ? resolvePath(cwd, server.command)
    : folders.map((folder) => resolvePath(folder, server.command)).find(executable)
  if (program === undefined || !executable(program)) return "was not found"
  const real = McpFiles.realPath(program)
  if (real === undefined) return "leads through /proc or /dev, which name another process's folders in the server"
  const project = McpFiles.realPath(resolvePath(cwd)) ?? cwd
  const bound = (server.command.includes("/") && !isAbsolute(server.command)) ||
    (McpFiles.pathCandidates(server).includes(program) && isInside(project, McpFiles.realPath(dirname(program)) ?? program))
  if (isInside(project, real) && !bound) return `is the project's ${JSON.stringify(relative(project, real))}, reached through a link or a PATH trust does not cover; name it in the command`
  // The program `env` runs in turn, looked up in the `PATH` it searches (the one given the server, or its own `PATH=`): a project's file bound by no name is refused (mend65trust).
  const ran = McpFiles.envProgram(server)
  if (ran !== undefined) {
    const lookup = ran.own ? McpFiles.searchFolders(ran.path ?? "/bin:/usr/bin").folders : folders
    const found = lookup.map((folder) => resolvePath(folder, ran.program)).find(executable)
    const foundReal = found === undefined ? undefined : McpFiles.realPath(found)
    if (found !== undefined && foundReal !== undefined && isInside(project, foundReal) && !McpFiles.pathCandidates(server).includes(found)) {
      return `runs ${JSON.stringify(ran.program)} through env, which is the project's ${JSON.stringify(relative(project, foundReal))}, in a PATH trust does not cover; name it in the command`
    }
  }
  return { program: server.command.includes("/") ? server.command : program, path: searched }
}

const isInside = (parent: string, child: string) => Paths.isInside(NodePath, parent, child)

/** The words python reads for `server`, through `env`, `uv run`, `poetry run` (`McpFiles.programLines`: trust reads a launch alike). */
const pythonLines = McpFiles.pythonLines

/** The module `python args` runs (`-m x`, `-Bm x`, `-mx`), if it runs one. */
const moduleOf = McpFiles.pythonModule

/**
 * Whether `server` runs a Python that would put the folder it starts in first on `sys.path` for a
 * module that is not there (`python3 -m mcp_server_fetch`, `python3 -c …`): a file the project has
 * at its root named like a standard module (`argparse.py`, `json/`), made after trust, would run in
 * its place (the shell's commands ask for it, `PythonShadows`). `PYTHONSAFEPATH=1` (Python 3.11+;
 * an older Python ignores it, and the folder stays on the path) leaves it off. Python's options are
 * read as Python reads them (`PythonShadows.pythonStart`: `-W ignore -m x`, `-X utf8 -m x`, `-Bm x`,
 * `-Ic`), through `env`, `uv run` and `poetry run` (review 64a). Not set for every server: for
 * `python3 tools/server.py` it leaves the script's own folder off the path, and its imports of its
 * neighbours fail — nor when the module is the project's own (`-m tools.server` with a `tools/`
 * there): that needs the folder, and it is the project's code trust covers already.
 */
const startsFromFolder = (server: McpConfig.Stdio, cwd: string): boolean =>
  pythonLines(server).some((args) => {
    if (!PythonShadows.startsFromFolder(args, false)) return false
    const top = (moduleOf(args) ?? "").split(".")[0]!
    return top === "" || !existsIn(cwd, [top, `${top}.py`])
  })

/**
 * The arguments of `server` with `PYTHONSAFEPATH=1` among `env`'s own assignments when its `env`
 * clears the environment or that variable (`env -i python3 -m x`, `env -u PYTHONSAFEPATH …`): the
 * value the server was given would not reach python, which would put the project first on
 * `sys.path` again (mend65trust). Its own `PYTHONSAFEPATH=` assignment is kept as written.
 */
const keptSafePath = (server: McpConfig.Stdio): ReadonlyArray<string> => {
  const args = server.args ?? []
  const env = McpFiles.envLine(server.command, args)
  if (env === undefined || !(env.clears || env.unset.includes("PYTHONSAFEPATH"))) return args
  if (env.assignments.some((word) => word.startsWith("PYTHONSAFEPATH="))) return args
  return [...args.slice(0, env.programAt), "PYTHONSAFEPATH=1", ...args.slice(env.programAt)]
}

const existsIn = (folder: string, names: ReadonlyArray<string>): boolean =>
  names.some((name) => {
    try {
      accessSync(resolvePath(folder, name))
      return true
    } catch {
      return false
    }
  })

/**
 * The environment of `options`' stdio server: the allow-list's (`Environment`) and its `env`. Git
 * told to use a bare repository only when named, as for shell commands: a server that runs git in
 * a clone (a git server, a linter) would otherwise run a committed bare repository's config.
 */
const envOf = (options: Options, server: McpConfig.Stdio): Record<string, string> => ({
  ...Environment.build(options.sourceEnv ?? process.env, { ...options.env, hidden: options.hiddenEnv ?? [], cwd: options.cwd }),
  ...server.env
})

/** The transport for `options`' server; for a stdio server, its environment (`envOf`) and what it runs (`programOf`). */
const transportOf = (options: Options, stdio?: { readonly env: Record<string, string>; readonly program: string; readonly path: string | undefined }): Transport => {
  const { server } = options
  if (McpConfig.isStdio(server) && stdio !== undefined) {
    const merged = { ...stdio.env }
    // The `PATH` searched, as searched: its absolute folders by real path, none through `/proc` or
    // `/dev` — what the server runs by name in turn is looked up where its program was (review 64a).
    if (stdio.path !== undefined) merged.PATH = stdio.path
    const safePath = server.env?.PYTHONSAFEPATH === undefined && startsFromFolder(server, options.cwd)
    if (safePath) merged.PYTHONSAFEPATH = "1"
    const [command, ...args] = [...options.prefix, stdio.program, ...(safePath ? keptSafePath(server) : server.args ?? [])]
    return new StdioTransport({ command: command!, args, env: Environment.withSafeGit(merged), cwd: options.cwd })
  }
  const http = server as McpConfig.Http
  return new StreamableHTTPClientTransport(new URL(http.url), { requestInit: { headers: { ...http.headers } }, fetch: BoundedFetch.make(options.maxAnswerBytes) })
}

const clientInfo = { name: "effect-agent", version: "0.5.0" }

/**
 * The SDK client's checker of tools' output schemas, compiling a tool's schema at its first result
 * that has one to check, not when the list is read. The SDK's own (Ajv) compiled every listed tool's
 * `outputSchema` inside `listTools`, synchronously, before the agent saw the list — so before its
 * bounds (`maxTools`, `maxListBytes`, which never counted output schemas) could refuse it, and past
 * the start-up limit (a timeout cannot stop synchronous work): a server listing 10,000 tools with
 * output schemas held the agent's event loop for the whole compile, and a schema Ajv refuses failed
 * the whole list. Now a listing costs reading it; a call compiles its own tool's schema once (its
 * failure fails that call, `tool_error`, as a result that does not match does). Ajv itself is made at
 * the first compile: a server whose tools have no output schema never pays for it.
 */
export const lazyOutputValidator = (): jsonSchemaValidator => {
  let ajv: AjvJsonSchemaValidator | undefined
  return {
    getValidator: <T>(schema: JsonSchemaType): JsonSchemaValidator<T> => {
      let compiled: JsonSchemaValidator<T> | undefined
      return (input) => {
        compiled ??= (ajv ??= new AjvJsonSchemaValidator()).getValidator<T>(schema)
        return compiled(input)
      }
    }
  }
}

/** An error's first line, its secrets hidden before it is cut (a cut secret would show its start). */
const describeError = (error: unknown, secrets: ReadonlyArray<string>): string =>
  McpSecrets.redact((error instanceof Error ? error.message : String(error)).split("\n")[0]!, secrets).slice(0, 300)

/**
 * `request`, or a failure `onBroken(why)` as soon as `broken` is done (the transport closed or
 * erred: a cut answer, an event past its cap) — not at the request's time limit: the SDK leaves a
 * request whose answer broke off waiting for an answer that never comes. Both sides interruptible,
 * as `Effect.timeout`'s sleep is: in an uninterruptible region (a server listed again from a call's
 * `ensuring`) a race waited for its loser, which never ended.
 */
const unlessBroken = <E2>(broken: Deferred.Deferred<string>, onBroken: (why: string) => E2) => <A, E>(request: Effect.Effect<A, E>): Effect.Effect<A, E | E2> =>
  Effect.raceFirst(Effect.interruptible(request), Effect.interruptible(Effect.flatMap(Deferred.await(broken), (why) => Effect.fail(onBroken(why)))))

/** A connection to the server `options` names; nothing starts until it is used. */
export const make = (options: Options): Effect.Effect<Connection> =>
  Effect.gen(function*() {
    const lock = yield* Effect.makeSemaphore(1)
    let live: Live | undefined
    let starts = 0
    const secrets = McpSecrets.of(options.server)
    const described = (error: unknown) => describeError(error, secrets)
    const redact = (text: string) => McpSecrets.redact(text, secrets)

    const drop = (current: Live) =>
      Effect.promise(() => current.client.close().catch(() => undefined)).pipe(
        Effect.zipRight(Effect.sync(() => {
          if (live === current) live = undefined
        }))
      )

    const start = Effect.gen(function*() {
      const { server } = options
      if (starts > 0 && options.mayStart !== undefined) {
        yield* Effect.mapError(options.mayStart, (error) => new McpError({ reason: "start_failed", message: `MCP server "${options.name}" was not started again: ${error.message}` }))
      }
      const env = McpConfig.isStdio(server) ? envOf(options, server) : {}
      const launch = McpConfig.isStdio(server) ? programOf(server, options.cwd, env.PATH) : undefined
      if (typeof launch === "string") {
        return yield* new McpError({ reason: "start_failed", message: `MCP server "${options.name}": ${JSON.stringify((server as McpConfig.Stdio).command)} ${launch}` })
      }
      const broken = yield* Deferred.make<string>()
      const client = new Client(clientInfo, { capabilities: {}, jsonSchemaValidator: lazyOutputValidator() })
      const transport = transportOf(options, launch === undefined ? undefined : { env, ...launch })
      client.onclose = () => Deferred.unsafeDone(broken, Effect.succeed("the server closed the connection"))
      // Only the transport's errors (a line that is not JSON-RPC, one past its bound, a stream
      // that broke) end the connection; set before `connect`, which calls this before the client's
      // own. The client's onerror also reports what the spec tells a client to ignore — a response
      // to a request it cancelled, progress for a token it no longer has — and a server that
      // answered a cancelled call late failed the next call, which found the connection broken.
      transport.onerror = (error) =>
        Deferred.unsafeDone(broken, Effect.succeed(error instanceof UnreadError ? described(error) : `the server sent what is not MCP (${described(error)})`))
      starts++
      const timedOut = () => new McpError({ reason: "start_failed", message: `MCP server "${options.name}" did not start: timed out after ${Duration.format(options.connectTimeout)}` })
      yield* Effect.tryPromise({
        // As a listing's pages: the SDK's own timer (real time) is given the limit too, but the
        // limit is the Effect timeout below, on the Clock — a `TestClock` moves it.
        try: (signal) => client.connect(transport, { signal, timeout: Duration.toMillis(options.connectTimeout) }),
        catch: (error) =>
          error instanceof SdkError && error.code === ErrorCode.RequestTimeout
            ? timedOut()
            : new McpError({ reason: "start_failed", message: `MCP server "${options.name}" did not start: ${described(error)}` })
      }).pipe(
        unlessBroken(broken, (why) => new McpError({ reason: "start_failed", message: `MCP server "${options.name}" did not start: ${why}` })),
        Effect.timeoutFail({ duration: options.connectTimeout, onTimeout: timedOut }),
        Effect.tapError(() => Effect.promise(() => client.close().catch(() => undefined)))
      )
      const current: Live = { client, broken }
      live = current
      return current
    })

    // Once `close` ran, nothing starts the server again: a turn that still holds the router (taken at
    // its start) would start a process outside any scope, which nothing stops (review 65a).
    let closed = false
    const connected = lock.withPermits(1)(Effect.suspend(() =>
      live !== undefined
        ? Effect.succeed(live)
        : closed
        ? Effect.fail(new McpError({ reason: "start_failed", message: `MCP server "${options.name}": the session's servers were stopped` }))
        : start
    ))

    const listTools = Effect.gen(function*() {
      const current = yield* connected
      const tools: Array<ServerTool> = []
      let pages = 0
      let listBytes = 0
      const read = () => `${tools.length} tool${tools.length === 1 ? "" : "s"} on ${pages} page${pages === 1 ? "" : "s"} read`
      const timedOut = () =>
        new McpError({
          reason: "list_failed",
          message: `MCP server "${options.name}" did not list its tools: timed out after ${Duration.format(options.connectTimeout)} (${read()})`
        })
      const pagesRead = Effect.gen(function*() {
        let cursor: string | undefined
        do {
          const page = yield* Effect.tryPromise({
            // The SDK times each request itself (60 s unless told): given the whole list's limit, a
            // page never ends before the list's bound below does.
            try: (signal) => current.client.listTools(cursor === undefined ? {} : { cursor }, { signal, timeout: Duration.toMillis(options.connectTimeout) }),
            catch: (error) =>
              error instanceof SdkError && error.code === ErrorCode.RequestTimeout
                ? timedOut()
                : new McpError({ reason: "list_failed", message: `MCP server "${options.name}" did not list its tools: ${described(error)}` })
          })
          const deep = page.tools.find((t: SdkTool) => Json.nestsDeeperThan(t.inputSchema, maxJsonDepth))
          if (deep !== undefined) {
            return yield* new McpError({
              reason: "list_failed",
              message: `MCP server "${options.name}": the input schema of its tool ${McpNames.shown(redact(deep.name))} nests more than ${maxJsonDepth} levels deep`
            })
          }
          for (const t of page.tools as ReadonlyArray<SdkTool>) {
            // The server's secrets hidden before the description is cut (a cut secret would show its
            // start) and before anything is counted or hashed: a server that writes its key into its
            // help put it into every request and into `mcp.tools_listed`; its name alike (`shownName`).
            const tool: ServerTool = {
              name: t.name,
              shownName: redact(t.name),
              description: capped(redact(t.description ?? "")),
              inputSchema: McpSecrets.redactJson(t.inputSchema, secrets),
              outputSchemaBytes: t.outputSchema === undefined
                ? 0
                : Json.nestsDeeperThan(t.outputSchema, maxJsonDepth)
                ? Infinity
                : Buffer.byteLength(JSON.stringify(t.outputSchema))
            }
            listBytes += Buffer.byteLength(tool.name) + Buffer.byteLength(tool.description) + Buffer.byteLength(JSON.stringify(tool.inputSchema ?? {}))
            const refused = tools.length >= maxTools
              ? `lists more than ${maxTools} tools`
              : listBytes > maxListBytes
              ? `lists more than 1 MiB of tools (names, descriptions and input schemas) at its tool ${McpNames.shown(tool.shownName)}`
              : undefined
            if (refused !== undefined) {
              return yield* new McpError({ reason: "list_failed", message: `MCP server "${options.name}" ${refused}: every model request would carry them` })
            }
            tools.push(tool)
          }
          cursor = page.nextCursor
          // A server that pages forever (empty pages included) is refused, not listed forever.
          if (cursor !== undefined && ++pages >= maxPages) {
            return yield* new McpError({ reason: "list_failed", message: `MCP server "${options.name}" listed more than ${maxPages} pages of tools (${read()})` })
          }
        } while (cursor !== undefined)
        return tools
      })
      // The start-up limit is for the whole list, not each page: a server that pages slowly (each
      // page just inside the limit) held the session's start for 100 pages of it, 50 minutes. On the
      // Clock (it read `Date.now()` before): a `TestClock` moves it. Whatever ends the listing but its
      // end drops the connection: the next use starts the server again. A connection that breaks
      // (a cut answer) ends it at once, as a call: before, it waited the whole limit.
      return yield* pagesRead.pipe(
        unlessBroken(current.broken, (why) => new McpError({ reason: "list_failed", message: `MCP server "${options.name}" did not list its tools: ${why} (${read()})` })),
        Effect.timeoutFail({ duration: options.connectTimeout, onTimeout: timedOut }),
        Effect.tapError(() => drop(current))
      )
    })

    const failure = (errorCode: string, message: string) => new ToolFailure({ errorCode, message: `MCP server "${options.name}": ${message}` })

    const callTool = (tool: string, args: Record<string, unknown>) =>
      Effect.gen(function*() {
        const current = yield* connected.pipe(Effect.mapError((error) => failure("mcp_server_failed", error.message.replace(/^MCP server "[^"]*":? ?/, ""))))
        const call = Effect.tryPromise({
          try: (signal) => current.client.callTool({ name: tool, arguments: args }, undefined, { signal, timeout: Duration.toMillis(options.callTimeout) }),
          catch: (error) => error
        })
        const outcome = yield* Effect.either(call).pipe(unlessBroken(current.broken, (why) => ({ _tag: "Broken" as const, why })), Effect.merge)
        if ("_tag" in outcome && outcome._tag === "Broken") {
          yield* drop(current)
          return yield* failure(outcome.why.startsWith("the server sent what is not MCP") ? "mcp_invalid_response" : "mcp_server_failed", `${outcome.why}; it is started again on the next call`)
        }
        if (outcome._tag === "Right") return outcome.right as CallToolResult
        const error = outcome.left
        if (error instanceof SdkError && error.code === ErrorCode.RequestTimeout) {
          // A server that did not answer in time may be stuck: the next call gets a fresh one.
          yield* drop(current)
          return yield* failure("timeout", `the tool did not answer within ${Duration.format(options.callTimeout)} (the call was cancelled; the server is started again on the next call)`)
        }
        if (error instanceof SdkError && error.code === ErrorCode.ConnectionClosed) {
          yield* drop(current)
          return yield* failure("mcp_server_failed", "the server closed the connection; it is started again on the next call")
        }
        // The server's own error answer (a JSON-RPC error): the tool failed, the server is fine.
        if (error instanceof SdkError) return yield* failure("tool_error", described(error))
        // A result that does not have the shape of a tool result (the SDK's schema refused it).
        return yield* failure("mcp_invalid_response", "the server answered with something that is not a tool result")
      })

    const close = lock.withPermits(1)(Effect.suspend(() => {
      closed = true
      return live === undefined ? Effect.void : drop(live)
    }))

    return { name: options.name, listTools, callTool, starts: () => starts, isLive: () => live !== undefined, close, redact } satisfies Connection
  })
