/**
 * Creating a store's folders, with the real reason when it fails: Node's recursive `mkdir` reports
 * `ENOENT` when a folder cannot be made on a read-only file system (it then tries the parents), which
 * would read as "a file is missing" instead of "the disk is read-only".
 *
 * @since 0.4.0
 * @internal
 */
import { existsSync, mkdirSync } from "node:fs"
import { dirname, resolve } from "node:path"

const codeOf = (error: unknown) => (error as NodeJS.ErrnoException | undefined)?.code

/** `mkdir -p path` with `mode` for what it creates; throws the error that stopped it (`EROFS`, `EACCES`, …). */
export const makeSync = (path: string, mode: number): void => {
  try {
    mkdirSync(path, { recursive: true, mode })
  } catch (error) {
    if (codeOf(error) !== "ENOENT") throw error
    // The first missing folder under the deepest one that exists: made alone, it fails with the real reason.
    let missing = resolve(path)
    while (dirname(missing) !== missing && !existsSync(dirname(missing))) missing = dirname(missing)
    try {
      mkdirSync(missing, { mode })
    } catch (why) {
      throw codeOf(why) === "EEXIST" ? error : why
    }
    // Made meanwhile (another process, or the first attempt's cause went away): once more, as asked.
    mkdirSync(path, { recursive: true, mode })
  }
}

/**
 * Whether a file system error code means there is no room to write: a full disk, a quota, or a file
 * at its size limit (`EFBIG`: `ulimit -f`, a file system's largest file) — each a full disk to the writer.
 */
export const noRoom = (code: unknown): boolean => code === "ENOSPC" || code === "EDQUOT" || code === "EFBIG"

/** Plain words for a file system error code that stops a store from writing, or undefined. */
export const plainWords = (code: string | undefined): string | undefined => {
  switch (code) {
    case "EROFS":
      return "the file system is read-only"
    case "EACCES":
    case "EPERM":
      return "permission denied: the data dir is not writable by this user"
    case "ENOSPC":
    case "EDQUOT":
      return "the disk is full"
    case "EFBIG":
      return "the file has reached its size limit"
    default:
      return undefined
  }
}
