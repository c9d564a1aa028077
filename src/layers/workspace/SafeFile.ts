/**
 * Touching a file the permission check approved, and nothing else. A path is checked by its real
 * path (`Paths.resolve`); between that check and the use, a model with a shell can swap a folder for
 * a link. So a file is never used by name after the check:
 *
 * - its folder is opened (`O_DIRECTORY | O_NOFOLLOW`) and the handle's real path, read back from
 *   `/proc/self/fd/N`, must be the folder that was checked — a swapped parent anywhere above is caught;
 * - the file is opened inside that folder handle (`/proc/self/fd/N/name`, the `openat` of Node) with
 *   `O_NOFOLLOW`, so a link put in its place is refused, not followed;
 * - the handle is `fstat`ed (a regular file, or a folder for listings) and its real path checked
 *   again; then every read and write goes through that handle.
 *
 * Missing parent folders of a write are made the same way: one `mkdir` inside a checked folder
 * handle at a time, so a link cannot redirect them either.
 *
 * Special files: every open uses `O_NONBLOCK`, and the kind of file is taken from `fstat` before a
 * byte is read. Opening a FIFO without it blocks a libuv threadpool thread forever — four such opens
 * and every other file operation of the process, the engine's own log writes included, waits behind
 * them. With `O_NONBLOCK` the open returns at once and a FIFO, device or socket is refused
 * (`not_a_regular_file`). Reads stop at a byte cap counted while reading: `/proc` files report size 0
 * and can be endless, so the size from `stat` is never trusted.
 *
 * Where `/proc/self/fd` does not exist (not Linux), the check falls back to comparing the handle's
 * device and inode with the checked path's; that leaves a narrow window a swap-and-swap-back can use.
 *
 * @since 0.1.0
 * @internal
 */
import { constants, fstatSync, lstatSync, openSync, readlinkSync, readSync } from "node:fs"
import type { Dir, Dirent, Stats } from "node:fs"
import * as NodeFs from "node:fs/promises"
import type { FileHandle } from "node:fs/promises"
import * as NodePath from "node:path"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Mounts from "./Mounts.js"
import * as Paths from "./Paths.js"

/** Why a file could not be used. */
export type FileErrorCode =
  | "not_found"
  | "path_changed"
  | "is_directory"
  | "not_a_directory"
  | "not_a_regular_file"
  | "file_too_large"
  | "permission_denied"
  | "secret_file"
  | "io_error"

/** A file that could not be used; `detail` is a system error code, never a path or a stack. */
export class FileError extends Data.TaggedError("FileError")<{ readonly code: FileErrorCode; readonly detail?: string }> {}

const O_NOFOLLOW = constants.O_NOFOLLOW ?? 0
const O_NONBLOCK = constants.O_NONBLOCK ?? 0
const O_DIRECTORY = constants.O_DIRECTORY ?? 0
const O_NOCTTY = constants.O_NOCTTY ?? 0

/** Whether handles can be looked up by number: then a handle's real path is read back from the kernel. */
const { procFd } = Paths

const codeOf = (error: unknown): string | undefined =>
  typeof error === "object" && error !== null && "code" in error ? String((error as { code: unknown }).code) : undefined

/** A system error as a `FileError`; a `FileError` stays itself. */
export const toFileError = (error: unknown): FileError => {
  if (error instanceof FileError) return error
  const code = codeOf(error)
  switch (code) {
    case "ENOENT":
      return new FileError({ code: "not_found" })
    case "ENOTDIR":
      return new FileError({ code: "not_a_directory" })
    case "EISDIR":
      return new FileError({ code: "is_directory" })
    // A link where the check saw none (O_NOFOLLOW), or a link loop.
    case "ELOOP":
      return new FileError({ code: "path_changed", detail: code })
    // Opening a FIFO for writing without a reader, or a device that is not there.
    case "ENXIO":
    case "ENODEV":
      return new FileError({ code: "not_a_regular_file", detail: code })
    case "EACCES":
    case "EPERM":
      return new FileError({ code: "permission_denied", detail: code })
    default:
      return new FileError({ code: "io_error", ...(code === undefined ? {} : { detail: code }) })
  }
}

const fail = (code: FileErrorCode): never => {
  throw new FileError({ code })
}

/** Stops the work of an interrupted call at its next step. */
const checkAborted = (signal: AbortSignal | undefined) => {
  if (signal?.aborted === true) throw new FileError({ code: "io_error", detail: "aborted" })
}

/**
 * Checks that `handle` is the file or folder at the real path `expected`. With `/proc/self/fd` the
 * kernel answers from memory (the handle's own path, never a look at the file system it is on, which
 * a stuck mount could hold): so it is asked directly, not through the threadpool.
 */
const verify = async (handle: FileHandle, expected: string): Promise<void> => {
  if (procFd) {
    if (readlinkSync(`/proc/self/fd/${handle.fd}`) !== expected) fail("path_changed")
    return
  }
  const [own, named, real] = await Promise.all([
    handle.stat(),
    NodeFs.lstat(expected).catch(() => undefined),
    NodeFs.realpath(expected).catch(() => undefined)
  ])
  if (named === undefined || real !== expected || own.dev !== named.dev || own.ino !== named.ino) fail("path_changed")
}

/** An open, checked folder: the anchor for opening what is inside it. */
export interface Folder {
  readonly handle: FileHandle
  /** Its real path, as checked. */
  readonly path: string
  readonly info: Stats
}

/** What opening an entry inside a checked folder needs of it. */
export type FolderHandle = Pick<Folder, "handle" | "path">

/** The name under which `name` inside `folder` is reached without resolving the folder's path again. */
const inside = (folder: FolderHandle, name: string) => (procFd ? `/proc/self/fd/${folder.handle.fd}/${name}` : NodePath.join(folder.path, name))

const closeQuietly = (handle: FileHandle) => handle.close().catch(() => undefined)

/** Opens the folder at the real path `expected` and checks that the handle is that folder. */
export const openFolder = async (expected: string): Promise<Folder> => {
  const handle = await openFolderHandle(expected)
  try {
    const [, info] = await Promise.all([verify(handle, expected), handle.stat()])
    if (!info.isDirectory()) fail("not_a_directory")
    return { handle, path: expected, info }
  } catch (error) {
    await closeQuietly(handle)
    throw toFileError(error)
  }
}

const openFolderHandle = (expected: string): Promise<FileHandle> =>
  NodeFs.open(expected, constants.O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK).catch(async (error) => {
    // With O_DIRECTORY, a link in the folder's place fails as "not a directory": say what it is.
    const now = codeOf(error) === "ENOTDIR" ? await NodeFs.lstat(expected).catch(() => undefined) : undefined
    throw now?.isSymbolicLink() === true ? new FileError({ code: "path_changed" }) : toFileError(error)
  })

/**
 * The folder at the real path `expected`, checked as `openFolder` does, to open the entry `name` in:
 * its `lstat` (through the handle) is asked while the handle is checked, and used only once the
 * folder has passed. Where `O_DIRECTORY` exists the open itself refused anything but a folder, so
 * no `fstat` is asked (its answer is not needed to open a file inside).
 */
const openFolderFor = async (expected: string, name: string): Promise<{ readonly folder: FolderHandle; readonly entry: PromiseSettledResult<Stats> }> => {
  const handle = await openFolderHandle(expected)
  try {
    const entry = NodeFs.lstat(procFd ? `/proc/self/fd/${handle.fd}/${name}` : NodePath.join(expected, name))
    const [verified, info, looked] = await Promise.allSettled([verify(handle, expected), O_DIRECTORY === 0 ? handle.stat() : undefined, entry])
    if (verified.status === "rejected") throw verified.reason
    if (info.status === "rejected") throw info.reason
    if (info.value !== undefined && !info.value.isDirectory()) fail("not_a_directory")
    return { folder: { handle, path: expected }, entry: looked }
  } catch (error) {
    await closeQuietly(handle)
    throw toFileError(error)
  }
}

/** Opens the folder `name` inside `folder` (never through a link). */
export const openFolderIn = async (folder: Folder, name: string): Promise<Folder> => {
  const expected = NodePath.join(folder.path, name)
  const handle = await NodeFs.open(inside(folder, name), constants.O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK).catch(async (error) => {
    const now = codeOf(error) === "ENOTDIR" ? await NodeFs.lstat(inside(folder, name)).catch(() => undefined) : undefined
    throw now?.isSymbolicLink() === true ? new FileError({ code: "path_changed" }) : toFileError(error)
  })
  try {
    await verify(handle, expected)
    return { handle, path: expected, info: await handle.stat() }
  } catch (error) {
    await closeQuietly(handle)
    throw toFileError(error)
  }
}

/** Opens the folder at `expected`, making the missing ones on the way, each inside a checked parent. */
const openFolderCreating = async (expected: string): Promise<Folder> => {
  try {
    return await openFolder(expected)
  } catch (error) {
    const parent = NodePath.dirname(expected)
    if (!(error instanceof FileError) || error.code !== "not_found" || parent === expected) throw error
    const up = await openFolderCreating(parent)
    try {
      await NodeFs.mkdir(inside(up, NodePath.basename(expected))).catch((error) => {
        if (codeOf(error) !== "EEXIST") throw toFileError(error)
      })
      return await openFolderIn(up, NodePath.basename(expected))
    } finally {
      await closeQuietly(up.handle)
    }
  }
}

/**
 * A process's environment as the kernel shows it (`/proc/<pid>/environ`, its threads' too): the
 * agent's own holds its API keys, and no mode, rule or approval makes a file tool read it.
 */
const processEnvironment = /^\/proc\/(?:\d+|self|thread-self)(?:\/task\/\d+)?\/environ$/

/**
 * Opens the regular file `name` inside `folder`. The kind is looked at before the open (so a device
 * is not even opened) and again on the handle (which is what counts).
 */
export const openFileIn = async (
  folder: FolderHandle,
  name: string,
  flags: number,
  /** The `lstat` of `name` through `folder`, when it was already asked (`openFolderFor`). */
  peeked?: PromiseSettledResult<Stats>
): Promise<{ readonly handle: FileHandle; readonly info: Stats }> => {
  if (processEnvironment.test(NodePath.join(folder.path, name))) fail("secret_file")
  const at = inside(folder, name)
  const looked = peeked === undefined ? NodeFs.lstat(at) : peeked.status === "fulfilled" ? Promise.resolve(peeked.value) : Promise.reject(peeked.reason)
  const before = await looked.catch((error) => (codeOf(error) === "ENOENT" && (flags & constants.O_CREAT) !== 0 ? undefined : Promise.reject(toFileError(error))))
  if (before !== undefined) {
    if (before.isDirectory()) fail("is_directory")
    if (before.isSymbolicLink()) fail("path_changed")
    if (!before.isFile()) fail("not_a_regular_file")
  }
  const handle = await NodeFs.open(at, flags | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0o666).catch((error) => {
    throw toFileError(error)
  })
  try {
    // Both at once; the kind is judged first, as when they ran one after the other.
    const [stat, verified] = await Promise.allSettled([handle.stat(), verify(handle, NodePath.join(folder.path, name))])
    if (stat.status === "rejected") throw stat.reason
    const info = stat.value
    if (info.isDirectory()) fail("is_directory")
    if (!info.isFile()) fail("not_a_regular_file")
    if (verified.status === "rejected") throw verified.reason
    return { handle, info }
  } catch (error) {
    await closeQuietly(handle)
    throw toFileError(error)
  }
}

/**
 * Reads a handle from its current position to the end, failing once more than `maxBytes` came.
 * `size`: the regular file's size from its `fstat`, when reading from its start. A short read that
 * brings the total to exactly that size is the end (the read that would answer 0 is skipped); any
 * other total reads on until a read answers 0, so a `/proc` file (size 0) or one that grew is read
 * whole, and the cap counted while reading still holds.
 */
export const readCapped = async (handle: FileHandle, maxBytes: number, signal?: AbortSignal, size?: number): Promise<Uint8Array> => {
  const chunks: Array<Buffer> = []
  let total = 0
  // Sized for the file when its size is known (a small file does not cost a 64 KiB buffer); a
  // file that fills it is read on with the full size.
  let buffer = Buffer.allocUnsafe(size !== undefined && size > 0 ? Math.min(64 * 1024, size + 1) : 64 * 1024)
  for (;;) {
    checkAborted(signal)
    // One byte past the cap is enough to know the file is too large.
    const asked = Math.min(buffer.length, maxBytes + 1 - total)
    const { bytesRead } = await handle.read(buffer, 0, asked, null)
    if (bytesRead === 0) break
    chunks.push(Buffer.from(buffer.subarray(0, bytesRead)))
    total += bytesRead
    if (total > maxBytes) fail("file_too_large")
    if (bytesRead < asked && size !== undefined && size > 0 && total === size) break
    if (bytesRead === buffer.length && buffer.length < 64 * 1024) buffer = Buffer.allocUnsafe(64 * 1024)
  }
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total)
}

/** Runs `use` on the regular file at the real path `expected`, opened with `flags`; closes everything after. */
const withFile = async <A>(
  expected: string,
  flags: number,
  options: { readonly createFolders?: boolean; readonly maxBytes?: number; readonly singleName?: boolean },
  use: (handle: FileHandle, info: Stats) => Promise<A>
): Promise<A> => {
  const name = NodePath.basename(expected)
  const parent = NodePath.dirname(expected)
  if (parent === expected) fail("is_directory")
  const { folder, entry } = options.createFolders === true ? { folder: await openFolderCreating(parent), entry: undefined } : await openFolderFor(parent, name)
  const { handle, info } = await openFileIn(folder, name, flags, entry).catch(async (error) => {
    await closeQuietly(folder.handle)
    throw error
  })
  // The folder handle was needed to open the file, not to use it: it closes while the file is used.
  const folderClosed = closeQuietly(folder.handle)
  const closed = () => Promise.all([closeQuietly(handle), folderClosed])
  let result: A
  try {
    // A regular file's size is a fast first answer; the cap while reading is the one that holds.
    if (options.maxBytes !== undefined && info.size > options.maxBytes) fail("file_too_large")
    // A hard link made since the check: the write would change a file that has another name.
    if (options.singleName === true && info.nlink > 1) fail("path_changed")
    result = await use(handle, info)
  } catch (error) {
    await closed()
    throw error
  }
  // A handle only read from is closed without waiting for it (a close of it cannot fail in a way
  // that changes what was read); a written one is closed before the call counts as done.
  if ((flags & (constants.O_WRONLY | constants.O_RDWR)) === 0) void closed()
  else await closed()
  return result
}

const run = <A>(f: (signal: AbortSignal) => Promise<A>): Effect.Effect<A, FileError> =>
  Effect.tryPromise({ try: f, catch: toFileError })

/** Reads the regular file at the real path `expected`, at most `maxBytes`. */
export const readFile = (expected: string, maxBytes: number): Effect.Effect<Uint8Array, FileError> => run((signal) => readFileNow(expected, maxBytes, signal))

/**
 * `readFile` as a promise (it rejects with a system error or a `FileError`: see `toFileError`). A
 * small ordinary file is read at once (`readSmallNow`); anything else through the threadpool.
 */
export const readFileNow = (expected: string, maxBytes: number, signal?: AbortSignal): Promise<Uint8Array> => {
  const small = readSmallNow(expected, maxBytes)
  return small !== undefined
    ? Promise.resolve(small)
    : withFile(expected, constants.O_RDONLY, { maxBytes }, (handle, info) => readCapped(handle, maxBytes, signal, info.size))
}

/** The largest file `readSmallNow` reads (bytes): one read of a local file, a few microseconds from the page cache. */
export const smallFileBytes = 64 * 1024

/**
 * The regular file at the real path `expected` read with synchronous system calls, when everything
 * about it is ordinary; `undefined` otherwise, and then the asynchronous read decides (and says why it
 * refuses: this never fails). A trip through the libuv threadpool costs the main thread far more than
 * the system call it carries (a `read_file` step made nine); here a small file costs six calls and no
 * trip. The same checks as the asynchronous read, made so that no call can wait on what a model can
 * put in the workspace:
 *
 * - only on Linux (`/proc/self/fd`), and only on a local file system (`Mounts`): never a network or
 *   FUSE mount, an automount point, `/proc`, `/sys` or `/dev`, where a lookup or a read may wait;
 * - the folder is reached from `/` one name at a time, each opened inside the one before with
 *   `O_NOFOLLOW`, so a folder swapped for a link since the check is never followed (a link to a FUSE
 *   mount of another mount namespace, through `/proc/<pid>/root`, could otherwise hold the lookup);
 *   the folder's real path is checked after, as the file's is;
 * - the entry's `lstat` must be a regular file before the open, the open is `O_NONBLOCK | O_NOFOLLOW
 *   | O_NOCTTY` (a FIFO put there since does not wait for a writer), and its `fstat` must be a regular
 *   file of at most `smallFileBytes` (and `maxBytes`) before a byte is read: a FIFO, device, socket,
 *   link, empty or larger file goes the asynchronous way;
 * - the read stops one byte past the size `fstat` gave: a file that grew since is read again the
 *   asynchronous way, with the cap counted while reading.
 *
 * A synchronous call cannot be interrupted: a cancel or the tool's time limit waits for it. On a
 * local file system six calls and a read of at most 64 KiB are bounded by the disk (the page cache
 * answers in microseconds); the time limit is for the asynchronous read, which can be long.
 */
export const readSmallNow = (expected: string, maxBytes: number): Uint8Array | undefined => {
  const names = smallReadNames(expected)
  if (names === undefined) return undefined
  const folder = Paths.openRealFolderNow(names.folder)
  if (folder === undefined) return undefined
  try {
    return readSmallAt(folder, names.name, expected, Math.min(maxBytes, smallFileBytes), false)
  } finally {
    Paths.closeQuietlyNow(folder)
  }
}

/**
 * `readSmallNow` in the folder a synchronous walk has just reached and held open
 * (`Paths.resolveSyncHolding`), instead of opening it from `/` again: that walk opened each folder
 * from `/` with `O_NOFOLLOW` on local file systems, as `openRealFolderNow` does, and its `lstat` of
 * the entry stands for the one `readSmallNow` makes. The folder is still checked to be the file's
 * (its real path read back from the kernel), and the file as in `readSmallNow`. The caller closes the folder.
 */
export const readSmallIn = (held: Paths.HeldFolder, expected: string, maxBytes: number): Uint8Array | undefined => {
  const names = smallReadNames(expected)
  if (names === undefined || !held.regularFile) return undefined
  try {
    if (readlinkSync(`/proc/self/fd/${held.fd}`) !== names.folder) return undefined
  } catch {
    return undefined
  }
  return readSmallAt(held.fd, names.name, expected, Math.min(maxBytes, smallFileBytes), true)
}

/** The folder and name of a file `readSmallNow` may read; `undefined` when it is left to the asynchronous read. */
const smallReadNames = (expected: string): { readonly folder: string; readonly name: string } | undefined => {
  // The file itself may be a mount point (a file bind-mounted from a FUSE file system): checked as its folder is.
  if (!procFd || !expected.startsWith("/") || processEnvironment.test(expected) || !Mounts.isLocal(expected)) return undefined
  const names = expected.split("/").filter((n) => n !== "")
  const name = names.pop()
  if (name === undefined || name === "..") return undefined
  return { folder: NodePath.resolve(`/${names.join("/")}`), name }
}

/** The small regular file `name` in the open folder `folder`, read as `readSmallNow` says (`looked`: its `lstat` was a regular file just now). */
const readSmallAt = (folder: number, name: string, expected: string, limit: number, looked: boolean): Uint8Array | undefined => {
  let file: number | undefined
  try {
    const at = `/proc/self/fd/${folder}/${name}`
    if (!looked && !lstatSync(at).isFile()) return undefined
    file = openSync(at, constants.O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY)
    const info = fstatSync(file)
    if (!info.isFile() || info.size === 0 || info.size > limit) return undefined
    if (readlinkSync(`/proc/self/fd/${file}`) !== expected) return undefined
    // One byte past the size, on purpose (the "grew while read" guard): a file that grew since its
    // `fstat` is left to the asynchronous read. A regular file's read returns every byte asked for
    // that it has, so the first read of size + 1 returns size + 1 when the file grew — and stops at
    // the size when it did not, the byte past it never filled (reading exactly the size could not tell).
    const buffer = Buffer.allocUnsafe(info.size + 1)
    let total = 0
    for (;;) {
      const read = readSync(file, buffer, total, buffer.length - total, null)
      if (read === 0) break
      total += read
      if (total > info.size) return undefined
      // A short read to exactly the size is the end (as in `readCapped`).
      if (total === info.size) break
    }
    return buffer.subarray(0, total)
  } catch {
    return undefined
  } finally {
    if (file !== undefined) Paths.closeQuietlyNow(file)
  }
}

/**
 * Reads at most `maxBytes` from the start of the regular file at the real path `expected`; a longer
 * file is cut there (`truncated`), not refused. For text shown in part (project instructions).
 */
export const readHead = (expected: string, maxBytes: number): Effect.Effect<{ readonly bytes: Uint8Array; readonly truncated: boolean }, FileError> =>
  run((signal) =>
    withFile(expected, constants.O_RDONLY, {}, async (handle) => {
      // One byte past the cap tells that the file goes on; the size from `stat` is not trusted.
      const buffer = Buffer.alloc(maxBytes + 1)
      let read = 0
      while (read < buffer.length) {
        checkAborted(signal)
        const { bytesRead } = await handle.read(buffer, read, buffer.length - read, null)
        if (bytesRead === 0) break
        read += bytesRead
      }
      return { bytes: buffer.subarray(0, Math.min(read, maxBytes)), truncated: read > maxBytes }
    })
  )

const overwrite = async (handle: FileHandle, data: Uint8Array, signal: AbortSignal) => {
  checkAborted(signal)
  await handle.truncate(0)
  let written = 0
  while (written < data.length) {
    const { bytesWritten } = await handle.write(data, written, data.length - written, written)
    written += bytesWritten
  }
}

/**
 * Writes `data` as the whole content of the file at the real path `expected`, making missing
 * folders. `singleName`: refuse (`path_changed`) a file that has other names (hard links). `mode`:
 * then set through the same handle (never by name, which a link could have taken since).
 */
export const writeFile = (expected: string, data: Uint8Array, options: { readonly singleName?: boolean; readonly mode?: number } = {}): Effect.Effect<void, FileError> =>
  run((signal) =>
    withFile(expected, constants.O_WRONLY | constants.O_CREAT, { createFolders: true, ...options }, async (handle) => {
      await overwrite(handle, data, signal)
      if (options.mode !== undefined) await handle.chmod(options.mode)
    })
  )

/**
 * Removes the file or link (`unlink`) or the empty folder (`rmdir`) at the real path `expected`, by
 * its name inside its folder opened and checked as a write's is: a folder on the way swapped for a
 * link since it was checked is never followed (`path_changed`), so nothing outside is removed.
 */
export const removeNow = async (expected: string, kind: "file" | "folder"): Promise<void> => {
  const folder = await openFolder(NodePath.dirname(expected))
  try {
    const at = inside(folder, NodePath.basename(expected))
    await (kind === "file" ? NodeFs.unlink(at) : NodeFs.rmdir(at))
  } finally {
    await closeQuietly(folder.handle)
  }
}

/**
 * Reads the file at the real path `expected` and, when `change` returns new content, writes it back
 * through the same handle. `singleName` as for `writeFile`.
 */
export const updateFile = <E>(
  expected: string,
  maxBytes: number,
  change: (bytes: Uint8Array) => Either.Either<Uint8Array, E>,
  options: { readonly singleName?: boolean } = {}
): Effect.Effect<void, FileError | E> =>
  run((signal) =>
    withFile(expected, constants.O_RDWR, { maxBytes, ...options }, async (handle, info) => {
      const changed = change(await readCapped(handle, maxBytes, signal, info.size))
      if (Either.isRight(changed)) await overwrite(handle, changed.right, signal)
      return changed
    })
  ).pipe(Effect.flatMap((changed) => Either.isLeft(changed) ? Effect.fail(changed.left) : Effect.void))

/** Reads up to `max` entries of an open folder (one more tells that there were more). */
export const entriesOf = async (folder: Folder, max: number, signal?: AbortSignal): Promise<{ readonly entries: Array<Dirent>; readonly more: boolean }> => {
  const dir: Dir = await NodeFs.opendir(procFd ? `/proc/self/fd/${folder.handle.fd}` : folder.path, { bufferSize: 64 })
  const entries: Array<Dirent> = []
  try {
    for (;;) {
      checkAborted(signal)
      const entry = await dir.read()
      if (entry === null) return { entries, more: false }
      if (entries.length >= max) return { entries, more: true }
      entries.push(entry)
    }
  } finally {
    await dir.close().catch(() => undefined)
  }
}

/** Runs `use` on the folder at the real path `expected`; closes it after. */
export const withFolder = <A>(expected: string, use: (folder: Folder, signal: AbortSignal) => Promise<A>): Effect.Effect<A, FileError> =>
  run(async (signal) => {
    const folder = await openFolder(expected)
    try {
      return await use(folder, signal)
    } finally {
      await closeQuietly(folder.handle)
    }
  })

/** Closes a folder handle, ignoring errors. */
export const closeFolder = (folder: Folder): Promise<void> => closeQuietly(folder.handle).then(() => undefined)
