/**
 * The CLI's exit codes (issue 8, item 12): 0 final, 1 the command could not run, 3 the turn ended
 * with an error, 130 cancelled.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as FiberId from "effect/FiberId"
import * as Exit from "effect/Exit"
import { CliError } from "../../src/cli/CliError.js"
import * as ExitCode from "../../src/cli/ExitCode.js"

describe("exit codes", () => {
  it("map each way a command ends", () => {
    expect(ExitCode.of(Exit.void)).toBe(0)
    expect(ExitCode.of(Exit.fail(new CliError({ reason: "invalid_file", message: "bad" })))).toBe(1)
    expect(ExitCode.of(Exit.die(new Error("boom")))).toBe(1)
    expect(ExitCode.of(Exit.fail(new ExitCode.TurnEndedWithError({ errorCode: "authentication" })))).toBe(3)
    expect(ExitCode.of(Exit.fail(new ExitCode.TurnCancelled()))).toBe(130)
    expect(ExitCode.of(Exit.interrupt(FiberId.none))).toBe(130)
  })

  it("SIGTERM: 130 for a command that was cancelled by it, 0 for a server, whose normal stop it is", () => {
    expect(ExitCode.of(Exit.interrupt(FiberId.none), "SIGTERM")).toBe(130)
    Effect.runSync(ExitCode.sigtermStopsCleanly)
    expect(ExitCode.of(Exit.interrupt(FiberId.none), "SIGTERM")).toBe(0)
    expect(ExitCode.of(Exit.interrupt(FiberId.none), "SIGINT")).toBe(130)
    expect(ExitCode.of(Exit.interrupt(FiberId.none))).toBe(130)
    expect(ExitCode.of(Exit.fail(new CliError({ reason: "invalid_file", message: "bad" })), "SIGTERM")).toBe(1)
  })

  it("a turn's outcome is already shown by the renderer, so bin.ts prints nothing more for it", () => {
    expect(ExitCode.isShownOutcome(new ExitCode.TurnEndedWithError({ errorCode: "network" }))).toBe(true)
    expect(ExitCode.isShownOutcome(new CliError({ reason: "invalid_arguments", message: "x" }))).toBe(false)
  })
})
