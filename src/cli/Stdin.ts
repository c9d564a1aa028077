/**
 * `effect-agent run -`: the message read whole from stdin, for inputs longer than the argument
 * limit. Bounded, so a runaway pipe cannot grow the process: a message over `maxMessageBytes` is
 * refused before anything is stored (the log's lines have a cap of their own).
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import { CliError } from "./CliError.js"

/** The largest message `run -` accepts: 1 MiB, far beyond any context window, well inside a log line's cap. */
export const maxMessageBytes = 1024 * 1024

/** Reads all of stdin as UTF-8; one trailing newline (as `echo` adds) is dropped. */
export const readMessage: Effect.Effect<string, CliError> = Effect.async<string, CliError>((resume) => {
  const chunks: Array<Buffer> = []
  let size = 0
  let done = false
  const stop = () => {
    done = true
    process.stdin.off("data", onData).off("end", onEnd).off("error", onError)
    process.stdin.pause()
  }
  const finish = (result: Effect.Effect<string, CliError>) => {
    if (done) return
    stop()
    resume(result)
  }
  const onData = (chunk: Buffer) => {
    size += chunk.length
    if (size > maxMessageBytes) {
      return finish(Effect.fail(new CliError({ reason: "invalid_arguments", message: `the message on stdin is over ${maxMessageBytes / 1024 / 1024} MiB` })))
    }
    chunks.push(chunk)
  }
  const onEnd = () => finish(Effect.succeed(Buffer.concat(chunks).toString("utf8").replace(/\r?\n$/, "")))
  const onError = (error: Error) => finish(Effect.fail(new CliError({ reason: "invalid_arguments", message: `cannot read the message from stdin (${error.message})` })))
  process.stdin.on("data", onData).on("end", onEnd).on("error", onError)
  process.stdin.resume()
  return Effect.sync(stop)
})
