/**
 * Reading a file only when it is a regular file: opened without following a link (`O_NOFOLLOW`:
 * `ELOOP`) and without blocking (`O_NONBLOCK`: a named pipe opens at once instead of holding a
 * thread of libuv's pool in `open(2)` for good), then used only when `fstat` says it is a regular
 * file (else `EINVAL`). For the files a data dir or a workspace holds that may have come with a
 * repository: the blob area's files (FileBlobStore) and the workspace's files a checkpoint keeps
 * (PreImages). The synchronous twin for the JSONL store's own small files is `jsonl/PlainFiles`.
 *
 * @since 0.6.0
 * @internal
 */
import { constants, type Stats } from "node:fs"
import { type FileHandle, open } from "node:fs/promises"

const failed = (message: string, code: string) => Object.assign(new Error(message), { code })

/** How a file is opened: `followLinks` for a file a program would read through a link (a folder's `package.json`). */
export interface Options {
  readonly followLinks?: boolean | undefined
}

/** Runs `use` on a regular file opened for reading (with its `fstat`), closing it after (a failed close loses nothing read). */
export const withRegular = async <A>(file: string, use: (handle: FileHandle, info: Stats) => Promise<A>, options: Options = {}): Promise<A> => {
  const handle = await open(file, constants.O_RDONLY | constants.O_NONBLOCK | (options.followLinks === true ? 0 : constants.O_NOFOLLOW))
  try {
    const info = await handle.stat()
    if (!info.isFile()) throw failed("not a regular file", "EINVAL")
    return await use(handle, info)
  } finally {
    await handle.close().catch(() => undefined)
  }
}

/**
 * A regular file's bytes (`ENOENT` when missing, `ELOOP` for a link, `EINVAL` for anything but a
 * regular file). With `maxBytes`, at most that many are read, and a file holding more fails `EFBIG`
 * — one byte past the cap is read, so a file that grew since its stat is refused too. What is held
 * is the file's size (its `fstat`'s, one byte more), grown as it reads more, never the cap: a cap of
 * 50 MiB held 50 MiB for every small file read (a rewind's).
 */
export const readRegular = (file: string, maxBytes?: number, options: Options = {}): Promise<Buffer> =>
  withRegular(file, async (handle, info) => {
    if (maxBytes === undefined) return handle.readFile()
    let buffer = Buffer.alloc(Math.min(info.size, maxBytes) + 1)
    let length = 0
    for (;;) {
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, length)
      length += bytesRead
      if (length > maxBytes) throw failed(`the file holds more than ${maxBytes} bytes`, "EFBIG")
      // Short of the buffer: the end (one read for a file as long as its stat says).
      if (bytesRead === 0 || length < buffer.length) return buffer.subarray(0, length)
      // Longer than its stat said (it grew, or /proc's files, whose size says 0): more room, up to the cap and a byte.
      const more = Buffer.alloc(Math.min(buffer.length * 2, maxBytes + 1))
      buffer.copy(more, 0, 0, length)
      buffer = more
    }
  }, options)
