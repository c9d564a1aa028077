/**
 * Running a command for the `shell` tool: in its own process group (inside the sandbox's PID
 * namespace where there is one, see `Sandbox`), with a timeout, output bounded, and the whole group
 * killed when the call is interrupted or times out. Killing the group kills `unshare` and the
 * namespace's first process, and with that every process in the namespace.
 *
 * @since 0.1.0
 * @internal
 */
import { spawn } from "node:child_process"
import { accessSync, constants, statSync } from "node:fs"
import { resolve as resolvePath } from "node:path"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Environment from "./Environment.js"

/** What to run. `argv` runs directly; `shellText` runs through `/bin/sh -c` (only when a rule allowed it). */
export interface RunOptions {
  readonly argv: ReadonlyArray<string>
  readonly shellText?: string
  readonly cwd: string
  /** The command's environment (its `PATH` finds the program). */
  readonly env: Readonly<Record<string, string>>
  /** What to run the command under (`Sandbox.choose`): e.g. `setpriv … unshare … --`. */
  readonly prefix?: ReadonlyArray<string>
  /** The environment the prefix starts with, when the prefix passes the command's on itself (default: `env`). */
  readonly prefixEnv?: Readonly<Record<string, string>>
  readonly timeout: Duration.Duration
  readonly maxOutputBytes: number
  /** Called with each piece of output as it arrives. */
  readonly onOutput?: (text: string) => void
}

/** How a command ended. */
export type RunResult =
  | { readonly _tag: "Exited"; readonly exitCode: number; readonly output: string; readonly truncatedBytes: number }
  | { readonly _tag: "TimedOut"; readonly output: string; readonly truncatedBytes: number }
  | { readonly _tag: "SpawnFailed"; readonly code: string }

const killGroup = (pid: number | undefined) => {
  if (pid === undefined) return
  try {
    process.kill(-pid, "SIGKILL")
  } catch {
    // The group is already gone.
  }
}

/**
 * Why the program cannot be started (`ENOENT`, `EACCES`), looked up before starting it: behind a
 * sandbox prefix the spawn itself would succeed and only the prefix would report the failure.
 */
const missing = (program: string, cwd: string, path: string | undefined): string | undefined => {
  const candidates = program.includes("/")
    ? [resolvePath(cwd, program)]
    : Environment.searchFolders(path).map((d) => resolvePath(d, program))
  let code = "ENOENT"
  for (const file of candidates) {
    try {
      if (!statSync(file).isFile()) continue
      accessSync(file, constants.X_OK)
      return undefined
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "EACCES") code = "EACCES"
    }
  }
  return code
}

/** Runs a command to its end, its timeout, or the interruption of the calling fiber. */
export const run = (options: RunOptions): Effect.Effect<RunResult> =>
  Effect.async<RunResult>((resume) => {
    const command = options.shellText === undefined ? options.argv : ["/bin/sh", "-c", options.shellText]
    const notStartable = missing(command[0]!, options.cwd, options.env.PATH)
    if (notStartable !== undefined) return resume(Effect.succeed({ _tag: "SpawnFailed", code: notStartable }))
    const [file, ...args] = [...(options.prefix ?? []), ...command]
    const child = spawn(file!, args, {
      cwd: options.cwd,
      env: options.prefixEnv ?? options.env,
      // Its own process group, so killing the group takes every process it started.
      detached: true,
      stdio: ["ignore", "pipe", "pipe"]
    })
    let output = ""
    let bytes = 0
    let truncatedBytes = 0
    let timedOut = false
    let settled = false
    const collect = (chunk: Buffer) => {
      const text = chunk.toString("utf8")
      options.onOutput?.(text)
      const room = options.maxOutputBytes - bytes
      if (room <= 0) {
        truncatedBytes += chunk.length
        return
      }
      const kept = chunk.length <= room ? text : chunk.subarray(0, room).toString("utf8")
      output += kept
      bytes += Math.min(chunk.length, room)
      truncatedBytes += Math.max(0, chunk.length - room)
    }
    child.stdout!.on("data", collect)
    child.stderr!.on("data", collect)
    const timer = setTimeout(() => {
      timedOut = true
      killGroup(child.pid)
    }, Duration.toMillis(options.timeout))
    child.on("error", (error: NodeJS.ErrnoException) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      resume(Effect.succeed({ _tag: "SpawnFailed", code: error.code ?? "UNKNOWN" }))
    })
    child.on("close", (code, signal) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      // The direct child is gone; anything it left running in its group goes with it.
      killGroup(child.pid)
      resume(Effect.succeed(
        timedOut
          ? { _tag: "TimedOut", output, truncatedBytes }
          : { _tag: "Exited", exitCode: code ?? (signal === null ? 1 : 128), output, truncatedBytes }
      ))
    })
    // Interruption: kill the group, and finish only once the process is really gone.
    return Effect.async<void>((done) => {
      clearTimeout(timer)
      if (settled || child.exitCode !== null || child.signalCode !== null) {
        killGroup(child.pid)
        return done(Effect.void)
      }
      child.once("close", () => done(Effect.void))
      killGroup(child.pid)
    })
  })
