/**
 * The submodules git reaches from a worktree, as git finds them: the gitlink entries of its index
 * (mode 160000), wherever they are in the tree and whether `.gitmodules` names them or not. `git
 * status` and `git diff` look into each populated one (a `git status` run in it), whose `.git` file
 * may name a git folder anywhere — not only under `.git/modules` — and whose config's
 * `core.fsmonitor` then runs (checked with git 2.39, a submodule four folders down with its git
 * folder beside it and no `.gitmodules`). The sandbox's bounded search does not reach that deep.
 *
 * Read bounded and without blocking: an index is opened as git's small files are (a FIFO or device
 * reads as nothing), at most {@link indexLimit} bytes, and an index larger than that is said to be
 * unread. Versions 2 to 4 (4's prefix-compressed names) with SHA-1 or SHA-256 names; a sparse
 * index's folder entries are no gitlinks; a split index's shared part is read too. The index is
 * the repository's to shape: a version 4 name is rebuilt in place (a copy of the previous name per
 * entry was quadratic — a crafted 20 MB index held the event loop a minute), and past
 * {@link maxGitlinks} gitlinks the index is said to be unread rather than each followed.
 *
 * @since 0.1.0
 * @internal
 */
import { constants } from "node:fs"
import * as NodeFs from "node:fs/promises"
import * as NodePath from "node:path"
import * as Paths from "./Paths.js"

/** Most of an index read: past it, the index is said to be unread (a repository of some 500,000 files). */
export const indexLimit = 64 * 1024 * 1024

/** Most gitlinks followed from one index: past it, the index is said to be unread (the line asks). */
export const maxGitlinks = 1024

/**
 * What an index holds of submodules: their paths (relative to the worktree's root), or that it was too large to read.
 * `unnamed`: the paths that are not UTF-8, escaped (`Paths.escapedName`): read as text they named another folder
 * (`\xff` read as U+FFFD) or none, so the submodule there cannot be checked; the caller says so.
 */
export interface Gitlinks {
  readonly paths: ReadonlyArray<string>
  readonly unread: boolean
  readonly unnamed?: ReadonlyArray<string> | undefined
}

const none: Gitlinks = { paths: [], unread: false }

/** Parsed indexes by file, kept while the file is unchanged (size, mtime, inode): each git line would read it again. */
const cache = new Map<string, { readonly key: string; readonly links: Gitlinks & { readonly shared?: string | undefined } }>()

/**
 * The gitlinks of the index file `file` (see the module's comment); `hashBytes` is 32 in a SHA-256
 * repository. A split index's shared part (`sharedindex.<hash>` beside it, named by its `link`
 * extension) holds most of its entries, a submodule's too (`git update-index --split-index`): read
 * as well, every entry it holds counted (the split's deletions ignored: more to read, never less).
 */
export const gitlinksOf = async (file: string, hashBytes = 20): Promise<Gitlinks> => {
  const own = await indexOf(file, hashBytes)
  if (own.shared === undefined) return own
  const shared = await indexOf(NodePath.join(NodePath.dirname(file), `sharedindex.${own.shared}`), hashBytes)
  return bounded([...new Set([...own.paths, ...shared.paths])], own.unread || shared.unread, [...new Set([...own.unnamed ?? [], ...shared.unnamed ?? []])])
}

/** One index file's gitlinks, and the shared index its `link` extension names. */
const indexOf = async (file: string, hashBytes: number): Promise<Gitlinks & { readonly shared?: string | undefined }> => {
  const handle = await NodeFs.open(file, constants.O_RDONLY | constants.O_NONBLOCK).catch(() => undefined)
  if (handle === undefined) return none
  try {
    const info = await handle.stat()
    if (!info.isFile()) return none
    if (info.size > indexLimit) return { ...none, unread: true }
    const key = `${info.size}:${info.mtimeMs}:${info.ino}:${hashBytes}`
    const cached = cache.get(file)
    if (cached?.key === key) return cached.links
    const buffer = Buffer.alloc(info.size)
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0)
    const parsed = parse(buffer.subarray(0, bytesRead), hashBytes)
    const links = { ...bounded(parsed.paths, false, parsed.unnamed), ...(parsed.shared === undefined ? {} : { shared: parsed.shared }) }
    if (cache.size > 64) cache.clear()
    cache.set(file, { key, links })
    return links
  } catch {
    return none
  } finally {
    await handle.close()
  }
}

/** At most {@link maxGitlinks} paths; more make the index unread. */
const bounded = (paths: ReadonlyArray<string>, unread: boolean, unnamed: ReadonlyArray<string>): Gitlinks =>
  paths.length + unnamed.length > maxGitlinks
    ? { paths: paths.slice(0, maxGitlinks), unread: true, ...(unnamed.length === 0 ? {} : { unnamed: unnamed.slice(0, maxGitlinks) }) }
    : { paths, unread, ...(unnamed.length === 0 ? {} : { unnamed }) }

/**
 * The gitlink paths of an index's bytes (at most one more than {@link maxGitlinks}), and the hash (hex) of the shared index its `link` extension
 * names; what cannot be read (another format, a cut file) ends the reading there.
 */
const parse = (index: Buffer, hashBytes: number): { readonly paths: ReadonlyArray<string>; readonly unnamed: ReadonlyArray<string>; readonly shared?: string | undefined } => {
  if (index.length < 12 || index.toString("latin1", 0, 4) !== "DIRC") return { paths: [], unnamed: [] }
  const version = index.readUInt32BE(4)
  if (version < 2 || version > 4) return { paths: [], unnamed: [] }
  const read = entries(index, version, hashBytes)
  return { paths: read.paths, unnamed: read.unnamed, shared: read.end === undefined ? undefined : sharedIndex(index, read.end, hashBytes) }
}

/** The hash of the shared index named by a `link` extension among those from `at` to the index's own hash. */
const sharedIndex = (index: Buffer, at: number, hashBytes: number): string | undefined => {
  for (let ext = at; ext + 8 <= index.length - hashBytes;) {
    const size = index.readUInt32BE(ext + 4)
    if (index.toString("latin1", ext, ext + 4) === "link" && size >= hashBytes && ext + 8 + hashBytes <= index.length) {
      const hash = index.toString("hex", ext + 8, ext + 8 + hashBytes)
      // An all-zero hash names no shared index.
      return /^0+$/.test(hash) ? undefined : hash
    }
    ext += 8 + size
  }
  return undefined
}

/** The gitlinks among an index's entries, and where the entries end (none when the reading stopped short). */
const entries = (index: Buffer, version: number, hashBytes: number): { readonly paths: ReadonlyArray<string>; readonly unnamed: ReadonlyArray<string>; readonly end?: number } => {
  const count = index.readUInt32BE(8)
  const paths: Array<string> = []
  const unnamed: Array<string> = []
  // A name as bytes: git's are, and one that is not UTF-8 read as text names another folder.
  const gitlink = (bytes: Buffer) => {
    const text = Paths.nameOf(bytes)
    if (text === undefined) unnamed.push(Paths.escapedName(bytes))
    else paths.push(text)
  }
  let at = 12
  // Version 4's current name, rebuilt in place: each entry keeps a prefix of the one before.
  let name = Buffer.alloc(256)
  let nameLength = 0
  for (let n = 0; n < count; n++) {
    // Past the bound the rest is not read (nor the shared index's name, after the entries): unread all the same.
    if (paths.length + unnamed.length > maxGitlinks) return { paths, unnamed }
    const start = at
    const flagsAt = start + 40 + hashBytes
    if (flagsAt + 2 > index.length) return { paths, unnamed }
    const mode = index.readUInt32BE(start + 24)
    const flags = index.readUInt16BE(flagsAt)
    at = flagsAt + 2 + (version >= 3 && (flags & 0x4000) !== 0 ? 2 : 0)
    const isGitlink = (mode & 0o170000) === 0o160000
    if (version === 4) {
      // A varint (git's offset encoding) of how many bytes of the previous name to drop, then the rest, NUL-ended.
      let strip = 0
      for (let byte = 0x80, first = true; (byte & 0x80) !== 0; first = false) {
        if (at >= index.length || strip > nameLength) return { paths, unnamed }
        byte = index[at++]!
        strip = first ? byte & 0x7f : (strip + 1) * 128 + (byte & 0x7f)
      }
      const end = index.indexOf(0, at)
      if (end < 0 || strip > nameLength) return { paths, unnamed }
      const kept = nameLength - strip
      nameLength = kept + (end - at)
      if (nameLength > name.length) {
        const grown = Buffer.alloc(Math.max(nameLength, name.length * 2))
        name.copy(grown, 0, 0, kept)
        name = grown
      }
      index.copy(name, kept, at, end)
      at = end + 1
      if (isGitlink) gitlink(name.subarray(0, nameLength))
    } else {
      const end = index.indexOf(0, at)
      if (end < 0) return { paths, unnamed }
      if (isGitlink) gitlink(index.subarray(at, end))
      // Padded with 1 to 8 NULs to a multiple of 8 bytes from the entry's start.
      at = start + Math.ceil((end + 1 - start) / 8) * 8
    }
  }
  return { paths, unnamed, end: at }
}
