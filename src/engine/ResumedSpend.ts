/**
 * What a paused turn spent before its pause, as its log says: a process that resumes it (the CLI's
 * `approve`, a restarted server) counts its budget and its `turn.completed.usage` from there, as the
 * process that ran it up to the pause did — not from zero. Read from the log, never kept beside it:
 * replay and the live turn cannot disagree.
 *
 * @since 0.10.0
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import type * as AgentEvent from "../domain/AgentEvent.js"
import type { EventStoreFailure } from "../domain/Errors.js"
import type * as Pricing from "../domain/Pricing.js"
import * as SessionState from "../domain/SessionState.js"
import type * as Task from "../domain/Task.js"
import type { EventStore } from "../services/EventStore.js"
import { addUsage } from "./ModelResponse.js"
import * as PromptCache from "./PromptCache.js"
import type { Services } from "./Services.js"

/** What the responses of one model (`model.usage`'s `provider` and `model`) used together. */
export interface Answered {
  readonly provider: string
  readonly model: string
  readonly usage: AgentEvent.Usage
}

/** What one subagent of the turn had used when the parent's log last said (`subagent.progress`, `subagent.completed`). */
export interface ChildSpend {
  readonly childSessionId: string
  /** Its steps and those of the subagents below it. */
  readonly steps: number
  readonly usage: AgentEvent.Usage | undefined
}

/** What the turn's log holds of its spending. */
export interface Spent {
  /** The turn's own budget (`turn.started.budget`); none when it ran under the engine's. */
  readonly budget: Task.Budget | undefined
  /** Its model responses' usage (`model.usage`), as `turn.completed.usage` counts it. */
  readonly usage: AgentEvent.Usage | undefined
  /** The same per model that answered (`model.usage`'s `provider` and `model`), each priced at its own. */
  readonly answered: ReadonlyArray<Answered>
  /** Its compactions' summaries' usage (`session.compacted`, and `compaction.failed` after its request returned, inside the turn): spent, counted against its budget. */
  readonly compacted: AgentEvent.Usage | undefined
  /** Its subagents, in the order they started (`subagent.started`). */
  readonly children: ReadonlyArray<ChildSpend>
  /**
   * The subagents its tree started, counted against `maxSubagents`: its children and, read from
   * their logs, theirs (a grandchild's `subagent.started` is in its parent's log, not this one).
   */
  readonly started: number
}

/** Nothing spent yet: a turn that starts now. */
export const none: Spent = { budget: undefined, usage: undefined, answered: [], compacted: undefined, children: [], started: 0 }

/**
 * The turn `turnId` of `sessionId`, read from its log (one pass, in constant memory but its
 * subagents), from `fromSequence` — its `turn.started`, which the live session knows (its
 * `LiveTranscript.turnStart`): a 100 MB session's resume read the whole log a second time for one
 * turn's events (bench/resumeSpend.ts). The subagents it started below its children are counted from
 * their logs (see {@link Spent.started}).
 */
export const read = (
  store: EventStore.Service,
  sessionId: string,
  turnId: string,
  fromSequence = 1,
  limit = Number.POSITIVE_INFINITY
): Effect.Effect<Spent, EventStoreFailure> =>
  Effect.gen(function*() {
    const fold = yield* turnOf(store, sessionId, turnId, fromSequence)
    const seen = new Set([sessionId, ...fold.childIds()])
    const count = { started: fold.childIds().length, limit }
    for (const child of fold.childIds()) {
      if (count.started > limit) break
      yield* startedBelow(store, child, 1, seen, count)
    }
    return fold.spent(count.started)
  })

const turnOf = (store: EventStore.Service, sessionId: string, turnId: string, fromSequence: number) =>
  store.read(sessionId, fromSequence > 1 ? { fromSequence } : undefined).pipe(
    Stream.filter((event) => "turnId" in event && event.turnId === turnId),
    Stream.runFold(new Fold(), (fold, event) => fold.add(event))
  )

/**
 * The subagents a subagent's session started in its task's turn (its first), and those below them,
 * added to `count.started`: each id counted and read once (a log's `childSessionId` is any id its
 * author wrote, an ancestor's or a sibling's included), as deep as a tree of waiting sessions is
 * followed; once the count is past `count.limit` (`maxSubagents`: the tree may start no more) no
 * more logs are read — a hostile log naming 10,000 children costs one read, not 10,000. A log that
 * cannot be read counts nothing: that subagent's call ends `subagent_lost` when the turn resumes.
 */
const startedBelow = (
  store: EventStore.Service,
  sessionId: string,
  depth: number,
  seen: Set<string>,
  count: { started: number; readonly limit: number }
): Effect.Effect<void> =>
  Effect.gen(function*() {
    if (depth > SessionState.maxSubagentDepth || count.started > count.limit) return
    const first = yield* store.read(sessionId).pipe(Stream.filter((e): e is AgentEvent.EventOfType<"turn.started"> => e.type === "turn.started"), Stream.runHead)
    if (Option.isNone(first)) return
    const children = (yield* turnOf(store, sessionId, first.value.turnId, first.value.sequence)).childIds().filter((child) => !seen.has(child))
    for (const child of children) seen.add(child)
    count.started += children.length
    for (const child of children) {
      if (count.started > count.limit) return
      yield* startedBelow(store, child, depth + 1, seen, count)
    }
  }).pipe(Effect.orElseSucceed(() => undefined))

/** The fold of one turn's events. */
class Fold {
  private budget: Task.Budget | undefined = undefined
  private usage: AgentEvent.Usage | undefined = undefined
  private compacted: AgentEvent.Usage | undefined = undefined
  private readonly answered = new Map<string, Answered>()
  private readonly children = new Map<string, ChildSpend>()

  add(event: AgentEvent.AgentEvent): this {
    switch (event.type) {
      case "turn.started":
        this.budget = event.payload.budget
        break
      case "model.usage":
      {
        this.usage = addUsage(this.usage, event.payload.usage)
        const { model, provider } = event.payload
        const key = `${provider}\u0000${model}`
        this.answered.set(key, { provider, model, usage: addUsage(this.answered.get(key)?.usage, event.payload.usage)! })
        break
      }
      case "session.compacted":
      case "compaction.failed":
        // A failed compaction whose summary request returned spent it too (absent otherwise).
        this.compacted = addUsage(this.compacted, event.payload.usage)
        break
      case "subagent.started":
        this.children.set(event.payload.childSessionId, { childSessionId: event.payload.childSessionId, steps: 0, usage: undefined })
        break
      case "subagent.progress":
      case "subagent.completed": {
        // Each says what the subagent and those below it used so far: the last one is the total.
        const { childSessionId, steps, usage } = event.payload
        if (this.children.has(childSessionId)) this.children.set(childSessionId, { childSessionId, steps, usage })
        break
      }
    }
    return this
  }

  childIds(): ReadonlyArray<string> {
    return [...this.children.keys()]
  }

  spent(started: number): Spent {
    return { budget: this.budget, usage: this.usage, answered: [...this.answered.values()], compacted: this.compacted, children: [...this.children.values()], started }
  }
}

/**
 * A turn's cost with each response priced at the model that answered it: `earlier`, what its log
 * says the responses before a resume used, per model ({@link Spent.answered}), and `fresh`, this process's
 * responses, at its model. A turn resumed by a process on another model was priced wholly at the
 * resuming model until December 2026. One model in all is one price of the sum, as before; any
 * response of a model with no price makes the turn's cost unknown, naming it. The record's price
 * (`turn.completed.cost`) and the `maxCost` check's (`Subagents`) are this one.
 */
export const costOfAnswers = (services: Services, earlier: ReadonlyArray<Answered>, fresh: AgentEvent.Usage | undefined): Pricing.TurnCost => {
  const { model, provider } = services.provider.capabilities
  const byModel = new Map(earlier.map((a) => [`${a.provider}\u0000${a.model}`, a]))
  if (fresh !== undefined) {
    const key = `${provider}\u0000${model}`
    const same = byModel.get(key)
    byModel.set(key, { provider, model, usage: addUsage(same?.usage, fresh)! })
  }
  let cost = 0
  for (const answered of byModel.values()) {
    const priced = PromptCache.costAt(services, answered.usage, answered.model, answered.provider)
    if (priced.cost === null) return priced
    cost = Math.round((cost + priced.cost) * 1_000_000) / 1_000_000
  }
  return { cost }
}
