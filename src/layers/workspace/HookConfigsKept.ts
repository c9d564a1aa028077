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
 * At each worktree's root inside cwd, and at cwd: where the hook managers look. Lint-staged also
 * reads its configs and `package.json`'s `lint-staged` below a root (`RunsLater.readAtAnyDepth`): those
 * the sandbox's bounded search of cwd reads (`Sandbox.findRepositories`: two folder levels down) are
 * watched too, a config there before put back as it was when a command changed it (it is not bound
 * read-only: it is not where the other managers look).
 *
 * @since 0.1.0
 * @internal
 */
import { randomBytes } from "node:crypto"
import { constants, type Stats } from "node:fs"
import * as NodeFs from "node:fs/promises"
import { readlinkSync } from "node:fs"
import * as NodePath from "node:path"
import * as ApprovedWrites from "./ApprovedWrites.js"
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
  /** Each root's package.json, and those below a root lint-staged reads, as text (`undefined`: none, or none a reader takes). */
  readonly packages: ReadonlyMap<string, string | undefined>
  /** Lint-staged's configs below a root, each where its folder leads, with its bytes (`undefined`: over `configLimit`, not compared). */
  readonly below: ReadonlyMap<string, Buffer | undefined>
  /** Each of `packages`' files as it was (not followed if a link): which file it was, and how many names it had. */
  readonly identities: ReadonlyMap<string, Identity | undefined>
}

/** Which file a name was, and how many names that file had. */
export interface Identity {
  readonly dev: number
  readonly ino: number
  readonly nlink: number
}

const identityOf = async (file: string): Promise<Identity | undefined> => {
  const info = await NodeFs.lstat(file).catch(() => undefined)
  return info?.isFile() === true ? { dev: info.dev, ino: info.ino, nlink: info.nlink } : undefined
}

/** The largest config below a root whose bytes are kept to be put back. */
const configLimit = 1024 * 1024

/**
 * The files lint-staged reads that the search found (`Sandbox.findRepositories`) below the roots:
 * the roots' own are looked at with the other hook managers'.
 */
const belowRoots = (roots: ReadonlyArray<string>, found: ReadonlyArray<string>) => {
  const below = found.filter((path) => !roots.includes(NodePath.dirname(path)))
  return {
    packages: below.filter((path) => NodePath.basename(path) === "package.json"),
    configs: below.filter((path) => NodePath.basename(path) !== "package.json")
  }
}

/** The bytes of the regular file `path` (not followed if a link), up to `configLimit`; `undefined` past it or when none. */
const bytesOf = async (path: string): Promise<Buffer | undefined> => {
  // Opened without following a link and without waiting (a FIFO put there never blocks), then looked at through the descriptor.
  const handle = await NodeFs.open(path, constants.O_RDONLY | constants.O_NONBLOCK | (constants.O_NOFOLLOW ?? 0)).catch(() => undefined)
  if (handle === undefined) return undefined
  try {
    const info = await handle.stat()
    return info.isFile() && info.size <= configLimit ? await handle.readFile() : undefined
  } catch {
    return undefined
  } finally {
    await handle.close().catch(() => undefined)
  }
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

/**
 * What is there before a command in `cwd` (a real path) whose worktrees are `worktrees`; `found`:
 * the files lint-staged reads that the sandbox's search of cwd found.
 */
export const before = async (cwd: string, worktrees: ReadonlyArray<RunsLater.Worktree>, found: ReadonlyArray<string> = []): Promise<Before> => {
  const roots = [...new Set([cwd, ...worktrees.map((w) => w.root).filter((root) => isInside(cwd, root))])]
  const deeper = belowRoots(roots, found)
  const configs = new Set(await Promise.all([...(await Promise.all(roots.map(RunsLater.hookManagerFiles))).flat(), ...deeper.configs].map(whereItIs)))
  const packages = new Map(await Promise.all([...roots.map((root) => NodePath.join(root, "package.json")), ...deeper.packages].map(async (file) => {
    const text = await readPackage(file)
    return [file, text === "too large" ? undefined : text] as const
  })))
  const below = new Map(await Promise.all(deeper.configs.map(async (config) => [await whereItIs(config), await bytesOf(config)] as const)))
  const identities = new Map(await Promise.all([...packages.keys()].map(async (file) => [file, await identityOf(file)] as const)))
  return { cwd, roots, configs, packages, below, identities }
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

/** The first free `<path>.set-aside[-n]` beside `path`. */
const asideName = async (path: string): Promise<string> => {
  for (let n = 1; ; n++) {
    const aside = `${path}.set-aside${n === 1 ? "" : `-${n}`}`
    if ((await NodeFs.lstat(aside).catch(() => undefined)) === undefined) return aside
  }
}

/** Renames `path` to the first free `<path>.set-aside[-n]` beside it (a rename in one folder: nothing copied, nothing lost). */
export const setAside = async (path: string): Promise<string> => {
  const aside = await asideName(path)
  await NodeFs.rename(path, aside)
  return aside
}

const O_NOFOLLOW = constants.O_NOFOLLOW ?? 0

/**
 * A new file beside `file` to write and rename over it, opened `O_CREAT | O_EXCL | O_NOFOLLOW` under
 * a random name (`<file>.effect-agent-<24 hex digits>`): a name a command planted beside it (a file,
 * a link to elsewhere) is never opened nor written through, and cannot be guessed to stop the
 * put-back (trust 45: the name was the agent's pid and the time, and a planted one failed it).
 */
const temporaryBeside = async (file: string, tries = 4): Promise<{ readonly temporary: string; readonly handle: NodeFs.FileHandle }> => {
  const temporary = `${file}.effect-agent-${randomBytes(12).toString("hex")}`
  try {
    return { temporary, handle: await NodeFs.open(temporary, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | O_NOFOLLOW, 0o600) }
  } catch (error) {
    if (tries > 1 && (error as NodeJS.ErrnoException).code === "EEXIST") return temporaryBeside(file, tries - 1)
    throw error
  }
}

/**
 * Writes `text` as `file`, a new file renamed over it: a link put there is replaced, never followed.
 * The new file gets `mode` (the replaced file's permission bits: a 0600 package.json stays private);
 * it is removed when anything fails.
 */
const replaceWith = async (file: string, text: string, mode: number): Promise<void> => {
  const { handle, temporary } = await temporaryBeside(file)
  try {
    try {
      await handle.writeFile(text)
      await handle.chmod(mode)
    } finally {
      await handle.close()
    }
    await NodeFs.rename(temporary, file)
  } catch (error) {
    await NodeFs.rm(temporary, { force: true })
    throw error
  }
}

/**
 * Whether `file` (now `info`) is written in place, not replaced (`putBack`): a regular file that is
 * the file it was before the command (`earlier`), which had other names then (a hard link the user
 * made). A name the command made a link of another file (`ln packages/web/package.json
 * package.json`), or a file that had no other name before, is replaced: writing through it would
 * write the other name's file (review 60a). `shared`: another watched name is now this file though
 * it was not before; then it is replaced too.
 */
const inPlace = (info: Stats | undefined, earlier: Identity | undefined, shared: boolean): info is Stats =>
  info?.isFile() === true && earlier !== undefined && info.dev === earlier.dev && info.ino === earlier.ino && earlier.nlink > 1 && !shared

/**
 * Writes `text` over the bytes of `file`, the regular file `seen` was, through a descriptor opened
 * without following a link and checked to be that file still (device and inode).
 */
const rewriteInPlace = async (file: string, text: string, seen: Stats): Promise<void> => {
  const handle = await NodeFs.open(file, constants.O_WRONLY | O_NOFOLLOW | constants.O_NONBLOCK)
  try {
    const now = await handle.stat()
    if (!now.isFile() || now.dev !== seen.dev || now.ino !== seen.ino) throw new Error("the file changed while it was put back")
    await handle.writeFile(text)
    await handle.truncate(Buffer.byteLength(text))
  } finally {
    await handle.close()
  }
}

/**
 * Puts `text` back as `file`: a new file renamed over it (`replaceWith`), or, when the file has
 * other names (a hard link: `packages/app/package.json` the same file as the root's, a store's
 * link), its bytes rewritten in place (`rewriteInPlace`), so that every name reads what was put back
 * — a rename gave this name a new file and left the others with the command's (trust 45).
 */
const putBack = async (file: string, text: string, mode: number, earlier: Identity | undefined, shared: (seen: Stats | undefined) => Promise<boolean>): Promise<void> => {
  const seen = await NodeFs.lstat(file).catch(() => undefined)
  return inPlace(seen, earlier, await shared(seen)) ? rewriteInPlace(file, text, seen) : replaceWith(file, text, mode)
}

/** The permission bits of what `file` leads to (0644 when it cannot be read), kept on what replaces it. */
const modeOf = async (file: string): Promise<number> => ((await NodeFs.stat(file).catch(() => undefined))?.mode ?? 0o644) & 0o777

/**
 * Sets the command's `file` aside whole and puts `previous` (the bytes there before, if any) back
 * verbatim: what is done when its hook keys cannot be put back without rewriting the rest. A file
 * with other names is copied aside and `previous` written in place (`putBack`).
 */
const setAsideWhole = async (
  file: string,
  previous: string | undefined,
  earlier: Identity | undefined,
  shared: (seen: Stats | undefined) => Promise<boolean>
): Promise<string | undefined> => {
  const seen = await NodeFs.lstat(file).catch(() => undefined)
  if (previous !== undefined && inPlace(seen, earlier, await shared(seen))) {
    const aside = await asideName(file)
    const copied = await NodeFs.copyFile(file, aside, constants.COPYFILE_EXCL).then(() => true, () => false)
    if (!copied) return undefined
    await rewriteInPlace(file, previous, seen).catch(() => undefined)
    return aside
  }
  const mode = await modeOf(file)
  const aside = await setAside(file).catch(() => undefined)
  if (aside !== undefined && previous !== undefined) await replaceWith(file, previous, mode).catch(() => undefined)
  return aside
}

/** The most entries of a config folder the file tools wrote into that are compared with what they wrote; past it, it is set aside. */
const folderLimit = 1000

/** Whether `at` (a config file or folder) holds only `written` (by path), byte for byte. */
const holdsOnly = async (at: string, written: ReadonlyMap<string, Buffer>): Promise<boolean> => {
  let entries = 0
  const same = async (path: string): Promise<boolean> => {
    if (++entries > folderLimit) return false
    const info = await NodeFs.lstat(path).catch(() => undefined)
    if (info?.isDirectory() === true) {
      const names = await NodeFs.readdir(path).catch(() => undefined)
      if (names === undefined) return false
      for (const name of names) if (!(await same(NodePath.join(path, name)))) return false
      return true
    }
    const wanted = written.get(path)
    if (info?.isFile() !== true || wanted === undefined || info.size !== wanted.length) return false
    // Read without following a link or waiting on a FIFO swapped in since the `lstat` (the file tools' lock is held).
    const bytes = await bytesOf(path)
    return bytes !== undefined && bytes.equals(wanted)
  }
  return same(at)
}

/**
 * Makes the new file `name` (a relative path) inside the folder `folder` with `bytes`: each folder on
 * the way made if missing and opened without following a link, the file opened `O_CREAT | O_EXCL |
 * O_NOFOLLOW` inside the last — a link a concurrent command put on the way is never followed.
 */
const makeInside = async (folder: string, name: string, bytes: Buffer): Promise<void> => {
  const file = { flag: constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | O_NOFOLLOW }
  if (!Paths.procFd) {
    await NodeFs.mkdir(NodePath.dirname(NodePath.join(folder, name)), { recursive: true })
    return NodeFs.writeFile(NodePath.join(folder, name), bytes, file)
  }
  const flags = constants.O_RDONLY | (constants.O_DIRECTORY ?? 0) | O_NOFOLLOW | constants.O_NONBLOCK
  const names = name.split(NodePath.sep)
  const leaf = names.pop()!
  // `/.`: the folder `folder` names (itself a `/proc/self/fd/N` link), not the link.
  let handle = await NodeFs.open(`${folder}/.`, flags)
  try {
    for (const step of names) {
      const at = `/proc/self/fd/${handle.fd}/${step}`
      await NodeFs.mkdir(at).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== "EEXIST") throw error
      })
      const next = await NodeFs.open(at, flags)
      await handle.close()
      handle = next
    }
    await NodeFs.writeFile(`/proc/self/fd/${handle.fd}/${leaf}`, bytes, file)
  } finally {
    await handle.close().catch(() => undefined)
  }
}

/**
 * A hook manager's config (or folder) the command found absent, or one below a root with the bytes
 * `previous` before it: set aside, unless it holds only what the file tools wrote there meanwhile,
 * byte for byte (they ask for every write there: the user allowed it; an edit counts only of what
 * they wrote, not of the command's text), or else `previous`. Once set aside, what the file tools
 * wrote, or else `previous`, is put back where it was, each file made anew, never through a link.
 * Says what was done, or nothing.
 */
const keepConfig = async (
  config: string,
  at: string,
  writes: ReadonlyArray<ApprovedWrites.Write>,
  shown: (path: string) => string,
  here: (path: string) => string,
  previous?: Buffer
): Promise<string | undefined> => {
  // A whole file written (`before` unread), or an edit of what they wrote or of what was there before
  // the command: not an edit of the command's text.
  const texts = new Map<string, string>()
  const was = (file: string) => texts.get(file) ?? (file === at ? previous?.toString("utf8") : undefined)
  for (const write of writes) {
    if (write.file !== at && !isInside(at, write.file)) continue
    if (write.before === undefined || write.before === was(write.file)) texts.set(write.file, write.after)
    else texts.delete(write.file)
  }
  // Each path as reached through the checked folder (`here`): a folder swapped since is never followed.
  const written = new Map([...texts].map(([file, text]) => [here(file), Buffer.from(text)] as const))
  // What is to be there: what the file tools wrote, or else the bytes from before.
  const wanted = written.size > 0 ? written : previous === undefined ? undefined : new Map([[here(at), previous]])
  if (wanted !== undefined && (await holdsOnly(here(at), wanted))) return undefined
  const aside = await setAside(here(at)).then((aside) => NodePath.join(NodePath.dirname(config), NodePath.basename(aside)), () => undefined)
  if (aside === undefined) return undefined
  for (const [file, bytes] of wanted ?? []) await makeInside(here(NodePath.dirname(at)), NodePath.relative(here(NodePath.dirname(at)), file), bytes).catch(() => undefined)
  return written.size > 0
    ? `${shown(config)} (made or changed by the command; now ${shown(aside)}, what the file tools wrote there meanwhile put back)`
    : previous !== undefined
    ? `${shown(config)} (changed by the command; now ${shown(aside)}, put back as it was)`
    : `${shown(config)} (made by the command; now ${shown(aside)})`
}

/**
 * Puts back the hook runners' keys of the package.json `file` (real: `at`) as they were before the
 * command (`previous`), or as the file tools' writes meanwhile left them (`writes`:
 * `PackageHooks.approvedOnto`). Says what was done, or nothing.
 */
const keepPackage = async (
  file: string,
  at: string,
  before: string | undefined,
  writes: ReadonlyArray<ApprovedWrites.Write>,
  shown: (path: string) => string,
  earlier: Identity | undefined,
  shared: (seen: Stats | undefined) => Promise<boolean>
): Promise<string | undefined> => {
  let previous = before
  const reverted = new Set<string>()
  for (const write of writes) {
    if (write.file !== at) continue
    const onto = PackageHooks.approvedOnto(previous, write.before, write.after)
    previous = onto.text
    for (const key of onto.reverted) reverted.add(key)
  }
  const undone = reverted.size === 0
    ? ""
    : `; an approved edit of ${[...reverted].join(", ")} was reverted with it, as it carried the command's change: redo it`
  const now = await readPackage(file)
  if (now === "too large") {
    const aside = await setAsideWhole(file, previous, earlier, shared)
    return aside === undefined ? undefined : `${shown(file)} (larger than ${packageLimit} bytes, its hook keys unread; the command's is now ${shown(aside)})`
  }
  const keys = now === undefined ? [] : PackageHooks.changedKeys(previous, now)
  const kept = keys.length === 0 ? undefined : PackageHooks.keptAsBefore(previous, now!)
  if (kept === undefined) return undefined
  // Put back by re-serialising: only when that leaves the rest of the file byte for byte (no CRLF,
  // big or `1.50` numbers, `\u` escapes, duplicate keys, BOM lost); otherwise the user's bytes
  // from before come back whole and the command's file is kept beside them.
  if (PackageHooks.keptAsBefore(now, now!) !== now) {
    const aside = await setAsideWhole(file, previous, earlier, shared)
    return aside === undefined
      ? undefined
      : `${shown(file)}'s ${keys.join(", ")} (changed by the command in a file not rewritable byte for byte; put back as it was before, the command's is now ${shown(aside)}${undone})`
  }
  const written = await putBack(file, kept, await modeOf(file), earlier, shared).then(() => true, () => false)
  return written ? `${shown(file)}'s ${keys.join(", ")} (put back as they were${undone})` : undefined
}

/**
 * After the command (its processes gone): sets aside the hook managers' configs it made and puts
 * package.json's hook runners' keys back as they were; says which, relative to cwd. What the file
 * tools wrote there while it ran (`approved`: a sibling subagent's write the user allowed) is left
 * as they wrote it, each file read and written under the file tools' lock. `found`: the files
 * lint-staged reads that the sandbox's search of cwd finds now (below the roots: see `before`).
 */
export const keep = async (was: Before, approved: ApprovedWrites.Watch = ApprovedWrites.none, found: ReadonlyArray<string> = []): Promise<ReadonlyArray<string>> => {
  const said: Array<string> = []
  const shown = (path: string) => NodePath.relative(was.cwd, path)
  const deeper = belowRoots(was.roots, found)
  // Whether another watched package.json is now the file `seen` though it was another before (a link the command made).
  const shared = (file: string) => async (seen: Stats | undefined): Promise<boolean> => {
    if (seen === undefined) return false
    for (const [other, earlier] of was.identities) {
      if (other === file) continue
      const info = await NodeFs.lstat(other).catch(() => undefined)
      if (info !== undefined && info.dev === seen.dev && info.ino === seen.ino && (earlier?.dev !== seen.dev || earlier?.ino !== seen.ino)) return true
    }
    return false
  }
  const keepEach = async (configs: ReadonlyArray<string>, packages: ReadonlyArray<string>) => {
    for (const config of configs) {
      const at = await whereItIs(config)
      const previous = was.below.get(at)
      if ((was.configs.has(at) && previous === undefined) || !(await inWorkspace(was.cwd, config))) continue
      const note = await approved.exclusive(at, () =>
        inCheckedFolder(was.cwd, config, (folder) => {
          const here = (path: string) => NodePath.join(folder, NodePath.relative(NodePath.dirname(at), path))
          return keepConfig(config, at, approved.writes, shown, here, previous)
        }))
      if (note !== undefined) said.push(note)
    }
    for (const file of packages) {
      if (!(await inWorkspace(was.cwd, file))) continue
      const at = await NodeFs.realpath(file).catch(() => file)
      const note = await approved.exclusive(at, () =>
        inCheckedFolder(was.cwd, file, (folder) => {
          const named = (path: string) => shown(path.startsWith(`${folder}/`) ? NodePath.join(NodePath.dirname(file), path.slice(folder.length + 1)) : path)
          return keepPackage(NodePath.join(folder, NodePath.basename(file)), at, was.packages.get(file), approved.writes, named, was.identities.get(file), shared(file))
        }))
      if (note !== undefined) said.push(note)
    }
  }
  for (const root of was.roots) await keepEach(await RunsLater.hookManagerFiles(root), [NodePath.join(root, "package.json")])
  // Then lint-staged's below the roots: there before, or found now (a search stopped early by many folders
  // the command made still leaves those there before looked at: review 60a).
  const rootPackages = new Set(was.roots.map((root) => NodePath.join(root, "package.json")))
  const deeperPackages = [...new Set([...was.packages.keys(), ...deeper.packages])].filter((file) => !rootPackages.has(file))
  await keepEach([...new Set([...deeper.configs, ...was.below.keys()])], deeperPackages)
  return said
}

/** The real folder `real` opened from `/` one name at a time, none followed if a link (`O_NOFOLLOW`); `undefined` when a step is not a folder. */
const openFolder = async (real: string): Promise<NodeFs.FileHandle | undefined> => {
  const flags = constants.O_RDONLY | (constants.O_DIRECTORY ?? 0) | O_NOFOLLOW | constants.O_NONBLOCK
  let handle = await NodeFs.open("/", flags).catch(() => undefined)
  for (const name of real.split("/").filter((name) => name !== "")) {
    if (handle === undefined) return undefined
    const next = await NodeFs.open(`/proc/self/fd/${handle.fd}/${name}`, flags).catch(() => undefined)
    await handle.close().catch(() => undefined)
    handle = next
  }
  return handle
}

/**
 * Runs `use` with `path`'s folder opened and checked to be inside cwd, as a name (`/proc/self/fd/N`)
 * through which every read, write and rename of the put-back is made: a folder a concurrent command
 * swapped for a link out of cwd after the check (while the put-back waited for the file tools' lock)
 * is never followed (review 60a). The folder is opened from `/` one name at a time without following
 * a link, inside the lock, and its real path (`/proc/self/fd/N`'s) checked to be inside cwd; nothing
 * is done when it cannot be. Without `/proc/self/fd` (not Linux), the folder's real path, checked once.
 */
const inCheckedFolder = async <A>(cwd: string, path: string, use: (folder: string) => Promise<A | undefined>): Promise<A | undefined> => {
  const real = await NodeFs.realpath(NodePath.dirname(path)).catch(() => undefined)
  if (real === undefined || !isInside(cwd, real)) return undefined
  if (!Paths.procFd) return use(real)
  const handle = await openFolder(real)
  if (handle === undefined) return undefined
  try {
    const folder = `/proc/self/fd/${handle.fd}`
    if (!isInside(cwd, readlinkSync(folder))) return undefined
    return await use(folder)
  } finally {
    await handle.close().catch(() => undefined)
  }
}
