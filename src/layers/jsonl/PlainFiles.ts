/**
 * The data dir's own small files (the listing index, its journal, its rotation), read and written
 * only as regular files, never through a link.
 *
 * The CLI's default data dir is `.effect-agent/` in the current directory, so a cloned repository
 * can ship one: a link planted as `index.journal` would have each run append to the file it names
 * (outside the workspace), and a named pipe there would block the process in `open(2)` — the whole
 * process, signals included. So each file is opened with `O_NOFOLLOW` (a link fails `ELOOP`) and
 * `O_NONBLOCK` (a pipe opens at once, or fails `ENXIO` for a write), and used only when `fstat`
 * says it is a regular file; anything else fails `EINVAL`, which the callers treat as a file that
 * cannot be used (a cache: rebuilt, or left alone).
 *
 * @since 0.1.0
 * @internal
 */
import { randomBytes } from "node:crypto"
import { closeSync, constants, fstatSync, ftruncateSync, openSync, readFileSync, renameSync, rmSync, writeSync } from "node:fs"

const notRegular = () => Object.assign(new Error("not a regular file"), { code: "EINVAL" })

/**
 * Opens `file` with `flags`, without following a link or blocking on a pipe; only a regular file is
 * kept open (anything else fails `EINVAL`, closed). The caller closes the descriptor.
 */
export const openRegular = (file: string, flags: number, mode?: number): number => {
  const fd = openSync(file, flags | constants.O_NOFOLLOW | constants.O_NONBLOCK, mode)
  try {
    if (!fstatSync(fd).isFile()) throw notRegular()
    return fd
  } catch (error) {
    closeSync(fd)
    throw error
  }
}

/** Runs `use` on a regular file's descriptor, closing it after. */
export const withRegular = <A>(file: string, flags: number, use: (fd: number) => A, mode?: number): A => {
  const fd = openRegular(file, flags, mode)
  try {
    return use(fd)
  } finally {
    closeSync(fd)
  }
}

/**
 * A regular file's text (`ENOENT` when missing, `ELOOP` for a link, `EINVAL` for anything but a regular file).
 * Its bytes are read in one read of the size `fstat` gives, then decoded as UTF-8: a UTF-8 read
 * (`readFileSync(fd, "utf8")`, Node 20's `readFileUtf8`) reads 8 KiB at a time into a growing
 * buffer — 450 reads for the 3.7 MB index of 10,000 sessions, and twice the CPU of one read and a
 * decode (docs/benchmarks.md, "perf61start"). Bytes a writer adds after the `fstat` are not read; the
 * callers' files are not appended to (the index is replaced by a rename, the rotation rewritten whole),
 * and their readers take a file caught mid-write as one that cannot be used, as before.
 */
export const readText = (file: string): string => withRegular(file, constants.O_RDONLY, (fd) => readFileSync(fd).toString("utf8"))

/** Appends `text` to a regular file (made `0600` when missing) in one `write(2)`. */
export const appendText = (file: string, text: string): void => {
  withRegular(file, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT, (fd) => writeSync(fd, text), 0o600)
}

/**
 * Creates `file` (`0600` at creation) holding `text`: `O_EXCL` refuses any name that exists — a link
 * a repository planted included — so nothing is ever written through one, and no `chmod` by name
 * follows (it would follow a link too).
 */
export const writeNew = (file: string, data: string | Uint8Array): void => {
  const fd = openSync(file, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600)
  try {
    const bytes = typeof data === "string" ? Buffer.from(data, "utf8") : data
    for (let at = 0; at < bytes.byteLength;) at += writeSync(fd, bytes, at)
  } finally {
    closeSync(fd)
  }
}

/** A temporary file's name beside `file`, random: no one can plant a link under it in advance. */
export const temporaryBeside = (file: string): string => `${file}.${randomBytes(8).toString("hex")}.tmp`

/**
 * Replaces `file` whole with `data` (`0600`): written to a temporary file of a random name created by
 * {@link writeNew}, then renamed over it, so a reader sees the old file or the new one. A name made of
 * the pid (`<file>.<pid>.tmp`) can be planted as a link in advance, and a `"w"` open writes through it.
 * On failure the temporary file is removed and the error thrown.
 */
export const replace = (file: string, data: string | Uint8Array): void => {
  const temporary = temporaryBeside(file)
  try {
    writeNew(temporary, data)
    renameSync(temporary, file)
  } catch (error) {
    rmSync(temporary, { force: true })
    throw error
  }
}

/** Replaces a regular file's content with `text` (made `0600` when missing). */
export const writeText = (file: string, text: string): void => {
  withRegular(file, constants.O_WRONLY | constants.O_CREAT, (fd) => {
    ftruncateSync(fd, 0)
    writeSync(fd, text, 0)
  }, 0o600)
}
