/**
 * The HTTP API of CONTRACT.md §7.1 as one `HttpApi` definition: the server's handlers, the typed
 * client (`HttpApiClient.make(Api)`) and `/openapi.json` all come from it.
 *
 * Errors on the wire are `{error, message}`: `error` names what went wrong (a tag), `message` says
 * it for a person, and neither carries a stack, a path of the runtime or a secret.
 *
 * @since 0.2.0
 */
import * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiMiddleware from "@effect/platform/HttpApiMiddleware"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as HttpApiSecurity from "@effect/platform/HttpApiSecurity"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { AgentEvent, McpConfig, Session, version } from "../index.js"

const errorFields = <Tag extends string>(tag: Tag) => ({ error: Schema.Literal(tag), message: Schema.String })

/** 400: the request's body, path or query is not what the route takes. */
export class BadRequest extends Schema.Class<BadRequest>("BadRequest")(errorFields("BadRequest"), HttpApiSchema.annotations({ status: 400 })) {}
/** 401: no token, or a wrong one. */
export class Unauthorized extends Schema.Class<Unauthorized>("Unauthorized")(errorFields("Unauthorized"), HttpApiSchema.annotations({ status: 401 })) {}
/**
 * 403: the request names another host (DNS rebinding), comes from another origin's page, or uses
 * the viewer's cookie to change something from anywhere but the viewer's own page.
 */
export class Forbidden extends Schema.Class<Forbidden>("Forbidden")(errorFields("Forbidden"), HttpApiSchema.annotations({ status: 403 })) {}
/** A session id the store does not hold, and where to find the ones it does. */
export const noSession = (sessionId: string): string => `No session ${sessionId}; GET /sessions lists the stored ones`

/** 404: no such session (or route). */
export class NotFound extends Schema.Class<NotFound>("NotFound")(
  { error: Schema.Literal("SessionNotFound", "NotFound"), message: Schema.String },
  HttpApiSchema.annotations({ status: 404 })
) {}
/**
 * 409: the session is not in a state that allows it — a turn runs (or none does, for a steer), no
 * call waits, another process drives it, there is nothing to compact, or it is not one the server's
 * user started (`SessionUntrusted`: its log may have come with a repository; `effect-agent adopt`).
 */
export class Conflict extends Schema.Class<Conflict>("Conflict")(
  {
    error: Schema.Literal("TurnInProgress", "ApprovalNotPending", "SessionBusy", "NothingToResume", "NoTurnInProgress", "NothingToCompact", "SessionUntrusted"),
    message: Schema.String
  },
  HttpApiSchema.annotations({ status: 409 })
) {}
/** 413: the request body is larger than the server takes. */
export class PayloadTooLarge extends Schema.Class<PayloadTooLarge>("PayloadTooLarge")(
  errorFields("PayloadTooLarge"),
  HttpApiSchema.annotations({ status: 413 })
) {}
/**
 * 502: the model gave no summary for a manual compaction (the provider failed, or answered with
 * nothing). `compaction.failed` is stored and the context is unchanged; its error code is in the message.
 */
export class CompactionFailed extends Schema.Class<CompactionFailed>("CompactionFailed")(
  errorFields("CompactionFailed"),
  HttpApiSchema.annotations({ status: 502 })
) {}
/**
 * 409: a rewind was refused, nothing changed (`reason`, see `RewindRefused`): `changed_outside`
 * names the files changed outside the agent since it wrote them (send `force: true` to overwrite
 * them), `unsafe_path` the paths that lead outside the session's cwd or through a link.
 */
export class RewindRefused extends Schema.Class<RewindRefused>("RewindRefused")(
  {
    error: Schema.Literal("RewindRefused"),
    reason: Schema.String,
    message: Schema.String,
    files: Schema.optional(Schema.Array(Schema.String))
  },
  HttpApiSchema.annotations({ status: 409 })
) {}
/** 500: the embedder's server is set up wrong (e.g. its `sessionServers` returned the wrong shape); nothing was stored. */
export class ServerMisconfigured extends Schema.Class<ServerMisconfigured>("ServerMisconfigured")(
  errorFields("ServerMisconfigured"),
  HttpApiSchema.annotations({ status: 500 })
) {}
/** 500: the store failed (its reason only; details go to the server's log). */
export class StoreFailure extends Schema.Class<StoreFailure>("StoreFailure")(errorFields("EventStoreFailure"), HttpApiSchema.annotations({ status: 500 })) {}

/**
 * The token check of every route but `/healthz`: the bearer header. The viewer's page uses its
 * HttpOnly cookie instead, named per port (`effect_agent_session_<port>`), with the page's key in
 * `X-Effect-Agent-Key` on every request (the cookie reaches every port of the host; the key only
 * the viewer's page), and writes only from the viewer's own page (see `Access`); API clients use
 * the bearer token.
 */
export class Authorization extends HttpApiMiddleware.Tag<Authorization>()("effect-agent/server/Authorization", {
  failure: Schema.Union(Unauthorized, Forbidden),
  security: { bearer: HttpApiSecurity.bearer }
}) {}

const SessionId = Schema.Struct({ id: Schema.String })

/** An open tool call, as `GET /sessions/:id` shows it. */
export const OpenCall = Schema.Struct({
  toolCallId: Schema.String,
  tool: Schema.String,
  args: Schema.Unknown,
  status: Schema.String,
  risk: Schema.optional(Schema.String),
  /**
   * A subagent's call waiting for the user, in its top session's `pendingApprovals`: the subagent's
   * session (answer it at `POST /sessions/<sessionId>/approvals/<toolCallId>`) and its task.
   */
  subagent: Schema.optional(Schema.Struct({ sessionId: Schema.String, description: Schema.String }))
})

/** A follow-up waiting to run as its own turn. */
export const QueuedFollowUp = Schema.Struct({ queueId: Schema.String, content: Schema.String })

/**
 * A session's state: `idle`, `running` (a turn runs in this server), `paused` (a turn waits for an
 * approval, here or in the log), `compacting` (a compaction runs: a manual one, or one inside the
 * open turn). `followUps` are the queued follow-ups, oldest first.
 */
export const SessionView = Schema.Struct({
  ...Session.SessionSummary.fields,
  phase: Schema.Literal("idle", "running", "paused", "compacting"),
  openTurnId: Schema.optional(Schema.String),
  openCalls: Schema.Array(OpenCall),
  pendingApprovals: Schema.Array(OpenCall),
  lastTurn: Schema.optional(Schema.Struct({ turnId: Schema.String, stopReason: Schema.String, errorCode: Schema.optional(Schema.String) })),
  followUps: Schema.Array(QueuedFollowUp)
})
export type SessionView = typeof SessionView.Type

/**
 * A request body that refuses what it does not declare (a 400 naming the field, down to nested
 * objects) instead of ignoring it: a client that sends `images` with a steer, or `comand` for an MCP
 * server, learns at once that none of it was used, rather than finding it silently dropped.
 */
const strict = <S extends Schema.Schema.Any>(body: S): S => body.annotations({ parseOptions: { onExcessProperty: "error" } }) as S

/**
 * A body whose fields are all optional: sent without a body at all (what the server decodes as
 * `null`), it is the same as `{}` — `curl -X POST …/compact` works.
 */
const optionalBody = <Fields extends Schema.Struct.Fields>(body: Schema.Struct<Fields>) =>
  Schema.transform(Schema.NullOr(strict(body)), Schema.typeSchema(body), {
    strict: true,
    decode: (given) => given ?? ({} as Schema.Struct.Type<Fields>),
    encode: (value) => value
  })
/**
 * `POST /sessions`: the session's working directory (default: the server's), and MCP servers for
 * it in the configuration file's shape (`{"<name>": {"command", "args", "env"} | {"url", "headers"}}`);
 * the body may be left out.
 */
export const CreateSession = optionalBody(Schema.Struct({
  cwd: Schema.optional(Schema.String),
  mcpServers: Schema.optional(McpConfig.ServersByName)
}))
/**
 * A whole number JavaScript holds exactly (at most 2^53 - 1). That a limit is positive the engine
 * checks (`InvalidInput`, a 400 too): the typed client then sends a 0 for the server to refuse.
 */
const Count = Schema.Int
/**
 * `POST /sessions/:id/turns`. `images`: PNG, JPEG, GIF or WebP, base64 in `data` (at most 5 MiB
 * each decoded, 20 per message; `mediaType`, when given, must be what the bytes are).
 */
export const StartTurn = strict(Schema.Struct({
  message: Schema.String,
  images: Schema.optional(Schema.Array(Schema.Struct({ mediaType: Schema.optional(Schema.String), data: Schema.String }))),
  /**
   * One budget for the turn and the subagents it starts: tokens (input with cache reads and writes,
   * plus output) and model requests, whole numbers as `--max-tokens` and `--max-steps` take them (a
   * fraction acted as its ceiling), and US dollars, finite (JSON's `1e400` is Infinity).
   */
  budget: Schema.optional(Schema.Struct({ maxTokens: Schema.optional(Count), maxCost: Schema.optional(Schema.Number.pipe(Schema.finite())), maxSteps: Schema.optional(Count) }))
}))
/** `POST /sessions/:id/title`: the session's new title (made plain; 1 to 200 characters then). */
export const Rename = strict(Schema.Struct({ title: Schema.String }))
/**
 * `GET /sessions?cwd=&search=&limit=`: only the sessions of a directory (or under it), whose title or
 * id holds every word of `search`; the `limit` most recently active of them (1 to 100,000). Read by
 * the handler from the query rather than declared on the endpoint, so the typed client's
 * `sessions.list()` keeps taking no argument.
 */
export const ListFilter = Schema.Struct({
  cwd: Schema.optional(Schema.String),
  search: Schema.optional(Schema.String),
  limit: Schema.optional(Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, 100_000)))
})
/**
 * `POST /sessions/:id/cancel?turnId=`: the turn the client means. A Stop clicked as that turn ends
 * lands while the session's next turn (a queued follow-up's) runs: named, it cancels nothing. Read
 * by the handler (as `ListFilter` is), not declared on the endpoint: declared, the typed client
 * would make every caller pass it.
 */
export const CancelTarget = Schema.Struct({ turnId: Schema.optional(Schema.NonEmptyString) })
/**
 * `DELETE /sessions/:id/followups?queueId=…&queueId=…`: the follow-ups the client means (those it
 * showed), at most 1,000. Without it every queued one is dropped — including one another client
 * queued after this one last drew the list. Read by the handler, as `CancelTarget` is.
 */
export const FollowUpsToDrop = Schema.Struct({
  queueId: Schema.optional(Schema.Union(Schema.NonEmptyString, Schema.Array(Schema.NonEmptyString).pipe(Schema.maxItems(1_000))))
})
/** `POST /sessions/:id/steer` and `POST /sessions/:id/followups`: a message for the running turn, or for a turn of its own later. */
export const SessionMessage = strict(Schema.Struct({ message: Schema.String }))
/**
 * `POST /sessions/:id/steer`: the message, and the turn it was written for (optional): a steer
 * landing after that turn ended, while the next one (a queued follow-up's) runs, is refused (409
 * `NoTurnInProgress`) rather than given to the turn it was not written for.
 */
export const SteerMessage = strict(Schema.Struct({ message: Schema.String, turnId: Schema.optional(Schema.NonEmptyString) }))
/** `POST /sessions/:id/compact`: tokens of recent context kept verbatim this time (default: the server's setting); the body may be left out. */
export const Compact = optionalBody(Schema.Struct({ keepRecentTokens: Schema.optional(Schema.Int.pipe(Schema.nonNegative())) }))
/** `POST /sessions/:id/fork`: the fork point, the end of a closed turn or a session-level event between turns (default: the last such point, the session as it is now); the body may be left out. */
export const Fork = optionalBody(Schema.Struct({ atSequence: Schema.optional(Schema.Int.pipe(Schema.positive())) }))
/** `POST /sessions/:id/rewind`: the point to go back to (the end of a closed turn), and whether to overwrite files changed outside the agent. */
export const Rewind = strict(Schema.Struct({ toSequence: Schema.Int.pipe(Schema.positive()), force: Schema.optional(Schema.Boolean) }))
/** What a rewind did: its `session.rewound` (sequence, payload) — the files restored, those forced, and what could not be known. */
export const Rewound = Schema.Struct({
  sequence: Schema.Int,
  toSequence: Schema.Int,
  changes: Schema.Array(AgentEvent.FileChange),
  forced: Schema.Array(Schema.String),
  incomplete: Schema.Array(Schema.String),
  /** Files it restored that a command's snapshot recorded (whoever wrote them while it ran); absent from an older engine: none. */
  observed: Schema.optionalWith(Schema.Array(Schema.String), { default: () => [] })
}).annotations({ identifier: "SessionRewound" })
/** What a manual compaction stored: the `session.compacted` payload (CONTRACT.md §8), by the log's own schema. */
export const Compacted = AgentEvent.SessionCompacted.fields.payload.annotations({ identifier: "SessionCompacted" })
/** `POST /sessions/:id/approvals/:toolCallId`: `remember` also allows (or denies) later calls of the same scope. */
export const Approval = strict(Schema.Struct({ decision: Schema.Literal("allow", "deny"), remember: Schema.optional(Schema.Boolean) }))

/**
 * A stored event (CONTRACT.md §2), decoded by the log's own schema. Its JSON Schema is the envelope
 * only: the payload differs by `type` and a newer server may send types an older client does not know.
 */
export const StoredEvent = AgentEvent.AgentEvent.annotations({
  identifier: "AgentEvent",
  jsonSchema: {
    type: "object",
    required: ["id", "sessionId", "sequence", "timestamp", "type", "payload"],
    properties: {
      id: { type: "string" },
      sessionId: { type: "string" },
      turnId: { type: "string" },
      sequence: { type: "integer", minimum: 1 },
      timestamp: { type: "string", description: "ISO-8601" },
      type: { type: "string", enum: [...AgentEvent.eventTypes] },
      payload: { type: "object" }
    }
  }
})

/** A sequence number in a query (`?after=N`). */
const After = Schema.Struct({ after: Schema.optional(Schema.NumberFromString.pipe(Schema.int(), Schema.nonNegative())) })

/** The unauthenticated liveness route. */
export class HealthGroup extends HttpApiGroup.make("health").add(
  HttpApiEndpoint.get("healthz", "/healthz").addSuccess(Schema.Struct({ ok: Schema.Literal(true) }))
) {}

/** The session routes, all behind the token. */
export class SessionsGroup extends HttpApiGroup.make("sessions")
  .add(HttpApiEndpoint.post("create", "/sessions").setPayload(CreateSession).addSuccess(Session.Session, { status: 201 }).addError(ServerMisconfigured))
  .add(HttpApiEndpoint.get("list", "/sessions").addSuccess(Schema.Array(Session.SessionSummary).annotations({
    description: "Most recently active first, each with its title. Query: `cwd` (only that directory's sessions, or under it), `search` (every word in the title or id, any case), `limit` (the most recently active that many)"
  })))
  .add(HttpApiEndpoint.get("get", "/sessions/:id").setPath(SessionId).addSuccess(SessionView))
  .add(
    HttpApiEndpoint.post("startTurn", "/sessions/:id/turns").setPath(SessionId).setPayload(StartTurn).addSuccess(
      Schema.Struct({ turnId: Schema.String }),
      { status: 202 }
    )
  )
  .add(
    HttpApiEndpoint.post("cancel", "/sessions/:id/cancel").setPath(SessionId).addSuccess(
      Schema.Struct({ ok: Schema.Literal(true) }).annotations({
        description:
          "Answered once the turn has closed. Query: `turnId` (optional), the turn meant: only that turn is cancelled, so a cancel for a turn that has ended does nothing"
      })
    )
  )
  .add(
    HttpApiEndpoint.post("approve", "/sessions/:id/approvals/:toolCallId")
      .setPath(Schema.Struct({ id: Schema.String, toolCallId: Schema.String }))
      .setPayload(Approval)
      .addSuccess(Schema.Struct({ ok: Schema.Literal(true) }))
  )
  .add(
    HttpApiEndpoint.post("steer", "/sessions/:id/steer").setPath(SessionId).setPayload(SteerMessage).addSuccess(
      Schema.Struct({ ok: Schema.Literal(true) }).annotations({ description: "Accepted: stored as turn.steered at the running turn's next step boundary" }),
      { status: 202 }
    )
  )
  .add(
    HttpApiEndpoint.post("followUp", "/sessions/:id/followups").setPath(SessionId).setPayload(SessionMessage).addSuccess(
      Schema.Struct({ queueId: Schema.String }).annotations({ description: "Queued (followup.queued); runs as its own turn once the session is idle" }),
      { status: 202 }
    )
  )
  .add(
    HttpApiEndpoint.del("dropFollowUps", "/sessions/:id/followups").setPath(SessionId).addSuccess(
      Schema.Struct({ queueIds: Schema.Array(Schema.String) }).annotations({
        description: "The follow-ups dropped, oldest first. Query: `queueId` (optional, repeatable), only those follow-ups (the ones still queued); without it, every queued one"
      })
    )
  )
  .add(
    HttpApiEndpoint.post("rename", "/sessions/:id/title").setPath(SessionId).setPayload(Rename).addSuccess(
      Rename.annotations({ description: "The title as stored (session.titled): control characters dropped, whitespace collapsed" })
    )
  )
  .add(
    HttpApiEndpoint.post("compact", "/sessions/:id/compact").setPath(SessionId).setPayload(Compact).addSuccess(
      Compacted.annotations({ description: "Answered once the compaction has ended; a client that disconnects first cancels it (compaction.failed {cancelled})" })
    ).addError(CompactionFailed)
  )
  .add(
    HttpApiEndpoint.post("rewind", "/sessions/:id/rewind").setPath(SessionId).setPayload(Rewind).addSuccess(
      Rewound.annotations({ description: "Rewound: the conversation continues from toSequence and the files the agent changed since are restored (session.rewound)" })
    ).addError(RewindRefused)
  )
  .add(
    HttpApiEndpoint.post("fork", "/sessions/:id/fork").setPath(SessionId).setPayload(Fork).addSuccess(Session.Session, { status: 201 })
  )
  .add(
    HttpApiEndpoint.get("events", "/sessions/:id/events").setPath(SessionId).setUrlParams(After).addSuccess(
      Schema.Array(StoredEvent).annotations({ description: "The stored events after `after`; NDJSON with `Accept: application/x-ndjson`" })
    )
  )
  .add(
    HttpApiEndpoint.get("live", "/sessions/:id/live").setPath(SessionId).setUrlParams(After).addSuccess(
      HttpApiSchema.Text({ contentType: "text/event-stream" }).annotations({
        description: "SSE: stored events after Last-Event-ID (or ?after=N), then live ones; id: sequence, event: type, data: the stored event JSON"
      })
    )
  )
  .addError(NotFound)
  .addError(Conflict)
  .addError(BadRequest)
  .addError(PayloadTooLarge)
  .addError(StoreFailure)
  .middleware(Authorization)
{}

/** The whole API. */
export class Api extends HttpApi.make("effect-agent").add(HealthGroup).add(SessionsGroup)
  // The OpenAPI document's `info`, which clients generated from it are named after (else "Api" 0.0.1);
  // the package's version (src/domain/Version.ts), as the CLI and the ACP agent report it.
  .annotate(OpenApi.Title, "effect-agent")
  .annotate(OpenApi.Version, version)
{}
