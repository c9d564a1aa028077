/**
 * Whether a SQLite I/O error is a file at its size limit. SQLite reports a write that fails `EFBIG`
 * (`ulimit -f`) as `SQLITE_IOERR_WRITE`, as any failed write but `ENOSPC`, and the driver does not
 * give the `errno`: the JSONL store, which sees `EFBIG`, says `disk_full` for the same limit. So a
 * failed write of a process whose files have a size limit (`/proc/self/limits`, Linux) is taken as
 * that limit. The database's own files are not enough to tell: the file at the limit can be one of
 * SQLite's temporary files (an `INSERT … SELECT` of a large event goes through one), unlinked and
 * unseen. A failing disk under a file-size limit is then reported `disk_full` too; without a limit
 * (most processes) nothing changes.
 *
 * @since 0.1.0
 * @internal
 */
import { readFileSync } from "node:fs"

/** The soft file-size limit of this process in bytes, or undefined when there is none (or it cannot be read). */
const softFileSizeLimit = (): number | undefined => {
  try {
    const line = readFileSync("/proc/self/limits", "utf8").split("\n").find((l) => l.startsWith("Max file size"))
    const soft = Number(line?.slice("Max file size".length).trim().split(/\s+/)[0])
    return Number.isFinite(soft) ? soft : undefined
  } catch {
    return undefined
  }
}

/** Whether a SQLite error code is a write refused by the process's file-size limit (see above). */
export const isFileSizeLimit = (code: string | undefined): boolean => code === "SQLITE_IOERR_WRITE" && softFileSizeLimit() !== undefined
