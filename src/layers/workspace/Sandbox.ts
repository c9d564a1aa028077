/**
 * How a tool's command is isolated from the agent.
 *
 * On Linux every command runs as
 * `setpriv --pdeathsig KILL -- unshare --user --map-… --pid --fork --kill-child --mount-proc -- <command>`:
 * - a new PID namespace with its own `/proc`, so no process of the agent (its `/proc/<pid>/environ`
 *   holds the keys it was started with) is visible to the command; the user namespace keeps even a
 *   root agent's command from unmounting that `/proc` to reach the host's, or from reading another
 *   process's environment through it;
 * - its life tied to the agent's: if the agent dies (even by SIGKILL) the kernel sends `setpriv`'s
 *   process (then `unshare`) SIGKILL, `--kill-child` kills the namespace's first process, and with it
 *   the kernel kills every process in the namespace.
 * Where namespaces are not available (macOS, containers that forbid them) commands run with the
 * parent-death signal alone, or as plain processes; `detect` says which, once per process.
 *
 * @since 0.1.0
 */
import { spawn } from "node:child_process"
import { accessSync, constants } from "node:fs"
import { delimiter, join } from "node:path"
import * as Effect from "effect/Effect"

/** What the user asks for: `auto` isolates where the OS allows it, `required` fails commands where it does not, `off` never isolates. */
export type Mode = "auto" | "required" | "off"

/** How commands are started on this system: the argv prefix, and what it guarantees. */
export type Isolation =
  | { readonly _tag: "Namespace"; readonly prefix: ReadonlyArray<string> }
  | { readonly _tag: "ParentDeath"; readonly prefix: ReadonlyArray<string> }
  | { readonly _tag: "None"; readonly prefix: ReadonlyArray<string> }

/** The absolute path of a program on `PATH`, if there is one. */
export const which = (program: string, path: string | undefined): string | undefined => {
  for (const dir of (path ?? "").split(delimiter)) {
    if (dir === "") continue
    const file = join(dir, program)
    try {
      accessSync(file, constants.X_OK)
      return file
    } catch {
      // not here
    }
  }
  return undefined
}

/** Runs `argv` with a minimal environment; succeeds with whether it exited 0 and printed `expected`. */
const probe = (argv: ReadonlyArray<string>, expected: string): Effect.Effect<boolean> =>
  Effect.async<boolean>((resume) => {
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ["ignore", "pipe", "ignore"], env: { PATH: process.env.PATH ?? "/usr/bin:/bin" }, detached: true })
    let out = ""
    child.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
      out += chunk
    })
    child.on("error", () => resume(Effect.succeed(false)))
    child.on("close", (code) => resume(Effect.succeed(code === 0 && out.trim() === expected)))
    return Effect.sync(() => {
      try {
        process.kill(-child.pid!, "SIGKILL")
      } catch {
        // gone
      }
    })
  })

/**
 * Finds the strongest isolation this system offers, by trying it: inside the namespace the command
 * must be PID 1. Run it once (through `Effect.cached`) and reuse the answer.
 */
export const detect: Effect.Effect<Isolation> = Effect.gen(function*() {
  if (process.platform !== "linux") return { _tag: "None", prefix: [] }
  const setpriv = which("setpriv", process.env.PATH)
  const unshare = which("unshare", process.env.PATH)
  if (setpriv === undefined) return { _tag: "None", prefix: [] }
  const parentDeath = [setpriv, "--pdeathsig", "KILL", "--"]
  if (unshare !== undefined) {
    // `--map-current-user` keeps the user's own uid (and no capabilities once the command runs);
    // older util-linux only has `--map-root-user`.
    for (const map of ["--map-current-user", "--map-root-user"]) {
      const prefix = [...parentDeath, unshare, "--user", map, "--pid", "--fork", "--kill-child", "--mount-proc", "--"]
      if (yield* probe([...prefix, "/bin/sh", "-c", "echo $$"], "1")) return { _tag: "Namespace", prefix }
    }
  }
  if (yield* probe([...parentDeath, "/bin/sh", "-c", "echo ok"], "ok")) return { _tag: "ParentDeath", prefix: parentDeath }
  return { _tag: "None", prefix: [] }
})

/** What `mode` makes of the detected isolation: the prefix to run commands with, or why they may not run. */
export const choose = (mode: Mode, isolation: Isolation): { readonly prefix: ReadonlyArray<string> } | { readonly unavailable: string } => {
  if (mode === "required" && isolation._tag !== "Namespace") {
    return {
      unavailable: "commands must run in a sandbox (sandbox: \"required\") and this system has none: it needs Linux with user and PID namespaces (unshare, setpriv from util-linux)"
    }
  }
  if (mode === "off" && isolation._tag === "Namespace") return { prefix: isolation.prefix.slice(0, 4) }
  return { prefix: isolation.prefix }
}
