/**
 * MCP server configuration in the shape most agents read (`.mcp.json`, `--mcp-config`):
 * `{"mcpServers": {"<name>": {"command", "args", "env"} | {"url", "headers"}}}`. A `type` of
 * `"stdio"` or `"http"` (`"streamable-http"`) may say which; `"sse"` (the transport MCP replaced)
 * is refused with a clear line. Unknown keys are errors, so a misspelt `"arg"` is not silently
 * nothing.
 *
 * @since 0.5.0
 */
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import * as Address from "../../domain/Address.js"
import * as SettingsFile from "../settings/SettingsFile.js"
import * as McpNames from "./McpNames.js"
import * as McpSecrets from "./McpSecrets.js"

/**
 * A record's key: any string but `__proto__`, which decoding into a record made the record's
 * prototype — an entry of that name (a server, an env variable, a header) was silently dropped.
 * It is refused as a key the record does not take.
 */
const Key = Schema.String.pipe(Schema.filter((key) => key !== "__proto__", { message: () => "\"__proto__\" is not a name" }))

const Strings = Schema.Record({ key: Key, value: Schema.String })

/** A server's calls' time limit in milliseconds (`"timeout"`, as other agents name it), instead of `McpTools`' `callTimeout`. */
const Timeout = Schema.optional(Schema.Int.pipe(Schema.between(1, 24 * 60 * 60 * 1000)))

/** A server the agent starts as a subprocess and talks to over its stdin/stdout. */
export const Stdio = Schema.Struct({
  type: Schema.optional(Schema.Literal("stdio")),
  command: Schema.String.pipe(Schema.minLength(1)),
  args: Schema.optional(Schema.Array(Schema.String)),
  /** Variables set for the server, on top of the allow-listed environment shell commands get. */
  env: Schema.optional(Strings),
  timeout: Timeout
})
/** A server the agent starts as a subprocess. */
export type Stdio = typeof Stdio.Type

/** A server reached over Streamable HTTP. */
export const Http = Schema.Struct({
  type: Schema.optional(Schema.Literal("http", "streamable-http")),
  url: Schema.String.pipe(
    Schema.filter((url) => {
      try {
        const protocol = new URL(url).protocol
        return protocol === "http:" || protocol === "https:" || "an MCP server's url is http: or https:"
      } catch {
        return "not a URL"
      }
    })
  ),
  /** Headers sent with every request (e.g. `Authorization`); never recorded in the log. */
  headers: Schema.optional(Strings),
  timeout: Timeout
})
/** A server reached over Streamable HTTP. */
export type Http = typeof Http.Type

/** The keys a refused server has, for its message: a misspelt one (`comand`) is then named. */
const givenKeys = (actual: unknown): string => {
  if (typeof actual !== "object" || actual === null || Array.isArray(actual)) return ""
  const keys = Object.keys(actual)
  return keys.length === 0 ? ", not {}" : `, not {${keys.slice(0, 10).map((key) => JSON.stringify(key.slice(0, 40))).join(", ")}}`
}

/** The field of a refused server whose entries name `__proto__` (see `Key`), for its message. */
const protoField = (actual: unknown): string | undefined =>
  typeof actual !== "object" || actual === null ? undefined : ["env", "headers"].find((field) => {
    const entries = (actual as Record<string, unknown>)[field]
    return typeof entries === "object" && entries !== null && Object.hasOwn(entries, "__proto__")
  })

/** One configured server. */
export const Server = Schema.Union(Stdio, Http).annotations({
  message: (issue) => ({
    message: typeof issue.actual === "object" && issue.actual !== null && (issue.actual as { type?: unknown }).type === "sse"
      ? "the \"sse\" transport is not supported: use the server's Streamable HTTP endpoint (type \"http\")"
      : protoField(issue.actual) !== undefined ? `${protoField(issue.actual)}: "__proto__" is not a name`
      : `a server is {"command", "args"?, "env"?} or {"url", "headers"?}${givenKeys(issue.actual)}`,
    override: true
  })
})
/** One configured server. */
export type Server = typeof Server.Type

/** The servers by name, as a request or a configuration file gives them (no `__proto__` name). */
export const ServersByName = Schema.Record({ key: Key, value: Server })

/** A configuration file. */
export const File = Schema.Struct({
  mcpServers: ServersByName.pipe(
    Schema.filter((servers) => {
      const bad = Object.keys(servers).find((name) => !McpNames.isServerName(name))
      return bad === undefined ? undefined : { path: [bad], message: McpNames.serverNameRule }
    })
  )
})
/** A configuration file. */
export type File = typeof File.Type

/** The servers a configuration names, by name. */
export type Servers = Readonly<Record<string, Server>>

/** Whether a server is started as a subprocess. */
export const isStdio = (server: Server): server is Stdio => "command" in server

/** Parses a configuration file's text; the error is one line naming `shown` and the entry. */
export const parse = (text: string, shown: string): Either.Either<File, string> => SettingsFile.parse(File, text, shown)

/** The servers in `later` replace those of the same name in `earlier`. */
export const merge = (...sources: ReadonlyArray<Servers | undefined>): Servers => Object.assign({}, ...sources.filter((s) => s !== undefined))

/**
 * Variables that make a program load code from the folders or files they name: Python's, node's,
 * the dynamic linker's, Perl's, Ruby's. A project's server whose `env` points one into the project is
 * refused (`McpFiles.refusals`); the summary shows their values (`describe`).
 */
export const loaderVariables: ReadonlySet<string> = new Set([
  "PYTHONPATH",
  "PYTHONHOME",
  "PYTHONUSERBASE",
  "NODE_PATH",
  "NODE_OPTIONS",
  "LD_PRELOAD",
  "LD_LIBRARY_PATH",
  "PERL5LIB",
  "PERLLIB",
  "PERL5OPT",
  "RUBYLIB",
  "RUBYOPT"
])

/**
 * One line saying what a server is, for summaries (the trust prompt, `mcp` listings): its program and
 * arguments, or its URL without its userinfo, query values, token-like path segments or fragment
 * (`Address.redacted`: a token in them); never its headers' values, nor its env's but those of the
 * variables that choose what code it loads (`loaderVariables`: `PYTHONPATH="/opt/lib"`), their
 * secrets hidden (`McpSecrets`).
 */
export const describe = (name: string, server: Server): string =>
  isStdio(server)
    ? `${name}: runs ${JSON.stringify([server.command, ...(server.args ?? [])].join(" "))}${
      server.env === undefined || Object.keys(server.env).length === 0 ? "" : ` with ${
        Object.entries(server.env).map(([key, value]) =>
          loaderVariables.has(key) ? `${key}=${JSON.stringify(McpSecrets.redact(value, McpSecrets.of(server)))}` : key
        ).join(", ")
      } set`
    }`
    : `${name}: connects to ${JSON.stringify(Address.redacted(server.url))}${server.headers === undefined ? "" : ` with headers ${Object.keys(server.headers).join(", ")}`}`
