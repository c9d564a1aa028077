/**
 * The names MCP tools are offered under, `mcp__<server>__<tool>`, apart from the SDK so that the
 * settings loader can accept them in rules without loading it.
 *
 * @since 0.5.0
 */
import * as FormatCharacters from "../../domain/FormatCharacters.js"

/** The prefix of every MCP tool's name. */
export const prefix = "mcp__"

const sanitise = (name: string) => name.replace(/[^A-Za-z0-9_-]/g, "_")

/** The name a server's tool is offered under: `mcp__<server>__<tool>` with other characters as `_`, at most 64 characters (what both vendors accept). */
export const toolName = (server: string, tool: string): string => `${prefix}${sanitise(server)}__${sanitise(tool)}`.slice(0, 64)

/** Whether a name is an MCP tool's, or a rule's pattern for every tool of a server (`mcp__<server>__*`). */
export const isToolName = (name: string): boolean => /^mcp__[A-Za-z0-9_-]+__(?:[A-Za-z0-9_-]+|\*)$/.test(name)

/**
 * Whether a server's name can be part of tool names: 1 to 40 letters, digits, `_` or `-`, no `__`,
 * not ending in `_`. So `<server>__` is where the server's name ends in any tool name: a server
 * named `docs_` would name its tools `mcp__docs___…`, which a rule for every tool of `docs`
 * (`mcp__docs__*`) also matches — another server's tools allowed by the user's word for `docs`.
 */
export const isServerName = (name: string): boolean => /^[A-Za-z0-9_-]{1,40}$/.test(name) && !name.includes("__") && !name.endsWith("_")

/** What `isServerName` asks, for the one line that refuses a name. */
export const serverNameRule = "a server's name is 1 to 40 letters, digits, _ or - (no __, not ending in _)"

/**
 * A server's own name for its tool as messages show it (an error, `mcp list`): quoted, cut at 100
 * characters, with control and format characters (a bidi override, an escape sequence) as `\uXXXX`,
 * so that a hostile name neither runs on for 10 KB nor reorders or colours what a terminal shows.
 */
export const shown = (name: string): string =>
  FormatCharacters.escapeUnprintable(JSON.stringify(name.length <= 100 ? name : `${name.slice(0, 100)}…`))
