/**
 * One line typed on the terminal: the answer to a yes/no question of `trust` and `adopt`.
 *
 * @since 0.12.0
 */
import * as readline from "node:readline"
import * as Effect from "effect/Effect"

/** One line typed on the terminal, after `question` on stderr; empty when the input ends first. */
export const askOnTerminal = (question: string) =>
  Effect.async<string>((resume) => {
    const reader = readline.createInterface({ input: process.stdin, output: process.stderr, terminal: true })
    let answered = false
    reader.question(question, (line) => {
      answered = true
      reader.close()
      resume(Effect.succeed(line))
    })
    reader.on("close", () => answered || resume(Effect.succeed("")))
    return Effect.sync(() => reader.close())
  })

/** Whether an answer says yes. */
export const isYes = (answer: string): boolean => /^y(es)?$/i.test(answer.trim())
