/**
 * The error code a database driver reports, wherever it sits in an error's causes.
 *
 * @since 0.6.0
 * @internal
 */

/** The SQLSTATE (e.g. `23505`), SQLite code (`SQLITE_FULL`) or system error code (`ECONNREFUSED`) of an error or of its causes. */
export const codeOf = (error: unknown): string | undefined => {
  for (let current = error, depth = 0; current !== undefined && current !== null && depth < 4; depth++) {
    const code = (current as { code?: unknown }).code
    if (typeof code === "string") return code
    current = (current as { cause?: unknown }).cause
  }
  return undefined
}
