/**
 * What git hook managers read at the user's next commit that a command may make or change though
 * the sandbox cannot keep it read-only: a hook manager's config made where there was none
 * (`.pre-commit-config.yaml`, lefthook's, overcommit's, lint-staged's: `RunsLater.hookManagerFiles`;
 * an existing one is bound read-only, and a file cannot be bound before it exists), and the keys of
 * `package.json` that hook runners read (`PackageHooks`; the file itself is the project's to change:
 * `npm install` writes it). Looked at before each command and after it, once its namespace is gone:
 * a config it made is set aside beside it, never deleted (it may be what the user asked for, to be
 * written again with the file tools, which ask), and package.json's keys are put back as they were,
 * the rest of the command's change kept when that leaves its bytes as they were (else the command's file is
 * set aside and the bytes from before put back).
 *
 * At each worktree's root inside cwd, and at cwd: where the hook managers look (lint-staged also
 * reads a `package.json` deeper in the tree; the file tools ask for those, commands are not watched
 * there).
 *
 * @since 0.1.0
 * @internal
 */
import { constants } from "node:fs"
import * as NodeFs from "node:fs/promises"
import * as NodePath from "node:path"
import * as PackageHooks from "./PackageHooks.js"
import * as Paths from "./Paths.js"
import * as RunsLater from "./RunsLater.js"

const isInside = (parent: string, child: string) => Paths.isInside(NodePath, parent, child)

/** What was there before a command. */
export interface Before {
  readonly cwd: string
  readonly roots: ReadonlyArray<string>
  /** The hook managers' configs there were, each where its folder leads. */
  readonly configs: ReadonlySet<string>
  /** Each root's package.json, as text (`undefined`: none, or none a reader takes). */
  readonly packages: ReadonlyMap<string, string | undefined>
}

/** The largest package.json compared; a larger one a command made is set aside whole (its keys cannot be read cheaply). */
const packageLimit = 16 * 1024 * 1024

/** A package.json's text, following a link as its readers do, a regular file only (a FIFO never blocks it); `"too large"` past the limit. */
const readPackage = async (file: string): Promise<string | undefined | "too large"> => {
  const handle = await NodeFs.open(file, constants.O_RDONLY | constants.O_NONBLOCK).catch(() => undefined)
  if (handle === undefined) return undefined
  try {
    const info = await handle.stat()
    if (!info.isFile()) return undefined
    if (info.size > packageLimit) return "too large"
    return await handle.readFile("utf8")
  } catch {
    return undefined
  } finally {
    await handle.close()
  }
}

/** What is there before a command in `cwd` (a real path) whose worktrees are `worktrees`. */
export const before = async (cwd: string, worktrees: ReadonlyArray<RunsLater.Worktree>): Promise<Before> => {
  const roots = [...new Set([cwd, ...worktrees.map((w) => w.root).filter((root) => isInside(cwd, root))])]
  const configs = new Set(await Promise.all((await Promise.all(roots.map(RunsLater.hookManagerFiles))).flat().map(whereItIs)))
  const packages = new Map(await Promise.all(roots.map(async (root) => {
    const file = NodePath.join(root, "package.json")
    const text = await readPackage(file)
    return [file, text === "too large" ? undefined : text] as const
  })))
  return { cwd, roots, configs, packages }
}

/** A config's path with its folder's real path (a `.config` that is a link compared by where it leads). */
const whereItIs = async (path: string): Promise<string> =>
  NodePath.join(await NodeFs.realpath(NodePath.dirname(path)).catch(() => NodePath.dirname(path)), NodePath.basename(path))

/**
 * Whether `path`'s folder leads inside cwd: what is renamed or written there stays in the workspace (a
 * `.config` a command made a link to the user's own folder elsewhere is not touched; one to a folder
 * inside cwd is where lefthook reads it).
 */
const inWorkspace = async (cwd: string, path: string): Promise<boolean> => {
  const folder = await NodeFs.realpath(NodePath.dirname(path)).catch(() => undefined)
  return folder !== undefined && isInside(cwd, folder)
}

/** Renames `path` to the first free `<path>.set-aside[-n]` beside it (a rename in one folder: nothing copied, nothing lost). */
export const setAside = async (path: string): Promise<string> => {
  for (let n = 1; ; n++) {
    const aside = `${path}.set-aside${n === 1 ? "" : `-${n}`}`
    if ((await NodeFs.lstat(aside).catch(() => undefined)) !== undefined) continue
    await NodeFs.rename(path, aside)
    return aside
  }
}

/**
 * Writes `text` as `file`, a new file renamed over it: a link put there is replaced, never followed.
 * The new file gets `mode` (the replaced file's permission bits: a 0600 package.json stays private).
 */
const replaceWith = async (file: string, text: string, mode: number): Promise<void> => {
  const temporary = `${file}.effect-agent-${process.pid}-${Date.now()}`
  await NodeFs.writeFile(temporary, text, { flag: "wx", mode: 0o600 })
  await NodeFs.chmod(temporary, mode).then(() => NodeFs.rename(temporary, file)).catch(async (error: unknown) => {
    await NodeFs.rm(temporary, { force: true })
    throw error
  })
}

/** The permission bits of what `file` leads to (0644 when it cannot be read), kept on what replaces it. */
const modeOf = async (file: string): Promise<number> => ((await NodeFs.stat(file).catch(() => undefined))?.mode ?? 0o644) & 0o777

/**
 * Sets the command's `file` aside whole and puts `previous` (the bytes there before, if any) back
 * verbatim: what is done when its hook keys cannot be put back without rewriting the rest.
 */
const setAsideWhole = async (file: string, previous: string | undefined): Promise<string | undefined> => {
  const mode = await modeOf(file)
  const aside = await setAside(file).catch(() => undefined)
  if (aside !== undefined && previous !== undefined) await replaceWith(file, previous, mode).catch(() => undefined)
  return aside
}

/**
 * After the command (its processes gone): sets aside the hook managers' configs it made and puts
 * package.json's hook runners' keys back as they were; says which, relative to cwd.
 */
export const keep = async (was: Before): Promise<ReadonlyArray<string>> => {
  const said: Array<string> = []
  const shown = (path: string) => NodePath.relative(was.cwd, path)
  for (const root of was.roots) {
    for (const config of await RunsLater.hookManagerFiles(root)) {
      if (was.configs.has(await whereItIs(config)) || !(await inWorkspace(was.cwd, config))) continue
      const aside = await setAside(config).catch(() => undefined)
      if (aside !== undefined) said.push(`${shown(config)} (made by the command; now ${shown(aside)})`)
    }
    const file = NodePath.join(root, "package.json")
    if (!(await inWorkspace(was.cwd, file))) continue
    const previous = was.packages.get(file)
    const now = await readPackage(file)
    if (now === "too large") {
      const aside = await setAsideWhole(file, previous)
      if (aside !== undefined) said.push(`${shown(file)} (larger than ${packageLimit} bytes, its hook keys unread; the command's is now ${shown(aside)})`)
      continue
    }
    const keys = now === undefined ? [] : PackageHooks.changedKeys(previous, now)
    const kept = keys.length === 0 ? undefined : PackageHooks.keptAsBefore(previous, now!)
    if (kept === undefined) continue
    // Put back by re-serialising: only when that leaves the rest of the file byte for byte (no CRLF,
    // big or `1.50` numbers, `\u` escapes, duplicate keys, BOM lost); otherwise the user's bytes
    // from before come back whole and the command's file is kept beside them.
    if (PackageHooks.keptAsBefore(now, now!) !== now) {
      const aside = await setAsideWhole(file, previous)
      if (aside !== undefined) said.push(`${shown(file)}'s ${keys.join(", ")} (changed by the command in a file not rewritable byte for byte; put back as it was before, the command's is now ${shown(aside)})`)
      continue
    }
    const written = await replaceWith(file, kept, await modeOf(file)).then(() => true, () => false)
    if (written) said.push(`${shown(file)}'s ${keys.join(", ")} (put back as they were)`)
  }
  return said
}
