/**
 * A command whose program leaves nothing running ends its process as soon as the program has
 * finished and its output is written, instead of when Node's event loop runs dry. After the loop
 * runs dry Node first lets V8 finish the work it has under way (`DrainTasks`): a `sessions` over
 * 10,000 PostgreSQL sessions ends with the old generation's incremental marking begun (the listing's
 * rows and summaries pushed it past its first limit), and its exit waited for that marking and a
 * full mark-compact of a heap that the exit frees anyway — ~20 ms of the command's wall time
 * (docs/benchmarks.md, rows 12–14).
 *
 * Only a command that asks (`request`) and succeeded ends so; every other command ends as it did.
 * A command that asks must have finished all its work inside its program: its store's scope is
 * closed (a PostgreSQL pool ended with Terminate) by the time the program's exit is seen. What it
 * printed is written first: stdout and stderr to a pipe are written asynchronously (a listing is
 * MBs, a pipe holds 64 KiB), so the process exits from the callback of a write queued after them.
 *
 * @since 0.12.0
 * @internal
 */
import * as Effect from "effect/Effect"

let requested = false

/** Asks that the process end as soon as the program has finished, when it succeeds. */
export const request: Effect.Effect<void> = Effect.sync(() => {
  requested = true
})

/** Ends the process with `code` once stdout and stderr are written, when a command asked and `code` is 0; otherwise does nothing. */
export const exitIfRequested = (code: number): void => {
  if (!requested || code !== 0) return
  // Writes are done in order: an empty write's callback comes after everything written before it.
  process.stdout.write("", () => process.stderr.write("", () => process.exit(code)))
}
