/**
 * Asking the user in the terminal about a call the policy paused: y(es), n(o) or a(lways). Lines are
 * read from stdin, so a script can answer too; end of input answers no.
 *
 * @since 0.1.0
 */
import * as readline from "node:readline"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"

/** The user's answer. */
export type Answer = { readonly decision: "allow" | "deny"; readonly remember: boolean }

/** Parses an answer; anything but yes or always is no. */
export const parse = (line: string | undefined): Answer => {
  const text = (line ?? "").trim().toLowerCase()
  if (text === "a" || text === "always") return { decision: "allow", remember: true }
  if (text === "y" || text === "yes") return { decision: "allow", remember: false }
  return { decision: "deny", remember: false }
}

/** What follows each question: the answers it takes. */
export const choices = "[y]es / [n]o / [a]lways: "

/** A prompt on stdin/stderr, opened on first use and closed with the scope. */
export const make: Effect.Effect<{ readonly ask: (question: string) => Effect.Effect<Answer> }, never, Scope.Scope> = Effect.gen(function*() {
  let reader: readline.Interface | undefined
  const lines: Array<string> = []
  const waiting: Array<(line: string | undefined) => void> = []
  let ended = false
  const open = () => {
    if (reader !== undefined) return
    reader = readline.createInterface({ input: process.stdin, terminal: false })
    reader.on("line", (line) => {
      const next = waiting.shift()
      if (next === undefined) lines.push(line)
      else next(line)
    })
    reader.on("close", () => {
      ended = true
      for (const next of waiting.splice(0)) next(undefined)
    })
  }
  yield* Effect.addFinalizer(() => Effect.sync(() => reader?.close()))
  const readLine = Effect.async<string | undefined>((resume) => {
    open()
    const line = lines.shift()
    if (line !== undefined || ended) return resume(Effect.succeed(line))
    const next = (value: string | undefined) => resume(Effect.succeed(value))
    waiting.push(next)
    return Effect.sync(() => {
      const index = waiting.indexOf(next)
      if (index >= 0) waiting.splice(index, 1)
    })
  })
  return {
    ask: (question) =>
      Effect.sync(() => process.stderr.write(`${question} ${choices}`)).pipe(
        Effect.zipRight(readLine),
        // A terminal echoes what the user typed; piped input does not, so the line is ended here. An
        // input that ended (a closed pipe, </dev/null, Ctrl+D) is said so: the call is denied, and
        // the user who typed nothing should not read it as their own "n".
        Effect.tap((line) =>
          Effect.sync(() =>
            line === undefined
              ? process.stderr.write("no answer (the input ended): no\n")
              : process.stdin.isTTY === true || process.stderr.write("\n")
          )
        ),
        Effect.map(parse)
      )
  }
})
