/**
 * Every place a fiber can be cut, one op at a time. The server's scheduler yields a fiber in the
 * middle of its run whenever its time slice is used (src/server/EventLoop.ts) — on a loaded machine,
 * anywhere — so a fiber that checks for something and then waits for it can be cut between the two,
 * and what another party does in that gap (hands an event over, ends a stream) must still wake it.
 * A sleep cannot put that other party there; this can: the fiber runs under a scheduler that yields
 * at every op and runs only when told, and `stuckCuts` tries the other party's action after each
 * op of the fiber in turn.
 */
import * as Effect from "effect/Effect"
import * as Scheduler from "effect/Scheduler"

/** A scheduler that yields a fiber once it has run `ops` ops since it was last resumed, and runs its tasks only when `step` is called. */
const steppedAfter = (ops: number) => {
  const tasks: Array<Scheduler.Task> = []
  const scheduler = Scheduler.make((task) => {
    tasks.push(task)
  }, (fiber) => (fiber.currentOpCount > ops ? 0 : false))
  const step = (): boolean => {
    const task = tasks.shift()
    if (task === undefined) return false
    task()
    return true
  }
  return { scheduler, step }
}

/**
 * How many ops a fiber runs, once resumed, before its next op of its own: a yield costs a few ops
 * when the fiber resumes (Effect sets and restores the fiber's scheduling priority around it), and
 * a scheduler that yields sooner stops the fiber before the same op for ever. Found by trying.
 */
const yieldCost = (() => {
  let cost: number | undefined
  return (): number => {
    for (let ops = 0; cost === undefined && ops < 100; ops++) {
      const { scheduler, step } = steppedAfter(ops)
      const fiber = Effect.runFork(Effect.withScheduler(Effect.zipRight(Effect.void, Effect.void), scheduler))
      for (let i = 0; i < 100 && fiber.unsafePoll() === null && step(); i++);
      if (fiber.unsafePoll() !== null) cost = ops
    }
    if (cost === undefined) throw new Error("no scheduler lets a fiber go on one op a task")
    return cost
  }
})()

/** A scheduler under which a fiber yields before each op of its own, and whose tasks run only when `step` is called. */
export const stepper = () => {
  const { scheduler, step } = steppedAfter(yieldCost())
  /** Runs tasks until none is left (at most `max`). */
  const drain = (max = 100_000) => {
    for (let i = 0; i < max && step(); i++);
  }
  return { scheduler, step, drain }
}

/**
 * For each k from 0: a fresh `setup()`, its `waiter` run k ops under a {@link stepper}, then its
 * `act()` (what the waiter waits for, done synchronously as another fiber's step would), then
 * every task left. Returns the cuts k after which the waiter still had not finished: it waited for
 * what had already happened. Stops once the waiter runs out of ops before the cut (it waits
 * for `act` from there on: every later cut is the same).
 */
export const stuckCuts = (
  setup: () => { readonly waiter: Effect.Effect<unknown, unknown>; readonly act: () => void },
  limit = 5_000
): ReadonlyArray<number> => {
  const stuck: Array<number> = []
  for (let k = 0; k < limit; k++) {
    const { waiter, act } = setup()
    const { scheduler, step, drain } = stepper()
    const fiber = Effect.runFork(Effect.withScheduler(waiter, scheduler))
    let parked = false
    for (let steps = 0; steps < k && !parked; steps++) parked = !step()
    if (fiber.unsafePoll() !== null) throw new Error(`the waiter finished before the act, after ${k} ops`)
    act()
    drain()
    if (fiber.unsafePoll() === null) {
      stuck.push(k)
      fiber.unsafeInterruptAsFork(fiber.id())
      drain()
    }
    if (parked) return stuck
  }
  throw new Error(`the waiter did not wait within ${limit} ops`)
}
