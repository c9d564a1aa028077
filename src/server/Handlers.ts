/**
 * The handlers of the API's routes, on the engine's public API only. Engine errors become the
 * wire's `{error, message}` here, with messages written for the wire: a store failure says its
 * reason and nothing of its paths (the details go to the server's log).
 *
 * @since 0.2.0
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Runtime from "effect/Runtime"
import * as Stream from "effect/Stream"
import type { IncomingMessage, ServerResponse } from "node:http"
import {
  AgentEvent,
  type ApprovalNotPending,
  type CompactionFailed,
  type EventStoreFailure,
  type InvalidInput,
  McpNames,
  type NothingToCompact,
  PendingServers,
  type RewindRefused,
  type NothingToResume,
  type NoTurnInProgress,
  SessionBusy,
  Session,
  SessionEngine,
  type SessionNotFound,
  SessionState,
  type TurnInProgress,
  WorkingDirectory
} from "../index.js"
import {
  Api,
  Authorization,
  BadRequest,
  CompactionFailed as CompactionFailedWire,
  RewindRefused as RewindRefusedWire,
  CancelTarget,
  FollowUpsToDrop,
  Conflict,
  Forbidden,
  ListFilter,
  NotFound,
  noSession,
  ServerMisconfigured,
  type SessionView,
  StoreFailure,
  Unauthorized
} from "./Api.js"
import * as Access from "./Access.js"
import { type Config, ServerConfig } from "./Config.js"
import * as Live from "./Live.js"
import { Turns } from "./Turns.js"
import * as TurnImages from "./TurnImages.js"

type EngineError =
  | EventStoreFailure
  | SessionNotFound
  | TurnInProgress
  | InvalidInput
  | SessionBusy
  | ApprovalNotPending
  | NothingToResume
  | NoTurnInProgress
  | NothingToCompact

/** An engine error as the wire says it. */
export const toWire = (error: EngineError): Effect.Effect<never, BadRequest | NotFound | Conflict | StoreFailure> => {
  switch (error._tag) {
    case "SessionNotFound":
      return Effect.fail(new NotFound({ error: "SessionNotFound", message: noSession(error.sessionId) }))
    case "TurnInProgress":
      return Effect.fail(new Conflict({ error: "TurnInProgress", message: `A turn (${error.turnId}) is running in this session` }))
    case "ApprovalNotPending":
      return Effect.fail(new Conflict({ error: "ApprovalNotPending", message: `No call ${error.toolCallId} is waiting for approval` }))
    case "NothingToResume":
      return Effect.fail(new Conflict({ error: "NothingToResume", message: "No turn is paused in this session" }))
    case "SessionBusy":
      return Effect.fail(new Conflict({ error: "SessionBusy", message: "Another process drives this session" }))
    case "NoTurnInProgress":
      return Effect.fail(new Conflict({ error: "NoTurnInProgress", message: "No turn is running in this session to steer (or the running one is ending)" }))
    case "NothingToCompact":
      return Effect.fail(new Conflict({ error: "NothingToCompact", message: "Nothing to compact: the session's recent context is kept verbatim as it is" }))
    case "InvalidInput":
      return Effect.fail(new BadRequest({ error: "BadRequest", message: error.message }))
    case "EventStoreFailure":
      if (error.reason === "untrusted") {
        return Effect.fail(
          new Conflict({
            error: "SessionUntrusted",
            message: `Session ${error.sessionId ?? ""} was not started by this server's user (its log may have come with a repository): review it, then adopt it with effect-agent adopt`
          })
        )
      }
      return Effect.logError("the event store failed", error).pipe(
        Effect.zipRight(Effect.fail(new StoreFailure({ error: "EventStoreFailure", message: `The event store failed (${error.reason})` })))
      )
  }
}

/** A manual compaction the model gave no summary for: the upstream's failure, 502, with the stored `compaction.failed`'s code. */
const compactionFailed = (error: CompactionFailed) =>
  Effect.fail(
    new CompactionFailedWire({
      error: "CompactionFailed",
      message: `The model gave no summary [${error.errorCode}]; compaction ${error.compactionId} failed and the context is unchanged`
    })
  )

/** A refused rewind: 409 with its reason and the files it names. */
const rewindRefused = (error: RewindRefused) =>
  Effect.fail(new RewindRefusedWire({ error: "RewindRefused", reason: error.reason, message: error.message, ...(error.files === undefined ? {} : { files: error.files }) }))

const badSequence = (what: string) => new BadRequest({ error: "BadRequest", message: `${what} must be a sequence number (a non-negative integer)` })

/**
 * The token check behind every session route: the bearer header, else the viewer's cookie with its
 * page's key — which changes something only from the viewer's own page too (see `Access`).
 */
export const authorizationLayer = Layer.effect(
  Authorization,
  Effect.map(ServerConfig, (config) =>
    Authorization.of({
      // The bearer scheme is the one the API documents; the cookie is read from the request here.
      bearer: () =>
        Effect.flatMap(HttpServerRequest.HttpServerRequest, (request): Effect.Effect<void, Unauthorized | Forbidden> => {
          switch (Access.refusal(config.token, request.method, Access.headersOf(request))) {
            case undefined:
              return Effect.void
            case "not-own-page":
              return Effect.fail(new Forbidden({ error: "Forbidden", message: "The viewer's cookie changes nothing from outside the viewer's own page" }))
            case "unauthorized":
              return Effect.fail(new Unauthorized({ error: "Unauthorized", message: "A valid token is required (Authorization: Bearer <token>)" }))
            case "no-page-key":
              return Effect.fail(new Unauthorized({ error: "Unauthorized", message: "Sign in to the viewer again: the viewer's cookie needs the key its page gets at sign-in" }))
          }
        })
    }))
)

/**
 * The calls of the subagents running under a session's open `task` calls (and of theirs) that wait
 * for the user, each labelled with its subagent's session and task. A subagent whose session cannot
 * be read is left out (its own state says why).
 */
const subagentApprovals = (
  engine: SessionEngine.SessionEngine.Service,
  state: SessionState.SessionState
): Effect.Effect<ReadonlyArray<SessionView["pendingApprovals"][number]>> =>
  Effect.forEach(state.openTurn?.toolCalls.filter((c) => c.status === "running" && c.subagent !== undefined) ?? [], ({ subagent }) =>
    engine.sessionState({ sessionId: subagent!.childSessionId }).pipe(
      Effect.flatMap((child) =>
        Effect.map(subagentApprovals(engine, child), (below) => [
          ...SessionState.pendingApprovals(child).map((call) => ({
            toolCallId: call.toolCallId,
            tool: call.tool,
            args: call.args,
            status: call.status,
            ...(call.risk === undefined ? {} : { risk: call.risk }),
            subagent: { sessionId: child.sessionId, description: subagent!.description }
          })),
          ...below
        ])
      ),
      Effect.orElseSucceed(() => [])
    )).pipe(Effect.map((lists) => lists.flat()))

const view = (state: SessionState.SessionState, runningHere: boolean): SessionView => {
  const open = state.openTurn
  const calls = (open?.toolCalls ?? []).map((call) => ({
    toolCallId: call.toolCallId,
    tool: call.tool,
    args: call.args,
    status: call.status,
    ...(call.risk === undefined ? {} : { risk: call.risk })
  }))
  const pending = SessionState.pendingApprovals(state).map((call) => calls.find((c) => c.toolCallId === call.toolCallId)!)
  return {
    sessionId: state.sessionId,
    cwd: state.cwd,
    client: state.client,
    createdAt: state.createdAt,
    lastActivityAt: state.lastActivityAt,
    turnCount: state.turnCount,
    lastSequence: state.lastSequence,
    ...(state.title === undefined ? {} : { title: state.title }),
    phase: state.compaction !== undefined
      ? "compacting"
      : open === undefined
      ? "idle"
      : pending.length > 0 || (SessionState.isPaused(state) && !runningHere)
      ? "paused"
      : "running",
    ...(open === undefined ? {} : { openTurnId: open.turnId }),
    openCalls: calls,
    pendingApprovals: pending,
    ...(state.lastTurn === undefined
      ? {}
      : {
        lastTurn: {
          turnId: state.lastTurn.turnId,
          stopReason: state.lastTurn.stopReason,
          ...(state.lastTurn.errorCode === undefined ? {} : { errorCode: state.lastTurn.errorCode })
        }
      }),
    followUps: state.followUps.map(({ content, queueId }) => ({ queueId, content })),
    ...state.totals
  }
}

/** Where a client resumes: `Last-Event-ID` (what an `EventSource` sends on reconnect) wins over `?after=`. */
const resumeAfter = (request: HttpServerRequest.HttpServerRequest, after: number | undefined) => {
  const header = request.headers["last-event-id"]
  if (header === undefined || header === "") return Effect.succeed(after ?? 0)
  return /^\d{1,15}$/.test(header) ? Effect.succeed(Number(header)) : Effect.fail(badSequence("Last-Event-ID"))
}

/**
 * `serve`'s own Node server asks here, in its request callback, whether the handlers answered a
 * request there (`Live.FanOut.follow`: a `/live` client joining its session's shared watch without
 * a fiber); the sessions' handlers fill it in. Absent (an embedder's server), every request goes
 * the platform's way.
 *
 * @internal
 */
export class NodeAnswers extends Context.Tag("effect-agent/server/NodeAnswers")<
  NodeAnswers,
  { live: ((request: IncomingMessage, response: ServerResponse) => boolean) | undefined }
>() {}

/** `GET /sessions/:id/live` with at most `?after=N`, an id of the engine's alphabet: what `followInCallback` takes. */
const plainLive = /^\/sessions\/([A-Za-z0-9_-]{1,128})\/live(?:\?after=(\d{1,15}))?$/

/**
 * `/live` answered in Node's request callback (see {@link NodeAnswers}) when its session has a
 * shared watch to join — only a request the guards and the route would let through untouched, and
 * read the same way: `GET`, a plain path and `after`, no body, a `Host` that names this server, not
 * from another origin's page, a credential the session routes take, a `Last-Event-ID` of digits
 * (else the route's 400). Any other request, or a session without a shared watch yet (the first
 * client starts it), goes the platform's way. True when it answered.
 */
const followInCallback = (
  config: Config,
  fanOut: Live.FanOut,
  fork: (effect: Effect.Effect<void>) => Live.ForkedFiber
) =>
(request: IncomingMessage, response: ServerResponse): boolean => {
  if (request.method !== "GET") return false
  const path = plainLive.exec(request.url ?? "")
  if (path === null) return false
  const headers = request.headers as Access.Headers
  if (headers["content-length"] !== undefined || headers["transfer-encoding"] !== undefined) return false
  if (!Access.hostAllowed(headers["host"], config.allowedHosts) || Access.fromOtherOrigin("GET", headers)) return false
  if (Access.refusal(config.token, "GET", headers) !== undefined) return false
  const header = headers["last-event-id"]
  let after = path[2] === undefined ? 0 : Number(path[2])
  if (header !== undefined && header !== "") {
    if (!/^\d{1,15}$/.test(header)) return false
    after = Number(header)
  }
  return fanOut.follow(path[1]!, after + 1, config.keepAlive, response, request, fork)
}

const healthLayer = HttpApiBuilder.group(Api, "health", (handlers) => handlers.handle("healthz", () => Effect.succeed({ ok: true as const })))

const sessionsLayer = HttpApiBuilder.group(Api, "sessions", (handlers) =>
  Effect.gen(function*() {
    const engine = yield* SessionEngine.SessionEngine
    const turns = yield* Turns
    const config = yield* ServerConfig
    /** `/live` on a Node server: one watch per watched session, each batch written to its clients (see `Live.fanOut`). */
    const fanOut = Live.fanOut((sessionId, fromSequence) => engine.watchSession({ sessionId, fromSequence }))
    const answers = yield* Effect.serviceOption(NodeAnswers)
    if (Option.isSome(answers)) answers.value.live = followInCallback(config, fanOut, Runtime.runFork(yield* Effect.runtime<never>()))
    /** Fails 404 (as JSON) before a stream response commits to a status. */
    const exists = (sessionId: string) => Effect.catchAll(engine.sessionState({ sessionId }), toWire)
    /**
     * After a cancel: a turn still open in the log that another process drives (a second `serve`, a
     * CLI `run` on the same data dir) was not cancelled — this engine can only cancel what it runs.
     * 409 `SessionBusy` then, as steering it is, rather than an `ok` for a Stop that stopped nothing.
     */
    const notDrivenElsewhere = (sessionId: string, turnId: string | undefined) =>
      engine.sessionState({ sessionId }).pipe(
        Effect.flatMap((state) =>
          state.openTurn === undefined || (turnId !== undefined && state.openTurn.turnId !== turnId)
            ? Effect.void
            : Effect.flatMap(SessionEngine.drivenElsewhere(engine, sessionId), (holder) =>
              holder === undefined ? Effect.void : Effect.fail(new SessionBusy({ sessionId, holder })))
        ),
        Effect.catchAll(toWire)
      )
    /** A session's MCP servers started again after a restart, before its turn (an unknown session is left to the turn to refuse). */
    const restore = (sessionId: string): Effect.Effect<void> =>
      config.restoreServers === undefined
        ? Effect.void
        : engine.sessionState({ sessionId }).pipe(
          Effect.flatMap((state) => config.restoreServers!({ sessionId, cwd: state.cwd })),
          Effect.catchAll(() => Effect.void)
        )
    return handlers
      .handle("create", ({ payload }) =>
        Effect.gen(function*() {
          const servers = payload.mcpServers ?? {}
          const named = Object.keys(servers)
          const badName = named.find((name) => !McpNames.isServerName(name))
          if (badName !== undefined) {
            return yield* Effect.fail(new BadRequest({ error: "BadRequest", message: `mcpServers: ${JSON.stringify(badName)} is not a server name (1 to 40 letters, digits, _ or -, no __, not ending in _)` }))
          }
          if (named.length > 0 && config.sessionServers === undefined) {
            return yield* Effect.fail(new BadRequest({ error: "BadRequest", message: "mcpServers: this server starts no MCP servers" }))
          }
          const cwd = yield* WorkingDirectory.canonical(payload.cwd ?? config.defaultCwd).pipe(Effect.catchAll(toWire))
          const create = engine.createSession({ cwd, client: "web" }).pipe(Effect.catchAll(toWire))
          if (config.sessionServers === undefined) return yield* create
          // The servers start before the session is stored: one that cannot start refuses the request,
          // and no session is left behind; once started, creating and binding run to the end.
          return yield* PendingServers.startThenBind(
            config.sessionServers(cwd, servers).pipe(
              Effect.mapError((error) => new BadRequest({ error: "BadRequest", message: `mcpServers: ${error.message}` }))
            ),
            create,
            () => new ServerMisconfigured({ error: "ServerMisconfigured", message: PendingServers.expectedShape })
          )
        }))
      .handle("list", () =>
        Effect.gen(function*() {
          const filter = yield* HttpServerRequest.schemaSearchParams(ListFilter).pipe(
            Effect.mapError(() => new BadRequest({ error: "BadRequest", message: "cwd, search and limit are given once each; limit is a whole number from 1 to 100000" }))
          )
          const sessions = yield* engine.listSessions.pipe(Effect.catchAll(toWire))
          const kept = Session.filterSummaries(sessions, filter)
          return filter.limit === undefined ? kept : kept.slice(0, filter.limit)
        }))
      .handle("get", ({ path }) =>
        engine.sessionState({ sessionId: path.id }).pipe(
          Effect.flatMap((state) =>
            Effect.map(subagentApprovals(engine, state), (below) => {
              const shown = view(state, turns.isRunning(path.id))
              // A subagent waiting for the user pauses its top session too: whoever answers it answers them.
              return below.length === 0 ? shown : { ...shown, phase: "paused" as const, pendingApprovals: [...shown.pendingApprovals, ...below] }
            })
          ),
          Effect.catchAll(toWire)
        ))
      .handle("startTurn", ({ path, payload }) =>
        TurnImages.decode(payload.images).pipe(
          Effect.tap(() => restore(path.id)),
          Effect.flatMap((images) => turns.start(path.id, payload.message, images, payload.budget).pipe(Effect.catchAll(toWire))),
          Effect.map((turnId) => ({ turnId }))
        ))
      .handle("cancel", ({ path }) =>
        HttpServerRequest.schemaSearchParams(CancelTarget).pipe(
          Effect.mapError(() => new BadRequest({ error: "BadRequest", message: "turnId is given once, and is not empty" })),
          Effect.tap(() => exists(path.id)),
          // Named, only that turn: a Stop for a turn that has ended meanwhile leaves the next one (a follow-up's) running.
          Effect.flatMap(({ turnId }) =>
            Effect.zipRight(
              engine.cancelTurn(turnId === undefined ? { sessionId: path.id } : { sessionId: path.id, turnId }),
              notDrivenElsewhere(path.id, turnId)
            )
          ),
          Effect.as({ ok: true as const })
        ))
      .handle("approve", ({ path, payload }) =>
        engine.resolvePermission({
          sessionId: path.id,
          toolCallId: path.toolCallId,
          decision: payload.decision,
          remember: payload.remember ?? false
        }).pipe(
          // A turn paused in the log (its process stopped while the call waited) goes on here.
          Effect.zipRight(turns.resumeIfIdle(path.id)),
          Effect.as({ ok: true as const }),
          Effect.catchAll(toWire)
        ))
      .handle("steer", ({ path, payload }) =>
        engine.steer({ sessionId: path.id, message: payload.message, ...(payload.turnId === undefined ? {} : { turnId: payload.turnId }) }).pipe(
          Effect.as({ ok: true as const }),
          Effect.catchAll(toWire)
        ))
      .handle("followUp", ({ path, payload }) =>
        restore(path.id).pipe(Effect.zipRight(engine.followUp({ sessionId: path.id, message: payload.message })), Effect.catchAll(toWire)))
      .handle("dropFollowUps", ({ path }) =>
        HttpServerRequest.schemaSearchParams(FollowUpsToDrop).pipe(
          Effect.mapError(() => new BadRequest({ error: "BadRequest", message: "each queueId is not empty, and there are at most 1,000" })),
          // Named, only those: a follow-up another client queued after this one drew its list stays queued.
          Effect.flatMap(({ queueId }) =>
            engine.dropFollowUps({ sessionId: path.id, ...(queueId === undefined ? {} : { queueIds: typeof queueId === "string" ? [queueId] : queueId }) }).pipe(
              Effect.catchAll(toWire)
            )
          )
        ))
      .handle("rename", ({ path, payload }) => engine.renameSession({ sessionId: path.id, title: payload.title }).pipe(Effect.catchAll(toWire)))
      .handle("rewind", ({ path, payload }) =>
        engine.rewindSession({ sessionId: path.id, toSequence: payload.toSequence, force: payload.force === true }).pipe(
          Effect.catchAll((error): Effect.Effect<never, BadRequest | NotFound | Conflict | StoreFailure | RewindRefusedWire> =>
            error._tag === "RewindRefused" ? rewindRefused(error) : toWire(error)
          )
        ))
      // In the request's fiber: it answers once the compaction has ended, and a client that goes away cancels it.
      .handle("compact", ({ path, payload }) =>
        engine.compactSession({
          sessionId: path.id,
          ...(payload.keepRecentTokens === undefined ? {} : { keepRecentTokens: payload.keepRecentTokens })
        }).pipe(
          Effect.catchAll((error): Effect.Effect<never, CompactionFailedWire | Effect.Effect.Error<ReturnType<typeof toWire>>> =>
            error._tag === "CompactionFailed" ? compactionFailed(error) : toWire(error)
          )
        ))
      .handle("fork", ({ path, payload }) =>
        engine.forkSession({ sessionId: path.id, ...(payload.atSequence === undefined ? {} : { atSequence: payload.atSequence }) }).pipe(
          Effect.catchAll(toWire)
        ))
      .handle("events", ({ path, urlParams }) =>
        Effect.gen(function*() {
          yield* exists(path.id)
          const request = yield* HttpServerRequest.HttpServerRequest
          const after = urlParams.after ?? 0
          const events = engine.replaySession({ sessionId: path.id }).pipe(Stream.filter((event) => event.sequence > after))
          if ((request.headers["accept"] ?? "").includes("application/x-ndjson")) {
            return HttpServerResponse.stream(
              events.pipe(Stream.map((event) => AgentEvent.encodeJson(event) + "\n"), Stream.encodeText),
              { contentType: "application/x-ndjson" }
            )
          }
          const all = yield* Stream.runCollect(events).pipe(Effect.catchAll(toWire))
          // The stored JSON of each event, unchanged (as the CLI's `replay --json` prints it).
          return HttpServerResponse.text(`[${Array.from(all, AgentEvent.encodeJson).join(",")}]`, { contentType: "application/json" })
        }))
      .handle("live", ({ path, urlParams }) =>
        Effect.gen(function*() {
          const state = yield* exists(path.id)
          const request = yield* HttpServerRequest.HttpServerRequest
          const after = yield* resumeAfter(request, urlParams.after)
          if (request.method === "HEAD") return Live.headResponse()
          const direct = Live.directResponse(request)
          return direct === undefined
            ? Live.response(engine.watchSession({ sessionId: path.id, fromSequence: after + 1 }), config.keepAlive)
            : fanOut.response(path.id, after + 1, config.keepAlive, direct, state.lastSequence)
        }))
  }))

/** The handlers of every route of `Api`, with the token check. */
export const layer = Layer.mergeAll(healthLayer, sessionsLayer).pipe(Layer.provide(authorizationLayer))
