/**
 * `effect-agent/server`: the HTTP + SSE server of CONTRACT.md §7.1 and the web session viewer of
 * §7.3, on `@effect/platform`'s `HttpApi`. A subpath of its own, so that importing `effect-agent`
 * never loads an HTTP stack. Mount it into your own server with `Server.layer(config)` under
 * `HttpApiBuilder.serve()`, or listen with `Server.serve(config, { port })`; call the API with
 * `HttpApiClient.make(Api.Api)`.
 *
 * @since 0.2.0
 */

/** The API's definition: routes, payloads, errors, the token check. */
export * as Api from "./server/Api.js"
/** The server's configuration: token, body limit, default cwd, keep-alive. */
export * as ServerConfig from "./server/Config.js"
/** The server as Layers. */
export * as Server from "./server/Server.js"
/** Tokens, their constant-time check, the viewer's one-time login codes, its cookie and the login rate limit. */
export * as Security from "./server/Security.js"
/** The checks of every request: the Host it names, the origin it comes from, its body's type, its credential. */
export * as Access from "./server/Access.js"
/** The registry of the turns a server drives (a cluster runner replaces it with one that reaches each session's owner). */
export * as Turns from "./server/Turns.js"
/** The `/live` SSE encoding. */
export * as Live from "./server/Live.js"
/** A scheduler that keeps the event loop turning under load, for a server's fibers. */
export * as EventLoop from "./server/EventLoop.js"
