/**
 * `effect-agent/mcp`: tools from MCP servers, on `@modelcontextprotocol/sdk`. A subpath of its own,
 * so that importing `effect-agent` never loads the SDK. Serve a server's tools beside the workspace
 * tools with `McpTools.extend({ servers }).pipe(Layer.provide(WorkspaceTools.layer()))`.
 *
 * @since 0.5.0
 */

/** MCP servers' tools as a `ToolRouter`: `layer`, `extend`, `make`; names, hashes and result text. */
export * as McpTools from "./layers/McpTools.js"
/** MCP configuration files: the `{"mcpServers": {…}}` shape, parsed with one-line errors. */
export * as McpConfig from "./layers/mcp/McpConfig.js"
