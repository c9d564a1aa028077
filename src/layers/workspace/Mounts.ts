/**
 * Which paths lie on a file system that answers a lookup or a small read without waiting on anything
 * but memory or a local disk: what `SafeFile`'s synchronous read needs to know before it blocks the
 * event loop on a path. A network file system (NFS, SMB, Ceph, …), a FUSE file system (whose server
 * is a process that may never answer), an automount point (which mounts a network share on first
 * lookup) or a kernel file system whose reads call into drivers (`/proc`, `/sys`, `/dev`) may each
 * hold a system call for as long as they like; a synchronous call there would hold every session of
 * the process. Those paths keep the asynchronous way (the libuv threadpool, under the tool's time
 * limit).
 *
 * The answer comes from the process's mount table (`/proc/self/mountinfo`): a path is local when no
 * mount point at or above it has a type outside `localTypes` (an unknown type counts as not local).
 * The table is read through the threadpool, never on the synchronous path, and read again when the
 * copy is over a second old; until a copy exists, or when it is too old, nothing is local.
 *
 * @since 0.11.0
 * @internal
 */
import { existsSync } from "node:fs"
import { readFile } from "node:fs/promises"

/** File system types backed by memory or a local block device, whose lookups and reads never wait on a server. */
export const localTypes: ReadonlySet<string> = new Set([
  "ext2", "ext3", "ext4", "xfs", "btrfs", "bcachefs", "zfs", "f2fs", "jfs", "nilfs2", "reiserfs", "erofs",
  "squashfs", "vfat", "msdos", "exfat", "hfsplus", "tmpfs", "ramfs", "overlay"
])

/** How long a copy of the mount table is trusted before it is read again (ms). */
const maxAge = 1_000

/** The mount table's text → the mount points (as real paths) whose type is not local. */
export const notLocal = (mountinfo: string): ReadonlyArray<string> => {
  const points: Array<string> = []
  for (const line of mountinfo.split("\n")) {
    if (line === "") continue
    // "36 35 98:0 /root /mount/point options… [optional fields…] - type source super-options"
    const fields = line.split(" ")
    const separator = fields.indexOf("-", 6)
    const point = fields[4]
    const type = separator === -1 ? undefined : fields[separator + 1]
    // A line this parser does not understand: everything is taken as not local.
    if (point === undefined || type === undefined) return ["/"]
    if (!localTypes.has(type)) points.push(point.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8))))
  }
  return points
}

/** Whether the real path `path` is at or below none of `points`. */
export const outside = (points: ReadonlyArray<string>, path: string): boolean => {
  // `path` is `point` or below it when it starts with it and goes on, if at all, with a "/": asked without
  // making `point + "/"` (a synchronous walk asks for every name it looks at, a read step for about a dozen).
  // A loop, not a closure made per call: a full GC between turns takes a per-call closure's optimized code with it (perf64steps).
  for (const point of points) {
    if (point === "/" || (path.startsWith(point) && (path.length === point.length || path.charCodeAt(point.length) === 47))) return false
  }
  return true
}

const table = "/proc/self/mountinfo"
const readable = process.platform === "linux" && existsSync(table)

/**
 * The last copy of the table and when it was read, on `performance.now()` (monotonic): on the wall
 * clock, a clock stepped back made a copy's age negative, and the copy was trusted (a share mounted
 * meanwhile taken as local, read synchronously) until the clock caught up.
 */
let known: { readonly points: ReadonlyArray<string>; readonly at: number } | undefined
let reading: Promise<void> | undefined

/** Reads the mount table again (through the threadpool); resolves once the new copy is in place. */
export const refresh = (): Promise<void> => {
  if (!readable) return Promise.resolve()
  reading ??= readFile(table, "utf8").then(
    (text) => {
      known = { points: notLocal(text), at: performance.now() }
    },
    () => {
      known = undefined
    }
  ).finally(() => {
    reading = undefined
  })
  return reading
}

/**
 * Takes `mountinfo` as the mount table until the next `refresh` (which nothing starts meanwhile): for
 * tests, to see what a path on a mount that is not local is given.
 */
export const assume = (mountinfo: string): void => {
  known = { points: notLocal(mountinfo), at: Infinity }
}

/**
 * Whether the real path `path` is on a local file system by the last copy of the mount table. Never
 * waits: a copy over a second old is read again in the background (and is trusted for another second
 * meanwhile); without a fresh enough copy the answer is `false`.
 */
export const isLocal = (path: string): boolean => {
  // An assumed table (`at` Infinity) has a negative age: never read again until `refresh`.
  const age = known === undefined ? Infinity : performance.now() - known.at
  if (age > maxAge) void refresh()
  return known !== undefined && age <= 2 * maxAge && outside(known.points, path)
}
