/**
 * A rewind's plan, from the log alone: where it may go, and what each file the agent changed since
 * must become. Files went through every change in the order the log stored them (abandoned branches
 * and earlier rewinds included, since a rewind restores files physically), so going back to a point
 * means undoing every change after it: a file's first change after the point says what it held there
 * (`before`), its last one what the agent left (`after`), which the rewind expects to find.
 *
 * @since 0.10.0
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type { AgentEvent, FileChange, SessionEventDraft } from "../domain/AgentEvent.js"
import { type EventStoreFailure, InvalidInput, RewindRefused, TurnInProgress } from "../domain/Errors.js"
import * as SessionState from "../domain/SessionState.js"
import type { EventStore } from "../services/EventStore.js"
import type { Restore, Restored } from "../services/WorkspaceCheckpoints.js"
import * as Fork from "./Fork.js"
import * as LiveSession from "./LiveSession.js"
import * as Pulled from "./Pulled.js"
import * as SessionDriver from "./SessionDriver.js"

/** What a rewind to a point must do. */
export interface Plan {
  readonly toSequence: number
  readonly files: ReadonlyArray<Restore>
  /** Why some changes after the point are not known (shell snapshots past their caps): they are not undone. */
  readonly incomplete: ReadonlyArray<string>
  /**
   * The files of `files` a command's snapshot saw change after the point (see {@link observedBy}):
   * whoever wrote them while it ran — the command, or you in your editor — is not known.
   */
  readonly observed: ReadonlyArray<string>
}

/** The tools whose changes a rewind knows are the agent's: they record the file they write. Any other call's (`shell`) are a snapshot's, seen. */
const writesItsOwnFile = new Set(["write_file", "edit_file"])

/**
 * Whether a `workspace.changed` was seen by a snapshot of cwd (a command's) rather than made by a
 * file tool: a command's record holds every file changed in cwd while it ran, whoever changed it,
 * as nothing here can tell the command's process tree's writes from an editor's. Read from the
 * call's tool in the log, so older logs say it too.
 */
export const observedBy = (tool: string | undefined): boolean => tool === undefined || !writesItsOwnFile.has(tool)

/** The file changes an event records: a tool call's, or a rewind's own. */
const changesOf = (event: AgentEvent): ReadonlyArray<FileChange> =>
  event.type === "workspace.changed" || event.type === "session.rewound" ? event.payload.changes : []

/**
 * The plan of a rewind to `toSequence`, folded from the session's log as it is read: a point between
 * turns (`InvalidInput` otherwise, as for a fork), before the end (`nothing_to_rewind`), with no
 * compaction after it (`past_compaction`: the conversation before a compaction is its summary now).
 * It keeps the session's state, and per file changed after the point its first `before` and last
 * `after` — never the events: a session of any length plans in the memory its hydration takes
 * (docs/benchmarks.md, row 23). `add` every event in order (while it answers `true`), then `result`.
 */
export class Planner {
  /** Checks the point, and that the whole log folds (as a fork's search does, read to the end). */
  private readonly point: Fork.PointSearch
  private last = 0
  private compaction: number | undefined = undefined
  private readonly files = new Map<string, { target: FileChange["before"]; expected: string | undefined }>()
  private readonly incomplete = new Set<string>()
  private readonly observed = new Set<string>()
  /** The tools of the calls after the point whose records may still come (a call's record precedes its end). */
  private readonly tools = new Map<string, string>()

  constructor(readonly toSequence: number) {
    this.point = new Fork.PointSearch(toSequence)
  }

  /** Folds the next event; `false` once the log cannot be read further. */
  add(event: AgentEvent): boolean {
    this.point.add(event)
    if (this.point.failed) return false
    this.last = event.sequence
    if (event.sequence <= this.toSequence) return true
    if (event.type === "session.compacted") this.compaction ??= event.sequence
    if (event.type === "model.tool_call_requested") this.tools.set(event.payload.toolCallId, event.payload.tool)
    if (event.type === "workspace.changed" && observedBy(this.tools.get(event.payload.toolCallId))) {
      for (const change of event.payload.changes) this.observed.add(change.path)
    }
    if (event.type === "tool.completed" || event.type === "tool.failed") this.tools.delete(event.payload.toolCallId)
    if (event.type === "turn.completed") this.tools.clear()
    for (const change of changesOf(event)) {
      const known = this.files.get(change.path)
      this.files.set(change.path, { target: known === undefined ? change.before : known.target, expected: change.after })
    }
    if (event.type === "workspace.changed" && event.payload.incomplete !== undefined) this.incomplete.add(event.payload.incomplete)
    if (event.type === "session.rewound") for (const why of event.payload.incomplete ?? []) this.incomplete.add(why)
    return true
  }

  /** The plan, or why there is none. */
  get result(): Either.Either<Plan, InvalidInput | RewindRefused> {
    const point = this.point.result
    if (Either.isLeft(point)) {
      return point.left.field === "atSequence"
        ? Either.left(new InvalidInput({ field: "toSequence", detail: point.left.detail.replace("fork at", "rewind to") }))
        : Either.left(point.left)
    }
    const { toSequence } = this
    if (toSequence >= this.last) return Either.left(new RewindRefused({ reason: "nothing_to_rewind", detail: `sequence ${toSequence} is the end of the session` }))
    if (this.compaction !== undefined) {
      return Either.left(new RewindRefused({
        reason: "past_compaction",
        detail: `the conversation before #${this.compaction} was compacted into a summary; fork the session at ${toSequence} instead`
      }))
    }
    return Either.right({
      toSequence,
      files: [...this.files].map(([path, { expected, target }]) => ({
        path,
        ...(target === undefined ? {} : { target }),
        ...(expected === undefined ? {} : { expected })
      })),
      incomplete: [...this.incomplete],
      observed: [...this.files.keys()].filter((path) => this.observed.has(path))
    })
  }
}

/** The plan of a rewind of `events` (the whole log) to `toSequence`: see {@link Planner}. */
export const plan = (events: Iterable<AgentEvent>, toSequence: number): Either.Either<Plan, InvalidInput | RewindRefused> => {
  const planner = new Planner(toSequence)
  for (const event of events) if (!planner.add(event)) break
  return planner.result
}

/** Plans from the stored log, read a chunk at a time in this fiber (see `Pulled`). */
const planFromStore = (store: EventStore.Service, sessionId: string, toSequence: number): Effect.Effect<Plan, EventStoreFailure | InvalidInput | RewindRefused> =>
  Effect.suspend(() => {
    const planner = new Planner(toSequence)
    return Pulled.forEachChunk(store.read(sessionId), (chunk) => {
      for (const event of chunk) if (!planner.add(event)) return stop
      return readOn
    }).pipe(Effect.zipRight(Effect.suspend(() => planner.result)))
  })
const readOn = Effect.succeed(true)
const stop = Effect.succeed(false)

/** Input of a rewind (see `SessionEngine.rewindSession`). */
export interface RewindInput {
  readonly sessionId: string
  readonly toSequence: number
  /** Overwrite files changed outside the agent since it last wrote them (default: refuse, naming them). */
  readonly force?: boolean | undefined
}

/** What a rewind did: its event's payload, and the event's sequence. */
export interface Rewound {
  readonly sequence: number
  readonly toSequence: number
  readonly changes: ReadonlyArray<FileChange>
  readonly forced: ReadonlyArray<string>
  readonly incomplete: ReadonlyArray<string>
  /**
   * The files it wrote or removed whose changes a command's snapshot recorded: changed while a
   * command ran, by the command or by anyone else (an editor's save). What they held is kept as the
   * rewind's pre-images (`changes[].before`): a rewind of the rewind gives it back.
   */
  readonly observed: ReadonlyArray<string>
}

/** `session.rewound`, built here with the rewind (session-level: no turnId). */
const rewoundDraft = (toSequence: number, restored: Restored, incomplete: ReadonlyArray<string>, observed: ReadonlyArray<string>): SessionEventDraft => ({
  type: "session.rewound",
  payload: {
    toSequence,
    changes: restored.changes,
    ...(restored.forced.length === 0 ? {} : { forced: restored.forced }),
    ...(incomplete.length === 0 ? {} : { incomplete }),
    ...(observed.length === 0 ? {} : { observed })
  }
})

/**
 * Rewinds a held session with no turn running (`TurnInProgress` otherwise, a paused one included):
 * closes what a crash left open, plans from the whole log (folded as it is read), restores the files (nothing when the plan
 * or a file check refuses), then stores `session.rewound`, which the folds apply to the state and
 * the conversation.
 */
export const run = (
  engine: SessionDriver.Engine,
  session: LiveSession.LiveSession,
  input: RewindInput
): Effect.Effect<Rewound, EventStoreFailure | InvalidInput | RewindRefused | TurnInProgress> =>
  SessionDriver.exclusive(
    engine,
    session,
    Effect.gen(function*() {
      const { services } = engine
      const open = session.live.state.openTurn
      if (open !== undefined && SessionState.isPaused(session.live.state)) {
        return yield* new TurnInProgress({ sessionId: input.sessionId, turnId: open.turnId })
      }
      yield* SessionDriver.closeDangling(engine, session)
      // A turn paused on its subagents stays open.
      const left = session.live.state.openTurn
      if (left !== undefined) return yield* new TurnInProgress({ sessionId: input.sessionId, turnId: left.turnId })
      const planned = yield* planFromStore(services.store, input.sessionId, input.toSequence)
      const checkpoints = services.checkpoints
      if (planned.files.length > 0 && checkpoints === undefined) {
        return yield* new RewindRefused({ reason: "no_checkpoints", detail: "files must be restored and this engine keeps no workspace checkpoints (provide WorkspaceCheckpoints)" })
      }
      const restored = checkpoints === undefined || planned.files.length === 0
        ? { changes: [], forced: [] }
        : yield* checkpoints.restore({ cwd: session.live.state.cwd, files: planned.files, force: input.force === true })
      // Of the files a command's snapshot saw change, those the rewind did write or remove.
      const written = new Set(restored.changes.map((change) => change.path))
      const observed = planned.observed.filter((path) => written.has(path))
      yield* LiveSession.commit(services, session, undefined, [rewoundDraft(planned.toSequence, restored, planned.incomplete, observed)])
      return {
        sequence: session.live.state.lastSequence,
        toSequence: planned.toSequence,
        changes: restored.changes,
        forced: restored.forced,
        incomplete: planned.incomplete,
        observed
      }
    }).pipe(Effect.withSpan("Rewind.run", { attributes: { sessionId: input.sessionId, toSequence: input.toSequence } }))
  )
