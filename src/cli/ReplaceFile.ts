/**
 * Replacing a file of the user's whole (a cache, a session's MCP servers): written to a temporary
 * file of a random name, created `O_CREAT|O_EXCL|O_NOFOLLOW` with mode `0600`, then renamed over it.
 * A name made of the pid (`<file>.<pid>.tmp`) can be planted as a link in advance, and a `"w"` open
 * writes through it. Node's own modules only: the code cache uses it before the program is loaded.
 *
 * @since 0.1.0
 * @internal
 */
import { randomBytes } from "node:crypto"
import { closeSync, constants, openSync, renameSync, rmSync, writeSync } from "node:fs"

/** Replaces `file` with `data`; on failure the temporary file is removed and the error thrown. */
export const replaceFile = (file: string, data: string | Uint8Array): void => {
  const temporary = `${file}.${randomBytes(8).toString("hex")}.tmp`
  try {
    const fd = openSync(temporary, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600)
    try {
      const bytes = typeof data === "string" ? Buffer.from(data, "utf8") : data
      for (let at = 0; at < bytes.byteLength;) at += writeSync(fd, bytes, at)
    } finally {
      closeSync(fd)
    }
    renameSync(temporary, file)
  } catch (error) {
    rmSync(temporary, { force: true })
    throw error
  }
}
