/**
 * What git, run where a command line runs it, would run because the repository's own files say so:
 * the settings of its config (and the files that config includes) that name a program —
 * `core.fsmonitor` (run by `git status`, `git diff`, `git grep`, `git ls-files`: every refresh of the
 * index), `diff.external` (`git diff`), a diff driver's `textconv` or `command` (`git log -p`, `git
 * show`, `git blame`, for the files `.gitattributes` — committed content — assigns it), a filter's
 * `clean`/`smudge`/`process` (`git status`, `git diff`, `git checkout`), `gpg.program`, … (see
 * `RunsLater.runsProgram`) — and a `post-index-change` hook, which `git status` runs when it writes
 * the index back. The same for the repositories git reaches from there: its submodules' git folders
 * (`.git/modules/…`, whose `core.fsmonitor` the outer `git status` and `git diff` run) and the
 * repositories below the folder it starts in (bounded as the sandbox's search is).
 *
 * A rule allowing `git status` (or "always" on it, `shell:git:read`) is a choice to run git, not
 * whatever a repository unpacked from an archive, or left by a tool, names in its `.git/config`.
 * The permission policy asks before such a git runs (`CommandAccess.repositoryRuns`). Asking, not
 * running git with those settings turned off (`-c core.fsmonitor=`): a driver's or a filter's
 * settings have the repository's own names, a hook cannot be turned off alone, and the user's own
 * repository keeps working as they set it up, with one question that names what would run.
 *
 * @since 0.1.0
 * @internal
 */
import * as NodeFs from "node:fs/promises"
import * as NodePath from "node:path"
import type { GitAt } from "./CommandPaths.js"
import * as Gitlinks from "./Gitlinks.js"
import * as RunsLater from "./RunsLater.js"
import * as Sandbox from "./Sandbox.js"

/** Values of keys that take a boolean too (`core.fsmonitor = true` is git's own daemon, `pager.branch = false` none): no program. */
const booleans = /^(?:true|false|yes|no|on|off|1|0)$/i

/**
 * Whether a repository's setting names a program git may run: not the include lines (their files'
 * settings are read in their place), not where hooks or the worktree are (`core.hooksPath`, whose
 * hooks are read below; husky sets it in every repository it is installed in), not an empty value
 * (unset) nor a boolean where git takes one.
 */
const namesProgram = (setting: RunsLater.Setting): boolean => {
  if (!RunsLater.runsProgram(setting) || setting.value === "") return false
  const section = setting.section.split(".")[0]!.toLowerCase()
  if (section === "include" || section === "includeif") return false
  if (section === "core" && (setting.key === "hookspath" || setting.key === "worktree")) return false
  return !((section === "pager" || (section === "core" && setting.key === "fsmonitor")) && booleans.test(setting.value))
}

/** The hook a read can run: `git status` (and `git diff`, `git add`) writes the index back when it refreshed it. */
const readHooks = ["post-index-change"]

/** The settings of configs that name a program, as `section.key`, and a note for one too large to read whole. */
const programSettings = (read: { readonly settings: ReadonlyArray<RunsLater.Setting>; readonly unread: boolean }): ReadonlyArray<string> => [
  ...(read.unread ? ["(a config larger than 64 KiB, not checked)"] : []),
  ...read.settings.filter(namesProgram).map((s) => `${s.section}.${s.key}`)
]

/** What one repository's own files make git run, as `section.key` and `hooks/<name>` (its values are the repository's, never shown). */
const programsOf = async (worktree: RunsLater.Worktree, own: ReadonlyArray<RunsLater.ConfigRead>): Promise<ReadonlyArray<string>> => {
  const settings = programSettings(await RunsLater.repositorySettingsOf(worktree, own))
  const folders = [NodePath.join(worktree.gitDir, "hooks"), ...(await RunsLater.gitSettingsOf(worktree, own)).hooks]
  const hooks = await Promise.all(
    folders.flatMap((folder) =>
      readHooks.map(async (name) => ((await NodeFs.stat(NodePath.join(folder, name)).catch(() => undefined))?.isFile() === true ? [`hooks/${name}`] : []))
    )
  )
  return [...settings, ...hooks.flat()]
}

/** The worktree a git folder makes when named by `--git-dir`: its own config and hooks, from `cwd`. */
const namedGitDir = async (gitDir: string, cwd: string): Promise<RunsLater.Worktree> => {
  const common = (await RunsLater.readGitFile(NodePath.join(gitDir, "commondir"))).trim()
  return { gitDir: common === "" ? gitDir : NodePath.resolve(gitDir, common), ownGitDir: gitDir, root: cwd }
}

/** A worktree's own configs, read once for all a check asks of them (its programs, its hooks folders, its object format). */
type ConfigsOf = (worktree: RunsLater.Worktree) => Promise<ReadonlyArray<RunsLater.ConfigRead>>

/** How deep submodules in submodules are followed (as `Sandbox.submoduleGitDirs` follows `.git/modules`). */
const submoduleDepth = 3

/**
 * The populated submodules of a worktree's index, at any depth in its tree and their own in turn
 * (`Gitlinks`), as the worktrees their `.git` makes, whose configs the worktree's `git status` reads
 * wherever their git folders are; a note for an index too large to read.
 */
const submodulesOf = async (
  worktree: RunsLater.Worktree,
  configsOf: ConfigsOf,
  depth = 0,
  indexFiles: ReadonlyArray<string> = [],
  gitlinkFolders: Array<string> = []
): Promise<ReadonlyArray<RunsLater.Worktree | string>> => {
  if (depth >= submoduleDepth) return []
  const sha256 = (await RunsLater.repositorySettingsOf(worktree, await configsOf(worktree))).settings
    .some((s) => s.section === "extensions" && s.key === "objectformat" && s.value.toLowerCase() === "sha256")
  // Its own index, and those the line names (`GIT_INDEX_FILE=other git status`; git reads a relative one from the worktree's root).
  const indexes = [NodePath.join(worktree.ownGitDir, "index"), ...indexFiles.map((file) => NodePath.resolve(worktree.root, file))]
  const read = await Promise.all(indexes.map((file) => Gitlinks.gitlinksOf(file, sha256 ? 32 : 20)))
  const found: Array<RunsLater.Worktree | string> = read.some((links) => links.unread) ? ["(an index larger than 64 MiB or with more than 1,024 submodules, its submodules not checked)"] : []
  const roots = await rootsOf(worktree, configsOf)
  // A submodule whose path is not text cannot be looked into (its `\xff` read as U+FFFD names another
  // folder): said, so the line asks — its git folder's `core.fsmonitor` is what `git status` runs.
  for (const path of new Set(read.flatMap((links) => links.unnamed ?? []))) found.push(`(a submodule whose path is not UTF-8, ${path}: its git config and hooks not checked)`)
  for (const path of new Set(read.flatMap((links) => links.paths))) {
    for (const root of roots) {
      // Populated or not: a line may put a repository there (`mv deep/clone sub && git status`).
      gitlinkFolders.push(NodePath.join(root, path))
      const sub = await RunsLater.worktreeAt(NodePath.join(root, path))
      if (sub !== undefined) found.push(sub, ...(await submodulesOf(sub, configsOf, depth + 1, [], gitlinkFolders)))
    }
  }
  return found
}

/**
 * Where git takes a worktree's files from: beside its `.git` (or where the line's `GIT_WORK_TREE`
 * says), and every folder its configs' `core.worktree` names, taken from its git folder as git
 * takes it (from a linked worktree's own one too: which applies is not read).
 * `git status` looks into the index's submodules there: before, a repository whose config named
 * another folder had the `core.fsmonitor` of a submodule populated only in that folder run under a
 * rule for `git status`. Every value, not only the one that wins: over-reading only asks.
 */
const rootsOf = async (worktree: RunsLater.Worktree, configsOf: ConfigsOf): Promise<ReadonlyArray<string>> => {
  const settings = (await RunsLater.repositorySettingsOf(worktree, await configsOf(worktree))).settings
  const named = settings.filter((s) => s.section === "core" && s.key === "worktree" && s.value !== "").flatMap((s) => [worktree.gitDir, worktree.ownGitDir].map((dir) => RunsLater.hooksFolder(s.value, dir)))
  return [...new Set([worktree.root, ...named])]
}

/** Whether `path` is `folder` or inside it: both real paths, compared as strings (a line may hold 500 fills and 500 gits). */
const within = (folder: string, path: string): boolean => path === folder || path.startsWith(folder.endsWith(NodePath.sep) ? folder : folder + NodePath.sep)

/**
 * Paths as the kernel follows them: each through the real path of its longest existing prefix,
 * component by component (`out -> .` makes `out` cwd; `sub/up -> ..` makes `sub/up` cwd, and `out/..`
 * is the link's parent, not `.`), the rest as written. Before, fills were compared as text: `tar xf
 * t.tar -C out && git status` with a repository's `out -> .` ran the unpacked `core.fsmonitor`. A
 * path that cannot be followed (a loop, a folder it may not enter) counts as `unresolved` (cwd).
 */
const realPaths = (unresolved: string) => {
  // Each existing prefix's real path (`null`: missing; `undefined`: it cannot be followed).
  const prefixes = new Map<string, Promise<string | null | undefined>>()
  const follow = (at: string): Promise<string | null | undefined> => {
    const known = prefixes.get(at)
    if (known !== undefined) return known
    const real = NodeFs.realpath(at).catch((error: NodeJS.ErrnoException) => (error.code === "ENOENT" || error.code === "ENOTDIR" ? null : undefined))
    prefixes.set(at, real)
    return real
  }
  const paths = new Map<string, Promise<string>>()
  return (path: string): Promise<string> => {
    const known = paths.get(path)
    if (known !== undefined) return known
    const real = (async () => {
      let at = NodePath.parse(path).root
      let exists = true
      for (const part of path.split(NodePath.sep)) {
        if (part === "" || part === ".") continue
        if (part === "..") at = NodePath.dirname(at)
        else if (!exists) at = NodePath.join(at, part)
        else {
          const followed = await follow(NodePath.join(at, part))
          if (followed === undefined) return unresolved
          // Past the first missing component the rest is as written: nothing there is a link yet.
          exists = followed !== null
          at = followed ?? NodePath.join(at, part)
        }
      }
      return at
    })()
    paths.set(path, real)
    return real
  }
}

/** Where git, started in `dir`, looks for a repository inside cwd: `.git` in `dir` and in each folder above it, up to cwd's. */
const discoveredAt = (cwd: string, dir: string): ReadonlyArray<string> => {
  const found: Array<string> = []
  for (let at = dir; within(cwd, at); at = NodePath.dirname(at)) {
    found.push(NodePath.join(at, ".git"))
    if (at === cwd) break
  }
  return found
}

/** What a line does to folders before its gits run (`CommandPaths.Named`): what it names to move, remove or copy onto, and what it fills. */
export interface LineChanges {
  readonly swapped?: ReadonlyArray<string> | undefined
  readonly filled?: ReadonlyArray<string> | undefined
}

/**
 * What the repositories the line's gits work in would run that those repositories chose (see the
 * module's comment), each named once, with where it is relative to cwd when not cwd's own. Empty
 * when there is nothing: the common case, a clone git made.
 */
export const chosenByRepository = async (cwd: string, gits: ReadonlyArray<GitAt>, changes: LineChanges = {}): Promise<ReadonlyArray<string>> => {
  // What the line swaps and fills, each as the real path the kernel reaches (see `realPaths`), once for all its gits:
  // before, each was compared with each git's folders through `path.relative` (`tar xf a -C dN; git -C dN status; ` ×
  // 500 took 15–38 s). Cwd itself is never swapped.
  const realCwd = await NodeFs.realpath(cwd).catch(() => NodePath.resolve(cwd))
  const realOf = realPaths(realCwd)
  // Those below cwd, as written or as followed: one through a link out of cwd is still compared with the git's folders,
  // followed the same way (`tar xf t.tar -C out && git -C out status` with `out -> /elsewhere`).
  const lexicalCwd = NodePath.resolve(cwd)
  const resolved = async (texts: ReadonlyArray<string>) => {
    const below = texts.filter((text) => !text.startsWith("~"))
    const real = await Promise.all(below.map((text) => realOf(NodePath.isAbsolute(text) ? text : `${cwd}${NodePath.sep}${text}`)))
    return real.filter((path, i) => within(realCwd, path) || within(lexicalCwd, NodePath.resolve(cwd, below[i]!)))
  }
  const swapped = (await resolved(changes.swapped ?? [])).filter((path) => path !== realCwd)
  const filled = await resolved(changes.filled ?? [])
  const changesAny = swapped.length > 0 || filled.length > 0
  /** Whether a swapped or filled path holds one of `folders` (real paths), or (`inside`) is inside one. */
  const holds = (paths: ReadonlyArray<string>, folders: ReadonlyArray<string>) => paths.some((path) => folders.some((folder) => within(path, folder)))
  const inside = (paths: ReadonlyArray<string>, folders: ReadonlyArray<string>) => paths.some((path) => folders.some((folder) => within(folder, path)))
  const realFolders = async (folders: ReadonlyArray<string>): Promise<Array<string>> => (changesAny ? Promise.all(folders.map(realOf)) : [])
  const found = new Set<string>()
  const seen = new Set<string>()
  const configs = new Map<string, Promise<ReadonlyArray<RunsLater.ConfigRead>>>()
  const keyOf = (worktree: RunsLater.Worktree) => `${worktree.gitDir}\0${worktree.ownGitDir}`
  const configsOf: ConfigsOf = (worktree) => {
    const key = keyOf(worktree)
    const read = configs.get(key) ?? RunsLater.repositoryConfigsOf(worktree)
    configs.set(key, read)
    return read
  }
  const add = async (worktree: RunsLater.Worktree) => {
    const key = keyOf(worktree)
    if (seen.has(key)) return
    seen.add(key)
    // Where, when it is not cwd's own repository: a submodule's or a nested one's, inside cwd (one above is cwd's too).
    const where = NodePath.relative(cwd, worktree.ownGitDir)
    const named = where === ".git" || where.startsWith("..") || NodePath.isAbsolute(where) ? "" : ` (${where})`
    for (const what of await programsOf(worktree, await configsOf(worktree))) found.add(`${what}${named}`)
  }
  // A line naming the same git many times (`git status; ` × 2,000) is read once a place: before, each was read again
  // (its folder's search for nested repositories too), 160 s for a 60 KB line.
  const read = new Set<string>()
  for (const at of gits) {
    const key = JSON.stringify(at)
    if (read.has(key)) continue
    read.add(key)
    // A git whose folder only its run tells (`find -execdir git status`): what it would run cannot be read before.
    if (at.unknownFolder !== undefined) found.add(`(a git whose folder is known only when it runs: ${at.unknownFolder})`)
    const dir = NodePath.resolve(cwd, at.base)
    // A folder the line makes before its git runs there (`cp -r deep/clone y && git -C y status`): what it will hold is
    // not there to read. Before, an exact rule for that line ran the copied repository's core.fsmonitor.
    if (at.makesRepository !== true && (await NodeFs.lstat(dir).catch(() => undefined)) === undefined) {
      found.add("(a git in a folder the line makes first: what it holds is known only when it runs)")
    }
    // A folder the line moves, removes or copies onto before its git runs there, or one holding it (`mv y y.old && mv
    // deep/clone y && git -C y status`): what the check read there may not be what git finds. Cwd itself is left out.
    // Its folder, its git folder, each `.git` git looks for on the way up (`rm -rf y/.git`, `mv d1/ev/.git .`), and the
    // config files the line makes it read (`cp d1/evil.cfg g.cfg && GIT_CONFIG_GLOBAL=g.cfg git status`).
    const configFiles = (at.configs ?? []).map((file) => RunsLater.hooksFolder(file, cwd))
    // As written and as git reaches them: git walks up from the real folder it starts in (`git -C link status`).
    const folders = await realFolders([dir, ...(at.gitDir === undefined ? [] : [NodePath.resolve(cwd, at.gitDir)]), ...discoveredAt(NodePath.resolve(cwd), dir), ...configFiles])
    if (changesAny) folders.push(...discoveredAt(realCwd, folders[0]!))
    const swappedFirst = "(a git in a folder the line moves, removes or copies onto first: what it holds then is known only when it runs)"
    if (holds(swapped, folders)) found.add(swappedFirst)
    // One the line unpacks, patches or copies a folder's contents into, or program text it runs may write in, cwd too
    // (`tar xf t.tar && git status`, `python3 -c 'os.rename(…)' && git -C y status`).
    const filledFirst = "(a git in a folder the line writes unnamed files into first — an archive, a patch, a folder's copy, program text: what it holds then is known only when it runs)"
    if (holds(filled, folders)) found.add(filledFirst)
    const discovered = at.gitDir !== undefined ? await namedGitDir(NodePath.resolve(cwd, at.gitDir), dir) : await RunsLater.worktreeOf(dir)
    // The worktree the line names (`GIT_WORK_TREE=x`, `--work-tree=x`): where git looks for the index's submodules.
    const worktree = discovered === undefined || at.workTree === undefined ? discovered : { ...discovered, root: NodePath.resolve(cwd, at.workTree) }
    if (worktree !== undefined) {
      await add(worktree)
      for (const sub of await Sandbox.submoduleGitDirs(worktree.gitDir)) await add({ gitDir: sub, ownGitDir: sub, root: sub })
      const gitlinkFolders: Array<string> = []
      for (const sub of await submodulesOf(worktree, configsOf, 0, at.indexFiles, gitlinkFolders)) typeof sub === "string" ? found.add(sub) : await add(sub)
      // A submodule's folder the line swaps (`rm -rf sub && mv deep/clone sub && git status`): git looks into what is there then.
      const gitlinks = await realFolders(gitlinkFolders)
      if (holds(swapped, gitlinks) || inside(swapped, gitlinks)) found.add(swappedFirst)
      // Or fills, or fills the repository's git folder (`tar xf t.tar -C sub`, `patch -p1 < p.diff` making `sub/.git`).
      const repository = [...(await realFolders([worktree.root, worktree.gitDir, worktree.ownGitDir])), ...gitlinks]
      if (holds(filled, repository) || inside(filled, gitlinks)) found.add(filledFirst)
    }
    for (const nested of (await Sandbox.findRepositories(dir)).worktrees) await add(nested)
    // Config files the line itself makes git read (`GIT_CONFIG_GLOBAL=./x`, `-c include.path=…`): named by where they are.
    for (const path of configFiles) {
      for (const what of programSettings(await RunsLater.configSettingsOf(path))) found.add(`${what} (${NodePath.relative(cwd, path)})`)
    }
  }
  return [...found]
}
