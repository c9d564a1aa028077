/**
 * A session's working directory, checked and made canonical before the session is created: every
 * adapter (HTTP, ACP, the CLI, the Promise façade) calls `canonical` on the directory it was given.
 *
 * The engine itself stays pure (no file system): it refuses a cwd that is not absolute, since a
 * relative one would be resolved later against whatever directory the process that drives the
 * session runs in. Whether the directory exists, and what it really is, is a question for the file
 * system, asked here: a missing directory or a file is refused, and `..` and links are resolved
 * once, so that the stored cwd names the same tree for every later driver — a link changed
 * afterwards cannot move a session's workspace.
 *
 * @since 0.4.0
 */
import * as Effect from "effect/Effect"
import { realpath, stat } from "node:fs/promises"
import { isAbsolute, parse } from "node:path"
import { InvalidInput } from "../domain/Errors.js"
import * as FileNames from "../domain/FileNames.js"

const invalid = (detail: string) => new InvalidInput({ field: "cwd", detail })

const why = (error: unknown): string => {
  switch ((error as NodeJS.ErrnoException | undefined)?.code) {
    case "ENOENT":
      return "the directory does not exist"
    case "ENOTDIR":
      return "a part of the path is not a directory"
    case "EACCES":
    case "EPERM":
      return "the directory cannot be reached (permission denied)"
    case "ELOOP":
      return "the path has a loop of links"
    default:
      return "the path cannot be resolved"
  }
}

/** The kernel's own file systems, mounted at these folders (Linux; `/dev` elsewhere too): never a project. */
const kernelAreas: ReadonlyArray<readonly [string, string]> = [
  ["/proc", "the kernel's view of processes (/proc)"],
  ["/sys", "the kernel's view of devices and drivers (/sys)"],
  ["/dev", "the machine's devices (/dev)"]
]

/**
 * Why a real path (links resolved) cannot be a session's workspace because it is in one of the
 * kernel's own folders — `/proc`, `/sys`, `/dev` or a folder below one — or `undefined`. Such a
 * folder holds no project: its files are the processes' memory and environment, devices, kernel
 * switches; a session there made every one of them a file "inside the workspace" (in `acceptEdits`,
 * a write to `/proc/sys/…` or `/dev/sda` an edit like any other).
 */
export const kernelArea = (real: string): string | undefined => {
  const area = kernelAreas.find(([folder]) => real === folder || real.startsWith(`${folder}/`))
  return area === undefined ? undefined : `is in ${area[1]}, not a project folder: every file there would be inside the session's workspace; choose a project folder`
}

/**
 * The real path of an existing directory, or `InvalidInput {field: "cwd"}` saying why not: not
 * absolute, missing, not a directory, not reachable, the file system's root, or `/proc`, `/sys`,
 * `/dev` or a folder below one ({@link kernelArea}) — reached through a link or `..` too.
 */
export const canonical = Effect.fn("WorkingDirectory.canonical")(function*(cwd: string) {
  if (cwd.trim() === "") return yield* invalid("must not be empty")
  // A NUL cuts the path; a lone surrogate is written as U+FFFD: another directory than the one named.
  const unnamable = FileNames.unnamable(cwd)
  if (unnamable !== undefined) return yield* invalid(`cannot name a directory: ${unnamable}`)
  if (!isAbsolute(cwd)) return yield* invalid("must be an absolute path")
  const real = yield* Effect.tryPromise({ try: () => realpath(cwd), catch: (error) => invalid(why(error)) })
  const info = yield* Effect.tryPromise({ try: () => stat(real), catch: (error) => invalid(why(error)) })
  if (!info.isDirectory()) return yield* invalid("is not a directory")
  // At the root every file of the machine is inside the workspace: `/etc/profile.d`, `/usr/local/bin`
  // would be edits like any other in acceptEdits, `/etc/shadow` a read inside the project.
  if (parse(real).root === real) {
    return yield* invalid("is the root of the file system: every file of the machine would be inside the session's workspace; choose a project folder")
  }
  const kernel = kernelArea(real)
  if (kernel !== undefined) return yield* invalid(kernel)
  return real
})
