/**
 * A scheduler for a server's fibers that keeps Node's event loop turning under load.
 *
 * Effect's default scheduler runs a yielding fiber again in a microtask up to 2,048 times before
 * it lets the event loop turn (a `setTimeout`). With hundreds of `/live` clients each writing a
 * turn's events, those microtask chains hold the loop for seconds: no socket is read, no timer
 * fires, `/healthz` does not answer. This one slices by time instead: fibers keep running, a task
 * per tick (`process.nextTick`, as fast as before; the sockets a task's writes corked are written
 * between two, and that time counts), until the current slice is `sliceMs` old, then wait for the
 * next turn of the loop (`setImmediate`, after I/O is polled), and a fiber yields in the middle of its
 * run once the slice is used (a request's first run in Node's callback, a loop over thousands of
 * events) — so the loop turns about once a slice, however much work is queued. The queued work
 * itself waits in one queue, first come first served; fibers named urgent (`/healthz`'s) go ahead.
 *
 * @since 0.3.0
 */
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import * as FiberRef from "effect/FiberRef"
import * as Scheduler from "effect/Scheduler"

/** How long fibers may run before the event loop gets a turn, by default. */
export const defaultSliceMs = 8

/**
 * How long fibers may run before the loop turns while connections are arriving (see {@link scheduler}):
 * none — a task, then the loop's turn. Node (libuv since 1.45) accepts one connection per turn of
 * the loop, so a burst of N connections takes N turns to accept, whatever the listen backlog, and a
 * connection behind them (a `/healthz` probe) waits for all those turns and their slices.
 */
export const arrivingSliceMs = 0

/**
 * How many turns of the loop in a row may run no fiber work while connections are being accepted
 * (see {@link scheduler}'s `accepted`): then one slice runs, and the count starts again.
 */
export const maxAcceptingTurns = 32

/**
 * How long fiber work may be held back while connections are being accepted (see {@link scheduler}),
 * whatever the turns: a turn that accepts costs a fraction of a millisecond quiet, several under load.
 */
export const maxHeldMs = 5

/**
 * How long the slice that runs once a hold ran out lasts ({@link maxHeldMs} or {@link maxAcceptingTurns}):
 * more than the one task of {@link arrivingSliceMs}, so a cancel's few fibers finish under a flood.
 */
export const heldSliceMs = 1

/** Which fibers go ahead of all queued work (see {@link scheduler}). */
export type Urgent = (fiber: Fiber.RuntimeFiber<unknown, unknown>) => boolean

/**
 * The priority this scheduler gives the tasks of urgent fibers: its queue is in priority order,
 * lowest first, and Effect's default priority is 0.
 */
const urgentPriority = -1

/** A hold while connections are being accepted: see {@link acceptHold}. */
export interface AcceptHold {
  /**
   * Asked once a turn of the loop (in its check phase): whether to hold the work back again — a
   * connection was accepted since the last look, and the hold has lasted fewer than
   * {@link maxAcceptingTurns} turns and {@link maxHeldMs}. A `false` ends the hold.
   */
  readonly holding: () => boolean
  /** Whether the last `holding()` ended a hold that ran out (connections were still coming). */
  readonly ranOut: boolean
}

/**
 * The rule for holding work back while connections are being accepted, `accepted` counting them
 * (see {@link scheduler}): held while each turn accepts one, at most {@link maxAcceptingTurns} turns
 * and {@link maxHeldMs} in a row (by `performance.now()`): a turn that accepts costs a fraction of a
 * millisecond on a quiet machine, several under load, so turns alone let a flood hold the work 32
 * turns of whatever length. The scheduler's fiber work follows it, and so do the connections `serve`
 * holds unread (`Server`'s `holdWhileAccepting`, a `/healthz` probe's among them).
 */
export const acceptHold = (accepted: () => number): AcceptHold => {
  /** `accepted()` at the last look, how many turns in a row the hold has lasted, and since when (-1: none). */
  let acceptsSeen = accepted()
  let heldTurns = 0
  let heldSince = -1
  const state = {
    ranOut: false,
    holding: (): boolean => {
      const count = accepted()
      const now = performance.now()
      if (count === acceptsSeen || heldTurns >= maxAcceptingTurns || (heldSince >= 0 && now - heldSince >= maxHeldMs)) {
        state.ranOut = count !== acceptsSeen
        acceptsSeen = count
        heldTurns = 0
        heldSince = -1
        return false
      }
      state.ranOut = false
      acceptsSeen = count
      if (heldTurns++ === 0) heldSince = now
      return true
    }
  }
  return state
}

/**
 * A scheduler that gives the event loop a turn at least every `sliceMs` of fiber work. Every fiber
 * waits its turn in one queue, a slice of work per turn of the loop; a fiber `urgent` names (a
 * liveness probe's) goes ahead of the queue instead, so it waits for the current slice only — asked
 * for each of its tasks, from its very first, as no setting a fiber makes for itself could be.
 *
 * `accepted` counts the connections a server of the process has accepted so far. A turn of the
 * loop that accepted one runs no fiber work: Node accepts one connection per turn, so while
 * hundreds wait in the listen queue each turn's slice — even a single task, and the garbage it
 * leaves for the next scavenge — delays every connection behind them, a `/healthz` probe's among
 * them, by that much again. The work waits for the first turn that accepted none, or, while
 * connections keep coming, runs a slice of {@link heldSliceMs} once it has been held
 * {@link maxHeldMs} or {@link maxAcceptingTurns} turns (a flood of connections slows the fibers,
 * never stops them: a cancel under one is answered in milliseconds, not seconds).
 */
export const scheduler = (
  sliceMs: number = defaultSliceMs,
  urgent?: Urgent,
  arriving?: () => boolean,
  accepted?: () => number
): Scheduler.Scheduler => {
  /** A new slice's end: short while connections are arriving (`arriving`), so that the loop turns, and accepts the next, sooner. */
  const sliceEnd = () => {
    const length = heldOut ? Math.min(sliceMs, heldSliceMs) : arriving !== undefined && arriving() ? Math.min(sliceMs, arrivingSliceMs) : sliceMs
    heldOut = false
    return performance.now() + length
  }
  // One queue for every fiber (Effect's own keeps one per fiber, and a turn of the loop then runs
  // each runnable fiber once: hundreds of them hold it as long as before).
  const queue = new Scheduler.PriorityBuckets()
  /**
   * The tasks being run, taken from `queue` as a whole (what they schedule waits for the next round),
   * and where the run is in them. A round may outlast its slice: the next slice goes on with it.
   */
  let round: Array<[number, Array<Scheduler.Task>]> = []
  let bucket = 0
  let index = 0
  let scheduled = false
  /** When the current slice ends; -1 until work starts after the loop has turned. */
  let deadline = -1
  const endSlice = () => {
    deadline = -1
  }
  /**
   * The next task: the round's, in priority order, unless a more urgent one was queued since (a
   * probe's: it goes ahead of the round's rest); then the next round. Undefined when nothing is
   * queued. (Copying what was left of the round behind the queued work at each slice's end, as this
   * did once, cost a copy of the whole queue per slice: with a task a slice while connections
   * arrive, quadratic in the queue.)
   */
  const nextTask = (): Scheduler.Task | undefined => {
    for (;;) {
      const first = queue.buckets[0]
      if (bucket < round.length) {
        const [priority, tasks] = round[bucket]!
        if (index >= tasks.length) {
          bucket++
          index = 0
          continue
        }
        if (first === undefined || first[0] >= priority) return tasks[index++]
        const task = first[1].shift()
        if (first[1].length === 0) queue.buckets.shift()
        return task
      }
      if (first === undefined) {
        // Done: the round's tasks (closures over their fibers) are let go.
        round = []
        return undefined
      }
      round = queue.buckets
      queue.buckets = []
      bucket = 0
      index = 0
    }
  }
  /** Whether any task is left, in the round or queued. */
  const pending = (): boolean => {
    if (queue.buckets.length > 0) return true
    while (bucket < round.length && index >= round[bucket]![1].length) {
      bucket++
      index = 0
    }
    return bucket < round.length
  }
  // At most one run is queued or running at a time (`scheduled`): the tasks a run's fibers schedule
  // are taken by that run, and one run left queued per turn of the loop is enough. (When a run let
  // tasks queue another run while it went on, each slice's end added a run to the next turn and
  // the next turn's runs each did at least one task: thousands of runs a turn, doubling, held the
  // loop for most of a second with 500 clients.)
  //
  // A run does one task per tick (`process.nextTick`), not all of its slice in one call: Node defers
  // part of what a task does to ticks of its own, queued ahead of the run's next one — a response's
  // `write` corks its socket and writes it (`writev`, the kernel copying the bytes) in a tick. Run in
  // one call, a slice in which 500 clients were handed a turn's big batch wrote 500 sockets after
  // it, 100–250 ms before the loop could turn, which no clock in the run saw; a tick at a time, the
  // next task finds that time on the clock.
  /** Whether the work is held back for accepts (see `accepted`), by the rule `serve`'s held connections follow too. */
  const hold = accepted === undefined ? undefined : acceptHold(accepted)
  /** Whether the next slice follows a hold that ran out ({@link heldSliceMs}). */
  let heldOut = false
  /**
   * Whether to hold the work back (see `accepted`): a connection was accepted since the last look —
   * in this turn's poll, as `run` looks again only in a later turn's check phase (`runInCheck`,
   * queued from that phase: Node runs an immediate queued while it runs immediates in the next turn).
   */
  const accepting = (): boolean => {
    if (hold === undefined) return false
    const held = hold.holding()
    heldOut = hold.ranOut
    return held
  }
  /** A run in the loop's check phase (`setImmediate`), after its poll. */
  const runInCheck = () => run(true)
  /** A run from outside the check phase (a tick of the poll's callbacks) that is held back: the next turn's check phase. */
  const runInNextCheck = () => setImmediate(runInCheck)
  const run = (inCheck?: boolean) => {
    if (deadline < 0 && accepting()) {
      setImmediate(inCheck === true ? runInCheck : runInNextCheck)
      return
    }
    if (deadline < 0) {
      deadline = sliceEnd()
      // Runs on the loop's next turn: the work after that starts a new slice.
      setImmediate(endSlice)
    } else if (performance.now() >= deadline) {
      // Queued just before the slice ran out: wait for the loop's turn.
      setImmediate(runInCheck)
      return
    }
    runTask()
  }
  /** One task (a run does at least one), then the next step in a tick of its own. */
  const runTask = () => {
    const task = nextTask()
    if (task === undefined) {
      scheduled = false
      return
    }
    task()
    process.nextTick(step)
  }
  const step = () => {
    if (performance.now() < deadline) return runTask()
    // The slice is used, by the last task or by the ticks it left: the rest waits for the loop's turn.
    if (pending()) setImmediate(runInCheck)
    else scheduled = false
  }
  /** Whether the current slice is used up; a fiber running outside one (a request's first run, in Node's callback) starts one. */
  const sliceOver = () => {
    if (deadline < 0) {
      deadline = sliceEnd()
      setImmediate(endSlice)
      return false
    }
    return performance.now() >= deadline
  }
  return Scheduler.make((task, priority, fiber) => {
    queue.scheduleTask(task, urgent !== undefined && fiber !== undefined && urgent(fiber) ? urgentPriority : priority)
    if (scheduled) return
    scheduled = true
    // Within the slice, at once after the current callback and the ticks it left (see `run`); past it, after the loop has turned.
    if (deadline < 0 || performance.now() < deadline) process.nextTick(run)
    else setImmediate(runInCheck)
  }, (fiber) => {
    // A fiber also yields in the middle of its run once the slice is used: counting ops alone
    // (Effect's rule, 2,048 of them) lets one run last as long as its ops take — a request's
    // first run inside Node's callback, or a loop over a turn's thousands of events. The clock
    // is read every `opsPerClockRead` ops only.
    const ops = fiber.currentOpCount
    if (ops > fiber.getFiberRef(FiberRef.currentMaxOpsBeforeYield) || (ops % opsPerClockRead === 0 && sliceOver())) return yieldAtOwnPriority
    return false
  })
}

/**
 * What `shouldYield` answers when a fiber is to yield: a plain yield, at the fiber's own priority.
 * Effect's run loop wraps a yield whose answer is a number in `withSchedulingPriority(number)` — an
 * `acquireUseRelease` that sets the fiber's `currentSchedulingPriority` and sets it back, two copies
 * of the fiber's FiberRefs and 22 more ops a yield — even when the number is the priority the fiber
 * has (what this scheduler asked for: it keeps no priorities of its own but the urgent one, which
 * `scheduleTask` gives by the fiber). Given `undefined` (`yieldNow({ priority: undefined })`) the run
 * loop yields plain, and the fiber is queued again at its own `currentSchedulingPriority`
 * (`drainQueueLaterOnExecutor`): the same task at the same priority, without the region. With 500
 * `/live` clients connecting, a slice is one task and a fiber yields every 32 ops: four of five tasks
 * ended in such a yield, and without the regions the server's main thread spent 12–17% less CPU
 * while they connected (docs/benchmarks.md, serve20). Typed as the `number | false` Effect asks for:
 * its run loop only tests `!== false`.
 */
const yieldAtOwnPriority = undefined as unknown as number

/** How many ops a fiber runs between two reads of the clock (a read costs about as much as an op). */
const opsPerClockRead = 32

/** Runs `effect` (and every fiber it forks, such as a server's request handlers) on {@link scheduler}. */
export const sliced = (sliceMs: number = defaultSliceMs, urgent?: Urgent, arriving?: () => boolean, accepted?: () => number) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.withScheduler(effect, scheduler(sliceMs, urgent, arriving, accepted))
