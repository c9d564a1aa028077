/**
 * `grep`'s regular expression, run in a worker thread. The model writes the pattern: one like
 * `(a+)+$` backtracks for longer than the universe lasts on a line of a thousand `a`s, and a
 * JavaScript regular expression cannot be interrupted — on the main thread it would freeze the
 * whole process, the engine's log writes, cancellation and every timeout included. In a worker, the
 * tool's time limit terminates the worker and the process carries on.
 *
 * @since 0.1.0
 * @internal
 */
import { Worker } from "node:worker_threads"

/** The worker: matches each line of a text (the first 1000 characters of it) against the pattern. */
const source = `
const { parentPort, workerData } = require("node:worker_threads")
const regex = new RegExp(workerData.pattern, workerData.flags)
parentPort.on("message", ({ id, text, max }) => {
  const matches = []
  let more = 0
  const lines = text.split("\\n")
  for (let i = 0; i < lines.length; i++) {
    if (!regex.test(lines[i].slice(0, 1000))) continue
    if (matches.length < max) matches.push([i + 1, lines[i].slice(0, 300)])
    else more++
  }
  parentPort.postMessage({ id, matches, more })
})
`

/** The lines of one text that match: `[line number, first 300 characters]`, and how many more did. */
export interface Found {
  readonly matches: ReadonlyArray<readonly [number, string]>
  readonly more: number
}

/** A pattern's worker. */
export interface Matcher {
  /** The matching lines of `text`, at most `max` of them listed. */
  readonly match: (text: string, max: number) => Promise<Found>
  /** Stops the worker, even in the middle of a match; pending matches fail. */
  readonly close: () => void
}

/** Starts a worker for `pattern` (already checked to be a valid regular expression). */
export const make = (pattern: string, flags: string): Matcher => {
  const worker = new Worker(source, { eval: true, workerData: { pattern, flags } })
  // The worker never keeps the process alive on its own.
  worker.unref()
  const pending = new Map<number, { readonly resolve: (found: Found) => void; readonly reject: (error: Error) => void }>()
  let next = 0
  let closed = false
  const failAll = (error: Error) => {
    closed = true
    for (const { reject } of pending.values()) reject(error)
    pending.clear()
  }
  worker.on("message", (message: { readonly id: number } & Found) => {
    const waiting = pending.get(message.id)
    pending.delete(message.id)
    waiting?.resolve({ matches: message.matches, more: message.more })
  })
  worker.on("error", (error) => failAll(error))
  worker.on("exit", () => failAll(new Error("the matcher stopped")))
  return {
    match: (text, max) =>
      new Promise<Found>((resolve, reject) => {
        if (closed) return reject(new Error("the matcher stopped"))
        const id = next++
        pending.set(id, { resolve, reject })
        worker.postMessage({ id, text, max })
      }),
    close: () => {
      if (closed) return
      failAll(new Error("the matcher stopped"))
      void worker.terminate()
    }
  }
}
