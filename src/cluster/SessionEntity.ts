/**
 * A session as an `@effect/cluster` entity: the entity id is the session id, and the runner that
 * owns the entity's shard is the one process that drives the session (CONTRACT.md §9). The
 * protocol carries what changes a session; reads (list, state, replay, live) go to the shared
 * store from any runner.
 *
 * Every message is volatile (not persisted): a message sent to a runner that dies before it
 * answers is sent again to the shard's next owner. So the messages that change what a session holds
 * carry an idempotency key, made once by the sender and stored with the message's event
 * (`FollowUp` → `followup.queued`, `Steer` → `turn.steered`, `ResolvePermission` → the user's
 * `permission.resolved`): the next owner finds the key in the log and answers from it instead of
 * applying the message again. A steer is answered once accepted and stored at the next step
 * boundary; if its owner dies in between, the steer is lost with the turn it was for (which the
 * next owner closes `interrupted`), and sent again it finds no turn to steer. Cancel, resume and
 * dropping follow-ups are safe to repeat. `StartTurn` answers as soon as `turn.started` is stored
 * (the turn then runs on the owner whoever is connected): an owner that dies after storing it and
 * before answering leaves the message to be run again as a new turn — as `RunTurn`, which streams a
 * whole turn, may be — after the log's repair closed the first one. A turn's images travel as
 * references to the shared store's blob area (see `CarriedImages`), never as bytes.
 *
 * @since 0.2.0
 */
import * as Entity from "@effect/cluster/Entity"
import * as Rpc from "@effect/rpc/Rpc"
import * as Schema from "effect/Schema"
import {
  AgentEvent,
  ApprovalNotPending,
  CompactionFailed,
  EventStoreFailure,
  Image,
  InvalidInput,
  NothingToCompact,
  NothingToResume,
  NoTurnInProgress,
  RewindRefused,
  SessionBusy,
  SessionNotFound,
  TurnInProgress
} from "../index.js"

/** Why a turn could not start (as `SessionEngine.runTurn` fails). */
export const StartFailure = Schema.Union(EventStoreFailure, SessionNotFound, TurnInProgress, InvalidInput, SessionBusy)

/**
 * A turn's budget (`SessionEngine.RunTurnInput["budget"]`), checked by the owner's engine. Optional,
 * so that runners of an older version, which send none, and newer ones decode each other's messages.
 */
const budget = Schema.optional(AgentEvent.TurnBudget)

/** Starts a turn on the owner, detached from the caller; answers once `turn.started` is stored. */
export const StartTurn = Rpc.make("StartTurn", {
  payload: { message: Schema.String, images: Schema.optional(Schema.Array(Image.ImageRef)), budget },
  success: Schema.Struct({ turnId: Schema.String }),
  error: StartFailure
})

/** Runs a turn and streams its stored events (`SessionEngine.runTurn`); interrupting it cancels the turn. */
export const RunTurn = Rpc.make("RunTurn", {
  payload: { message: Schema.String, images: Schema.optional(Schema.Array(Image.ImageRef)), budget },
  success: AgentEvent.AgentEvent,
  error: StartFailure,
  stream: true
})

/** Continues a turn the log holds paused (`SessionEngine.resumeTurn`), streaming its events. */
export const ResumeTurn = Rpc.make("ResumeTurn", {
  success: AgentEvent.AgentEvent,
  error: Schema.Union(EventStoreFailure, SessionNotFound, TurnInProgress, NothingToResume, SessionBusy),
  stream: true
})

/** Continues, detached, a turn the log holds paused when no turn of the session runs on the owner. */
export const ResumeIfIdle = Rpc.make("ResumeIfIdle")

/** Cancels the running turn and answers once it has ended; never fails. */
export const CancelTurn = Rpc.make("CancelTurn", { payload: { turnId: Schema.optional(Schema.String) } })

/** The key a sender makes once per message, so the message applies once however often it is delivered. */
const idempotencyKey = Schema.String

/** Answers a call paused on `ask`. */
export const ResolvePermission = Rpc.make("ResolvePermission", {
  payload: { toolCallId: Schema.String, decision: Schema.Literal("allow", "deny"), remember: Schema.Boolean, idempotencyKey },
  error: Schema.Union(ApprovalNotPending, SessionNotFound, EventStoreFailure, InvalidInput, SessionBusy)
})

/** Sends a message into the running turn (`SessionEngine.steer`): only into the turn named `turnId`, when given. */
export const Steer = Rpc.make("Steer", {
  payload: { message: Schema.String, idempotencyKey, turnId: Schema.optional(Schema.String) },
  error: Schema.Union(NoTurnInProgress, SessionNotFound, InvalidInput, EventStoreFailure)
})

/** Queues a follow-up (`SessionEngine.followUp`). */
export const FollowUp = Rpc.make("FollowUp", {
  payload: { message: Schema.String, idempotencyKey },
  success: Schema.Struct({ queueId: Schema.String }),
  error: Schema.Union(EventStoreFailure, SessionNotFound, InvalidInput, SessionBusy)
})

/** Drops the queued follow-ups (`SessionEngine.dropFollowUps`): those named by `queueIds` when given. */
export const DropFollowUps = Rpc.make("DropFollowUps", {
  payload: { queueIds: Schema.optional(Schema.Array(Schema.String)) },
  success: Schema.Struct({ queueIds: Schema.Array(Schema.String) }),
  error: Schema.Union(EventStoreFailure, SessionNotFound, SessionBusy)
})

/** Names the session (`SessionEngine.renameSession`); naming it the same again stores nothing, so a second delivery is harmless. */
export const RenameSession = Rpc.make("RenameSession", {
  payload: { title: Schema.String },
  success: Schema.Struct({ title: Schema.String }),
  error: Schema.Union(EventStoreFailure, SessionNotFound, InvalidInput, SessionBusy)
})

/** Compacts the session's context now (`SessionEngine.compactSession`); answers with the `session.compacted` payload. */
export const CompactSession = Rpc.make("CompactSession", {
  payload: { keepRecentTokens: Schema.optional(Schema.Int) },
  success: AgentEvent.SessionCompacted.fields.payload,
  error: Schema.Union(EventStoreFailure, SessionNotFound, TurnInProgress, NothingToCompact, CompactionFailed, InvalidInput, SessionBusy)
})

/**
 * Rewinds the session (`SessionEngine.rewindSession`); answers with what it did. Delivered again, a
 * second rewind to the same point finds the files as the first left them and stores a rewind that
 * changes nothing.
 */
export const RewindSession = Rpc.make("RewindSession", {
  payload: { toSequence: Schema.Int, force: Schema.optional(Schema.Boolean) },
  success: Schema.Struct({
    sequence: Schema.Int,
    toSequence: Schema.Int,
    changes: Schema.Array(AgentEvent.FileChange),
    forced: Schema.Array(Schema.String),
    incomplete: Schema.Array(Schema.String),
    /** Files it restored that a command's snapshot recorded (whoever wrote them while it ran); absent from an older engine: none. */
    observed: Schema.optionalWith(Schema.Array(Schema.String), { default: () => [] })
  }),
  error: Schema.Union(EventStoreFailure, SessionNotFound, TurnInProgress, InvalidInput, RewindRefused, SessionBusy)
})

/** The session entity. */
export const SessionEntity = Entity.make("effect-agent/Session", [
  StartTurn,
  RunTurn,
  ResumeTurn,
  ResumeIfIdle,
  CancelTurn,
  ResolvePermission,
  Steer,
  FollowUp,
  DropFollowUps,
  RenameSession,
  CompactSession,
  RewindSession
])
