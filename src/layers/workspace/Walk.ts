/**
 * A bounded walk of a folder tree — for `grep`, and for the shell tool's look for links that lead
 * out of a tree a command would walk: every folder and file is opened through `SafeFile`
 * (checked handles, no link followed by name); every symlink met is resolved and followed only when
 * it leads to a place the walk may see (inside the working directory, or inside the folder the call
 * was approved for); links that lead elsewhere are counted and reported, never followed. Folders are
 * remembered by device and inode, so links that loop or point back into the tree do not multiply the
 * walk. Entries, depth and time are bounded, and the summary says which bound cut the walk.
 *
 * @since 0.1.0
 * @internal
 */
import type { Dirent } from "node:fs"
import * as NodeFs from "node:fs/promises"
import * as NodePath from "node:path"
import * as Effect from "effect/Effect"
import * as Paths from "./Paths.js"
import * as SafeFile from "./SafeFile.js"

/** What a walk may do. */
export interface Options {
  /** The real path to walk (checked by the permission engine). */
  readonly root: string
  /** Whether a real path may be seen: the walk never opens one for which this is false. */
  readonly allowed: (real: string) => boolean
  /** Folder names not entered (below the root). */
  readonly skipFolder: (name: string) => boolean
  readonly maxEntries: number
  readonly maxDepth: number
  /** The walk stops once `now()` passes this. */
  readonly deadline: number
  readonly now: () => number
  /** Largest file read; larger files are passed over. */
  readonly maxFileBytes: number
  /**
   * Called with each regular file's content and the path the walk reached it by (links kept, so
   * that it reads like the tree the model sees). Returns false to stop the walk. Without it no file
   * is opened: the walk only looks at folders and links.
   */
  readonly onFile?: (path: string, bytes: Uint8Array) => Promise<boolean>
  /**
   * Called with each link not followed (the path the walk reached it by, and where it leads; an
   * unresolvable chain has `exact: false`). Returns false to stop the walk.
   */
  readonly onSkippedLink?: (path: string, target: Paths.RealPath) => boolean
  /**
   * Whether a file or folder below the root is left out (a permission rule fences it), given its
   * real path and the path the walk reached it by. With it, a file with other names (hard links) is
   * left out too: one of them may be fenced, and nothing says which without a search of the disk.
   */
  readonly leaveOut?: (real: string, shown: string) => boolean
}

/** What cut a walk short. */
export type Stop = "entries" | "depth" | "time"

/** How a walk went. */
export interface Summary {
  readonly entries: number
  /** Links not followed because they lead outside what the walk may see, or nowhere. */
  readonly skippedLinks: number
  /** Links and folders not looked into because their names are not UTF-8 (`onSkippedLink` hears of them too). */
  readonly unreadableNames: number
  /** Folders reached again (through a link) and not walked twice. */
  readonly repeatedFolders: number
  /** Files and folders left out by `leaveOut` (hard-linked files included). */
  readonly leftOut: number
  readonly stopped: ReadonlyArray<Stop>
}

class Stopped {
  constructor(readonly reason: Stop) {}
}

const byName = (a: Dirent, b: Dirent) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)

/** Walks `options.root`; a root that is a file is read alone. */
export const walk = (options: Options): Effect.Effect<Summary, SafeFile.FileError> =>
  Effect.tryPromise({
    try: async (signal) => {
      let entries = 0
      let skippedLinks = 0
      let unreadableNames = 0
      let repeatedFolders = 0
      let leftOut = 0
      const stopped = new Set<Stop>()
      const visited = new Set<string>()
      let done = false

      const tick = () => {
        if (signal.aborted || done) throw new Stopped("time")
        if (options.now() >= options.deadline) throw new Stopped("time")
        if (++entries > options.maxEntries) throw new Stopped("entries")
      }

      const readIn = async (folder: SafeFile.Folder, name: string, shown: string) => {
        if (options.onFile === undefined) return
        let file: Awaited<ReturnType<typeof SafeFile.openFileIn>>
        try {
          file = await SafeFile.openFileIn(folder, name, NodeFs.constants.O_RDONLY)
        } catch {
          return // a special file, unreadable, or changed under us: passed over
        }
        try {
          if (options.leaveOut !== undefined && file.info.nlink > 1) {
            leftOut++
            return
          }
          if (file.info.size > options.maxFileBytes) return
          const bytes = await SafeFile.readCapped(file.handle, options.maxFileBytes, signal).catch(() => undefined)
          if (bytes !== undefined && !(await options.onFile(shown, bytes))) done = true
        } finally {
          await file.handle.close().catch(() => undefined)
        }
      }

      /** Whether the real path (reached as `shown`) is left out; counted when it is. */
      const fenced = (real: string, shown: string) => {
        if (options.leaveOut === undefined || !options.leaveOut(real, shown)) return false
        leftOut++
        return true
      }

      /** Walks an open folder; closes it. */
      const walkFolder = async (folder: SafeFile.Folder, shown: string, depth: number): Promise<void> => {
        try {
          const key = `${folder.info.dev}:${folder.info.ino}`
          if (visited.has(key)) {
            repeatedFolders++
            return
          }
          visited.add(key)
          const listed = await SafeFile.entriesOf(folder, options.maxEntries - entries + 1, signal)
          for (const entry of listed.entries.sort(byName)) {
            tick()
            const childShown = NodePath.join(shown, entry.name)
            // A name that is not UTF-8 reads as U+FFFD: that text names nothing (or another file), so
            // what it is cannot be looked at. A link or folder so named may lead anywhere, as a link
            // that cannot be resolved; a file so named is passed over.
            if (entry.name.includes("\uFFFD") && (entry.isSymbolicLink() || entry.isDirectory())) {
              unreadableNames++
              skip(childShown, { path: NodePath.join(folder.path, entry.name), exact: false }, false)
              continue
            }
            // The folder's path is real (checked as it was opened), so a file's or folder's real path is its name there.
            if ((entry.isDirectory() || entry.isFile()) && fenced(NodePath.join(folder.path, entry.name), childShown)) continue
            if (entry.isDirectory()) {
              if (options.skipFolder(entry.name)) continue
              if (depth >= options.maxDepth) {
                stopped.add("depth")
                continue
              }
              const child = await SafeFile.openFolderIn(folder, entry.name).catch(() => undefined)
              if (child !== undefined) await walkFolder(child, childShown, depth + 1)
            } else if (entry.isFile()) {
              await readIn(folder, entry.name, childShown)
            } else if (entry.isSymbolicLink()) {
              await followLink(NodePath.join(folder.path, entry.name), childShown, depth)
            }
            // FIFOs, sockets and devices are never opened.
          }
          if (listed.more) throw new Stopped("entries")
        } finally {
          await SafeFile.closeFolder(folder)
        }
      }

      /** A link not followed (or a folder not entered, `link` false): counted and reported. */
      const skip = (shown: string, target: Paths.RealPath, link = true) => {
        if (link) skippedLinks++
        if (options.onSkippedLink !== undefined && !options.onSkippedLink(shown, target)) done = true
      }

      /** A link inside the tree: resolved, then walked only where the walk may look. */
      const followLink = async (link: string, shown: string, depth: number) => {
        const target = await Paths.realPath(link)
        if (!target.exact || !options.allowed(target.path)) return skip(shown, target)
        if (fenced(target.path, shown)) return
        // An `lstat` of the checked real path: a link there was swapped in since the check, and a
        // `stat` following it told (by the depth stop) whether where it leads now is a folder.
        const info = await NodeFs.lstat(target.path).catch(() => undefined)
        if (info === undefined || info.isSymbolicLink()) return
        if (info.isDirectory()) {
          if (depth >= options.maxDepth) {
            stopped.add("depth")
            return
          }
          const folder = await SafeFile.openFolder(target.path).catch(() => undefined)
          if (folder !== undefined) await walkFolder(folder, shown, depth + 1)
        } else if (info.isFile()) {
          const parent = await SafeFile.openFolder(NodePath.dirname(target.path)).catch(() => undefined)
          if (parent === undefined) return
          try {
            await readIn(parent, NodePath.basename(target.path), shown)
          } finally {
            await SafeFile.closeFolder(parent)
          }
        }
      }

      try {
        const info = await NodeFs.lstat(options.root).catch((error) => Promise.reject(SafeFile.toFileError(error)))
        if (info.isDirectory()) {
          await walkFolder(await SafeFile.openFolder(options.root), "", 0)
        } else if (info.isFile()) {
          const parent = await SafeFile.openFolder(NodePath.dirname(options.root))
          try {
            tick()
            await readIn(parent, NodePath.basename(options.root), "")
          } finally {
            await SafeFile.closeFolder(parent)
          }
        } else if (info.isSymbolicLink()) {
          // The root is a real path: a link here means it was swapped since the check.
          throw new SafeFile.FileError({ code: "path_changed" })
        } else {
          throw new SafeFile.FileError({ code: "not_a_regular_file" })
        }
      } catch (error) {
        if (!(error instanceof Stopped)) throw error
        if (!done) stopped.add(error.reason)
      }
      return { entries: Math.min(entries, options.maxEntries), skippedLinks, unreadableNames, repeatedFolders, leftOut, stopped: [...stopped] }
    },
    catch: SafeFile.toFileError
  })

/** Whether a real path is inside `root` (re-exported for the tools' `allowed`). */
export const isInside = (root: string, real: string) => Paths.isInside(NodePath, root, real)

/** How a listing shows a link: as a folder or a file it may look at, or as leading outside (or nowhere). */
export type LinkShown = "folder" | "file" | "outside"

/**
 * How `list_dir` shows the link at `link`: resolved, and shown as what it leads to only where
 * `allowed` (the listing's own look) says it may be seen. A folder is one `SafeFile.openFolder`
 * opens at the checked real path (no link followed, the handle's path read back): a `stat` by path
 * followed a target, or a folder above it, swapped for a link out since the check, and told whether
 * a path outside was a folder (listDirLinkSwap.test.ts).
 */
export const linkShown = async (link: string, allowed: (real: string) => boolean): Promise<LinkShown> => {
  const real = await Paths.realPath(link)
  if (!real.exact || !allowed(real.path)) return "outside"
  const folder = await SafeFile.openFolder(real.path).catch(() => undefined)
  if (folder === undefined) return "file"
  await SafeFile.closeFolder(folder)
  return "folder"
}
