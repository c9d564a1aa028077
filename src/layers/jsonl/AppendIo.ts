/**
 * The few file operations the JSONL store appends with, on a file descriptor it keeps open. They
 * are `node:fs`'s synchronous calls (an append is one `write(2)` to the page cache: cheaper than any
 * hand-off to a thread) except `sync`, the `fsync(2)` of the `fsync` option, which runs off the
 * event loop while the next lines queue up. A reference with the real file system as its default,
 * so a test can put a failing disk under the store.
 *
 * @since 0.1.0
 * @internal
 */
import { closeSync, constants, fchmodSync, fstatSync, fsync, ftruncateSync, statSync, writeSync } from "node:fs"
import * as Context from "effect/Context"
import { readAt } from "./LogSeek.js"
import * as PlainFiles from "./PlainFiles.js"

/** The append operations; each throws (or calls back with) a `node:fs` error. */
export interface Io {
  /**
   * Opens (creating, owner only) a file for appending; a link in its place fails (`ELOOP`), not
   * followed; a named pipe `ENXIO` (not waited on), anything else but a regular file `EINVAL`.
   */
  readonly open: (path: string) => number
  /** Makes a file owner-only whatever the umask. */
  readonly chmod: (fd: number) => void
  /** Writes text (as UTF-8) or bytes at the end of the file; returns how many bytes were written (fewer on a full disk). */
  readonly write: (fd: number, data: string | Uint8Array) => number
  /** Cuts the file back to `size` bytes. */
  readonly truncate: (fd: number, size: number) => void
  /** Flushes the file to disk, off the event loop. */
  readonly sync: (fd: number, done: (error: NodeJS.ErrnoException | null) => void) => void
  readonly close: (fd: number) => void
  /** The file's size in bytes, -1 when it does not exist. */
  readonly size: (path: string) => number
  /** Reads `length` bytes at `offset` (fewer at the end of the file): how a log's end is found before appending. */
  readonly readAt: (fd: number, offset: number, length: number) => Buffer
  /**
   * Whether the open file is still the one `path` names, and its size: a writer holding the lock
   * checks this once per batch (a log replaced by a rename or cut short by someone else meanwhile).
   * `size` -1: the open file no longer has a name or the name names another file.
   */
  readonly identity: (fd: number, path: string, ino: number, dev: number) => number
}

/** The real file system. */
export const node: Io = {
  // Never through a link, never waiting on a pipe (a data dir can come with a repository), only a regular file (`EINVAL`).
  open: (path) => PlainFiles.openRegular(path, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT, 0o600),
  chmod: (fd) => fchmodSync(fd, 0o600),
  write: (fd, data) => (typeof data === "string" ? writeSync(fd, data) : writeSync(fd, data)),
  truncate: (fd, size) => ftruncateSync(fd, size),
  sync: (fd, done) => fsync(fd, done),
  close: (fd) => closeSync(fd),
  size: (path) => {
    const stats = statSync(path, { throwIfNoEntry: false })
    return stats === undefined ? -1 : stats.size
  },
  readAt,
  identity: (fd, path, ino, dev) => {
    const open = fstatSync(fd)
    if (open.nlink === 0 || open.ino !== ino || open.dev !== dev) return -1
    const named = statSync(path, { throwIfNoEntry: false })
    return named === undefined || named.ino !== ino || named.dev !== dev ? -1 : open.size
  }
}

/** The operations the JSONL stores built in its scope append with (default: {@link node}). */
export class AppendIo extends Context.Reference<AppendIo>()("effect-agent/jsonl/AppendIo", { defaultValue: (): Io => node }) {}
