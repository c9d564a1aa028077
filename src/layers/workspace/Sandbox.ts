/**
 * How a tool's command is isolated from the agent and from the rest of the machine.
 *
 * On Linux with unprivileged user namespaces, every command runs in the *workspace sandbox* (like
 * Codex's `workspace-write`):
 *
 * ```
 * setpriv --pdeathsig KILL -- unshare --user --map-root-user --mount [--net] --pid --fork --kill-child --
 *   /bin/sh -c <setup> … -- unshare --user --map-user=<uid> --map-group=<gid> -- /bin/sh -c <export the environment> … <command>
 * ```
 *
 * - **Files.** In a mount namespace of its own, every mount is remounted read-only except the
 *   session's cwd (bound over itself, with what is mounted below it, writable) and a fresh, empty
 *   tmpfs on `/tmp` and `/dev/shm` (`TMPDIR` points there; it lives as long as the command). Inside
 *   cwd, `.git/config`, `.git/config.worktree`, `.git/hooks` (and a submodule's under `.git/modules`),
 *   git's hooks folder (`core.hooksPath`, husky's `.husky/`), the other hook managers' configs at a worktree's root
 *   (`.pre-commit-config.yaml`, `lefthook.yml`, … when there), a `.git` file and `.effect-agent/` stay read-only: what they hold decides what later runs do (the
 *   rest of `.git` stays writable, so that `git add` and `git commit` work). Git folders are mount
 *   points, so that a command cannot rename one away and make another. Credentials
 *   under the user's home (`~/.ssh`, `~/.aws`, `~/.config/gcloud`, `~/.gnupg`, `~/.docker`, `~/.kube`,
 *   `~/.netrc`, …), effect-agent's own config folder and its data folder are hidden: an empty
 *   read-only tmpfs over a folder, `/dev/null` over a file.
 * - **Network.** A network namespace of its own with only loopback (brought up when `ip` is
 *   installed), unless the user turns the network on (`network: true`, the CLI's `--network`).
 * - **Processes.** A PID namespace with its own `/proc`: no process of the agent (whose
 *   `/proc/<pid>/environ` holds its keys) is visible. Its life is tied to the agent's: if the agent
 *   dies, even by SIGKILL, the kernel kills `setpriv`'s process, `--kill-child` the namespace's first
 *   process, and with it every process in the namespace.
 * - **No way back.** The setup runs as root of an outer user namespace; the command runs in an inner
 *   one as the user's own uid, with no capability over the mount or network namespace, so it can
 *   neither unmount nor remount anything; a namespace it makes itself inherits the mounts locked.
 *
 * The setup fails closed: if a mount cannot be made, the command does not run (exit 125). Where
 * this cannot be built (macOS, Windows, kernels or containers that forbid user namespaces, no
 * `unshare`), `detect` finds the strongest weaker level — a PID namespace alone, the parent-death
 * signal alone, or nothing — and says why; `required` refuses to run commands there.
 *
 * @since 0.1.0
 */
import { spawn } from "node:child_process"
import { accessSync, constants } from "node:fs"
import * as NodeFs from "node:fs/promises"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as ApprovedWrites from "./ApprovedWrites.js"
import * as Environment from "./Environment.js"
import * as HookConfigsKept from "./HookConfigsKept.js"
import * as Paths from "./Paths.js"
import * as RunsLater from "./RunsLater.js"

/** What the user asks for: `auto` isolates as well as the OS allows, `required` fails commands without the workspace sandbox, `off` never isolates. */
export type Mode = "auto" | "required" | "off"

/** The programs the workspace sandbox is built with (absolute paths, so that no `PATH` chooses them). */
export interface Programs {
  readonly setpriv: string
  readonly unshare: string
  readonly mount: string
  readonly sh: string
  /** Brings loopback up in a network namespace of its own; without it there is no loopback. */
  readonly ip: string | undefined
}

/** How commands are started on this system, and what that guarantees. */
export type Isolation =
  | { readonly _tag: "Workspace"; readonly programs: Programs }
  | { readonly _tag: "Namespace"; readonly prefix: ReadonlyArray<string>; readonly reason: string }
  | { readonly _tag: "ParentDeath"; readonly prefix: ReadonlyArray<string>; readonly reason: string }
  | { readonly _tag: "None"; readonly prefix: ReadonlyArray<string>; readonly reason: string }

/** What one command may reach in the workspace sandbox. */
export interface Profile {
  /** The real path of the session's cwd: writable. */
  readonly cwd: string
  /** Whether the command may use the network. */
  readonly network: boolean
  /** Absolute paths hidden from the command (missing ones are skipped). */
  readonly hidden: ReadonlyArray<string>
  /** The command's environment. */
  readonly env: Readonly<Record<string, string>>
  /** The file tools' writes while the command runs, which its put-back leaves as they wrote them (`ApprovedWrites`). */
  readonly approved?: ApprovedWrites.Registry | undefined
}

/** Credentials and agent settings under the user's home that commands never see. */
export const hiddenInHome: ReadonlyArray<string> = [
  ".ssh", ".aws", ".azure", ".config/gcloud", ".config/gh", ".gnupg", ".docker", ".kube", ".netrc", ".git-credentials",
  ".password-store", ".config/effect-agent"
]

/** Inside the workspace: what decides what later runs do (git's configuration and hooks, the agent's settings), kept read-only. */
export const readOnlyInWorkspace: ReadonlyArray<string> = [".git/config", ".git/config.worktree", ".git/hooks", ".effect-agent"]

/**
 * The absolute path of a program in an absolute folder of `PATH`, if there is one. A relative
 * folder (`.`, `bin`) is left out: it names a folder from wherever the process stands, a cloned
 * repository for the CLI, and what is found there would run outside the sandbox.
 */
export const which = (program: string, path: string | undefined): string | undefined => {
  for (const dir of Environment.searchFolders(path)) {
    const file = NodePath.join(dir, program)
    try {
      accessSync(file, constants.X_OK)
      return file
    } catch {
      // not here
    }
  }
  return undefined
}

/**
 * The setup, run by `/bin/sh` as root of the outer user namespace. Arguments: uid gid network cwd
 * mount ip unshare fstab sh, the counted list of mounts to make read-only one by one (used only when
 * one `mount --all` cannot), the counted `NAME=value` list of the command's environment, then `--`
 * and the command. Every expansion is quoted; tools are
 * absolute paths. Two `mount` runs do all the work: each exec costs time on every command.
 */
const setup = String.raw`
IFS=' 	
'
fail() { echo "effect-agent: the command sandbox could not be set up ($*); the command did not run" >&2; exit 125; }
uid=$1 gid=$2 network=$3 cwd=$4 mount=$5 ip=$6 unshare=$7 fstab=$8 sh=$9; shift 9
# Entered by name, so checked to be the folder it names: one swapped for a link since the mount
# table was made (a subagent's cwd, inside its parent's workspace) would lead elsewhere.
entered() { cd "$cwd" && [ "$(pwd -P)" = "$cwd" ] || fail "the working directory $cwd is not where it was (a link now, or moved)"; }
entered
n=$1; shift
if "$mount" --all -t noproc -O rw -o remount,bind,ro 2>/dev/null; then
  shift "$n"
else
  while [ "$n" -gt 0 ]; do
    # A mount point this user cannot reach is one the command cannot reach either.
    if [ -e "$1" ]; then "$mount" -o remount,bind,ro -- "$1" 2>/dev/null || fail "cannot make $1 read-only"; fi
    n=$((n - 1)); shift
  done
fi
# /proc, the private /tmp and /dev/shm, the working directory (from this shell's own cwd, which /tmp
# may now cover), what stays read-only in it, and what is hidden: see the table.
said=$("$mount" --all --no-canonicalize --fstab "$fstab" 2>&1) || fail "$(echo "$said" | { read -r line; echo "$line"; })"
entered
if [ "$network" = off ] && [ -n "$ip" ]; then "$ip" link set lo up 2>/dev/null; fi
# The command's environment comes as arguments, set only once in the inner namespace: no
# LD_PRELOAD of the command's reaches a program that runs with the outer one's capabilities.
exec "$unshare" --user --map-user="$uid" --map-group="$gid" -- "$sh" -c '
n=$1; shift
while [ "$n" -gt 0 ]; do export "$1"; n=$((n - 1)); shift; done
[ "$1" = -- ] && shift
exec "$@"' effect-agent-command "$@"
`

/** A mount of `/proc/self/mountinfo`: where, and whether it is writable. */
interface MountPoint {
  readonly path: string
  readonly writable: boolean
}

/** Decodes the octal escapes of `/proc/self/mountinfo` (`\040` is a space). */
const unescapeMount = (text: string) => text.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)))

/** A list as arguments for the setup: its length, then its items. */
const counted = (list: ReadonlyArray<string>) => [String(list.length), ...list]

/** Escapes a path for an fstab field. */
const escapeMount = (text: string) => text.replace(/[\\ \t\n]/g, (c) => `\\${c.charCodeAt(0).toString(8).padStart(3, "0")}`)

/** The mount points of this process, from `/proc/self/mountinfo` (a path mounted over twice is listed by its top mount). */
export const mountPoints = async (): Promise<ReadonlyArray<MountPoint>> => {
  const text = await NodeFs.readFile("/proc/self/mountinfo", "utf8")
  const byPath = new Map<string, MountPoint>()
  for (const line of text.split("\n")) {
    const fields = line.split(" ")
    if (fields[4] === undefined || fields[5] === undefined) continue
    const path = unescapeMount(fields[4])
    byPath.delete(path)
    byPath.set(path, { path, writable: fields[5].split(",").includes("rw") })
  }
  return [...byPath.values()]
}

const isInside = (parent: string, child: string) => Paths.isInside(NodePath, parent, child)

/**
 * A submodule's git folder holds its own config and hooks (`.git/modules/<name>/…`, nested too).
 * One whose name is not UTF-8 cannot be named as text: its path's bytes go to `unnamed`.
 */
export const submoduleGitDirs = async (gitDir: string, unnamed: Array<Buffer> = [], depth = 0): Promise<ReadonlyArray<string>> => {
  if (depth > 3) return []
  const modules = NodePath.join(gitDir, "modules")
  const dirs = foldersNamed(modules, await NodeFs.readdir(modules, { encoding: "buffer" }).catch(() => [] as Array<Buffer>), unnamed)
  return [...dirs, ...(await Promise.all(dirs.map((dir) => submoduleGitDirs(dir, unnamed, depth + 1)))).flat()]
}

/** The paths of `names` in `folder` as text; those not UTF-8 go to `unnamed`, as bytes. */
const foldersNamed = (folder: string, names: ReadonlyArray<Buffer>, unnamed: Array<Buffer>): Array<string> => {
  const paths: Array<string> = []
  for (const name of names) {
    const text = Paths.nameOf(name)
    if (text === undefined) unnamed.push(Buffer.concat([Buffer.from(`${folder}/`), name]))
    else paths.push(NodePath.join(folder, text))
  }
  return paths
}

/**
 * How far below cwd repositories are looked for (folder levels: 2 finds `clones/one/.git`), and
 * how many folders are read doing it: each command pays for the search.
 */
export const gitSearch = { depth: 2, maxFolders: 256 } as const

const readGitFile = RunsLater.readGitFile

/**
 * The real path of a folder git names in `file`, relative to the file's folder: a `.git` file's `gitdir: …`, a
 * `commondir`'s line. Read where a link leads, as git reads both (a `commondir` linked to a file naming the
 * repository's git folder is the one git takes its config from), a regular file only: a FIFO never blocks it.
 */
const namedFolder = async (file: string, prefix: RegExp): Promise<string | undefined> => {
  const named = new RegExp(`^${prefix.source}(.+?)\\r?$`, "m").exec(await readGitFile(file, 4096, true))?.[1]
  if (named === undefined) return undefined
  const path = NodePath.resolve(NodePath.dirname(file), named)
  // A name that is not UTF-8 was read as U+FFFD: kept as it reads, so that `addGitDir` says it cannot be pinned.
  return NodeFs.realpath(path).catch(() => (named.includes("\uFFFD") ? path : undefined))
}

/** The folders of `path` below `cwd` (not `cwd` itself, not `path`), the outermost first. */
const foldersBetween = (cwd: string, path: string): ReadonlyArray<string> => {
  const folders: Array<string> = []
  for (let dir = NodePath.dirname(path); dir !== cwd && isInside(cwd, dir) && dir !== NodePath.dirname(dir); dir = NodePath.dirname(dir)) folders.unshift(dir)
  return folders
}

/**
 * What to pin inside `cwd`: git folders (the repository's and its submodules') are bound over
 * themselves, so that no command can rename one away and put a folder of its own in its place; then
 * the paths kept read-only (a `.git` file — a worktree's or submodule's pointer — among them). A git
 * folder without `hooks/` gets an empty one, so that none can be made.
 *
 * Not only cwd's own: the repositories below it, `gitSearch.depth` folder levels down within
 * `gitSearch.maxFolders` folders read (a folder of clones, a clone committed as a submodule with
 * its git folder in it), the git folder a `.git` file names when it is inside cwd (the layout of
 * worktree users, `.git` naming `.bare`), and the `.git` files of linked worktrees inside cwd. The
 * folders on the way to each are bound over themselves too, so that none can be renamed away with
 * the repository in it and a repository of the command's own put in its place.
 *
 * A git folder's `commondir` names the folder git takes its config and hooks from: a linked
 * worktree's (`<git>/worktrees/<name>/commondir`, used by git in that worktree) is kept read-only
 * with its `config.worktree`; in a repository's own git folders there is none (git never makes one
 * there), and one a command makes is removed once it has run (`redirects`).
 */
const workspacePins = async (cwd: string): Promise<{ readonly anchors: ReadonlyArray<string>; readonly readOnly: ReadonlyArray<string>; readonly redirects: ReadonlyArray<string>; readonly links: ReadonlyArray<Link>; readonly gitDirs: ReadonlySet<string>; readonly unnamed: ReadonlyArray<string>; readonly hookConfigs: HookConfigsKept.Before }> => {
  const { followed, gitDirs, gitFiles, readByLintStaged, unnamed, worktreeDirs, worktrees } = await findRepositories(cwd)
  for (const dir of gitDirs) await NodeFs.mkdir(NodePath.join(dir, "hooks")).catch(() => undefined)
  // The repository cwd is in, when its root is above cwd: its hooks folder may still be inside.
  const above = await RunsLater.worktreeOf(cwd)
  if (above !== undefined && above.root !== cwd && !isInside(cwd, above.root)) worktrees.push(above)
  const hooks = await hooksPins(cwd, worktrees)
  followed.push(...hooks.followed)
  const inGit = [
    ...[...gitDirs].flatMap((dir) => ["config", "config.worktree", "hooks", "commondir"].map((name) => NodePath.join(dir, name))),
    ...[...worktreeDirs].flatMap((dir) => ["commondir", "config.worktree"].map((name) => NodePath.join(dir, name)))
  ]
  const candidates = [...readOnlyInWorkspace.map((p) => NodePath.join(cwd, p)), ...inGit, ...gitFiles, ...hooks.folders]
  const exists = async (path: string) => (await NodeFs.lstat(path).catch(() => undefined)) !== undefined
  const existing = [...new Set((await Promise.all(candidates.map(async (path) => ((await exists(path)) ? [path] : [])))).flat())]
  // Outermost first: a folder bound after one inside it would cover that one's mount.
  const anchors = [...new Set([...[...gitDirs, ...existing, ...followed].flatMap((path) => foldersBetween(cwd, path)), ...gitDirs])]
    .sort((a, b) => a.split(NodePath.sep).length - b.split(NodePath.sep).length)
  const redirects = [...gitDirs].filter((dir) => !worktreeDirs.has(dir)).map((dir) => NodePath.join(dir, "commondir"))
  const absent = await Promise.all(redirects.map(async (path) => ((await exists(path)) ? [] : [path])))
  const links = await Promise.all([...new Set(followed)].map(async (path): Promise<ReadonlyArray<Link>> => {
    const [text, parent] = await Promise.all([NodeFs.readlink(path).catch(() => undefined), NodeFs.realpath(NodePath.dirname(path)).catch(() => undefined)])
    return text === undefined || parent === undefined ? [] : [{ path, text, parent }]
  }))
  return { anchors, readOnly: existing, redirects: absent.flat(), links: links.flat(), gitDirs, unnamed: [...unnamed, ...hooks.unnamed], hookConfigs: await HookConfigsKept.before(cwd, worktrees, readByLintStaged) }
}

/**
 * The repositories inside cwd (see `workspacePins`), found without changing anything: their git
 * folders (submodules' too), `.git` files, linked worktrees' git folders, each worktree's settings
 * and the `.git` links followed.
 *
 * Folders are read as bytes: a name that is not UTF-8 (a byte 0xff) reads as U+FFFD, text that names
 * nothing, and a mount is made by a path given as text. The git folders and `.git` files whose paths
 * are not text (or that a `.git` file, link or `commondir` names so) are `unnamed`, relative to cwd
 * with such bytes escaped: none of them can be pinned (see `workspaceLaunch`).
 */
export const findRepositories = async (cwd: string) => {
  const unnamedPaths: Array<Buffer> = []
  const gitDirs = new Set<string>()
  const gitFiles = new Set<string>()
  const worktreeDirs = new Set<string>()
  // Where git takes each worktree's `core.hooksPath` from, and a relative one from (see `hooksPins`).
  const worktrees: Array<RunsLater.Worktree> = []
  // Links inside cwd that git follows to what is pinned (a `.git` link): put back after the command if it changed them.
  const followed: Array<string> = []
  // What lint-staged reads at any depth (`RunsLater.readAtAnyDepth`), in the folders read: for `HookConfigsKept`.
  const readByLintStaged: Array<string> = []
  const addGitDir = async (dir: string) => {
    if (gitDirs.has(dir) || !isInside(cwd, dir) || dir === cwd) return
    if ((await NodeFs.lstat(dir).catch(() => undefined))?.isDirectory() !== true) {
      // Named as text by a `.git` file, link or `commondir` whose bytes are not UTF-8: not found by that text.
      if (dir.includes("\uFFFD")) unnamedPaths.push(Buffer.from(dir))
      return
    }
    gitDirs.add(dir)
    for (const sub of await submoduleGitDirs(dir, unnamedPaths)) gitDirs.add(sub)
    const worktreesDir = NodePath.join(dir, "worktrees")
    for (const worktree of foldersNamed(worktreesDir, await NodeFs.readdir(worktreesDir, { encoding: "buffer" }).catch(() => [] as Array<Buffer>), unnamedPaths)) {
      worktreeDirs.add(worktree)
      // Where that worktree's `.git` file is: pinned when inside cwd.
      const named = (await readGitFile(NodePath.join(worktree, "gitdir"))).trim()
      if (NodePath.isAbsolute(named) && isInside(cwd, named) && (await NodeFs.lstat(named).catch(() => undefined))?.isFile() === true) {
        gitFiles.add(named)
        worktrees.push({ gitDir: dir, ownGitDir: worktree, root: NodePath.dirname(named) })
      }
    }
  }
  // The folders down to `gitSearch.depth`, breadth first, within `gitSearch.maxFolders`; links are not followed.
  // Paths as bytes (see above).
  let level: Array<Buffer> = [Buffer.from(cwd)]
  let read = 0
  for (let depth = 0; depth <= gitSearch.depth && level.length > 0; depth++) {
    const next: Array<Buffer> = []
    // A level's folders are read at once: one after the other, 50 of them cost a command tens of milliseconds.
    const folders = level.slice(0, Math.max(0, gitSearch.maxFolders - read))
    read += folders.length
    const listed = await Promise.all(folders.map((folder) => NodeFs.readdir(folder, { withFileTypes: true, encoding: "buffer" }).catch(() => [])))
    for (const [i, entries] of listed.entries()) {
      const folderBytes = folders[i]!
      const folder = Paths.nameOf(folderBytes)
      for (const entry of entries) {
        const name = Paths.nameOf(entry.name)
        const searched = entry.isDirectory() && name !== "node_modules" && depth < gitSearch.depth
        if (folder === undefined || name === undefined) {
          const bytes = Buffer.concat([folderBytes, Buffer.from("/"), entry.name])
          if (name === ".git") unnamedPaths.push(bytes)
          else if (searched) next.push(bytes)
          continue
        }
        const path = NodePath.join(folder, name)
        if (!entry.isDirectory() && RunsLater.readAtAnyDepth(name)) readByLintStaged.push(path)
        if (name === ".git") {
          if (entry.isDirectory()) {
            await addGitDir(path)
            worktrees.push({ gitDir: path, ownGitDir: path, root: folder })
          } else if (entry.isFile() || (entry.isSymbolicLink() && (await NodeFs.stat(path).catch(() => undefined))?.isFile() === true)) {
            // A `.git` file, or a link to one (git follows it: the folder it names is the repository). A link
            // cannot be bound over: the file it leads to is, and the link is put back if a command changes it.
            if (entry.isFile()) gitFiles.add(path)
            else {
              const real = await NodeFs.realpath(path).catch(() => undefined)
              if (real !== undefined && isInside(cwd, real)) gitFiles.add(real)
              followed.push(path)
            }
            const target = await namedFolder(path, /gitdir: */)
            // A linked worktree's git folder names its repository's in `commondir`.
            const common = target === undefined ? undefined : await namedFolder(NodePath.join(target, "commondir"), /(?:)/)
            if (target !== undefined && common === undefined) await addGitDir(target)
            if (common !== undefined) await addGitDir(common)
            if (target !== undefined) worktrees.push({ gitDir: common ?? target, ownGitDir: target, root: folder })
          } else if (entry.isSymbolicLink()) {
            // Git follows a `.git` link. Resolved once, and the folder it led to is what gets pinned,
            // when it is inside cwd (one outside is read-only with the rest); the link itself cannot be
            // bound over, so it is put back after the command if the command changed it.
            const real = await NodeFs.realpath(path).catch(() => undefined)
            if (real !== undefined && isInside(cwd, real) && real !== cwd && (await NodeFs.lstat(real).catch(() => undefined))?.isDirectory() === true) {
              await addGitDir(real)
              followed.push(path)
              worktrees.push({ gitDir: real, ownGitDir: real, root: folder })
            } else if (real !== undefined) await addGitDir(real)
          }
        } else if (searched) {
          next.push(Buffer.from(path))
        }
      }
    }
    level = next
  }
  const cwdBytes = Buffer.from(`${cwd}/`)
  const unnamed = [...new Set(unnamedPaths.map((path) => Paths.escapedName(path.subarray(0, cwdBytes.length).equals(cwdBytes) ? path.subarray(cwdBytes.length) : path)))]
  return { gitDirs, gitFiles, worktreeDirs, worktrees, followed, unnamed, readByLintStaged }
}

/**
 * What the repositories a command made can run later, outside the sandbox: each git folder the same
 * bounded search finds now that it did not before the command (`git init sub`, a submodule added
 * under `.git/modules`), with the settings of its config that run a program (`RunsLater.programSettingsIn`)
 * and the hooks it holds (its `hooks/` but the `.sample`s git makes). Said in the tool's result, never
 * removed: it may be the user's work. Its config is read up to 64 KiB; a larger one is said to be
 * unchecked. One whose path is not UTF-8 cannot be read by it (and no command runs while it is
 * there: see `workspaceLaunch`); a command ran only when there was none, so each is new, and said.
 */
const madeRepositories = (cwd: string, before: ReadonlySet<string>, found: Effect.Effect<Found>): Effect.Effect<ReadonlyArray<string>> =>
  Effect.flatMap(found, ({ gitDirs, unnamed }) => Effect.promise(async () => {
    const notes = unnamed.map((path) => `${path} (a path that is not UTF-8: not checked, and no command runs while it is there)`)
    for (const dir of gitDirs) {
      if (before.has(dir)) continue
      const config = await RunsLater.readGitConfig(NodePath.join(dir, "config"))
      const settings = config.length > RunsLater.configLimit ? ["(a config larger than 64 KiB, not checked)"] : RunsLater.programSettingsIn(config)
      const hooks = (await NodeFs.readdir(NodePath.join(dir, "hooks")).catch(() => [] as Array<string>)).filter((name) => !name.endsWith(".sample"))
      const what = [...settings, ...hooks.map((name) => `hooks/${name}`)]
      if (what.length > 0) notes.push(`${NodePath.relative(cwd, dir)} (${what.slice(0, 8).join(", ")}${what.length > 8 ? ", …" : ""})`)
    }
    return notes
  }))

/** What `findRepositories` finds. */
type Found = Awaited<ReturnType<typeof findRepositories>>

/** A link git follows to something pinned, as it was before the command: its text, and its folder's real path. */
interface Link {
  readonly path: string
  readonly text: string
  readonly parent: string
}

/**
 * Git's hooks folders inside cwd, kept read-only like `.git/hooks`: git runs what is there at the
 * user's next commit, outside the sandbox. For each worktree, the folders its `core.hooksPath` names
 * (`RunsLater.gitSettingsOf`: from the pinned config, the files it includes and the user's own
 * configs; relative to the worktree's root) — made empty first when it does not exist yet, one folder at a time and never through a link, so that no command can make it — the
 * files its configs include (`[include] path = ../.gitconfig`: a command wrote `core.fsmonitor`
 * there; one not there yet is made empty first), and
 * husky's `.husky/` at the root when it is there (husky's `core.hooksPath` is `.husky/_`, whose
 * scripts run the ones in `.husky/`), and the other hook managers' configs there
 * (`RunsLater.hookManagerFiles`: `.pre-commit-config.yaml`, `lefthook.yml`, …). Each is resolved once and the folder it led to is what is
 * bound; the links inside cwd on the way to it are returned to be put back if a command changes them.
 * A hooks folder that is cwd itself, or holds it, is not pinned (the session could write nothing).
 * One inside cwd whose path is not UTF-8 (read as U+FFFD) is `unnamed`: it cannot be bound.
 */
const hooksPins = async (cwd: string, worktrees: ReadonlyArray<RunsLater.Worktree>): Promise<{ readonly folders: ReadonlyArray<string>; readonly followed: ReadonlyArray<string>; readonly unnamed: ReadonlyArray<string> }> => {
  const folders = new Set<string>()
  const followed: Array<string> = []
  const unnamed: Array<string> = []
  for (const worktree of worktrees) {
    const settings = await RunsLater.gitSettingsOf(worktree)
    const named = [
      ...settings.hooks.map((folder) => [folder, "folder"] as const),
      [NodePath.join(worktree.root, RunsLater.husky), "existing"] as const,
      ...(await RunsLater.hookManagerFiles(worktree.root)).map((path) => [path, "existing"] as const),
      ...settings.included.map((file) => [file, "file"] as const)
    ]
    for (const [path, make] of named) {
      // A config's path that is not UTF-8 reads as U+FFFD: git's folder is not the one that text names (nor made, nor bound).
      if (path.includes("\uFFFD")) {
        if (isInside(cwd, path)) unnamed.push(Paths.escapedName(Buffer.from(NodePath.relative(cwd, path))))
        continue
      }
      const real = await RunsLater.realOrPlanned(path)
      if (real === undefined || real === cwd || !isInside(cwd, real) || folders.has(real)) continue
      const there = (await NodeFs.lstat(real).catch(() => undefined)) !== undefined
      if (!there && !(make === "folder" ? await madeFolder(real) : make === "file" ? await madeFile(real) : false)) continue
      folders.add(real)
      followed.push(...(await linksOnTheWay(cwd, path)))
    }
  }
  return { folders: [...folders], followed, unnamed }
}

/**
 * Makes the missing folders of `real` (a real path but for its missing tail) one at a time, each
 * checked to be a folder and not a link once made: a link put in the way is never followed.
 */
const madeFolder = async (real: string): Promise<boolean> => {
  const missing: Array<string> = []
  for (let at = real; (await NodeFs.lstat(at).catch(() => undefined)) === undefined; at = NodePath.dirname(at)) missing.unshift(at)
  for (const folder of missing) {
    await NodeFs.mkdir(folder).catch(() => undefined)
    const info = await NodeFs.lstat(folder).catch(() => undefined)
    if (info === undefined || !info.isDirectory()) return false
  }
  return (await NodeFs.realpath(real).catch(() => undefined)) === real
}

/**
 * Makes an empty file at `real` (a real path but for its missing tail), its folders as
 * `madeFolder` makes them, never through a link: a config file git includes once it exists, made
 * so that it can be bound read-only and no command can write it first. Empty, git reads nothing
 * from it.
 */
const madeFile = async (real: string): Promise<boolean> => {
  if (!(await madeFolder(NodePath.dirname(real)))) return false
  // `wx`: O_CREAT|O_EXCL, which fails on anything there, a link included.
  await NodeFs.writeFile(real, "", { flag: "wx", mode: 0o644 }).catch(() => undefined)
  const info = await NodeFs.lstat(real).catch(() => undefined)
  return info !== undefined && info.isFile() && (await NodeFs.realpath(real).catch(() => undefined)) === real
}

/** The links inside cwd on the way from it to `path` as written (git follows each of them). */
const linksOnTheWay = async (cwd: string, path: string): Promise<ReadonlyArray<string>> => {
  if (!isInside(cwd, path)) return []
  const links: Array<string> = []
  let at = cwd
  for (const name of NodePath.relative(cwd, path).split(NodePath.sep).filter((n) => n !== "")) {
    at = NodePath.join(at, name)
    const info = await NodeFs.lstat(at).catch(() => undefined)
    if (info === undefined) break
    if (info.isSymbolicLink()) links.push(at)
  }
  return links
}

/**
 * Removes what a command made at `paths` (the `commondir` of the repository's git folders, absent
 * before it ran), puts back the links git follows to what is pinned (a `.git` link, a link on the
 * way to a hooks folder) that it changed — a file or folder put in a link's place is set aside, not
 * deleted — and says which, relative to `cwd`. Run once the command's
 * namespace is gone: no process of it is left to make one again. A link whose folder now leads
 * elsewhere is left alone: nothing is removed but where it was.
 */
const undoRedirects = (cwd: string, paths: ReadonlyArray<string>, links: ReadonlyArray<Link> = []): Effect.Effect<ReadonlyArray<string>> =>
  Effect.promise(async () => {
    const removed: Array<string> = []
    for (const path of paths) {
      if ((await NodeFs.lstat(path).catch(() => undefined)) === undefined) continue
      await NodeFs.rm(path, { recursive: true, force: true })
      removed.push(NodePath.relative(cwd, path))
    }
    for (const link of links) {
      if ((await NodeFs.readlink(link.path).catch(() => undefined)) === link.text) continue
      if ((await NodeFs.realpath(NodePath.dirname(link.path)).catch(() => undefined)) !== link.parent) continue
      const info = await NodeFs.lstat(link.path).catch(() => undefined)
      // A changed link is only a name: replaced. A file or folder put in its place may hold the
      // user's work (a vendored copy): set aside beside it, never deleted.
      const aside = info === undefined || info.isSymbolicLink() ? undefined : await setAside(link.path)
      if (aside === undefined) await NodeFs.rm(link.path, { force: true })
      await NodeFs.symlink(link.text, link.path).catch(() => undefined)
      const relative = NodePath.relative(cwd, link.path)
      removed.push(aside === undefined ? relative : `${relative} (what the command put there is now ${NodePath.relative(cwd, aside)})`)
    }
    return removed
  })

const setAside = HookConfigsKept.setAside

/**
 * The folders every command gets fresh and empty (for itself alone): `/tmp` and `/dev/shm`, and
 * without the network `/run` too, where the sockets of the machine's services are (a database's
 * reached by its socket lets the user in without a password, as loopback would not).
 */
const privateFolders = (network: boolean): ReadonlyArray<string> => ["/tmp", "/dev/shm", ...(network ? [] : ["/run"])]

/**
 * Sockets that reach outside the sandbox whatever the network: the user's session (its bus,
 * `systemd --user`, agents: `$XDG_RUNTIME_DIR`), the system bus, container engines (root on the
 * machine) and terminal multiplexers (typing into the user's sessions). Hidden like credentials.
 */
export const hiddenSockets = (uid: number, runtimeDir: string | undefined): ReadonlyArray<string> => [
  runtimeDir !== undefined && runtimeDir !== "" ? runtimeDir : `/run/user/${uid}`,
  "/run/dbus", "/var/run/dbus", "/run/docker.sock", "/var/run/docker.sock", "/run/podman", "/run/containerd", "/run/screen", "/var/run/screen"
]

/**
 * A session whose cwd is the user's home folder, or holds it, would let commands write what runs
 * later outside the sandbox: the shells' start-up files (`.bashrc`, a new `.bash_profile` that bash
 * reads instead of `.profile`), `.gitconfig`, `.config/` (autostart, systemd units, git, fish),
 * `.local/bin` and every folder on `PATH`, effect-agent's compile cache. So the home folder is
 * read-only there, but for its folders that are not dot folders and hold nothing on `PATH` (nor are
 * `bin`): `Documents`, `projects` and the like stay the session's to work in. The mount lines, in order.
 */
const homeInWorkspace = async (cwd: string, path: string | undefined): Promise<ReadonlyArray<ReadonlyArray<string>>> => {
  const home = await RunsLater.homeHeldBy(cwd, path)
  if (home === undefined) return []
  const lines: Array<ReadonlyArray<string>> = [[home.path, home.path, "none", "rbind"], ["none", home.path, "none", "remount,bind,ro"]]
  for (const entry of await NodeFs.readdir(home.path, { withFileTypes: true }).catch(() => [])) {
    const folder = NodePath.join(home.path, entry.name)
    if (entry.isDirectory() && RunsLater.writableInHome(home, entry.name)) lines.push([folder, folder, "none", "rbind"], ["none", folder, "none", "remount,bind,rw"])
  }
  // A start-up file kept in a folder of the user's is read-only where it leads (see `RunsLater.Home.linked`).
  for (const target of home.linked) lines.push([target, target, "none", "bind,ro"])
  return lines
}

/**
 * The mount table the setup applies, in order: the namespace's `/proc`; a private `/tmp` and `/dev/shm`; the working
 * directory bound over itself (with what is mounted in it) and made writable; its git folders
 * pinned and what stays read-only in it; what is hidden.
 */
const mountTable = async (profile: Profile, mounts: ReadonlyArray<MountPoint>): Promise<{ readonly table: string; readonly redirects: ReadonlyArray<string>; readonly links: ReadonlyArray<Link>; readonly gitDirs: ReadonlySet<string>; readonly unnamed: ReadonlyArray<string>; readonly hookConfigs: HookConfigsKept.Before }> => {
  const { cwd } = profile
  const lines: Array<ReadonlyArray<string>> = []
  const isDirectory = async (path: string) => (await NodeFs.stat(path).catch(() => undefined))?.isDirectory() === true
  // The namespace's own /proc, mounted after everything else was made read-only (a /proc mounted
  // before would cover the host's with what is mounted in it, which `mount --all` could then not reach).
  lines.push(["effect-agent-proc", "/proc", "proc", "nosuid,nodev,noexec"])
  const folders = privateFolders(profile.network)
  for (const folder of folders) {
    // A source of its own: `mount --all` passes over an entry whose source and target are mounted already.
    if (await isDirectory(folder)) lines.push(["effect-agent-private", folder, "tmpfs", "mode=1777,nosuid,nodev"])
  }
  // Terminals of its own: the user's (where TIOCSTI could type into a shell) are not there.
  if (await isDirectory("/dev/pts")) {
    lines.push(["effect-agent-pts", "/dev/pts", "devpts", "newinstance,ptmxmode=0666,mode=620"])
    if ((await NodeFs.lstat("/dev/ptmx").catch(() => undefined)) !== undefined) lines.push(["/dev/pts/ptmx", "/dev/ptmx", "none", "bind"])
  }
  lines.push(["/proc/self/cwd", cwd, "none", "rbind,X-mount.mkdir"])
  // Writable again where it was writable: cwd's own mount, and mounts inside it (made read-only with the rest).
  const holder = mounts.filter((m) => isInside(m.path, cwd)).sort((a, b) => b.path.length - a.path.length)[0]
  if (holder?.writable !== false) lines.push(["none", cwd, "none", "remount,bind,rw"])
  for (const m of mounts) if (m.writable && m.path !== cwd && isInside(cwd, m.path)) lines.push(["none", m.path, "none", "remount,bind,rw"])
  // Only what exists, and what the private folders do not cover anyway.
  const visible = (path: string) => isInside(cwd, path) || !folders.some((folder) => isInside(folder, path))
  lines.push(...(await homeInWorkspace(cwd, profile.env.PATH)))
  const pins = await workspacePins(cwd)
  // Recursive: a folder bound over itself keeps what is mounted below it.
  for (const path of pins.anchors) lines.push([path, path, "none", "rbind"])
  for (const path of pins.readOnly) lines.push([path, path, "none", "bind,ro"])
  const hidden = new Set<string>()
  for (const path of [...profile.hidden, ...hiddenSockets(process.getuid?.() ?? 0, profile.env.XDG_RUNTIME_DIR ?? process.env.XDG_RUNTIME_DIR)]) {
    const real = await NodeFs.realpath(path).catch(() => undefined)
    // Never hide the workspace itself (nor a folder it is in).
    if (real === undefined || hidden.has(real) || isInside(real, cwd) || !visible(real)) continue
    hidden.add(real)
    const info = await NodeFs.stat(real).catch(() => undefined)
    if (info?.isDirectory() === true) lines.push(["effect-agent-hidden", real, "tmpfs", "ro,mode=0755,size=4k"])
    else if (info !== undefined) lines.push(["/dev/null", real, "none", "bind"])
  }
  return { table: lines.map((fields) => `${fields.map(escapeMount).join(" ")} 0 0\n`).join(""), redirects: pins.redirects, links: pins.links, gitDirs: pins.gitDirs, unnamed: pins.unnamed, hookConfigs: pins.hookConfigs }
}

/**
 * The argv prefix and environment of one command in the workspace sandbox. The mount table is a
 * file (`mount` reads no pipe), removed when the scope closes.
 *
 * A git folder or `.git` file whose path is not UTF-8 cannot be pinned: a mount is made by a path
 * given as text, and such a path has none. The command does not run then (the setup fails closed,
 * as when a mount fails: exit 125), and the result names the path, escaped, for the user to rename.
 */
export const workspaceLaunch = (
  programs: Programs,
  profile: Profile
): Effect.Effect<Launch, never, Scope.Scope> =>
  Effect.gen(function*() {
    const mounts = yield* Effect.promise(mountPoints)
    // Watched from before the files are looked at to the end of the put-back (the scope's close).
    const approved = profile.approved === undefined
      ? ApprovedWrites.none
      : (yield* Effect.acquireRelease(Effect.sync(() => profile.approved!.watch(profile.cwd)), ({ done }) => Effect.sync(done))).watch
    const { gitDirs, hookConfigs, links, redirects, table, unnamed } = yield* Effect.promise(() => mountTable(profile, mounts))
    if (unnamed.length > 0) return refused(programs, `${unnamed.slice(0, 8).join(", ")}${unnamed.length > 8 ? ", …" : ""} in the working directory: a git or hooks folder whose path is not UTF-8 cannot be kept read-only; rename it`)
    const fstab = yield* Effect.acquireRelease(
      Effect.promise(async () => {
        const dir = await NodeFs.mkdtemp(NodePath.join(NodeOs.tmpdir(), "effect-agent-sandbox-"))
        const file = NodePath.join(dir, "fstab")
        await NodeFs.writeFile(file, table, { mode: 0o600 })
        return dir
      }),
      (dir) => Effect.promise(() => NodeFs.rm(dir, { recursive: true, force: true }))
    )
    const { cwd } = profile
    const readOnlyMounts = mounts.filter((m) => m.writable && m.path !== "/proc" && !m.path.startsWith("/proc/") && !isInside(cwd, m.path)).map((m) => m.path)
    const uid = process.getuid?.() ?? 0
    const gid = process.getgid?.() ?? 0
    const prefix = [
      programs.setpriv, "--pdeathsig", "KILL", "--",
      programs.unshare, "--user", "--map-root-user", "--mount", ...(profile.network ? [] : ["--net"]), "--pid", "--fork", "--kill-child", "--",
      programs.sh, "-c", setup, "effect-agent-sandbox",
      String(uid), String(gid), profile.network ? "on" : "off", cwd, programs.mount, programs.ip ?? "", programs.unshare, NodePath.join(fstab, "fstab"), programs.sh,
      ...counted(readOnlyMounts),
      ...counted(commandEnvironment(profile.env)),
      "--"
    ]
    // The search after the command, once for both its put-back and what it made, when first asked (after `after`).
    const found = yield* Effect.cached(Effect.promise(() => findRepositories(cwd)))
    return {
      prefix,
      env: setupEnvironment,
      after: undoRedirects(cwd, redirects, links),
      kept: Effect.flatMap(found, ({ readByLintStaged }) => Effect.promise(() => HookConfigsKept.keep(hookConfigs, approved, readByLintStaged))),
      made: madeRepositories(cwd, gitDirs, found)
    }
  })

/** A launch that runs nothing: it says why, as the setup says a sandbox it could not set up (exit 125). */
const refused = (programs: Programs, why: string): Launch => ({
  prefix: [programs.sh, "-c", `printf 'effect-agent: the command sandbox could not be set up (%s); the command did not run\\n' "$1" >&2; exit 125`, "effect-agent-sandbox", why],
  env: setupEnvironment
})

/** What the setup runs with: nothing of the command's. */
const setupEnvironment: Readonly<Record<string, string>> = { PATH: "/usr/sbin:/usr/bin:/sbin:/bin" }

/**
 * The command's environment as `NAME=value` words for the setup to export, with `TMPDIR` on the
 * private `/tmp`. A name the shell cannot export (not `[A-Za-z_][A-Za-z0-9_]*`) is left out.
 */
const commandEnvironment = (env: Readonly<Record<string, string>>): ReadonlyArray<string> =>
  Object.entries({ ...env, TMPDIR: "/tmp", TMP: "/tmp", TEMP: "/tmp" })
    .filter(([name]) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
    .map(([name, value]) => `${name}=${value}`)

/** How a probe went: whether it exited 0 and printed what was expected, and the last line it wrote to stderr. */
interface Probe {
  readonly ok: boolean
  readonly error: string
}

/** Runs `argv` with a minimal environment in `cwd`. */
const probe = (argv: ReadonlyArray<string>, expected: string, cwd?: string): Effect.Effect<Probe> =>
  Effect.async<Probe>((resume) => {
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ["ignore", "pipe", "pipe"], env: { PATH: Environment.searchPath(process.env.PATH ?? "/usr/bin:/bin") }, detached: true, ...(cwd === undefined ? {} : { cwd }) })
    let out = ""
    let err = ""
    child.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
      out += chunk
    })
    child.stderr!.setEncoding("utf8").on("data", (chunk: string) => {
      err = (err + chunk).slice(-2000)
    })
    child.on("error", (error) => resume(Effect.succeed({ ok: false, error: error.message })))
    child.on("close", (code) => resume(Effect.succeed({ ok: code === 0 && out.trim() === expected, error: err.trim().split("\n").at(-1) ?? "" })))
    return Effect.sync(() => {
      try {
        process.kill(-child.pid!, "SIGKILL")
      } catch {
        // gone
      }
    })
  })

/** Tries the workspace sandbox on a scratch folder: the command must be PID 1, write its cwd, and not `/`. */
const probeWorkspace = (programs: Programs): Effect.Effect<Probe> =>
  Effect.acquireUseRelease(
    Effect.promise(() => NodeFs.mkdtemp(NodePath.join(NodeOs.tmpdir(), "effect-agent-sandbox-probe-")).then((dir) => NodeFs.realpath(dir))),
    (dir) =>
      Effect.flatMap(
        workspaceLaunch(programs, { cwd: dir, network: false, hidden: [], env: {} }),
        ({ prefix }) => probe([...prefix, "/bin/sh", "-c", "echo $$ > ./probe && cat ./probe && ! (: > /effect-agent-sandbox-probe) 2>/dev/null"], "1", dir)
      ).pipe(Effect.scoped),
    (dir) => Effect.promise(() => NodeFs.rm(dir, { recursive: true, force: true }))
  )

const noUserNamespaces = "this system does not let an unprivileged process make user namespaces"

/**
 * Finds the strongest isolation this system offers, by trying it, and why nothing stronger. Run it
 * once (through `Effect.cached`) and reuse the answer.
 */
export const detect: Effect.Effect<Isolation> = Effect.gen(function*() {
  if (process.platform !== "linux") {
    return { _tag: "None", prefix: [], reason: `${process.platform} has no command sandbox in effect-agent (Linux namespaces only)` }
  }
  const path = process.env.PATH
  const setpriv = which("setpriv", path)
  const unshare = which("unshare", path)
  if (setpriv === undefined) return { _tag: "None", prefix: [], reason: "setpriv (util-linux) is not installed" }
  const parentDeath = [setpriv, "--pdeathsig", "KILL", "--"]
  const mount = which("mount", path)
  let reason = unshare === undefined ? "unshare (util-linux) is not installed" : mount === undefined ? "mount (util-linux) is not installed" : ""
  if (unshare !== undefined) {
    const namespaces = yield* probe([unshare, "--user", "--map-root-user", "/bin/sh", "-c", "echo ok"], "ok")
    if (!namespaces.ok) reason = noUserNamespaces
    else if (mount !== undefined) {
      const programs: Programs = { setpriv, unshare, mount, sh: "/bin/sh", ip: which("ip", path) }
      const workspace = yield* probeWorkspace(programs)
      if (workspace.ok) return { _tag: "Workspace", programs }
      const said = /could not be set up \((.*)\)/.exec(workspace.error)?.[1] ?? workspace.error
      reason = `the sandbox's namespaces or mounts cannot be made here${said === "" ? "" : ` (${said})`}`
    }
    // `--map-current-user` keeps the user's own uid (and no capabilities once the command runs);
    // older util-linux only has `--map-root-user`.
    for (const map of ["--map-current-user", "--map-root-user"]) {
      const prefix = [...parentDeath, unshare, "--user", map, "--pid", "--fork", "--kill-child", "--mount-proc", "--"]
      if ((yield* probe([...prefix, "/bin/sh", "-c", "echo $$"], "1")).ok) return { _tag: "Namespace", prefix, reason }
    }
  }
  if ((yield* probe([...parentDeath, "/bin/sh", "-c", "echo ok"], "ok")).ok) return { _tag: "ParentDeath", prefix: parentDeath, reason }
  return { _tag: "None", prefix: [], reason }
})

/** What a command is started with: an argv prefix, and the environment to start that with (the command's own, unless the prefix passes it on). */
export interface Launch {
  readonly prefix: ReadonlyArray<string>
  readonly env: Readonly<Record<string, string>>
  /**
   * Run once the command is gone, its namespace with it (interrupted too): undoes what the command
   * made that would change what the user's next git command runs, and names it (paths relative to cwd).
   */
  readonly after?: Effect.Effect<ReadonlyArray<string>>
  /**
   * Run with `after`: sets aside the git hook managers' configs the command made and puts back
   * package.json's hook runners' keys it changed (`HookConfigsKept`), and names them; what the file
   * tools wrote meanwhile (`Profile.approved`) is left as they wrote it.
   */
  readonly kept?: Effect.Effect<ReadonlyArray<string>>
  /**
   * Run after `after`: the git folders the command made whose config runs a program or that hold
   * hooks, each with what (paths relative to cwd). Said, never removed.
   */
  readonly made?: Effect.Effect<ReadonlyArray<string>>
}

/**
 * What `mode` makes of the detected isolation: how to start a command with `profile`, or why
 * commands may not run. `off` keeps only the parent-death signal.
 */
export const choose = (
  mode: Mode,
  isolation: Isolation
): { readonly launch: (profile: Profile) => Effect.Effect<Launch, never, Scope.Scope> } | { readonly unavailable: string } => {
  if (mode === "required" && isolation._tag !== "Workspace") {
    return {
      unavailable: `commands must run in a sandbox (sandbox: "required") and this system has none: ${isolation.reason}. ` +
        "The sandbox needs Linux with unprivileged user namespaces (unshare, setpriv and mount from util-linux)"
    }
  }
  const none = (prefix: ReadonlyArray<string>) => ({ launch: (profile: Profile) => Effect.succeed({ prefix, env: profile.env }) })
  if (isolation._tag === "Workspace") {
    const { setpriv } = isolation.programs
    return mode === "off" ? none([setpriv, "--pdeathsig", "KILL", "--"]) : { launch: (profile) => workspaceLaunch(isolation.programs, profile) }
  }
  if (mode === "off" && isolation._tag === "Namespace") return none(isolation.prefix.slice(0, 4))
  return none(isolation.prefix)
}

/** The warning `auto` gives once where commands run without the workspace sandbox: what they can then do. */
export const weaker = (isolation: Isolation): string | undefined =>
  isolation._tag === "Workspace"
    ? undefined
    : `shell commands run without the workspace sandbox on this system (${isolation.reason}): they can write anywhere the agent's user can, read its credentials (~/.ssh, ~/.aws, …) and use the network` +
      (isolation._tag === "Namespace" ? "" : ", and can see the agent's processes")
