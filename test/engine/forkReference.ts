/**
 * The fork and the rewind's plan as first written, over the whole log collected in memory, kept
 * verbatim (src/engine/Fork.ts and Rewind.ts at 1251f1a) as the reference the streaming versions
 * must match: forkStream.test.ts compares them on varied logs. One rule changed since: the default
 * fork point is the last point between turns (kernel44), no longer the last turn's end or a manual
 * compaction after it.
 */
import * as Either from "effect/Either"
import type { AgentEvent, FileChange } from "../../src/domain/AgentEvent.js"
import { InvalidInput, RewindRefused } from "../../src/domain/Errors.js"
import * as SessionState from "../../src/domain/SessionState.js"
import type { Plan } from "../../src/engine/Rewind.js"

export const referenceForkPoint = (source: ReadonlyArray<AgentEvent>, atSequence: number | undefined): Either.Either<number, InvalidInput> => {
  const closedAt = new Set<number>([1])
  let state: SessionState.SessionState | undefined
  for (const event of source) {
    const next = state === undefined ? SessionState.start(event) : SessionState.reduce(state, event)
    if (Either.isLeft(next)) return Either.left(new InvalidInput({ field: "sessionId", detail: `the session's log cannot be read: ${next.left.message}` }))
    state = next.right
    if (state.openTurn === undefined && state.compaction === undefined) closedAt.add(event.sequence)
  }
  if (atSequence === undefined) return Either.right(Math.max(...closedAt))
  const last = state?.lastSequence ?? 0
  if (!Number.isSafeInteger(atSequence) || atSequence < 1 || atSequence > last) {
    return Either.left(new InvalidInput({ field: "atSequence", detail: `must be a sequence of the session, 1..${last}` }))
  }
  if (!closedAt.has(atSequence)) {
    const before = [...closedAt].reduce((nearest, sequence) => sequence < atSequence && sequence > nearest ? sequence : nearest, 1)
    return Either.left(new InvalidInput({ field: "atSequence", detail: `sequence ${atSequence} is inside a turn or compaction: fork at the end of a closed turn (the nearest before it: ${before})` }))
  }
  return Either.right(atSequence)
}

export const referenceForkLog = (
  source: ReadonlyArray<AgentEvent>,
  atSequence: number,
  sessionId: string,
  eventIds: ReadonlyArray<string>,
  timestamp: string
): ReadonlyArray<AgentEvent> => {
  const created = source[0]!
  if (created.type !== "session.created") throw new Error("a log begins with session.created")
  const copied = source.slice(1, atSequence).map((event, i): AgentEvent => ({ ...event, id: eventIds[i + 1]!, sessionId }))
  return [
    {
      id: eventIds[0]!,
      sessionId,
      sequence: 1,
      timestamp,
      type: "session.created",
      payload: { cwd: created.payload.cwd, client: created.payload.client, forkedFrom: { sessionId: created.sessionId, sequence: atSequence } }
    },
    ...copied,
    {
      id: eventIds[atSequence]!,
      sessionId,
      sequence: atSequence + 1,
      timestamp,
      type: "session.forked",
      payload: { fromSessionId: created.sessionId, atSequence }
    }
  ]
}

const changesOf = (event: AgentEvent): ReadonlyArray<FileChange> =>
  event.type === "workspace.changed" || event.type === "session.rewound" ? event.payload.changes : []

export const referenceRewindPlan = (events: ReadonlyArray<AgentEvent>, toSequence: number): Either.Either<Plan, InvalidInput | RewindRefused> => {
  const point = referenceForkPoint(events, toSequence)
  if (Either.isLeft(point)) {
    return point.left.field === "atSequence"
      ? Either.left(new InvalidInput({ field: "toSequence", detail: point.left.detail.replace("fork at", "rewind to") }))
      : Either.left(point.left)
  }
  const last = events.at(-1)?.sequence ?? 0
  if (toSequence >= last) return Either.left(new RewindRefused({ reason: "nothing_to_rewind", detail: `sequence ${toSequence} is the end of the session` }))
  const after = events.filter((e) => e.sequence > toSequence)
  const compaction = after.find((e) => e.type === "session.compacted")
  if (compaction !== undefined) {
    return Either.left(new RewindRefused({
      reason: "past_compaction",
      detail: `the conversation before #${compaction.sequence} was compacted into a summary; fork the session at ${toSequence} instead`
    }))
  }
  const files = new Map<string, { target: FileChange["before"]; expected: string | undefined }>()
  const incomplete: Array<string> = []
  for (const event of after) {
    for (const change of changesOf(event)) {
      const known = files.get(change.path)
      files.set(change.path, { target: known === undefined ? change.before : known.target, expected: change.after })
    }
    if (event.type === "workspace.changed" && event.payload.incomplete !== undefined) incomplete.push(event.payload.incomplete)
    if (event.type === "session.rewound") incomplete.push(...(event.payload.incomplete ?? []))
  }
  // A command's record (any call's but the file tools') is seen by a snapshot: its files are `observed`.
  const tools = new Map(after.flatMap((e) => e.type === "model.tool_call_requested" ? [[e.payload.toolCallId, e.payload.tool] as const] : []))
  const observed = new Set(after.flatMap((e) =>
    e.type === "workspace.changed" && !["write_file", "edit_file"].includes(tools.get(e.payload.toolCallId) ?? "") ? e.payload.changes.map((c) => c.path) : []
  ))
  return Either.right({
    toSequence,
    files: [...files].map(([path, { expected, target }]) => ({
      path,
      ...(target === undefined ? {} : { target }),
      ...(expected === undefined ? {} : { expected })
    })),
    incomplete: [...new Set(incomplete)],
    observed: [...files.keys()].filter((path) => observed.has(path))
  })
}
