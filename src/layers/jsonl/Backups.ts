/**
 * Keeping a log's original beside it before it is rewritten (`repair`'s `.bak`, an upgrade's
 * `.v<version>`): a second name for the same file (`link`), never a copy through a name.
 *
 * A data dir can come with a repository, with links planted under the names a rewrite uses: an
 * upgrade's `copyFile` + `chmod` of the backup name overwrote the file a link there named (and made
 * it owner-only). `link` creates the name or fails `EEXIST`, whatever is there, and follows nothing;
 * the original keeps its inode (and every byte) under the new name, at no cost for a long log.
 *
 * @since 0.1.0
 * @internal
 */
import { linkSync } from "node:fs"

/**
 * Links `file` as `base`, or `base.1`, `base.2`, … when taken (by anything, a link or a dangling
 * link too); returns the name used. Throws what `link` throws otherwise.
 */
export const keepBeside = (file: string, base: string): string => {
  for (let n = 0; n < maxNames; n++) {
    const name = n === 0 ? base : `${base}.${n}`
    try {
      linkSync(file, name)
      return name
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error
      // Taken (by a backup of an earlier rewrite, or anything planted): the next name.
    }
  }
  throw Object.assign(new Error(`${base} and ${maxNames - 1} names after it are taken`), { code: "EEXIST" })
}

/** Names tried before giving up: backups pile up only by hand. */
const maxNames = 1000
