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
import { closeSync, constants, existsSync, lstatSync, openSync, readlinkSync } from "node:fs"
import * as NodeFs from "node:fs/promises"
import * as NodePath from "node:path"
import type * as FileSystem from "@effect/platform/FileSystem"
import type * as Path from "@effect/platform/Path"
import * as Effect from "effect/Effect"
import type { PathAccess } from "../../services/ToolRouter.js"
import * as Mounts from "./Mounts.js"

/** How many links one resolution follows before it gives up (Linux's own limit is 40). */
export const maxLinks = 40

/** How many names the synchronous walk looks at before it leaves a path to the asynchronous way. */
export const maxNamesNow = 256

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
 * component does not exist, the names after it are appended as given — until a `..` goes back up
 * to one that exists, from where the walk looks again (`missing/../link-out` is where the link leads).
 *
 * A path on a local file system is walked with synchronous calls (`realPathNow`: no trip to the
 * libuv threadpool, which cost a `read_file` step more than anything else). Otherwise (another mount,
 * `/proc`) the asynchronous walk says what the path leads to: a missing component, a dangling link, a
 * loop, a folder it may not search, and a link of `/proc` — the agent's own process, which the
 * system's `realpath` would follow as any link and call exact.
 */
export const realPath = (target: string): Promise<RealPath> => {
  const now = realPathNow(target)
  if (now !== undefined) return Promise.resolve(now)
  // With `/proc`, walked name by name: the system's `realpath` follows its links as any other and says exact.
  // Without it (not Linux), one `realpath` trip, and the walk for what it cannot resolve.
  return procFd ? walk(target) : NodeFs.realpath(target).then((path): RealPath => ({ path, exact: true }), () => walk(target))
}

/** Whether a name can be looked at inside an open folder's handle (`/proc/self/fd/N/name`): Linux with `/proc`. */
export const procFd = process.platform === "linux" && existsSync("/proc/self/fd")
const folderFlags = constants.O_RDONLY | (constants.O_DIRECTORY ?? 0) | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0)

/** Closes a descriptor only looked through: a failure loses nothing. */
export const closeQuietlyNow = (fd: number): void => {
  try {
    closeSync(fd)
  } catch {
    // Nothing was written through it.
  }
}

/**
 * The real folder `folder` opened with synchronous calls: from `/`, each name opened inside the
 * folder before it with `O_NOFOLLOW` (a name swapped for a link is never followed), then checked to
 * be that folder. `undefined` when a step is not ordinary — a link or a file on the way, a path not
 * on a local file system (`Mounts`), deeper than `maxNamesNow`, or a call that fails. The caller
 * closes the descriptor.
 */
export const openRealFolderNow = (folder: string): number | undefined => {
  const names = folder.split("/").filter((n) => n !== "")
  if (!procFd || !folder.startsWith("/") || names.includes("..") || names.includes(".") || names.length > maxNamesNow || !Mounts.isLocal(folder)) return undefined
  let fd: number | undefined
  try {
    fd = openSync("/", folderFlags)
    for (const name of names) {
      const next: number = openSync(`/proc/self/fd/${fd}/${name}`, folderFlags)
      closeSync(fd)
      fd = next
    }
    if (readlinkSync(`/proc/self/fd/${fd}`) !== NodePath.resolve(folder)) return undefined
    const opened = fd
    fd = undefined
    return opened
  } catch {
    return undefined
  } finally {
    if (fd !== undefined) closeQuietlyNow(fd)
  }
}

/** The folder at `at` opened without following a link; `undefined` when it is not a folder (a link, a file) or not there. */
const openFolder = (at: string): number | undefined => {
  try {
    return openSync(at, folderFlags)
  } catch (error) {
    const code = errorCode(error)
    if (code === "ENOTDIR" || code === "ELOOP" || code === "ENOENT") return undefined
    throw error
  }
}

/**
 * `walk` with synchronous system calls, when every step is ordinary; `undefined` otherwise (then the
 * asynchronous way answers). A threadpool trip costs the main thread far more than an `lstat` from
 * the cache, and a `read_file` step resolved four paths. No call may wait on what a model can put in
 * the workspace, so:
 *
 * - every name looked at is on a local file system (`Mounts`): a link into a network or FUSE mount,
 *   an automount point or `/proc` (whose `/proc/<pid>/root` leads into other mount namespaces, where
 *   a sandboxed command may have mounted a FUSE file system that never answers) is not followed
 *   here;
 * - each name is looked at inside its folder's handle (`/proc/self/fd/N/name`), the folders opened
 *   one at a time from `/` with `O_NOFOLLOW`: a folder swapped for a link since it was looked at is
 *   never followed, so the lookup cannot be led elsewhere between two steps;
 * - a folder that cannot be opened (one that may not be read), or any other error than a missing
 *   name, leaves the answer to the asynchronous way.
 */
export const realPathNow = (target: string): RealPath | undefined => walkNow(target, -1)?.real

/**
 * The leaf's folder, still open, as the walk left it: `fd` was reached from `/` one name at a time
 * with `O_NOFOLLOW`, as `openRealFolderNow` reaches a folder, and `regularFile` is what the walk's
 * `lstat` of the leaf (a name in that folder) said. The caller closes `fd`.
 */
export interface HeldFolder {
  readonly fd: number
  readonly regularFile: boolean
}

interface Walked {
  readonly real: RealPath
  readonly head: string | undefined
  readonly held?: HeldFolder | undefined
}

/**
 * `realPathNow`, and where the walk stood once every name but the last `tail` of `target` had been
 * looked at (links met on the way followed): with `target` a folder's path and `tail` more names
 * joined to it, that is the folder's real path, as `realPathNow(folder)` would say — so one walk
 * answers both. With `hold`, a walk that ends at an existing leaf (not a folder) keeps the leaf's
 * folder open for the caller (`held`): what a read of that leaf would open again, name by name.
 */
const walkNow = (target: string, tail: number, hold = false): Walked | undefined => {
  // Not even `/` is opened unless it is local (and the mount table has been read).
  if (!procFd || !Mounts.isLocal("/")) return undefined
  const pending = target.split("/").filter((c) => c !== "" && c !== ".")
  let head: string | undefined
  let looked = 0
  // The open folders from `/` to `current`, when `current` is a folder (`leaf` when it is not).
  const folders: Array<number> = []
  let current = "/"
  let leaf = false
  let links = 0
  // How many names `current` holds past the last one looked at (a missing one and those after it, or names after a file).
  let unlooked = 0
  // Names found missing: a line may go into one and back out thousands of times (`m/../m/../…`).
  const absent = new Set<string>()
  let leafIsFile = false
  try {
    folders.push(openSync("/", folderFlags))
    for (;;) {
      // The names still to look at are the last `tail` ones: nothing before them is left.
      if (head === undefined && pending.length === tail) head = current
      const component = pending.shift()
      if (component === undefined) break
      if (component === "..") {
        // Back up to a name looked at, the walk looks at what follows again (`missing/../link-out`).
        if (unlooked > 0) unlooked--
        else if (leaf) leaf = false
        else if (current !== "/") closeSync(folders.pop()!)
        current = NodePath.dirname(current)
        continue
      }
      // `join` without its normalizing pass: `current` is absolute and normal, `component` one name (no "/", not "." or "..").
      const next = current === "/" ? `/${component}` : `${current}/${component}`
      // As the walk finds: nothing below a missing name or a file exists.
      if (unlooked > 0 || leaf) {
        unlooked++
        current = next
        continue
      }
      if (absent.has(next)) {
        unlooked = 1
        current = next
        continue
      }
      // Thousands of names (a link's target may hold as many, and 40 links each lead to one) are too
      // many system calls to make on the event loop: the asynchronous way makes them.
      if (++looked > maxNamesNow || !Mounts.isLocal(next)) return undefined
      const at = `/proc/self/fd/${folders[folders.length - 1]}/${component}`
      // Most names on the way are folders: opened at once (a link or a file fails the open, and is then
      // looked at); the last is most often a file, looked at first (a failed call builds an error).
      const folder = pending.length > 0 ? openFolder(at) : undefined
      if (folder !== undefined) {
        folders.push(folder)
        current = next
        continue
      }
      const info = lstatSync(at, { throwIfNoEntry: false })
      if (info === undefined) {
        absent.add(next)
        unlooked = 1
        current = next
      } else if (info.isDirectory()) {
        folders.push(openSync(at, folderFlags))
        current = next
      } else if (info.isSymbolicLink()) {
        if (++links > maxLinks) return head === undefined && tail >= 0 ? undefined : { real: { path: NodePath.resolve(target), exact: false }, head }
        const link = readlinkSync(at)
        if (link.startsWith("/")) {
          while (folders.length > 1) closeSync(folders.pop()!)
          current = "/"
        }
        pending.unshift(...link.split("/").filter((c) => c !== "" && c !== "."))
      } else {
        leaf = true
        leafIsFile = info.isFile()
        current = next
      }
    }
    // The leaf's folder is the last one open (a `..` after the leaf cleared `leaf`).
    const held = hold && leaf && unlooked === 0 && folders.length > 0 ? { fd: folders.pop()!, regularFile: leafIsFile } : undefined
    return { real: { path: current, exact: true }, head, held }
  } catch {
    return undefined
  } finally {
    for (const fd of folders) closeQuietlyNow(fd)
  }
}

/** `realPath` component by component. */
export const walk = async (target: string): Promise<RealPath> => {
  const pending = target.split("/").filter((c) => c !== "" && c !== ".")
  let current = "/"
  let links = 0
  // How many names `current` holds past the last one that exists (as in `walkNow`).
  let unlooked = 0
  // Names found missing (as in `walkNow`).
  const absent = new Set<string>()
  // A link of `/proc` (`/proc/self`, `/proc/<pid>/cwd`, `/proc/self/fd/N`, reached as `/dev/fd` or
  // `/dev/stdin` too) is the agent's own process as the kernel shows it, not a link on a disk: a
  // command, another process, sees its own there. Followed, the path is not exact.
  let throughProcess = false
  while (pending.length > 0) {
    const component = pending.shift()!
    if (component === "..") {
      // Back at a name that exists, what follows is looked at again: a program that makes the
      // missing folder first (`mkdir -p d/../link-out/x`) goes through the link after it.
      if (unlooked > 0) unlooked--
      current = NodePath.dirname(current)
      continue
    }
    const next = NodePath.join(current, component)
    if (unlooked > 0 || absent.has(next)) {
      unlooked++
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
        absent.add(next)
        unlooked = 1
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
    if (next.startsWith("/proc/")) throughProcess = true
    let link: string
    try {
      link = await NodeFs.readlink(next)
    } catch {
      return { path: NodePath.resolve(target), exact: false }
    }
    if (link.startsWith("/")) current = "/"
    pending.unshift(...link.split("/").filter((c) => c !== "" && c !== "."))
  }
  return { path: current, exact: !throughProcess }
}

/**
 * A file name read as bytes, as text: `undefined` when it is not UTF-8. Node reads such a name (a byte
 * 0xff) as U+FFFD, text that names another file or none, and a path is passed to a program as text:
 * a file so named can be neither looked at nor bound by its name.
 */
export const nameOf = (bytes: Buffer): string | undefined => {
  const text = bytes.toString("utf8")
  return !text.includes("\uFFFD") || Buffer.from(text, "utf8").equals(bytes) ? text : undefined
}

/** A name (or path) that is not UTF-8, shown with each byte outside printable ASCII (and `\\`) as `\xNN`. */
export const escapedName = (bytes: Buffer): string =>
  [...bytes].map((b) => (b >= 0x20 && b < 0x7f && b !== 0x5c ? String.fromCharCode(b) : `\\x${b.toString(16).padStart(2, "0")}`)).join("")

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
): Effect.Effect<PathAccess> =>
  Effect.suspend(() => {
    const now = resolveSync(path, cwd, requested, access)
    return now !== undefined ? Effect.succeed(now) : Effect.promise(() => resolveAsync(path, cwd, requested, access))
  })

/** `resolve` as a promise, for a tool that checks the path while it does other work. */
export const resolveNow = (
  path: Pick<Path.Path, "join" | "isAbsolute" | "resolve" | "relative">,
  cwd: string,
  requested: string,
  access: "read" | "write"
): Promise<PathAccess> => {
  const now = resolveSync(path, cwd, requested, access)
  return now !== undefined ? Promise.resolve(now) : resolveAsync(path, cwd, requested, access)
}

type PathOps = Pick<Path.Path, "join" | "isAbsolute" | "resolve" | "relative">

/** The requested path made absolute: `~` expanded, a relative one joined to the cwd. */
const absoluteOf = (path: PathOps, cwd: string, requested: string) => {
  const expanded = requested === "~" || requested.startsWith("~/")
    ? path.join(process.env.HOME ?? "/", requested.slice(1))
    : requested
  // Joined, not normalized: `link/..` is the link's target's parent, as the system would see it.
  return { expanded, absolute: path.isAbsolute(expanded) ? expanded : `${path.resolve(cwd)}/${expanded}` }
}

/**
 * `resolveNow` answered with synchronous calls (`realPathNow`'s walk), when every step is ordinary:
 * a relative path and its cwd in one walk. `undefined` otherwise, and for a write inside the cwd
 * (its hard links are counted the asynchronous way).
 */
export const resolveSync = (path: PathOps, cwd: string, requested: string, access: "read" | "write"): PathAccess | undefined =>
  resolveSyncWith(path, cwd, requested, access, false).access

/** What a synchronous resolution answers, and the resolved leaf's folder when it was asked to hold it. */
interface SyncResolution {
  readonly access: PathAccess | undefined
  readonly held: HeldFolder | undefined
}

/**
 * `resolveSync` of a path to read at once: the resolved leaf's folder is handed over still open
 * (`held`, when the path leads to an existing file or other leaf), so that `SafeFile.readSmallIn`
 * reads it without opening every folder from `/` again. The caller closes `held.fd`, whatever `access` is.
 */
export const resolveSyncHolding = (path: PathOps, cwd: string, requested: string, access: "read" | "write"): SyncResolution =>
  resolveSyncWith(path, cwd, requested, access, true)

const resolveSyncWith = (path: PathOps, cwd: string, requested: string, access: "read" | "write", hold: boolean): SyncResolution => {
  const { expanded, absolute } = absoluteOf(path, cwd, requested)
  let root: string | undefined
  let walked: Walked | undefined
  if (path.isAbsolute(expanded)) {
    root = realPathNow(NodePath.resolve(cwd))?.path
    walked = root === undefined ? undefined : walkNow(absolute, -1, hold)
  } else {
    walked = walkNow(absolute, expanded.split("/").filter((c) => c !== "" && c !== ".").length, hold)
    root = walked?.head
  }
  const real = walked?.real
  const held = walked?.held
  if (root === undefined || real === undefined) return { access: undefined, held }
  const inside = real.exact && isInside(path, root, real.path)
  if (inside && access === "write") return { access: undefined, held }
  return { access: { requested, resolved: real.path, insideCwd: inside, relative: inside ? path.relative(root, real.path) || "." : undefined, access }, held }
}

const resolveAsync = async (path: PathOps, cwd: string, requested: string, access: "read" | "write"): Promise<PathAccess> => {
  const { absolute } = absoluteOf(path, cwd, requested)
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
