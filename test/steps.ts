/**
 * What a test of a subprocess or a server did, step by step, printed when the test fails — by its
 * timeout too — so that a hang says where it waited: each step with its time, what it was waiting
 * for when it stopped, the events it had seen, and the tail of whatever it was told to show (a
 * server's stderr). A timeout alone said none of it (test/server/subagentSettings.integration.test.ts
 * hung once in a full run: "timed out in 120000ms", nothing more).
 */
import { onTestFailed } from "vitest"

/** How much of a shown text's end is printed. */
const tailChars = 4_000

export interface Steps {
  /** A step done. */
  readonly step: (what: string) => void
  /** Waits for `promise`, told as a step begun and, once it settles, done: a hang names it. */
  readonly waiting: <A>(what: string, promise: Promise<A>) => Promise<A>
  /** An event seen (by its sequence and type), listed when the test fails. */
  readonly saw: (event: { readonly sequence: number; readonly type: string }) => void
  /** A text whose end is printed when the test fails (read then: what it is at the failure). */
  readonly show: (name: string, text: () => string) => void
}

/** The steps of the current test (call it inside the test). */
export const steps = (): Steps => {
  const started = performance.now()
  const lines: Array<string> = []
  const seen: Array<string> = []
  const shown: Array<readonly [string, () => string]> = []
  let waitingFor: { readonly what: string; readonly since: number } | undefined
  const at = () => Math.round(performance.now() - started)
  const step = (what: string) => void lines.push(`${String(at()).padStart(7)} ms  ${what}`)
  onTestFailed(() => {
    const report = [
      "steps of the failed test:",
      ...lines,
      ...(waitingFor === undefined ? [] : [`still waiting for ${waitingFor.what} (since ${waitingFor.since} ms, now ${at()} ms)`]),
      `events seen (${seen.length}): ${seen.join(" ")}`,
      ...shown.flatMap(([name, text]) => [`--- ${name} (its end) ---`, text().slice(-tailChars)])
    ]
    console.error(report.join("\n"))
  })
  return {
    step,
    waiting: async (what, promise) => {
      waitingFor = { what, since: at() }
      step(`waiting for ${what}`)
      try {
        const value = await promise
        step(`done: ${what}`)
        return value
      } finally {
        waitingFor = undefined
      }
    },
    saw: (event) => void seen.push(`${event.sequence}:${event.type}`),
    show: (name, text) => void shown.push([name, text])
  }
}
