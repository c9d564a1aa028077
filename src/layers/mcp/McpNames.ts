/**
 * The names MCP tools are offered under, `mcp__<server>__<tool>`, apart from the SDK so that the
 * settings loader can accept them in rules without loading it.
 *
 * @since 0.5.0
 */

/** The prefix of every MCP tool's name. */
export const prefix = "mcp__"

const sanitise = (name: string) => name.replace(/[^A-Za-z0-9_-]/g, "_")

/** The name a server's tool is offered under: `mcp__<server>__<tool>` with other characters as `_`, at most 64 characters (what both vendors accept). */
export const toolName = (server: string, tool: string): string => `${prefix}${sanitise(server)}__${sanitise(tool)}`.slice(0, 64)

/** Whether a name is an MCP tool's, or a rule's pattern for every tool of a server (`mcp__<server>__*`). */
export const isToolName = (name: string): boolean => /^mcp__[A-Za-z0-9_-]+__(?:[A-Za-z0-9_-]+|\*)$/.test(name)

/** Whether a server's name can be part of tool names: 1 to 40 letters, digits, `_` or `-`, no `__`. */
export const isServerName = (name: string): boolean => /^[A-Za-z0-9_-]{1,40}$/.test(name) && !name.includes("__")
