/**
 * How the CLI shows events: streamed text on stdout, everything about the run on stderr, so that
 * `effect-agent run … > answer.txt` captures just the answer.
 *
 * @since 0.1.0
 */
import type { AgentEvent } from "../index.js"

/** Where rendered text goes. */
export interface Output {
  readonly out: (text: string) => void
  readonly err: (text: string) => void
}

/** A renderer keeps one bit of state: whether stdout is mid-line, so notes start on a fresh line. */
export const make = (output: Output) => {
  let midLine = false
  const out = (text: string) => {
    if (text === "") return
    output.out(text)
    midLine = !text.endsWith("\n")
  }
  const endLine = () => {
    if (midLine) out("\n")
  }
  const note = (text: string) => {
    endLine()
    output.err(text + "\n")
  }

  const event = (event: AgentEvent.AgentEvent, options: { readonly echoUser: boolean }) => {
    switch (event.type) {
      case "user.message":
        if (options.echoUser) out(`> ${event.payload.content}\n`)
        return
      case "model.delta":
        return out(event.payload.text)
      case "turn.completed": {
        endLine()
        const { stopReason, errorCode } = event.payload
        if (stopReason === "cancelled") note("[turn cancelled]")
        if (stopReason === "error") note(`[turn ended with an error: ${errorCode ?? "unknown"}]`)
        if (options.echoUser) out("\n")
        return
      }
      default:
        return
    }
  }
  return { event, note, endLine }
}
