/**
 * A scheduler for a server's fibers that keeps Node's event loop turning under load.
 *
 * Effect's default scheduler runs a yielding fiber again in a microtask up to 2,048 times before
 * it lets the event loop turn (a `setTimeout`). With hundreds of `/live` clients each writing a
 * turn's events, those microtask chains hold the loop for seconds: no socket is read, no timer
 * fires, `/healthz` does not answer. This one slices by time instead: fibers keep running in
 * microtasks (as fast as before) until the current slice is `sliceMs` old, then wait for the next
 * turn of the loop (`setImmediate`, after I/O is polled) — so a request waits about one slice,
 * however much work is queued.
 *
 * @since 0.3.0
 */
import * as Effect from "effect/Effect"
import * as Scheduler from "effect/Scheduler"

/** How long fibers may run before the event loop gets a turn, by default. */
export const defaultSliceMs = 8

/** A scheduler that gives the event loop a turn at least every `sliceMs` of fiber work. */
export const scheduler = (sliceMs: number = defaultSliceMs): Scheduler.Scheduler => {
  // One queue for every fiber (Effect's own keeps one per fiber, and a turn of the loop then runs
  // each runnable fiber once: hundreds of them hold it as long as before).
  let queue = new Scheduler.PriorityBuckets()
  let scheduled = false
  /** When the current slice ends; -1 until work starts after the loop has turned. */
  let deadline = -1
  const endSlice = () => {
    deadline = -1
  }
  const run = () => {
    scheduled = false
    if (deadline < 0) {
      deadline = performance.now() + sliceMs
      // Runs on the loop's next turn: the work after that starts a new slice.
      setImmediate(endSlice)
    }
    while (queue.buckets.length > 0) {
      const buckets = queue.buckets
      queue.buckets = []
      for (let b = 0; b < buckets.length; b++) {
        const tasks = buckets[b]![1]
        for (let i = 0; i < tasks.length; i++) {
          tasks[i]!()
          if (performance.now() >= deadline) {
            // Out of time: what is left goes first next time, ahead of what the tasks just scheduled.
            const rest = new Scheduler.PriorityBuckets()
            for (let t = i + 1; t < tasks.length; t++) rest.scheduleTask(tasks[t]!, buckets[b]![0])
            for (let r = b + 1; r < buckets.length; r++) for (const task of buckets[r]![1]) rest.scheduleTask(task, buckets[r]![0])
            for (const [priority, later] of queue.buckets) for (const task of later) rest.scheduleTask(task, priority)
            queue = rest
            if (queue.buckets.length > 0) {
              scheduled = true
              setImmediate(run)
            }
            return
          }
        }
      }
    }
  }
  return Scheduler.make((task, priority) => {
    queue.scheduleTask(task, priority)
    if (scheduled) return
    scheduled = true
    // Within the slice, as Effect's scheduler does, in a microtask; past it, after the loop has turned.
    if (deadline < 0 || performance.now() < deadline) queueMicrotask(run)
    else setImmediate(run)
  })
}

/** Runs `effect` (and every fiber it forks, such as a server's request handlers) on {@link scheduler}. */
export const sliced = (sliceMs: number = defaultSliceMs) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.withScheduler(effect, scheduler(sliceMs))
