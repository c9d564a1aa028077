/**
 * Resolving a path a tool call names: against the session's cwd, with symlinks followed, so that
 * `..`, absolute paths and links that lead out of the workspace are all seen for what they are.
 * Tools then touch the resolved path, never the one they were given.
 *
 * @since 0.1.0
 * @internal
 */
import type * as FileSystem from "@effect/platform/FileSystem"
import type * as Path from "@effect/platform/Path"
import * as Effect from "effect/Effect"
import type { PathAccess } from "../../services/ToolRouter.js"

/** The real path of `target`, following symlinks as far as the path exists; the rest is appended as given. */
const realPathOf = (fs: FileSystem.FileSystem, path: Path.Path, target: string): Effect.Effect<string> =>
  Effect.gen(function*() {
    let existing = target
    const rest: Array<string> = []
    while (true) {
      const real = yield* Effect.option(fs.realPath(existing))
      if (real._tag === "Some") return rest.length === 0 ? real.value : path.join(real.value, ...rest)
      const parent = path.dirname(existing)
      if (parent === existing) return target
      rest.unshift(path.basename(existing))
      existing = parent
    }
  })

/** Whether `child` is `parent` or inside it. */
export const isInside = (path: Path.Path, parent: string, child: string): boolean => {
  const relative = path.relative(parent, child)
  return relative === "" || (!relative.startsWith("..") && !path.isAbsolute(relative))
}

/** Resolves a requested path for a session whose cwd is `cwd`. */
export const resolve = (
  fs: FileSystem.FileSystem,
  path: Path.Path,
  cwd: string,
  requested: string,
  access: "read" | "write"
): Effect.Effect<PathAccess> =>
  Effect.gen(function*() {
    const realCwd = yield* realPathOf(fs, path, path.resolve(cwd))
    const expanded = requested === "~" || requested.startsWith("~/")
      ? path.join(process.env.HOME ?? "/", requested.slice(1))
      : requested
    const resolved = yield* realPathOf(fs, path, path.resolve(cwd, expanded))
    return { requested, resolved, insideCwd: isInside(path, realCwd, resolved), access }
  })

/** How a path is shown to the model: relative to cwd when inside it. */
export const display = (path: Path.Path, cwd: string, resolved: string): string => {
  const relative = path.relative(cwd, resolved)
  return relative === "" ? "." : !relative.startsWith("..") && !path.isAbsolute(relative) ? relative : resolved
}
