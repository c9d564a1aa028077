/**
 * The `effect-agent` program, started by `bin.ts`: the CLI on Node's runtime, with diagnostics on
 * stderr, one clear line per failure, and the exit code of the outcome.
 *
 * @since 0.1.0
 */
import * as ValidationError from "@effect/cli/ValidationError"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Cause from "effect/Cause"
import * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as HashMap from "effect/HashMap"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"
import { main } from "./Cli.js"
import * as ConfigProblem from "./ConfigProblem.js"
import * as ExitCode from "./ExitCode.js"
import * as NodeServices from "./NodeServices.js"
import * as PromptExit from "./PromptExit.js"
import { repairHint, sessionsHint } from "./RepairHint.js"
import { terminalSafe } from "./Terminal.js"

const debug = process.env.EFFECT_AGENT_DEBUG === "1"

/** How many characters of a line `brief` keeps from its start and from its end. */
const kept = { start: 400, end: 599 }

/**
 * The first line of a value's message, bounded: never a stack, never a dump. A longer line loses its
 * middle, not its end: what went wrong often comes last, after a path (`--script <file>: <issue>`).
 * Cut by code points, so no surrogate pair is split.
 */
const brief = (value: unknown): string => {
  const text = value instanceof Error ? value.message : typeof value === "string" ? value : JSON.stringify(value) ?? String(value)
  const line = Array.from(terminalSafe(text.split("\n", 1)[0] ?? ""))
  return line.length > kept.start + 1 + kept.end
    ? `${line.slice(0, kept.start).join("")}…${line.slice(-kept.end).join("")}`
    : line.join("")
}

/** A log entry as one line on stderr: the message, its annotations, and the cause's first line. */
const oneLineLogger = Logger.make(({ annotations, cause, message }) => {
  const parts = (Array.isArray(message) ? message : [message]).map(brief)
  const fields = HashMap.toEntries(annotations).map(([key, value]) => `${key}: ${brief(value)}`)
  const why = Cause.isEmpty(cause) ? [] : [`cause: ${brief(Cause.squash(cause))}`]
  const detail = [...fields, ...why]
  // The library logs without a prefix (its logs carry annotations instead); on the terminal every line names the program.
  const text = parts.join(" ")
  process.stderr.write(`${text.startsWith("effect-agent: ") ? "" : "effect-agent: "}${text}${detail.length === 0 ? "" : ` (${detail.join("; ")})`}\n`)
})

// Diagnostics go to stderr, so stdout carries only the answer: warnings and errors as one line each
// (what the renderer already shows, such as retries, is not repeated); everything, with causes, under EFFECT_AGENT_DEBUG=1.
const stderrLogger = debug
  ? Layer.merge(Logger.replace(Logger.defaultLogger, Logger.prettyLogger({ stderr: true })), Logger.minimumLogLevel(LogLevel.Debug))
  : Layer.merge(Logger.replace(Logger.defaultLogger, oneLineLogger), Logger.minimumLogLevel(LogLevel.Warning))

// `effect-agent replay … | head` closes stdout early; that is not an error. The program is stopped
// as Ctrl+C stops it, not exited on the spot: `run … | head -1` left its turn open in the log (no
// `turn.completed`), to be closed `interrupted` by whichever process next ran the session; now the
// turn is cancelled and its close stored first. It still exits 0 (see the teardown below).
let stdoutClosed = false
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code !== "EPIPE") throw error
  if (stdoutClosed) return
  stdoutClosed = true
  process.kill(process.pid, "SIGINT")
})

// The runtime handles the first SIGINT by interrupting the program — a running turn is cancelled and
// its close stored — and then stops listening, so a second Ctrl+C right after it would kill the
// process with the turn left open. Ctrl+Cs that come while the program winds down are absorbed
// instead; the process exits as soon as the turn is closed. (A second SIGTERM is a supervisor's
// "now": it stops the process at once, see onSigterm.)
let interrupts = 0
const windingDown = () => {
  if (++interrupts === 2) process.stderr.write("effect-agent: closing the turn before exiting\n")
}
process.on("SIGINT", windingDown)

/** One clear line per failure: typed errors by their message, no stack unless EFFECT_AGENT_DEBUG is set. */
const report = (cause: Cause.Cause<unknown>) =>
  Effect.sync(() => {
    if (Cause.isInterruptedOnly(cause)) return
    const failure = Cause.failureOption(cause)
    // @effect/cli has already shown its own usage errors with the help text.
    if (Option.isSome(failure) && ValidationError.isValidationError(failure.value)) return
    // A turn that ended with an error or was cancelled: the renderer has said so; the exit code tells the rest.
    if (Option.isSome(failure) && ExitCode.isShownOutcome(failure.value)) return
    // A configuration value read somewhere no caller turned its error into a usage line: said the same way.
    const error = Option.isSome(failure) && ConfigError.isConfigError(failure.value) ? ConfigProblem.toCliError(failure.value) : Cause.squash(cause)
    process.stderr.write(`effect-agent: ${Option.isSome(failure) ? "" : "unexpected error: "}${brief(error)}${repairHint(error)}${sessionsHint(error)}\n`)
    if (debug) process.stderr.write(Cause.pretty(cause) + "\n")
  })

/**
 * SIGTERM, seen before the runtime's own handler (which starts the shutdown and then stops
 * listening): the first one is remembered for the exit code (see ExitCode); a second one, or one
 * that comes when the runtime no longer listens (a shutdown is under way), stops the process at
 * once, as SIGTERM does.
 */
let stoppedBy: NodeJS.Signals | undefined
const onSigterm = () => {
  if (stoppedBy === undefined && process.listenerCount("SIGTERM") > 1) {
    stoppedBy = "SIGTERM"
    return
  }
  process.removeListener("SIGTERM", onSigterm)
  process.kill(process.pid, "SIGTERM")
}
process.on("SIGTERM", onSigterm)

main(process.argv).pipe(
  Effect.tapErrorCause(report),
  Effect.provide(NodeServices.layer),
  Effect.provide(stderrLogger),
  NodeRuntime.runMain({
    disableErrorReporting: true,
    // runMain would install its own pretty logger, on stdout.
    disablePrettyLogger: true,
    // 0 final, 1 the command could not run, 3 the turn ended with an error, 130 cancelled (see ExitCode.ts).
    // A command that asked ends at once once its output is written (see PromptExit.ts); the others when the loop runs dry.
    teardown: (exit, onExit) => {
      // A program stopped because its reader went away ends 0, as it did when it exited at once.
      const code = stdoutClosed && Exit.isFailure(exit) && Cause.isInterruptedOnly(exit.cause) ? ExitCode.codes.ok : ExitCode.of(exit, stoppedBy)
      onExit(code)
      PromptExit.exitIfRequested(code)
    }
  })
)
