/**
 * Ends the processes a test starts when the test ends, however it ends: a failed assertion or a
 * timeout skips the test's own `kill`, and the process (a CLI, a `serve`, a fixture server) then
 * outlived the test, the file and the run, holding its port and its files.
 *
 * `ownedByTest(child)` kills it (SIGKILL: a process blocked in `open(2)` ignores SIGTERM) when the
 * current test finishes; started outside a test (in `beforeAll`), when the file's tests are done.
 * A process that has already exited is left alone. Only for integration files (child processes).
 */
import type { ChildProcess } from "node:child_process"
import { afterAll, onTestFinished } from "vitest"

const running = new Set<ChildProcess>()
const groupLeaders = new WeakSet<ChildProcess>()

const end = (child: ChildProcess) => {
  running.delete(child)
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return
  // A detached child leads a process group of its own: end the group (its children too).
  try {
    if (groupLeaders.has(child)) process.kill(-child.pid, "SIGKILL")
    else child.kill("SIGKILL")
  } catch {
    // Gone between the check and the kill.
  }
}

// Registered when an integration file first imports this module (while vitest collects the file,
// so on the file's own suite): what is left when its tests are done.
afterAll(() => {
  for (const child of [...running]) end(child)
})

/**
 * `child`, killed when the current test (or, outside one, the file) ends; see the module's comment.
 * `detached`: it was spawned detached, and its whole process group is killed.
 */
export const ownedByTest = <C extends ChildProcess>(child: C, options: { readonly detached?: boolean } = {}): C => {
  if (options.detached === true) groupLeaders.add(child)
  running.add(child)
  child.once("exit", () => running.delete(child))
  try {
    onTestFinished(() => end(child))
  } catch {
    // Not inside a test (a `beforeAll`): the file's afterAll above ends it.
  }
  return child
}

/** Whether `pid` is a running process (signal 0: nothing is sent). */
export const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** Resolves once `pid` has exited: checked on each turn of the event loop, no time assumed. */
export const exited = (pid: number): Promise<void> =>
  new Promise<void>((done) => {
    const check = () => (alive(pid) ? setImmediate(check) : done())
    check()
  })
