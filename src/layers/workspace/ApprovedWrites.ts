/**
 * The file tools' writes that a command's put-back must leave alone. After each command the sandbox
 * puts back `package.json`'s git hook runners' keys and sets aside the hook managers' configs the
 * command made (`HookConfigsKept`); a sibling subagent's `write_file`/`edit_file` the user allowed
 * while the command ran (a `lint-staged` key changed, a `.lintstagedrc` made) is not the command's,
 * and was reverted with it. So the file tools note each write they make of such a file (under the
 * file's lock) on every command running in a workspace holding it, and the put-back takes the
 * file's lock too: it reads and writes while no file tool does, and takes what they wrote as what
 * was there before.
 *
 * One registry per set of workspace tools: the sessions and subagents of an engine share them, their
 * file locks with them. A command's watch holds the writes made in its cwd from before it looked at
 * the files to the end of its put-back.
 *
 * @since 0.1.0
 * @internal
 */
import * as NodePath from "node:path"
import * as PackageHooks from "./PackageHooks.js"
import * as Paths from "./Paths.js"
import * as RunsLater from "./RunsLater.js"

/**
 * One write of a file tool: the real path written, the text it wrote, and the text there before when
 * the write depended on it (an edit; a `package.json`'s, whose hook keys it may or may not change);
 * `undefined`: none there, or a whole content written over whatever was.
 */
export interface Write {
  readonly file: string
  readonly before: string | undefined
  readonly after: string
}

/** Runs `use` while no file tool writes `file` (a real path): the file tools' lock. */
export type Exclusive = <A>(file: string, use: () => Promise<A>) => Promise<A>

/** What a command's put-back is given: the writes noted while it ran, in order, and the file tools' lock. */
export interface Watch {
  readonly writes: ReadonlyArray<Write>
  readonly exclusive: Exclusive
}

/** The registry the file tools and the sandbox share. */
export interface Registry {
  /** A command starts in `cwd` (a real path): the writes inside it are noted on the watch until `done` runs. */
  readonly watch: (cwd: string) => { readonly watch: Watch; readonly done: () => void }
  /** A file tool wrote, holding the file's lock. */
  readonly wrote: (write: Write) => void
}

/** No file tools: nothing noted, no lock (a put-back called on its own). */
export const none: Watch = { writes: [], exclusive: (_file, use) => use() }

/** Whether a write may be one a put-back looks at: a `package.json`, or one in a hook manager's config or folder (by name: `RunsLater`). */
const looked = (file: string) => PackageHooks.isPackageJson(file) || RunsLater.inProtectedFolder(file)

/** A registry whose put-backs take the file tools' lock `exclusive`. */
export const make = (exclusive: Exclusive): Registry => {
  const watches = new Set<{ readonly cwd: string; readonly writes: Array<Write> }>()
  return {
    watch: (cwd) => {
      const entry = { cwd, writes: [] as Array<Write> }
      watches.add(entry)
      return { watch: { writes: entry.writes, exclusive }, done: () => void watches.delete(entry) }
    },
    wrote: (write) => {
      if (watches.size === 0 || !looked(write.file)) return
      for (const entry of watches) if (Paths.isInside(NodePath, entry.cwd, write.file)) entry.writes.push(write)
    }
  }
}
