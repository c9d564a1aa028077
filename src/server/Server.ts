/**
 * The HTTP server as Layers: `layer` mounts the API, the viewer and the guards into any
 * `@effect/platform` server (`HttpApiBuilder.serve()` or `HttpApiBuilder.toWebHandler`); `serve`
 * listens on a Node HTTP server (127.0.0.1 by default).
 *
 * Guards on every request, before any route (see `Access`): a `Host` that does not name this server
 * (DNS rebinding) and a request from another origin's page are refused 403; a state-changing
 * request whose body is not JSON is refused 415; a body larger than the limit is refused 413 by its
 * `Content-Length`, unread (one sent without a length, chunked, is refused 411, unread too; the
 * limit also bounds what is read); JSON nested deeper than 64 levels answers 400 before it is
 * decoded; unknown routes answer 404; a body that does not decode answers 400 — all as
 * `{error, message}`. No body is read before the request shows a credential that lets it in (the
 * viewer's cookie alone does not; the sign-in form's body is read, 4 KiB at most). No CORS headers are ever sent, so other sites' scripts cannot read any answer;
 * every answer carries `X-Content-Type-Options: nosniff`. `serve` closes a connection that sends
 * no request's headers within `headersTimeout`, and keeps at most `maxUnauthenticatedConnections`
 * open that sent no request with a credential (one more closes the oldest).
 *
 * @since 0.2.0
 */
import * as Headers from "@effect/platform/Headers"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpIncomingMessage from "@effect/platform/HttpIncomingMessage"
import * as HttpServer from "@effect/platform/HttpServer"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import { closeSync, openSync, readFileSync } from "node:fs"
import { Buffer } from "node:buffer"
import { createServer, type IncomingMessage, type Server as NodeServer, type ServerResponse } from "node:http"
import type { Socket } from "node:net"
import type { SessionEngine } from "../index.js"
import * as Access from "./Access.js"
import { Api } from "./Api.js"
import * as Config from "./Config.js"
import * as DecodeMessage from "./DecodeMessage.js"
import * as EventLoop from "./EventLoop.js"
import * as Blobs from "./Blobs.js"
import * as Handlers from "./Handlers.js"
import * as Security from "./Security.js"
import * as Turns from "./Turns.js"
import * as Viewer from "./Viewer.js"

const errorResponse = (status: number, error: string, message: string) => HttpServerResponse.unsafeJson({ error, message }, { status })

/** A 400 from the API's own decoding (`HttpApiDecodeError`) said as `{error: "BadRequest", message}`, the message one line (see DecodeMessage). */
const normalize = (response: HttpServerResponse.HttpServerResponse): HttpServerResponse.HttpServerResponse => {
  if (response.status !== 400) return response
  if (response.body._tag === "Empty") return errorResponse(400, "BadRequest", "The request body could not be read")
  if (response.body._tag !== "Uint8Array") return response
  try {
    const body = JSON.parse(new TextDecoder().decode(response.body.body)) as { _tag?: string; issues?: unknown }
    if (body._tag !== "HttpApiDecodeError") return response
    return errorResponse(400, "BadRequest", DecodeMessage.fromError(body) ?? "The request does not match the route")
  } catch {
    return response
  }
}

/** The tag of the cause's failure, if it failed with a tagged error. */
const failureOf = (cause: Cause.Cause<unknown>): { readonly _tag?: unknown; readonly message?: unknown; readonly cause?: unknown } => {
  // A body that cannot be read reaches here as a defect (the platform's RequestError), not a failure.
  const error = Cause.isInterruptedOnly(cause) ? undefined : Cause.squash(cause)
  return typeof error === "object" && error !== null ? error : {}
}

/** The deepest nesting a JSON body may have: every body this API takes is two or three levels deep. */
const maxJsonDepth = 64

/** Whether JSON text nests deeper than `limit` (brackets inside strings are text). Linear, no recursion. */
const nestsDeeperThan = (text: string, limit: number): boolean => {
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 92) i++ // a backslash escapes the next character
      else if (c === 34) inString = false
    } else if (c === 34) inString = true
    else if (c === 91 || c === 123) {
      if (++depth > limit) return true
    } else if (c === 93 || c === 125) depth--
  }
  return false
}

/**
 * Every answer is to be taken as the type it says: the API's carry text the model and the tools
 * wrote, and a browser guessing HTML for one opened in a tab would run it as this server's own page.
 */
const nosniff = HttpApp.appendPreResponseHandler((_request, response) =>
  Effect.succeed(HttpServerResponse.setHeader(response, "x-content-type-options", "nosniff"))
)

/** The guards (see the module's note). */
const guards = HttpApiBuilder.middleware(
  Effect.map(Config.ServerConfig, (config) => (app: HttpApp.Default): HttpApp.Default =>
    Effect.gen(function*() {
      // Answers made from a failure too (the API's 401s) pass the pre-response handler.
      yield* nosniff
      const request = yield* HttpServerRequest.HttpServerRequest
      const { method } = request
      const headers = Access.headersOf(request)
      if (!Access.hostAllowed(headers["host"], config.allowedHosts)) {
        return errorResponse(403, "Forbidden", "The request must name this server by a loopback name, an address or a host name it was configured with")
      }
      if (Access.fromOtherOrigin(method, headers)) return errorResponse(403, "Forbidden", "Requests from other origins' pages are refused")
      if (Access.bodyRefused(method, headers)) {
        return errorResponse(415, "UnsupportedMediaType", "Send the request body as JSON (Content-Type: application/json)")
      }
      const length = headers["content-length"]
      // A turn's body may carry images: it has a limit of its own. The sign-in form's is a token.
      const signIn = method === "POST" && /^\/login(?:\?|$)/.test(request.url)
      const limit = method === "POST" && /^\/sessions\/[^/?]+\/turns(?:\?|$)/.test(request.url)
        ? config.maxTurnBodyBytes
        : signIn
        ? Math.min(Viewer.maxLoginBodyBytes, config.maxBodyBytes)
        : config.maxBodyBytes
      const tooLarge = errorResponse(413, "PayloadTooLarge", `Request bodies are limited to ${limit} bytes`)
      if (length !== undefined && !(Number(length) <= limit)) return tooLarge
      // A body without a length (chunked) is refused unread: every client of this API sends JSON with a length.
      if (length === undefined && headers["transfer-encoding"] !== undefined) {
        return errorResponse(411, "LengthRequired", "Send the request body with a Content-Length")
      }
      const bounded = HttpIncomingMessage.withMaxBodySize(Option.some(limit))
      // Decoding errors describe the value they met, recursively: a body nested 100k deep would overflow the stack there.
      // Read only for a request its credential lets in (the sign-in form's excepted): one without
      // any, or with the viewer's cookie but not the page's key (what a program the browser visits on
      // another port receives), is refused 401 unread, instead of this server holding up to 32 MiB
      // for whoever connects.
      if (Access.isJsonBody(headers) && Number(length ?? "0") > 0 && (signIn || Access.refusal(config.token, method, headers) === undefined)) {
        const text = yield* request.text.pipe(bounded, Effect.option)
        if (Option.isSome(text) && nestsDeeperThan(text.value, maxJsonDepth)) {
          return errorResponse(400, "BadRequest", `The request body is JSON nested more than ${maxJsonDepth} levels deep`)
        }
      }
      const exit = yield* app.pipe(bounded, Effect.exit)
      if (exit._tag === "Success") return normalize(exit.value)
      const failure = failureOf(exit.cause)
      if (failure._tag === "RouteNotFound") return errorResponse(404, "NotFound", "No such route")
      if (failure._tag === "RequestError") return errorResponse(400, "BadRequest", "The request body could not be read as JSON")
      if (failure._tag === "HttpApiDecodeError") {
        return errorResponse(400, "BadRequest", DecodeMessage.fromError(failure as { readonly issues?: unknown }) ?? "The request does not match the route")
      }
      return yield* Effect.failCause(exit.cause)
    })
  )
)

/**
 * The page's key is a secret header, as `authorization` and `cookie` are: the platform's span of
 * each request records every header of the request and of its answer (the sign-in form's hands the
 * key out) except the names it is told are secret, and an embedder's tracer exports them. So is
 * `location`: the one-time sign-in URL's answer sends the browser to `/#key=…`.
 */
const secretHeaders = Layer.fiberRefLocallyScopedWith(
  Headers.currentRedactedNames,
  (names) => [...names, ...[Security.pageKeyHeader, "location"].filter((name) => !names.includes(name))]
)

/**
 * The API, the viewer and the guards, for `HttpApiBuilder.serve()` (or `toWebHandler`) on any
 * `@effect/platform` server. Needs a `SessionEngine`; turns started over HTTP run in this layer's
 * scope (see `Turns`); `turns` replaces that registry (a cluster runner's starts turns on their owners).
 */
export const layer = (config: Config.Config, turns: Layer.Layer<Turns.Turns, never, SessionEngine.SessionEngine> = Turns.layer) =>
  Layer.mergeAll(
    HttpApiBuilder.api(Api).pipe(Layer.provide(Handlers.layer)),
    Viewer.layer,
    Blobs.layer,
    guards,
    secretHeaders
  ).pipe(
    Layer.provide(turns),
    // A config without a token fails the build (`ServerTokenMissing`), not every request.
    Layer.provide(Layer.effect(Config.ServerConfig, Config.checked(config)))
  )

/** Where to listen. */
export interface Listen {
  /** Default 127.0.0.1: the machine's own clients only. */
  readonly host?: string
  /** Default 4477; 0 picks a free port. */
  readonly port?: number
  /**
   * How long a connection may take to send a request's headers: from connecting (one that sends
   * nothing is closed then) and from a request's first byte (a trickle of header lines answers 408).
   * Default 20 seconds. A request under way (a `/live` stream, a body) is not limited by it.
   */
  readonly headersTimeout?: Duration.DurationInput
  /**
   * How many connections may be open that have not yet sent a request with a credential (the token,
   * or the viewer's cookie with the page's key): one more closes the oldest of them. Default 1024.
   */
  readonly maxUnauthenticatedConnections?: number
}

/** The default of `Listen.headersTimeout`. */
export const defaultHeadersTimeout = Duration.seconds(20)

/** The default of `Listen.maxUnauthenticatedConnections`. */
export const defaultMaxUnauthenticatedConnections = 1024

/**
 * The connections that have not yet sent a request with a credential (the token, or the viewer's
 * cookie with the page's key), at most `max`: one more
 * closes the oldest. The timeouts bound how long each is held, not how many: a client that opens
 * connections faster than they time out (or that trickles `POST /login`'s body, up to the request
 * timeout) held as many of the process's file descriptors as it opened, until its sessions' logs,
 * its tools and new clients got none. A connection leaves once a request of it shows a credential,
 * so a `/live` stream, a turn's body or an API client's kept-alive connection is never closed for
 * room; a client with the token sends its request within a millisecond of connecting, so a flood
 * closes it only by opening `max` connections within that time. Answers what to call with each
 * request as Node reads it — not when its start's turn in the scheduler comes
 * (`startRequestsAsTasks`), which may be seconds later on a busy server, while a flood would take
 * the connection for a stranger's.
 */
const boundStrangers = (server: NodeServer, token: Redacted.Redacted<string>, max: number, onConnection = true) => {
  // Insertion order: the first is the oldest.
  const strangers = new Set<Socket>()
  const arrived = (socket: Socket) => {
    if (strangers.size >= max) {
      const oldest: Socket = strangers.values().next().value!
      strangers.delete(oldest)
      oldest.destroy()
    }
    strangers.add(socket)
    socket.once("close", () => strangers.delete(socket))
  }
  // `serve` tells of each connection as it is accepted, held or not (see `holdWhileAccepting`).
  if (onConnection) server.on("connection", arrived)
  const known = (request: IncomingMessage) => {
    // The session routes' own test: the viewer's cookie alone, which another server of this host may
    // have been sent, does not count (its body would be read, and held up to the request timeout).
    if (strangers.has(request.socket) && Access.refusal(token, request.method ?? "GET", request.headers as Access.Headers) === undefined) {
      strangers.delete(request.socket)
    }
  }
  server.on("upgrade", known)
  return { known, arrived }
}

/** A request's headers came: its connection's time to send them (see `nodeServer`) no longer runs. */
const underway = (request: IncomingMessage) => request.socket.setTimeout(0)

/**
 * A Node HTTP server whose connections must send a request in time. Node's own `headersTimeout`
 * holds only once a request's first byte came (checked every `connectionsCheckingInterval`, 30 s by
 * default): a connection that sends nothing stayed open for good, each one a file descriptor of the
 * agent's process, without any token. So each connection gets a socket timeout until its first
 * request arrives (Node then destroys the socket: no listener of the server's `timeout` event says
 * otherwise); from then on Node's keep-alive timeout and its checks take over.
 */
const nodeServer = (headersTimeout: Duration.DurationInput | undefined) => {
  growDescriptorTable()
  const millis = headersMillis(headersTimeout)
  const server = createServer({
    headersTimeout: millis,
    requestTimeout: Math.max(millis, 300_000),
    connectionsCheckingInterval: Math.min(30_000, Math.max(50, Math.round(millis / 4)))
  })
  // Accepts are counted as they happen, by `holdWhileAccepting`.
  limitHeadersTime(server, millis, false)
  return server
}

/** `headersTimeout` (default `defaultHeadersTimeout`) in whole milliseconds, at least one. */
const headersMillis = (headersTimeout: Duration.DurationInput | undefined) =>
  Math.max(1, Math.round(Duration.toMillis(Duration.decode(headersTimeout ?? defaultHeadersTimeout))))

/**
 * How long a kept-alive connection may sit idle between requests. Node's default, 5 s, is what it
 * tells clients (`Keep-Alive: timeout=5`); undici (Node's `fetch`) stops reusing a connection 2 s
 * before that, but on timers of about a second's grain that run only between the loop's tasks, so
 * a busy client that waited ≈ 5 s sent its next request on a connection the server was closing and
 * got "other side closed" for a request never read. 65 s puts that edge past the waits clients make
 * between requests; a connection without a credential is still bounded (`boundStrangers`), and
 * closing the server closes idle connections at once.
 */
const keepAliveMillis = 65_000

/**
 * Each connection must send a request's headers within `millis` (see `nodeServer`): Node's own
 * limits, and a socket timeout until the first request, counted as an accepted connection. Idle
 * kept-alive connections are kept `keepAliveMillis`.
 */
const limitHeadersTime = (server: NodeServer, millis: number, countAccepts = true) => {
  server.headersTimeout = millis
  server.requestTimeout = Math.max(millis, 300_000)
  server.keepAliveTimeout = keepAliveMillis
  server.on("connection", (socket: Socket) => {
    if (countAccepts) connectionAccepted()
    socket.setTimeout(millis)
  })
  server.on("request", underway)
  server.on("upgrade", underway)
}

/** The bound on connections without a credential (`boundStrangers`) that `listen` asks for. */
const strangersBound = (server: NodeServer, config: Config.Config, listen: Pick<Listen, "maxUnauthenticatedConnections">, onConnection = true) =>
  boundStrangers(server, config.token, Math.max(1, listen.maxUnauthenticatedConnections ?? defaultMaxUnauthenticatedConnections), onConnection)

/** How many descriptors the process's table has room for, beyond those open, before clients connect. */
const descriptorsAhead = 1024

/**
 * How many descriptors to open to grow the table, under the process's soft limit on open files
 * (`/proc/self/limits`' "Max open files", undefined where it cannot be read): at most half the
 * limit, so that the opens never reach it — a file opened meanwhile on libuv's threads (a session's
 * log, a tool's file) would fail with `EMFILE`. None off Linux, where the limit is not read and the
 * doublings' wait is Linux's.
 */
export const descriptorsToOpen = (softLimit: number | undefined): number =>
  softLimit === undefined ? 0 : Math.max(0, Math.min(descriptorsAhead, Math.floor(softLimit / 2)))

/** The soft limit on open files from `/proc/self/limits`; undefined where there is none to read. */
const openFilesLimit = (): number | undefined => {
  try {
    const line = /^Max open files\s+(\S+)/m.exec(readFileSync("/proc/self/limits", "latin1"))
    if (line === null) return undefined
    return line[1] === "unlimited" ? Number.MAX_SAFE_INTEGER : Number(line[1]) || undefined
  } catch {
    return undefined
  }
}

let tableGrown = false
/**
 * Grows the process's table of file descriptors once, before any client connects: opens
 * `/dev/null` up to `descriptorsAhead` times and closes them all (Linux never shrinks the table).
 * Linux doubles the table when a new descriptor does not fit (64, 128, 256, 512 …), and in a process
 * with threads (V8's and libuv's) each doubling waits for an RCU grace period (`expand_fdtable`,
 * `synchronize_rcu`): the main thread slept 15–34 ms inside `accept4`, twice while 500 clients
 * connected at once, and a `/healthz` probe behind them waited for both (docs/benchmarks.md,
 * split18). Best effort: with no `/dev/null` or a low limit (`descriptorsToOpen`) the table grows
 * less, or as connections come, as before.
 */
const growDescriptorTable = () => {
  if (tableGrown) return
  tableGrown = true
  const count = descriptorsToOpen(openFilesLimit())
  const opened: Array<number> = []
  try {
    for (let i = 0; i < count; i++) opened.push(openSync("/dev/null", "r"))
  } catch {
    // Best effort (see above).
  }
  for (const fd of opened) closeSync(fd)
}

/** The default port of `effect-agent serve`. */
export const defaultPort = 4477

/**
 * Until `serve`'s handler is attached, a request is answered `503` with `Retry-After: 1`. The port
 * is open from when its layer is built, and the handler is attached only after the API's layers are:
 * a request arriving meanwhile (a client polling `/healthz` from launch) was answered nothing for up
 * to the request timeout (300 s), the headers limit no help (its headers had come). Returns what
 * opens the gate.
 */
const notReadyYet = (server: NodeServer) => {
  let ready = false
  server.on("request", (_request: IncomingMessage, response: ServerResponse) => {
    if (ready || response.headersSent) return
    response.writeHead(503, { "content-type": "application/json", "retry-after": "1", connection: "close" })
    response.end(JSON.stringify({ error: "NotReady", message: "the server is starting; retry in a moment" }))
  })
  return () => {
    ready = true
  }
}

/**
 * The server listening on a Node HTTP server. Its `HttpServer` is in the output, for its address.
 * On shutdown open connections (live streams) are closed, then running turns are cancelled and
 * turns waiting for an approval are left paused.
 */
export const serve = (
  config: Config.Config,
  listen: Listen = {},
  turns: Layer.Layer<Turns.Turns, never, SessionEngine.SessionEngine> = Turns.layer
) => {
  const server = nodeServer(listen.headersTimeout)
  const open = notReadyYet(server)
  const strangers = strangersBound(server, config, listen, false)
  const held = holdWhileAccepting(server, strangers.arrived)
  const requestRead = strangers.known
  // Filled in by the sessions' handlers: a `/live` client of a session with a shared watch is answered in Node's callback.
  const answers: Handlers.NodeAnswers["Type"] = { live: undefined }
  const health = answerHealth(config.allowedHosts)
  const answered = (request: IncomingMessage, response: ServerResponse) => health(request, response) || answers.live?.(request, response) === true
  const closeConnections = Layer.scopedDiscard(Effect.addFinalizer(() =>
    Effect.sync(() => {
      // `close` alone would wait for every open `/live` stream to end.
      server.close()
      server.closeAllConnections()
      held.close()
    })
  ))
  return HttpApiBuilder.serve().pipe(
    Layer.tap(() => Effect.sync(open)),
    Layer.provideMerge(closeConnections),
    Layer.provideMerge(startRequestsAsTasks(server, requestRead, answered)),
    Layer.provide(layer(config, turns).pipe(Layer.provide(Layer.succeed(Handlers.NodeAnswers, answers)))),
    Layer.provideMerge(NodeHttpServer.layer(() => server, { host: listen.host ?? "127.0.0.1", port: listen.port ?? defaultPort }))
  )
}

/**
 * What `serve` does to its own Node HTTP server, for an embedder that mounts {@link layer} on a
 * server of its own (`NodeHttpServer.layer(() => server, …)` with `HttpApiBuilder.serve()`): each
 * connection must send a request's headers within `headersTimeout` (else closed); at most
 * `maxUnauthenticatedConnections` connections that sent no request with a credential stay open
 * (one more closes the oldest); and each request but `/healthz` starts as a task of the scheduler
 * instead of inside Node's `request` callback (see `startRequestsAsTasks`), with the accepted
 * connections told to {@link connectionsArriving} and {@link connectionsAccepted}. Give the whole program `EventLoop.sliced(
 * EventLoop.defaultSliceMs, servesHealth, connectionsArriving, connectionsAccepted)` as `effect-agent serve` does, so that
 * `/healthz` answers under load. Without this layer such an embedder had none of it: a client that
 * connects and sends nothing held a descriptor for good. The listeners go when its scope closes.
 */
export const guardNodeServer = (
  server: NodeServer,
  config: Config.Config,
  listen: Pick<Listen, "headersTimeout" | "maxUnauthenticatedConnections"> = {}
): Layer.Layer<never> =>
  Layer.unwrapScoped(Effect.gen(function*() {
    const before = new Map((["connection", "request", "upgrade"] as const).map((event) => [event, new Set(server.listeners(event))]))
    limitHeadersTime(server, headersMillis(listen.headersTimeout))
    const requestRead = strangersBound(server, config, listen).known
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        for (const [event, kept] of before) {
          for (const listener of server.listeners(event)) if (!kept.has(listener)) server.off(event, listener as (...args: Array<unknown>) => void)
        }
      })
    )
    return startRequestsAsTasks(server, requestRead)
  }))

/**
 * Starts each request but `/healthz` as a task of the server's scheduler (the one `serve` is built
 * on: `EventLoop.scheduler` for `effect-agent serve`) instead of inside Node's `request` callback.
 * Node reads every readable socket in one turn of its loop: when hundreds of clients connect at once
 * their requests arrive together, and each one's fiber used to start there — the platform's span,
 * the guards and the router, dozens of steps and their allocations per request, 20–60 ms of one
 * turn for 500 `/live` clients — before the loop could accept the next connection; a `/healthz`
 * probe queued behind them in the listen queue waited for all of it. As a task, a request's start
 * takes its place in the scheduler's queue (first come, first served, sliced with all other fiber
 * work: a steady stream of requests starves nothing), and the turn holds only Node's parsing. A
 * liveness probe still starts at once and goes ahead of the queue (see {@link servesHealth}), unless
 * `answered` answered it already, in this callback (`serve`'s plain `/healthz`: see `answerHealth`).
 * `requestRead` hears of every request at once, as Node reads it (the connections' bound).
 */
const startRequestsAsTasks = (
  server: NodeServer,
  requestRead: (request: IncomingMessage) => void,
  answered: (request: IncomingMessage, response: ServerResponse) => boolean = () => false
) =>
  Layer.scopedDiscard(Effect.gen(function*() {
    const scheduler = yield* FiberRef.get(FiberRef.currentScheduler)
    const emit = server.emit as (this: NodeServer, event: string | symbol, ...args: Array<unknown>) => boolean
    const hooked = function(this: NodeServer, event: string | symbol, ...args: Array<unknown>): boolean {
      if (event !== "request") return emit.call(this, event, ...args)
      const request = args[0] as IncomingMessage
      requestRead(request)
      if (answered(request, args[1] as ServerResponse)) {
        underway(request)
        return true
      }
      if (healthPath.test(request.url ?? "")) return emit.call(this, event, ...args)
      // At once, not when it starts: however long the queue, a request that came is not timed out.
      underway(request)
      scheduler.scheduleTask(() => {
        // A client gone before its request started has nothing to be answered, and the platform's
        // handler, which stops a request's fiber when its client goes away, would never hear of it.
        if (!request.socket.destroyed) emit.call(this, event, ...args)
      }, 0)
      return true
    }
    server.emit = hooked as NodeServer["emit"]
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        server.emit = emit as NodeServer["emit"]
      })
    )
  }))

/**
 * Whether a fiber serves `/healthz`: for `EventLoop.sliced`, which runs such fibers ahead of the
 * work already queued. While hundreds of clients follow a turn the queue holds seconds of work, and
 * a liveness probe answered after it would say the server hangs when it is only busy. Asked of the
 * fiber's request (in its context from its start), not set by a route: a request runs dozens of
 * steps (the platform's span, the guards, the router) before it reaches any route or middleware.
 */
export const servesHealth: EventLoop.Urgent = (fiber) => {
  const request = Context.getOption(fiber.currentContext, HttpServerRequest.HttpServerRequest)
  return request._tag === "Some" && healthPath.test(request.value.url)
}

const healthPath = /^\/healthz(?:\?|$)/

/**
 * `/healthz`'s answer as the API makes it (the `healthz` route, its JSON, the guards' `nosniff`):
 * the same status, headers in the same order, and bytes.
 */
const healthBody = Buffer.from(JSON.stringify({ ok: true }))
const healthHeaders = {
  "content-type": "application/json",
  "content-length": String(healthBody.length),
  "x-content-type-options": "nosniff"
} as const

/**
 * Answers a plain liveness probe in Node's `request` callback, before any fiber starts — `serve`'s
 * own server only (an embedder's middleware may want to see every request). A `/healthz` served by
 * the platform is a fiber through its span, the guards and the router (≈ 50 steps and their
 * allocations, then its task waits for the scheduler's next run): on a server writing a turn to 500
 * watchers that run comes after the rest of the loop's turn and a slice of their work, and the
 * prober's thousand probes a run cost the server that fiber each (docs/benchmarks.md, serve19).
 * Only a request the guards would let through to the route untouched is answered here — `GET` or
 * `HEAD`, no body (a length or a chunked body is the guards' to judge: 413, 411), a `Host` that
 * names this server, not from another origin's page; any other goes the platform's way and gets its
 * answer (403, 404 …) as before. True when it answered.
 */
const answerHealth = (allowedHosts: ReadonlyArray<string>) => (request: IncomingMessage, response: ServerResponse): boolean => {
  const method = request.method ?? ""
  if ((method !== "GET" && method !== "HEAD") || !healthPath.test(request.url ?? "")) return false
  const headers = request.headers as Access.Headers
  if (headers["content-length"] !== undefined || headers["transfer-encoding"] !== undefined) return false
  if (!Access.hostAllowed(headers["host"], allowedHosts) || Access.fromOtherOrigin(method, headers)) return false
  response.writeHead(200, healthHeaders)
  // Node writes no body for `HEAD`, as for the platform's answer.
  response.end(healthBody)
  return true
}

/**
 * How many connections held while others were being accepted (`holdWhileAccepting`) are handed to
 * the HTTP server in one turn of the loop: half the newest, half the oldest.
 */
export const connectionsHandedPerTurn = 16

/**
 * Holds each connection `server` accepts while connections are being accepted, unread, and hands
 * the held ones to the HTTP server (its own connection setup, the bound on strangers, the headers'
 * timeout, the reading of their requests) in the turns of the loop that accept none —
 * {@link connectionsHandedPerTurn} a turn, the newest first with as many of the oldest — and, while
 * connections keep coming, a batch once they have been held `EventLoop.maxAcceptingTurns` turns or
 * `EventLoop.maxHeldMs` (`EventLoop.acceptHold`, the rule the scheduler's fiber work follows: by
 * turns alone, a flood on a loaded machine, several milliseconds a turn, held a probe 32 of them).
 *
 * Node (libuv 1.46) accepts one connection per turn of its loop, so a `/healthz` probe that connects
 * behind 500 watchers in the listen queue waits for 500 turns. Each of those turns also set the
 * previous connection up for HTTP and read and parsed its request (the token checked, a task queued),
 * about two thirds of a turn's work on a server just started (its code not yet optimized): 500 turns
 * of that were row 18's 129 ms on a quiet machine (docs/benchmarks.md, perf63serve). Held, a turn that
 * accepts does Node's accept and little else (the socket made paused: `pauseOnConnect`); the same work
 * is done once the listen queue is empty, a batch a turn, and the probe, among the newest, is read
 * in the first. The oldest go with them, so a flood that never stops starves none. A held connection
 * sent no credential yet: it is told to the bound on strangers as it is accepted (`arrived`), in the
 * order connections came, and one that bound closes is skipped. `close` closes the held ones (the
 * server's own close counts them as open and would wait for them).
 *
 * @internal
 */
/** How many handed-over slots at the front of the held list are let go before the list is moved down. */
const compactAfter = 1_024

export const holdWhileAccepting = (server: NodeServer, arrived: (socket: Socket) => void) => {
  // Node's own option for sockets handed elsewhere (`net.Server`'s, which an HTTP server has): made paused, read once resumed.
  Object.assign(server, { pauseOnConnect: true })
  const emit = server.emit as (this: NodeServer, event: string | symbol, ...args: Array<unknown>) => boolean
  /** Oldest first, from `oldest` on; the slots before it are emptied, so a flood that never lets the list empty keeps no socket it handed over. */
  let held: Array<Socket | undefined> = []
  let oldest = 0
  let scheduled = false
  const hold = EventLoop.acceptHold(connectionsAccepted)
  const count = () => held.length - oldest
  /** The oldest held, its slot emptied; the list moved down once mostly empty slots (a flood that never ends keeps it from emptying). */
  const takeOldest = () => {
    const socket = held[oldest]
    held[oldest++] = undefined
    if (oldest >= compactAfter && oldest * 2 >= held.length) {
      held = held.slice(oldest)
      oldest = 0
    }
    return socket
  }
  const hand = (socket: Socket | undefined) => {
    if (socket === undefined || socket.destroyed) return
    emit.call(server, "connection", socket)
    socket.resume()
  }
  /** In the loop's check phase: held again while the turn accepted one (see `EventLoop.scheduler`'s `accepted`), else a batch handed over. */
  const release = () => {
    scheduled = false
    if (count() === 0) return
    if (hold.holding()) return later()
    for (let i = 0; i < connectionsHandedPerTurn && count() > 0; i++) hand(i % 2 === 0 ? held.pop() : takeOldest())
    if (count() === 0) {
      held = []
      oldest = 0
    } else later()
  }
  const later = () => {
    if (scheduled) return
    scheduled = true
    setImmediate(release)
  }
  server.emit = function(this: NodeServer, event: string | symbol, ...args: Array<unknown>): boolean {
    if (event !== "connection") return emit.call(this, event, ...args)
    connectionAccepted()
    const socket = args[0] as Socket
    arrived(socket)
    // The oldest held, closed by the bound on strangers, are let go at once.
    while (oldest < held.length && held[oldest]!.destroyed) takeOldest()
    held.push(socket)
    later()
    return true
  } as NodeServer["emit"]
  return {
    close: () => {
      for (let i = oldest; i < held.length; i++) held[i]!.destroy()
      held = []
      oldest = 0
    },
    /** @internal How many sockets the list references (held ones and emptied slots' none): for the tests. */
    referenced: () => held.reduce((sum: number, socket) => (socket === undefined ? sum : sum + 1), 0)
  }
}

/** When a server of this process last accepted a connection (`performance.now()`), and how many it has accepted. */
let lastAccepted = Number.NEGATIVE_INFINITY
let acceptedCount = 0
const connectionAccepted = () => {
  lastAccepted = performance.now()
  acceptedCount++
}

/**
 * How many connections the servers of this process have accepted so far: for `EventLoop.sliced`,
 * which runs no fiber work in a turn of the loop that accepted one (a slice every
 * `EventLoop.maxAcceptingTurns` turns while they keep coming). Node accepts one connection per turn,
 * so while 500 clients connect at once each turn's fiber work — a task, and the garbage it leaves —
 * delays the connections still in the listen queue, and a `/healthz` probe behind them waited for
 * all of it (docs/benchmarks.md, perf62serve).
 */
export const connectionsAccepted = (): number => acceptedCount

/** A connection accepted this recently says more may be waiting in the listen queue. */
const arrivingWindowMs = 5

/**
 * Whether connections are arriving (one was accepted in the last few ms): for `EventLoop.sliced`,
 * which then lets the loop turn after each task. Node accepts one connection per turn of the
 * loop, so while 500 clients connect at once every turn's slice of fiber work delays the rest — and
 * a `/healthz` probe queued behind them waited for 500 slices (seconds; row 18's worst probes).
 */
export const connectionsArriving = (): boolean => performance.now() - lastAccepted < arrivingWindowMs

/** The `http://host:port` a server listens on. */
export const url = Effect.map(HttpServer.HttpServer, (server) =>
  server.address._tag === "TcpAddress"
    ? `http://${server.address.hostname.includes(":") ? `[${server.address.hostname}]` : server.address.hostname}:${server.address.port}`
    : HttpServer.formatAddress(server.address))
