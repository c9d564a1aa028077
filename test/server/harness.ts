/**
 * A real server on port 0 for the server's tests: the engine on a JSONL store in a temp dir (or a
 * given one, to restart on it), the scripted model, the workspace tools and the default policy
 * (writes ask). Clients: the typed `HttpApiClient` with the bearer token, raw `fetch`, and an SSE
 * reader on the experimental `Sse` parser.
 */
import * as Sse from "@effect/experimental/Sse"
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as HttpApiClient from "@effect/platform/HttpApiClient"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as ExecutionStrategy from "effect/ExecutionStrategy"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import { expect } from "vitest"
import { mkdirSync, mkdtempSync } from "node:fs"
import { get, type IncomingMessage } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import {
  type AgentEvent,
  EventStore,
  FakeModelProvider,
  IdGenerator,
  JsonlEventStore,
  PermissionPolicy,
  SessionEngine,
  PreImages,
  TaskTool,
  WorkspaceTools
} from "../../src/index.js"
import { Api, Server, ServerConfig } from "../../src/server.js"

/** A fresh directory with a `work/` cwd and a `data/` dir. */
export const workspace = () => {
  const root = mkdtempSync(join(tmpdir(), "effect-agent-server-"))
  const cwd = join(root, "work")
  mkdirSync(cwd, { recursive: true })
  return { root, cwd, dataDir: join(root, "data") }
}

export interface Options {
  readonly dataDir: string
  readonly cwd: string
  readonly responses?: ReadonlyArray<FakeModelProvider.ScriptedResponse>
  /** Offer the `task` tool, with these subagent scripts (by prompt). */
  readonly subagents?: Readonly<Record<string, ReadonlyArray<FakeModelProvider.ScriptedResponse>>>
  readonly token?: string
  readonly maxBodyBytes?: number
  /** The limit of a turn's body (default: `maxBodyBytes` when given, else the server's default). */
  readonly maxTurnBodyBytes?: number
  /** Whether the scripted model takes images (default false). */
  readonly images?: boolean
  /** The provider and model the scripted model says it is (what turns are priced as). */
  readonly model?: { readonly provider: string; readonly model: string }
  readonly keepAlive?: string
  readonly port?: number
  /** Host names (besides loopback ones) the server answers to. */
  readonly allowedHosts?: ReadonlyArray<string>
  /** The engine's `watchCapacity` (how many live events a watched session's feed keeps). */
  readonly watchCapacity?: number
  /** The engine's `maxResponse` (what one model response may be; default 4 Mi characters). */
  readonly maxResponse?: { readonly chars?: number; readonly deltas?: number }
  /** Keep workspace checkpoints (`PreImages`), so that rewinds restore files (default false). */
  readonly checkpoints?: boolean
  /** The permission policy (default: `PermissionPolicy.layer()`). */
  readonly policy?: PermissionPolicy.Options
  /** Hears every read of the store that starts past the first event (a watcher reading a gap). */
  readonly onReadFrom?: (sessionId: string, fromSequence: number) => void
  /** Hears every watch of a session the engine is asked for (`watchSession`), from the sequence it starts at. */
  readonly onWatch?: (sessionId: string, fromSequence: number) => void
  /** How long a connection may take to send a request's headers (the server's `Listen.headersTimeout`). */
  readonly headersTimeout?: string
  /** How many connections may be open without having sent a request with a credential (the server's `Listen.maxUnauthenticatedConnections`). */
  readonly maxUnauthenticatedConnections?: number
}

const makeClient = (url: string, token: string) =>
  HttpApiClient.make(Api.Api, {
    baseUrl: url,
    transformClient: HttpClient.mapRequest(HttpClientRequest.bearerToken(token))
  }).pipe(Effect.provide(FetchHttpClient.layer))

/** A running server; `stop` closes it as a shutdown does (running turns cancelled, paused ones left paused). */
export interface Running {
  readonly url: string
  readonly port: number
  readonly token: string
  readonly config: ServerConfig.Config
  readonly client: Effect.Effect.Success<ReturnType<typeof makeClient>>
  /** The server's engine, for what a test does beside the HTTP API, as another client in the process would. */
  readonly engine: SessionEngine.SessionEngine.Service
  readonly stop: Effect.Effect<void>
}

/** Starts a server in a scope of its own (closed by `stop`, or by the test's scope). */
export const start = (options: Options): Effect.Effect<Running, unknown, Scope.Scope> =>
  Effect.gen(function*() {
    const outer = yield* Effect.scope
    const scope = yield* Scope.fork(outer, ExecutionStrategy.sequential)
    const token = options.token ?? "test-token-0123456789"
    const config = ServerConfig.make({
      token,
      defaultCwd: options.cwd,
      ...(options.maxBodyBytes === undefined ? {} : { maxBodyBytes: options.maxBodyBytes }),
      ...((options.maxTurnBodyBytes ?? options.maxBodyBytes) === undefined ? {} : { maxTurnBodyBytes: options.maxTurnBodyBytes ?? options.maxBodyBytes }),
      ...(options.keepAlive === undefined ? {} : { keepAlive: options.keepAlive as never }),
      ...(options.allowedHosts === undefined ? {} : { allowedHosts: options.allowedHosts })
    })
    const onReadFrom = options.onReadFrom
    const jsonl = JsonlEventStore.layer({ dataDir: options.dataDir })
    const store = onReadFrom === undefined ? jsonl : Layer.effect(
      EventStore.EventStore,
      Effect.map(EventStore.EventStore, (inner) => ({
        ...inner,
        read: (sessionId, readOptions) => {
          if ((readOptions?.fromSequence ?? 1) > 1) onReadFrom(sessionId, readOptions!.fromSequence!)
          return inner.read(sessionId, readOptions)
        }
      } satisfies EventStore.EventStore["Type"]))
    ).pipe(Layer.provide(jsonl))
    const engineLayer = SessionEngine.layer({
      ...(options.watchCapacity === undefined ? {} : { watchCapacity: options.watchCapacity }),
      ...(options.maxResponse === undefined ? {} : { maxResponse: options.maxResponse })
    }).pipe(
      Layer.provide(options.checkpoints === true ? Layer.merge(store, PreImages.layer().pipe(Layer.provide(jsonl))) : store),
      Layer.provide(FakeModelProvider.layer({
        responses: options.responses ?? [],
        ...(options.images === undefined ? {} : { images: options.images }),
        ...(options.subagents === undefined ? {} : { subagents: options.subagents }),
        ...options.model
      })),
      Layer.provide(IdGenerator.layer),
      Layer.provide(options.subagents === undefined ? WorkspaceTools.layer() : TaskTool.layer.pipe(Layer.provide(WorkspaceTools.layer()))),
      Layer.provide(PermissionPolicy.layer(options.policy)),
      Layer.provide(NodeContext.layer)
    )
    const onWatch = options.onWatch
    const engine = onWatch === undefined ? engineLayer : Layer.effect(
      SessionEngine.SessionEngine,
      Effect.map(SessionEngine.SessionEngine, (inner) => ({
        ...inner,
        watchSession: (input) => {
          onWatch(input.sessionId, input.fromSequence ?? 1)
          return inner.watchSession(input)
        }
      } satisfies SessionEngine.SessionEngine.Service))
    ).pipe(Layer.provide(engineLayer))
    const context = yield* Layer.buildWithScope(Server.serve(config, { port: options.port ?? 0, ...(options.headersTimeout === undefined ? {} : { headersTimeout: options.headersTimeout as never }),
      ...(options.maxUnauthenticatedConnections === undefined ? {} : { maxUnauthenticatedConnections: options.maxUnauthenticatedConnections })
    }).pipe(Layer.provideMerge(engine)), scope)
    const url = yield* Effect.provide(Server.url, context)
    const port = Number(new URL(url).port)
    const client = yield* makeClient(url, token)
    return { url, port, token, config, client, engine: Context.get(context, SessionEngine.SessionEngine), stop: Scope.close(scope, Exit.void) }
  })

/** A fresh workspace (see `workspace`) and a server started on it with `options`: its folders and the server. */
export const startIn = (options: Omit<Options, "cwd" | "dataDir"> = {}) =>
  Effect.suspend(() => {
    const made = workspace()
    return Effect.map(start({ ...options, cwd: made.cwd, dataDir: made.dataDir }), (server) => ({ ...made, server }))
  })

/** The engine an embedder mounts the API on in these tests: a JSONL store in `dataDir`, the scripted (by default echo) model, random ids. */
export const embedderEngine = (dataDir: string, model?: FakeModelProvider.Options) =>
  SessionEngine.layer().pipe(
    Layer.provide(JsonlEventStore.layer({ dataDir })),
    Layer.provide(FakeModelProvider.layer(model)),
    Layer.provide(IdGenerator.layer),
    Layer.provide(NodeContext.layer)
  )

/** Reads `/live` as an `EventSource` would, handing each SSE event to `onEvent` until it returns true or the signal aborts. */
export const readLive = async (
  url: string,
  init: { readonly token: string; readonly lastEventId?: string; readonly after?: number; readonly signal?: AbortSignal },
  onEvent: (event: Sse.Event) => boolean | void
): Promise<void> => {
  const query = init.after === undefined ? "" : `?after=${init.after}`
  const response = await fetch(`${url}${query}`, {
    headers: {
      authorization: `Bearer ${init.token}`,
      accept: "text/event-stream",
      ...(init.lastEventId === undefined ? {} : { "last-event-id": init.lastEventId })
    },
    ...(init.signal === undefined ? {} : { signal: init.signal })
  })
  if (response.status !== 200 || response.body === null) throw new Error(`live: HTTP ${response.status}`)
  let done = false
  const parser = Sse.makeParser((event) => {
    if (!done && event._tag === "Event" && onEvent(event) === true) done = true
  })
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader()
  try {
    while (!done) {
      const next = await reader.read()
      if (next.done) return
      parser.feed(next.value)
    }
  } finally {
    await reader.cancel().catch(() => {})
  }
}

/** Collects `/live` events until one satisfies `until` (each told to `init.saw` as it comes, for a test's step log). */
export const liveUntil = async (
  url: string,
  init: {
    readonly token: string
    readonly lastEventId?: string
    readonly after?: number
    readonly saw?: (event: AgentEvent.AgentEvent) => void
  },
  until: (event: AgentEvent.AgentEvent) => boolean
): Promise<Array<AgentEvent.AgentEvent>> => {
  const seen: Array<AgentEvent.AgentEvent> = []
  await readLive(url, init, (message) => {
    const event = JSON.parse(message.data) as AgentEvent.AgentEvent
    seen.push(event)
    init.saw?.(event)
    return until(event)
  })
  return seen
}

/** The stored events of a session, over HTTP. */
export const storedEvents = (server: Running, sessionId: string) =>
  Effect.promise(() =>
    fetch(`${server.url}/sessions/${sessionId}/events`, { headers: { authorization: `Bearer ${server.token}` } }).then((r) =>
      r.json() as Promise<Array<AgentEvent.AgentEvent>>
    )
  )

/** A request with the token (when given) as `fetch` sends it, answered as status, headers and the body (parsed when JSON). */
export const raw = (
  url: string,
  init: RequestInit & { readonly token?: string } = {}
): Effect.Effect<{ readonly status: number; readonly body: unknown; readonly headers: Headers }> => {
  const { token, ...rest } = init
  return Effect.promise(async () => {
    const response = await fetch(url, {
      ...rest,
      headers: { ...(token === undefined ? {} : { authorization: `Bearer ${token}` }), ...(rest.headers as Record<string, string> | undefined) }
    })
    const text = await response.text()
    let body: unknown = text
    try {
      body = JSON.parse(text)
    } catch {
      // not JSON
    }
    return { status: response.status, body, headers: response.headers }
  })
}

/** An error body carries exactly what went wrong and a message: no stack, no path of the runtime. */
export const expectWireError = (body: unknown, error: string) => {
  expect(body).toMatchObject({ error, message: expect.any(String) })
  expect(Object.keys(body as object).sort()).toEqual(["error", "message"])
  expect(JSON.stringify(body)).not.toMatch(/\bat .*\.(ts|js):\d+|\/src\/|node_modules/)
}

/** A `/live` reader on its own socket: reads until the first comment, then stops reading until `resume`. */
export const stalledReader = (url: string, token: string) => {
  const received: Array<Buffer> = []
  let bytes = 0
  let response: IncomingMessage | undefined
  let onText: (() => void) | undefined
  const text = () => Buffer.concat(received).toString("utf8")
  const connected = new Promise<void>((resolve, reject) => {
    get(url, { headers: { authorization: `Bearer ${token}`, accept: "text/event-stream" }, agent: false }, (res) => {
      response = res
      res.on("data", (chunk: Buffer) => {
        received.push(chunk)
        bytes += chunk.length
        if (bytes === chunk.length) {
          // The first bytes (": connected"): stop reading. The socket's buffers fill, then TCP pushes back.
          res.pause()
          resolve()
        }
        onText?.()
      })
      res.on("error", () => undefined)
    }).on("error", reject)
  })
  return {
    connected,
    bytes: () => bytes,
    /** Reads again until `done` holds of the last bytes received; all that was received. */
    resume: (done: (received: string) => boolean) =>
      new Promise<string>((resolve) => {
        let tail = ""
        onText = () => {
          // Checked on the tail only: the text is large.
          tail = (tail + received.at(-1)!.toString("latin1")).slice(-2048)
          if (done(tail)) {
            onText = undefined
            response!.destroy()
            resolve(text())
          }
        }
        response!.resume()
      })
  }
}

/** A `/live` reader: its raw headers once connected (the first comment came); `done` with the body's text once it holds `turn.completed`'s frame. */
export const liveReader = (url: string, token: string) => {
  let onConnected!: (headers: Array<string>) => void
  const connected = new Promise<Array<string>>((resolve) => (onConnected = resolve))
  const done = new Promise<string>((resolve, reject) => {
    let text = ""
    const request = get(url, { headers: { authorization: `Bearer ${token}`, accept: "text/event-stream" }, agent: false }, (res) => {
      res.setEncoding("utf8")
      res.on("data", (chunk: string) => {
        text += chunk
        if (text.startsWith(": connected\n\n")) onConnected(res.rawHeaders.filter((_, i, all) => all[i - (i % 2)] !== "Date"))
        const end = text.indexOf("event: turn.completed\n")
        if (end >= 0 && text.indexOf("\n\n", end) >= 0) {
          request.destroy()
          resolve(text)
        }
      })
    })
    request.on("error", reject)
  })
  return { connected, done }
}
