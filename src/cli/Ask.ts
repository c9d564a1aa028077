/**
 * One line typed on the terminal: the answer to a question of `trust`, `adopt` and `chat --resume`.
 *
 * @since 0.12.0
 */
import * as readline from "node:readline"
import * as Effect from "effect/Effect"

/**
 * One line typed on the terminal, after `question` on stderr; none when the input ends or Ctrl+C
 * is pressed first (on a terminal readline takes Ctrl+C itself: without a listener it would only
 * pause, and the question would wait forever).
 */
export const askLine = (question: string) =>
  Effect.async<string | undefined>((resume) => {
    const reader = readline.createInterface({ input: process.stdin, output: process.stderr, terminal: true })
    let answered = false
    reader.question(question, (line) => {
      answered = true
      reader.close()
      resume(Effect.succeed(line))
    })
    reader.on("SIGINT", () => reader.close())
    reader.on("close", () => answered || resume(Effect.succeed(undefined)))
    return Effect.sync(() => reader.close())
  })

/** One line typed on the terminal, after `question` on stderr; empty when the input ends first. */
export const askOnTerminal = (question: string) => Effect.map(askLine(question), (line) => line ?? "")

/** Whether an answer says yes. */
export const isYes = (answer: string): boolean => /^y(es)?$/i.test(answer.trim())
