/**
 * The typed errors of effect-agent. Store failures and provider failures are distinct types: a
 * provider failure ends a turn as `stopReason: "error"`, a store failure reaches the caller.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/** Why the event store failed. */
export const EventStoreFailureReason = Schema.Literal(
  "unavailable",
  "permission_denied",
  "disk_full",
  "sequence_conflict",
  "corrupt",
  "torn_line",
  "line_too_long",
  // The JSONL log was renamed over, removed or cut short while this process held its writer lock: nothing was appended.
  "log_replaced",
  "log_truncated",
  // The session's log is not one this user started (see StartedSessions): not driven until adopted.
  "untrusted",
  // A writer asked for, or an append made, inside a caller's SQL transaction (see sql/CallerTransaction.ts): refused, nothing taken or stored.
  "in_transaction",
  "unknown"
)
/** Why the event store failed. */
export type EventStoreFailureReason = typeof EventStoreFailureReason.Type

/**
 * The event store could not append, read or list. `path` and `line` name the file and line when a
 * file is involved; the original error is kept as `cause` and never written into an event.
 */
export class EventStoreFailure extends Schema.TaggedError<EventStoreFailure>()("EventStoreFailure", {
  reason: EventStoreFailureReason,
  operation: Schema.Literal("append", "read", "list", "lock", "repair"),
  detail: Schema.String,
  sessionId: Schema.optional(Schema.String),
  sequence: Schema.optional(Schema.Int),
  path: Schema.optional(Schema.String),
  line: Schema.optional(Schema.Int),
  cause: Schema.optional(Schema.Defect)
}) {
  override get message(): string {
    // Not a failure of the store but a refusal the user acts on: its detail, in plain words, says
    // what happened and how to adopt the session (the tag and `reason` are for code).
    if (this.reason === "untrusted") return this.detail
    const where = this.path === undefined ? "" : ` (${this.path}${this.line === undefined ? "" : `:${this.line}`})`
    return `Event store ${this.operation} failed [${this.reason}]: ${this.detail}${where}`
  }
}

/**
 * Another process (or another engine of this one) drives the session: it holds the session's writer
 * lock. Nothing was stored or changed. `holder` describes the holder, e.g. `pid 1234 on host h`.
 */
export class SessionBusy extends Schema.TaggedError<SessionBusy>()("SessionBusy", {
  sessionId: Schema.String,
  holder: Schema.String
}) {
  override get message(): string {
    return `Session ${this.sessionId} is busy (SessionBusy): it is driven by ${this.holder}; try again when that process ends`
  }
}

/** Why a model provider failed. */
export const ProviderFailureReason = Schema.Literal(
  "rate_limited",
  "overloaded",
  "authentication",
  "invalid_request",
  "context_overflow",
  "network",
  "server",
  "unknown"
)
/** Why a model provider failed. */
export type ProviderFailureReason = typeof ProviderFailureReason.Type

/** The reasons a request may succeed if sent again unchanged. */
export const retryableReasons: ReadonlySet<ProviderFailureReason> = new Set([
  "rate_limited",
  "overloaded",
  "network",
  "server"
])

/**
 * A model provider failed. It never escapes a turn: the turn ends `stopReason: "error"` with the
 * `reason` as its `errorCode`. `detail` is for logs only; it may quote the vendor's message.
 * `retryAfterMs`: how long the vendor asked to wait before the request is sent again (its
 * `retry-after`). `retryDelayMs`: the wait a recording made before it sent the request again — a
 * cassette replaying it (see `Cassette`): the engine then retries after exactly that wait, whatever
 * its own retry policy would do, so the replay's log is the recording's.
 */
export class ProviderFailure extends Schema.TaggedError<ProviderFailure>()("ProviderFailure", {
  reason: ProviderFailureReason,
  detail: Schema.String,
  status: Schema.optional(Schema.Int),
  retryAfterMs: Schema.optional(Schema.Int),
  retryDelayMs: Schema.optional(Schema.Int),
  cause: Schema.optional(Schema.Defect)
}) {
  /** A failure of `reason`. */
  static of(
    reason: ProviderFailureReason,
    detail: string,
    extra: { readonly status?: number; readonly retryAfterMs?: number; readonly retryDelayMs?: number; readonly cause?: unknown } = {}
  ): ProviderFailure {
    return new ProviderFailure({ reason, detail, ...extra })
  }

  /** Whether sending the request again unchanged may succeed: it follows from the reason (see {@link retryableReasons}). */
  get retryable(): boolean {
    return retryableReasons.has(this.reason)
  }

  override get message(): string {
    return `Model provider failed [${this.reason}]${this.status === undefined ? "" : ` (HTTP ${this.status})`}: ${this.detail}`
  }
}

/** No session with this id exists in the store. */
export class SessionNotFound extends Schema.TaggedError<SessionNotFound>()("SessionNotFound", {
  sessionId: Schema.String
}) {
  override get message(): string {
    return `Session not found: ${this.sessionId}`
  }
}

/** The session already has a running turn; that turn is unaffected. */
export class TurnInProgress extends Schema.TaggedError<TurnInProgress>()("TurnInProgress", {
  sessionId: Schema.String,
  turnId: Schema.String
}) {
  override get message(): string {
    return `Session ${this.sessionId} already has a running turn (${this.turnId})`
  }
}

/** `steer` found no turn running in this engine for the session: there is nothing to steer. */
export class NoTurnInProgress extends Schema.TaggedError<NoTurnInProgress>()("NoTurnInProgress", {
  sessionId: Schema.String
}) {
  override get message(): string {
    return `Session ${this.sessionId} has no running turn to steer`
  }
}

/** No call of the session is waiting for the user's decision under this id. */
export class ApprovalNotPending extends Schema.TaggedError<ApprovalNotPending>()("ApprovalNotPending", {
  sessionId: Schema.String,
  toolCallId: Schema.String
}) {
  override get message(): string {
    return `No call ${this.toolCallId} is waiting for approval in session ${this.sessionId}`
  }
}

/** `resumeTurn` found no paused turn to continue in the session. */
export class NothingToResume extends Schema.TaggedError<NothingToResume>()("NothingToResume", {
  sessionId: Schema.String
}) {
  override get message(): string {
    return `Session ${this.sessionId} has no paused turn to resume`
  }
}

/** An engine operation was called with input that cannot be accepted; nothing was stored. */
export class InvalidInput extends Schema.TaggedError<InvalidInput>()("InvalidInput", {
  field: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return `Invalid ${this.field}: ${this.detail}`
  }
}

/** `compactSession` found nothing to summarise: every entry of the transcript fits the verbatim budget of recent context (or there is none). Nothing was stored. */
export class NothingToCompact extends Schema.TaggedError<NothingToCompact>()("NothingToCompact", {
  sessionId: Schema.String
}) {
  override get message(): string {
    return `Session ${this.sessionId} has nothing to compact: its recent context is kept verbatim as it is`
  }
}

/**
 * A manual compaction ended without a summary (`compaction.failed` is stored with the same
 * `errorCode`: a provider's reason, `context_overflow`, `empty_summary`); the context is unchanged.
 */
export class CompactionFailed extends Schema.TaggedError<CompactionFailed>()("CompactionFailed", {
  sessionId: Schema.String,
  compactionId: Schema.String,
  errorCode: Schema.String
}) {
  override get message(): string {
    return `Compaction ${this.compactionId} of session ${this.sessionId} failed [${this.errorCode}]; the context is unchanged`
  }
}

/**
 * A rewind that was refused, nothing stored and no file touched: `not_a_boundary` (the point is
 * inside a turn or a compaction), `past_compaction` (a compaction after the point replaced the
 * conversation before it — fork from the point instead), `nothing_to_rewind` (the point is the end),
 * `changed_outside` (`files` were changed since the agent last wrote them: pass `force` to overwrite
 * them), `unsafe_path` (`files` lead outside the session's cwd or through a link: never written),
 * `no_checkpoints` (files must be restored and this engine keeps no workspace checkpoints),
 * `io_error` (a file could not be written: the ones before it were restored, no event stored).
 */
export class RewindRefused extends Schema.TaggedError<RewindRefused>()("RewindRefused", {
  reason: Schema.Literal("not_a_boundary", "past_compaction", "nothing_to_rewind", "changed_outside", "unsafe_path", "no_checkpoints", "io_error", "too_large"),
  detail: Schema.String,
  files: Schema.optional(Schema.Array(Schema.String))
}) {
  override get message(): string {
    return `Cannot rewind: ${this.detail}${this.files === undefined || this.files.length === 0 ? "" : ` (${this.files.join(", ")})`}`
  }
}
