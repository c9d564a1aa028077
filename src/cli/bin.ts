#!/usr/bin/env node
/**
 * The `effect-agent` executable.
 *
 * @since 0.1.0
 */
import * as ValidationError from "@effect/cli/ValidationError"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Logger from "effect/Logger"
import * as Option from "effect/Option"
import { main } from "./Cli.js"

// Diagnostics go to stderr, so stdout carries only the answer.
const stderrLogger = Logger.replace(Logger.defaultLogger, Logger.prettyLogger({ stderr: true }))

// `effect-agent replay … | head` closes stdout early; that is not an error.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code === "EPIPE") process.exit(0)
  throw error
})

/** One clear line per failure: typed errors by their message, no stack unless EFFECT_AGENT_DEBUG is set. */
const report = (cause: Cause.Cause<unknown>) =>
  Effect.sync(() => {
    if (Cause.isInterruptedOnly(cause)) return
    const failure = Cause.failureOption(cause)
    // @effect/cli has already shown its own usage errors with the help text.
    if (Option.isSome(failure) && ValidationError.isValidationError(failure.value)) return
    const error = Cause.squash(cause)
    const message = error instanceof Error ? error.message : String(error)
    process.stderr.write(`effect-agent: ${Option.isSome(failure) ? "" : "unexpected error: "}${message}\n`)
    if (process.env.EFFECT_AGENT_DEBUG === "1") process.stderr.write(Cause.pretty(cause) + "\n")
  })

main(process.argv).pipe(
  Effect.tapErrorCause(report),
  Effect.provide(NodeContext.layer),
  Effect.provide(stderrLogger),
  NodeRuntime.runMain({
    disableErrorReporting: true,
    // runMain would install its own pretty logger, on stdout.
    disablePrettyLogger: true,
    // Interrupted by Ctrl+C: the conventional 130, after the turn's cancellation is stored.
    teardown: (exit, onExit) => onExit(Exit.isSuccess(exit) ? 0 : Cause.isInterruptedOnly(exit.cause) ? 130 : 1)
  })
)
