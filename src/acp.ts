/**
 * `effect-agent/acp`: the Agent Client Protocol agent, on `@agentclientprotocol/sdk`. A subpath of
 * its own, so that importing `effect-agent` never loads the SDK. Serve your own engine to an editor
 * with `AcpAgent.serve(AcpAgent.stdio())`, giving the engine `AcpPermissions.layer()` for the modes.
 *
 * @since 0.1.0
 */

/** The ACP agent: serves a session engine over one ACP connection. */
export * as AcpAgent from "./acp/AcpAgent.js"
/** The pure mapping from the log's events to ACP updates, permission requests and prompt answers. */
export * as AcpMapper from "./acp/AcpMapper.js"
/** Permission modes per session, switched by the client with `session/set_mode`. */
export * as AcpPermissions from "./acp/AcpPermissions.js"
