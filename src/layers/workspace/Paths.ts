/**
 * Resolving a path a tool call names: against the session's cwd, with every symlink followed — also
 * a link whose target does not exist yet — so that `..`, absolute paths and links that lead out of
 * the workspace are all seen for what they are. A link chain that cannot be resolved (a loop, or
 * more than `maxLinks` links) is outside the workspace: nobody can say where it leads.
 *
 * Tools then touch the resolved path, never the one they were given, and only through a handle
 * opened without following links (see `SafeFile`).
 *
 * A write to a regular file that has other names (hard links) counts as outside too: the write
 * changes the file under every name, and the other names may be anywhere on the same file system.
 *
 * @since 0.1.0
 * @internal
 */
import * as NodeFs from "node:fs/promises"
import * as NodePath from "node:path"
import type * as FileSystem from "@effect/platform/FileSystem"
import type * as Path from "@effect/platform/Path"
import * as Effect from "effect/Effect"
import type { PathAccess } from "../../services/ToolRouter.js"

/** How many links one resolution follows before it gives up (Linux's own limit is 40). */
export const maxLinks = 40

/** Where a path really leads. `exact: false` when a link chain could not be resolved. */
export interface RealPath {
  readonly path: string
  readonly exact: boolean
}

const errorCode = (error: unknown): string | undefined =>
  typeof error === "object" && error !== null && "code" in error ? String((error as { code: unknown }).code) : undefined

/**
 * The real path of the absolute path `target`: each component is looked at with `lstat`; a link is
 * replaced by its target (read with `readlink`, so a dangling link is followed too); once a
 * component does not exist, the rest is appended as given.
 *
 * A path that exists is resolved by the system's `realpath` in one call (one trip to the libuv
 * threadpool instead of one per component: most of a `read_file` call's time was these trips). It
 * follows links as the walk does, `..` after a link included; whatever it cannot resolve (a missing
 * component, a dangling link, a loop, a folder it may not search) is left to the walk, which says
 * what the path leads to, as before.
 */
export const realPath = (target: string): Promise<RealPath> =>
  NodeFs.realpath(target).then((path): RealPath => ({ path, exact: true }), () => walk(target))

/** `realPath` component by component. */
export const walk = async (target: string): Promise<RealPath> => {
  const pending = target.split("/").filter((c) => c !== "" && c !== ".")
  let current = "/"
  let links = 0
  let missing = false
  while (pending.length > 0) {
    const component = pending.shift()!
    if (component === "..") {
      current = NodePath.dirname(current)
      continue
    }
    const next = NodePath.join(current, component)
    if (missing) {
      current = next
      continue
    }
    let info: import("node:fs").Stats
    try {
      info = await NodeFs.lstat(next)
    } catch (error) {
      const code = errorCode(error)
      // A missing component (or a file used as a folder): what follows does not exist either.
      if (code === "ENOENT" || code === "ENOTDIR") {
        missing = true
        current = next
        continue
      }
      return { path: NodePath.resolve(target), exact: false }
    }
    if (!info.isSymbolicLink()) {
      current = next
      continue
    }
    if (++links > maxLinks) return { path: NodePath.resolve(target), exact: false }
    let link: string
    try {
      link = await NodeFs.readlink(next)
    } catch {
      return { path: NodePath.resolve(target), exact: false }
    }
    if (link.startsWith("/")) current = "/"
    pending.unshift(...link.split("/").filter((c) => c !== "" && c !== "."))
  }
  return { path: current, exact: true }
}

/** Whether `child` is `parent` or inside it (a name like `..foo` is inside). */
export const isInside = (path: Pick<Path.Path, "relative" | "isAbsolute">, parent: string, child: string): boolean => {
  const relative = path.relative(parent, child)
  return relative === "" || (relative !== ".." && !relative.startsWith("../") && !path.isAbsolute(relative))
}

/** The real path of a session's cwd. */
export const realCwd = (cwd: string): Effect.Effect<string> =>
  Effect.promise(() => realPath(NodePath.resolve(cwd))).pipe(Effect.map((real) => real.path))

/** Resolves a requested path for a session whose cwd is `cwd`. */
export const resolve = (
  _fs: FileSystem.FileSystem,
  path: Path.Path,
  cwd: string,
  requested: string,
  access: "read" | "write"
): Effect.Effect<PathAccess> => Effect.promise(() => resolveNow(path, cwd, requested, access))

/** `resolve` as a promise, for a tool that checks the path while it does other work. */
export const resolveNow = async (
  path: Pick<Path.Path, "join" | "isAbsolute" | "resolve" | "relative">,
  cwd: string,
  requested: string,
  access: "read" | "write"
): Promise<PathAccess> => {
  const expanded = requested === "~" || requested.startsWith("~/")
    ? path.join(process.env.HOME ?? "/", requested.slice(1))
    : requested
  // Joined, not normalized: `link/..` is the link's target's parent, as the system would see it.
  const absolute = path.isAbsolute(expanded) ? expanded : `${path.resolve(cwd)}/${expanded}`
  // Both at once: neither depends on the other.
  const [rootReal, real] = await Promise.all([realPath(NodePath.resolve(cwd)), realPath(absolute)])
  const root = rootReal.path
  const inside = real.exact && isInside(path, root, real.path)
  if (inside && access === "write") {
    const names = await hardLinks(real.path)
    if (names > 1) {
      return { requested, resolved: real.path, insideCwd: false, relative: undefined, access, note: `a file with ${names} names (hard links): a write changes it under every name, and the others may be outside the working directory` }
    }
  }
  return { requested, resolved: real.path, insideCwd: inside, relative: inside ? path.relative(root, real.path) || "." : undefined, access }
}

/**
 * How many names a regular file has (1 when it is not a regular file or does not exist). A write
 * through one name changes the file under all of them, and nothing cheap tells where the others are.
 */
export const hardLinks = (real: string): Promise<number> =>
  NodeFs.lstat(real).then((info) => (info.isFile() ? info.nlink : 1), () => 1)

/** How a path is shown to the model: relative to cwd when inside it. */
export const display = (path: Pick<Path.Path, "relative" | "isAbsolute">, cwd: string, resolved: string): string => {
  const relative = path.relative(cwd, resolved)
  return relative === "" ? "." : isInside(path, cwd, resolved) ? relative : resolved
}
