/**
 * What a write can leave behind that runs later outside the sandbox, without a question: the home
 * folder's start-up files and folders on `PATH` (for a session whose cwd holds the home folder), and
 * git's hooks folders (`core.hooksPath`, husky's `.husky/`). One definition, read by both guards: the
 * command sandbox keeps these read-only (`Sandbox`'s mount table), and the workspace tools mark a
 * write there (`PathAccess.runsLater`) so that the permission policy protects it like `.git/` —
 * asked in every mode that asks, never covered by "always", denied in `readOnly`. Before, the two
 * were separate: the sandbox kept `~/.bashrc` read-only for commands while `write_file` wrote it in
 * `acceptEdits` without asking.
 *
 * @since 0.1.0
 * @internal
 */
import { constants, readFileSync } from "node:fs"
import * as NodeFs from "node:fs/promises"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import * as Environment from "./Environment.js"
import * as Paths from "./Paths.js"

const isInside = (parent: string, child: string) => Paths.isInside(NodePath, parent, child)

/** The user's home folder, for a session whose cwd holds it: its real path and the real folders on `PATH`. */
export interface Home {
  readonly path: string
  readonly onPath: ReadonlyArray<string>
  /**
   * Where the home folder's links that are kept read-only lead, when that is in one of its folders
   * the session may write: a dotfile manager's `.zshrc` -> `dotfiles/zshrc` is the start-up file the
   * shell reads.
   */
  readonly linked: ReadonlyArray<string>
}

/**
 * The home folder when `cwd` (a real path) is it or holds it — only then does a session's write reach
 * what the user's next login, shell or `git` runs without leaving the workspace (a session elsewhere
 * asks for any path outside its cwd anyway). `path` is the `PATH` commands get.
 */
export const homeHeldBy = async (cwd: string, path: string | undefined): Promise<Home | undefined> => {
  const home = await NodeFs.realpath(process.env.HOME ?? NodeOs.homedir()).catch(() => undefined)
  if (home === undefined || home === "/" || !isInside(cwd, home)) return undefined
  // A folder on PATH that does not exist yet (`~/go/bin`) counts as it is written: making it puts programs on PATH.
  const onPath = await Promise.all(
    Environment.searchFolders(path).map((dir) => NodeFs.realpath(dir).catch(() => NodePath.resolve(dir)))
  )
  const partial = { path: home, onPath, linked: [] }
  const linked: Array<string> = []
  for (const entry of await NodeFs.readdir(home, { withFileTypes: true }).catch(() => [])) {
    if (!entry.isSymbolicLink() || writableInHome(partial, entry.name)) continue
    const target = await NodeFs.realpath(NodePath.join(home, entry.name)).catch(() => undefined)
    if (target !== undefined && isInside(home, target) && !readOnlyInHome(partial, target)) linked.push(target)
  }
  return { ...partial, linked }
}

/**
 * Whether the home folder's entry `name` is a folder the session may write: not a dot folder
 * (`.config`, `.local`, `.ssh`: start-up files, units, keys), not `bin`, and holding no folder on
 * `PATH`. Everything else in the home folder — its files (`.bashrc`, a new `.bash_profile`,
 * `.gitconfig`) and new entries — is kept read-only.
 */
export const writableInHome = (home: Home, name: string): boolean =>
  name !== "" && !name.startsWith(".") && name.toLowerCase() !== "bin" && !home.onPath.some((dir) => isInside(NodePath.join(home.path, name), dir))

/** Whether `path` (absolute, normalized) is in the home folder but not below one of its folders the session may write. */
export const readOnlyInHome = (home: Home, path: string): boolean => {
  if (!isInside(home.path, path)) return false
  const segments = NodePath.relative(home.path, path).split(NodePath.sep)
  return segments.length < 2 || !writableInHome(home, segments[0]!) || home.linked.some((target) => isInside(target, path))
}

/**
 * The first `bytes` (4 KiB unless told) of a small file of git's, opened without following a link (unless `followLink`)
 * or waiting on a FIFO ("" when it cannot be read, or is no regular file): only that much is read, however large a
 * command made it.
 */
export const readGitFile = async (file: string, bytes = 4096, followLink = false): Promise<string> => {
  const handle = await NodeFs.open(file, constants.O_RDONLY | constants.O_NONBLOCK | (followLink ? 0 : constants.O_NOFOLLOW)).catch(() => undefined)
  if (handle === undefined) return ""
  try {
    if (followLink && !(await handle.stat()).isFile()) return ""
    const buffer = Buffer.alloc(bytes)
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0)
    return buffer.toString("utf8", 0, bytesRead)
  } catch {
    return ""
  } finally {
    await handle.close()
  }
}

/**
 * How much of a git config is read: a repository's config with many remotes and branches passes
 * 4 KiB, and a `core.hooksPath` set after them (the last one wins) must still be seen.
 */
export const configLimit = 65_536

/**
 * A git config's text, up to one byte past {@link configLimit}: longer than the limit means not read whole. A link
 * is followed, as git follows it (a `.git/config` linked to a file beside it is the config git reads: its
 * `core.fsmonitor` runs), to a regular file only.
 */
export const readGitConfig = (file: string): Promise<string> => readGitFile(file, configLimit + 1, true)

/** One setting of a git config's text: its section (lower case, a subsection's name left out), key (lower case) and value. */
export interface Setting {
  readonly section: string
  readonly key: string
  readonly value: string
}

/**
 * The settings of a git config's text, in order, read as git reads them (its `config.c`): sections
 * and keys are case-insensitive (a `[section "sub"]`'s name is left out); a value runs to the end of
 * its line but for a `\` continuation, loses a `#` or `;` comment outside quotes (even with no space
 * before it: `a#b` is `a`), its double quotes wherever they are (`"x"y"z"` is `xyz`), and has its
 * escapes (`\t`, `\n`, `\b`, `\\`, `\"`) read; white space outside quotes is trimmed at its ends
 * and a run of it inside is kept. A line git would refuse ends the reading there: git refuses the
 * whole file then, and runs nothing of it. `include`s are not followed (they are settings too).
 * Before, a line-by-line reading took `hooksPath = a#b` as `a#b` and `a\` + `/b` as `a\`: the
 * folder pinned was not the one git runs.
 */
const settingsIn = (config: string): ReadonlyArray<Setting> => {
  const settings: Array<Setting> = []
  const text = config.replace(/^\uFEFF/, "").replace(/\r\n/g, "\n")
  let at = 0
  let section = ""
  const isSpace = (c: string | undefined) => c === " " || c === "\t" || c === "\r" || c === "\v" || c === "\f"
  const skipSpaces = () => {
    while (isSpace(text[at])) at++
  }
  /** A value from `at` to its line's end (undefined: git refuses it). */
  const value = (): string | undefined => {
    let out = ""
    let spaces = ""
    let quote = false
    let comment = false
    skipSpaces()
    for (;;) {
      const c = text[at++]
      if (c === undefined || c === "\n") return quote ? undefined : out
      if (comment) continue
      if (!quote && (isSpace(c))) {
        if (out !== "") spaces += " "
        continue
      }
      if (!quote && (c === "#" || c === ";")) {
        comment = true
        continue
      }
      out += spaces
      spaces = ""
      if (c === "\\") {
        const next = text[at++]
        if (next === "\n") continue
        const escaped = next === "t" ? "\t" : next === "n" ? "\n" : next === "b" ? "\b" : next === "\\" || next === "\"" ? next : undefined
        if (escaped === undefined) return undefined
        out += escaped
        continue
      }
      if (c === "\"") {
        quote = !quote
        continue
      }
      out += c
    }
  }
  while (at < text.length) {
    const c = text[at]!
    if (c === "\n" || isSpace(c)) {
      at++
      continue
    }
    if (c === "#" || c === ";") {
      const end = text.indexOf("\n", at)
      at = end === -1 ? text.length : end + 1
      continue
    }
    if (c === "[") {
      const header = /^\[([A-Za-z0-9.-]+)(?:[ \t]+"(?:[^"\\\n]|\\.)*")?\]/.exec(text.slice(at, at + 4096))
      if (header === null) break
      section = header[1]!.toLowerCase()
      at += header[0].length
      continue
    }
    const key = /^[A-Za-z][A-Za-z0-9-]*/.exec(text.slice(at, at + 1024))
    if (key === null || section === "") break
    at += key[0].length
    skipSpaces()
    let read: string | undefined = ""
    if (text[at] === "=") {
      at++
      read = value()
    } else if (text[at] !== "\n" && at < text.length) {
      break
    } else {
      at++
    }
    if (read === undefined) break
    settings.push({ section, key: key[0].toLowerCase(), value: read })
  }
  return settings
}

/** `core.hooksPath` in a git config's text (the last one set wins, as in git). */
export const hooksPathIn = (config: string): string | undefined => {
  const value = settingsIn(config).filter((s) => s.section === "core" && s.key === "hookspath").at(-1)?.value
  return value === "" ? undefined : value
}

/**
 * The settings in a git config's text that make git run a program, or read settings from elsewhere
 * (`include.path`), as `section.key` (a subsection's name left out): what a repository a command
 * made itself can hold for the user's next `git` in it to run, outside the sandbox.
 */
export const programSettingsIn = (config: string): ReadonlyArray<string> =>
  [...new Set(settingsIn(config).filter(runsProgram).map((s) => `${s.section}.${s.key}`))]

/**
 * Whether a git setting makes git run a program or read settings from elsewhere (`section` with its
 * subsection, lower case but the subsection; `key` lower case).
 */
export const runsProgram = ({ key, section, value }: Setting): boolean => {
  const name = section.split(".")[0]!.toLowerCase()
  return (programKeys[name] ?? []).includes(key) || (["alias", "submodule"].includes(name) && value.startsWith("!")) ||
    ["include", "includeif", "pager"].includes(name)
}

/** Per section, the keys whose value is a program git runs (or a place it reads settings from). */
const programKeys: Readonly<Record<string, ReadonlyArray<string>>> = {
  core: ["fsmonitor", "hookspath", "sshcommand", "pager", "editor", "askpass", "gitproxy", "worktree", "alternaterefscommand"],
  sequence: ["editor"],
  diff: ["external", "command", "textconv"],
  merge: ["driver"],
  filter: ["clean", "smudge", "process"],
  credential: ["helper"],
  gpg: ["program", "defaultkeycommand"],
  interactive: ["difffilter"],
  tar: ["command"],
  imap: ["tunnel"],
  sendemail: ["sendmailcmd", "smtpserver", "tocmd", "cccmd", "headercmd"],
  man: ["cmd"],
  lfs: ["path", "clean", "smudge"],
  remote: ["uploadpack", "receivepack", "vcs"],
  uploadpack: ["packobjectshook"],
  difftool: ["cmd", "path"],
  mergetool: ["cmd", "path"],
  browser: ["cmd", "path"],
  web: ["browser"],
  ssh: ["variant"],
  init: ["templatedir"],
  protocol: ["allow"]
}

/**
 * The folder `core.hooksPath` names, absolute: `~/` is the home folder, a relative path is taken
 * from the worktree's root (where git runs hooks).
 */
export const hooksFolder = (value: string, worktree: string): string => {
  if (value === "~" || value.startsWith("~/")) return NodePath.join(process.env.HOME ?? NodeOs.homedir(), value.slice(1))
  // `~name/`: that user's home, as git expands it (before, taken as a folder named `~name` in the worktree).
  const other = /^~([^/]+)(\/.*)?$/.exec(value)
  const home = other === null ? undefined : homeOfUser(other[1]!)
  return home !== undefined ? NodePath.join(home, other![2] ?? "") : NodePath.resolve(worktree, value)
}

/** The home folder of the user `name`, from `/etc/passwd` (`undefined` when there is none). */
const homeOfUser = (name: string): string | undefined => {
  let passwd = ""
  try {
    passwd = readFileSync("/etc/passwd", "utf8")
  } catch {
    return undefined
  }
  const fields = passwd.split("\n").map((line) => line.split(":")).find((f) => f[0] === name && f.length >= 7)
  return fields !== undefined && NodePath.isAbsolute(fields[5]!) ? fields[5] : undefined
}

/**
 * The real path `path` leads to, a missing tail joined to its deepest existing folder's real path
 * (`undefined` when nothing on the way can be resolved).
 */
export const realOrPlanned = async (path: string): Promise<string | undefined> => {
  const tail: Array<string> = []
  for (let at = path; ; at = NodePath.dirname(at)) {
    const real = await NodeFs.realpath(at).catch(() => undefined)
    if (real !== undefined) return NodePath.join(real, ...tail)
    if (at === NodePath.dirname(at)) return undefined
    tail.unshift(NodePath.basename(at))
  }
}

/** Husky's folder at a worktree's root: its `_/` is the hooks folder git runs, and the scripts there run the ones beside it. */
export const husky = ".husky"

/**
 * Folders inside a workspace whose files decide what later runs do, wherever they are and in any
 * case: git's, the agent's, husky's (`.husky/`, whose scripts git's hooks run once husky is
 * installed), and editors' (`.vscode/`, `.idea/`: a task run when the folder opens, the interpreter
 * or `git` a setting names; Zed's `.zed/` and Helix's `.helix/`: the language servers and tasks they
 * run for the project; `.devcontainer/` and `.devcontainer.json`: the `initializeCommand` an editor
 * runs on the host before it builds the container; Neovim's and Vim's project files `.nvim.lua`,
 * `.nvimrc`, `.exrc`, which run with `exrc` set — Neovim asks before it trusts one, Vim does not).
 * The file tools ask before writing there and a rewind never does; commands are not kept from the
 * editors' (docs/security.md says why).
 */
const protectedFolderNames: ReadonlySet<string> = new Set([
  ".git",
  ".effect-agent",
  husky,
  ".vscode",
  ".idea",
  ".zed",
  ".helix",
  ".devcontainer",
  ".devcontainer.json",
  ".nvim.lua",
  ".nvimrc",
  ".exrc"
])

/**
 * What the other git hook managers' installed hooks read at each commit, outside the sandbox, as
 * husky's run `.husky/`: pre-commit's `.pre-commit-config.yaml`, lefthook's `lefthook.yml` (and
 * `.lefthook.yml`, `lefthook-local.yml`, `.yaml`/`.toml`/`.json`/`.jsonc`, `.config/lefthook.yml`)
 * with its scripts' folders `.lefthook/` and `.lefthook-local/`, overcommit's `.overcommit.yml` with
 * its hooks' folder `.git-hooks/`, and lint-staged's `.lintstagedrc*` and `lint-staged.config.*`
 * (which a husky hook runs), and the hook runners' own: husky 4's `.huskyrc*` and `husky.config.*`,
 * simple-git-hooks' `(.)simple-git-hooks.{cjs,js,mjs,json}`, nano-staged's `(.)nano-staged.*` and
 * `.nanostagedrc*`. Protected as the folders above are, in any case and at any depth
 * (lint-staged reads one beside each staged file; review 52).
 */
const hookManagerFolders: ReadonlySet<string> = new Set([".lefthook", ".lefthook-local", ".git-hooks"])
const hookManagerConfig = new RegExp(
  "^(?:\\.pre-commit-config\\.ya?ml|\\.?lefthook(?:-local)?\\.(?:ya?ml|toml|jsonc?)|\\.overcommit\\.ya?ml|\\.lintstagedrc(?:\\..+)?|lint-staged\\.config\\..+" +
    // The hook runners' own configs (review 57b): husky 4's, simple-git-hooks', nano-staged's.
    "|\\.huskyrc(?:\\..+)?|husky\\.config\\..+|\\.?simple-git-hooks\\.(?:c?js|mjs|json)|\\.?nano-staged\\.(?:json|c?js|mjs|ya?ml)|\\.nanostagedrc(?:\\..+)?)$"
)

/** Whether a path's part names a hook manager's config or folder, in any case (`hookManagerConfig`). */
const isHookManagerName = (segment: string): boolean => hookManagerFolders.has(segment) || hookManagerConfig.test(segment)

/** The hook managers' configs and folders at a worktree's root (and lefthook's in `.config/`) that exist: what the sandbox keeps read-only. */
export const hookManagerFiles = async (root: string): Promise<ReadonlyArray<string>> => {
  const named = async (folder: string) =>
    (await NodeFs.readdir(folder).catch(() => [] as Array<string>)).filter((name) => isHookManagerName(name.toLowerCase())).map((name) => NodePath.join(folder, name))
  return [...(await named(root)), ...(await named(NodePath.join(root, ".config")))]
}

/**
 * What lint-staged reads below a worktree's root as well as at it (its configs and `package.json`'s
 * `lint-staged` key): it lists them all (`git ls-files '**' + name`, untracked ones too) and takes,
 * for each staged file, the nearest above it. The other hook managers read their root's alone.
 */
const readBelowRoot = /^(?:package\.json|\.lintstagedrc(?:\..+)?|lint-staged\.config\..+)$/

/** Whether a file's name is one lint-staged reads at any depth (`readBelowRoot`). */
export const readAtAnyDepth = (name: string): boolean => readBelowRoot.test(name)

/** Whether a path (relative or absolute) has a part naming one of the protected folders or a hook manager's config, in any case. */
export const inProtectedFolder = (path: string): boolean =>
  path.split(/[\\/]+/).some((segment) => {
    const lower = segment.toLowerCase()
    return protectedFolderNames.has(lower) || isHookManagerName(lower)
  })

/**
 * Where git takes a worktree's hooks setting from: the git folder whose `config` holds the
 * repository's settings (a linked worktree's common one), the worktree's own git folder (its
 * `config.worktree`), and the worktree's root, from which a relative `core.hooksPath` is taken.
 */
export interface Worktree {
  readonly gitDir: string
  readonly ownGitDir: string
  readonly root: string
}

/** How deep git follows includes (its own limit). */
const includeDepth = 10

/**
 * The settings of the config file `file` in the order git reads them, each `include.path` and
 * `includeIf.<condition>.path` followed in place (relative to the including file's folder, `~/` the
 * home folder; every condition is taken as met: the files are the user's and pinned, so whichever
 * git takes is covered), and every file included, read or not (one that does not exist yet is
 * read once it does).
 */
/** What reading a config gave: its settings in git's order, the files it includes, and whether it was too large to read whole. */
export interface ConfigRead {
  readonly settings: ReadonlyArray<Setting>
  readonly included: Array<string>
  readonly unread: boolean
}

const configOf = async (file: string, depth = 0, included: Array<string> = []): Promise<ConfigRead> => {
  const settings: Array<Setting> = []
  const text = await readGitConfig(file)
  for (const setting of settingsIn(text)) {
    settings.push(setting)
    const include = setting.key === "path" && (setting.section === "include" || setting.section === "includeif") && setting.value !== ""
    if (!include || depth >= includeDepth) continue
    const path = hooksFolder(setting.value, NodePath.dirname(file))
    if (included.includes(path)) continue
    included.push(path)
    settings.push(...(await configOf(path, depth + 1, included)).settings)
  }
  // Whether this file (not one it includes) was longer than what is read of it.
  return { settings, included, unread: text.length > configLimit }
}

/** The settings of the config file `file` and the files it includes, and whether it was too large to read whole. */
export const configSettingsOf = async (file: string): Promise<{ readonly settings: ReadonlyArray<Setting>; readonly unread: boolean }> => {
  const { settings, unread } = await configOf(file)
  return { settings, unread }
}

/**
 * A repository's own configs as git reads them: its `config`, then the worktree's `config.worktree`,
 * the files they include followed. Read once by a caller that asks several things of them.
 */
export const repositoryConfigsOf = (worktree: Worktree): Promise<ReadonlyArray<ConfigRead>> =>
  Promise.all([NodePath.join(worktree.gitDir, "config"), NodePath.join(worktree.ownGitDir, "config.worktree")].map((file) => configOf(file)))

/**
 * The settings of a repository's own configs — its `config`, the worktree's `config.worktree` and
 * the files they include (followed as git follows them) — in the order git reads them, and whether
 * one of the two was too large to read whole (see {@link configLimit}).
 */
export const repositorySettingsOf = async (
  worktree: Worktree,
  own?: ReadonlyArray<ConfigRead>
): Promise<{ readonly settings: ReadonlyArray<Setting>; readonly unread: boolean }> => {
  const configs = own ?? await repositoryConfigsOf(worktree)
  return { settings: configs.flatMap((config) => config.settings), unread: configs.some((config) => config.unread) }
}

/**
 * The user's own git configs, in the order git reads them before a repository's: the system's
 * (unless `GIT_CONFIG_NOSYSTEM`), then `GIT_CONFIG_GLOBAL`, else `$XDG_CONFIG_HOME/git/config` (or
 * `~/.config/git/config`) and `~/.gitconfig`. A relative `core.hooksPath` set there (`.githooks`,
 * each repository's own) names a folder inside every repository.
 */
const userConfigs = (): ReadonlyArray<string> => {
  const home = process.env.HOME ?? NodeOs.homedir()
  const xdg = process.env.XDG_CONFIG_HOME !== undefined && NodePath.isAbsolute(process.env.XDG_CONFIG_HOME) ? process.env.XDG_CONFIG_HOME : NodePath.join(home, ".config")
  const system = process.env.GIT_CONFIG_NOSYSTEM === undefined || process.env.GIT_CONFIG_NOSYSTEM === "" ? [process.env.GIT_CONFIG_SYSTEM ?? "/etc/gitconfig"] : []
  const global = process.env.GIT_CONFIG_GLOBAL !== undefined && process.env.GIT_CONFIG_GLOBAL !== "" ? [process.env.GIT_CONFIG_GLOBAL] : [NodePath.join(xdg, "git", "config"), NodePath.join(home, ".gitconfig")]
  return [...system, ...global]
}

/** What a worktree's git settings name that git runs or reads later: its hooks folders, and the files its configs include. */
export interface GitSettings {
  /**
   * Every folder a `core.hooksPath` names, absolute and as written: not only the one that wins (a
   * conditional include may decide which does), from the user's configs too, each relative one
   * from the worktree's root and from the root `core.worktree` names.
   */
  readonly hooks: ReadonlyArray<string>
  /** The files the repository's configs and the user's own include (`include.path`, `includeIf`), absolute, followed as git follows them. */
  readonly included: ReadonlyArray<string>
}

/** The git settings of a worktree (see {@link GitSettings}). */
export const gitSettingsOf = async (worktree: Worktree, ownRead?: ReadonlyArray<ConfigRead>): Promise<GitSettings> => {
  const user = await Promise.all(userConfigs().map((file) => configOf(file)))
  const own = ownRead ?? await repositoryConfigsOf(worktree)
  const settings = [...user, ...own].flatMap((config) => config.settings).filter((s) => s.section === "core")
  const roots = [worktree.root, ...settings.filter((s) => s.key === "worktree" && s.value !== "").map((s) => hooksFolder(s.value, worktree.gitDir))]
  const values = [...new Set(settings.filter((s) => s.key === "hookspath" && s.value !== "").map((s) => s.value))]
  const hooks = values.flatMap((value) => roots.map((root) => hooksFolder(value, root)))
  // Your own configs' includes too: one may name a file in the workspace (`~/projects/dotfiles/git.conf` with cwd at home).
  return { hooks: [...new Set(hooks)], included: [...new Set([...user, ...own].flatMap((config) => config.included))] }
}

/** The worktree `dir/.git` makes, as git reads it: a folder, or a file naming one (whose `commondir` names the repository's). */
export const worktreeAt = async (dir: string): Promise<Worktree | undefined> => {
  const dotGit = NodePath.join(dir, ".git")
  const info = await NodeFs.stat(dotGit).catch(() => undefined)
  if (info === undefined) return undefined
  let ownGitDir = dotGit
  // Read where links lead, as `stat` above and git do: a `.git` linked to a file naming a folder is that folder's worktree.
  if (info.isFile()) {
    const named = /^gitdir: *(.+?)\r?$/m.exec(await readGitFile(dotGit, 4096, true))?.[1]
    if (named === undefined) return undefined
    ownGitDir = NodePath.resolve(dir, named)
  }
  const common = (await readGitFile(NodePath.join(ownGitDir, "commondir"), 4096, true)).trim()
  return { gitDir: common === "" ? ownGitDir : NodePath.resolve(ownGitDir, common), ownGitDir, root: dir }
}

/** The worktree `cwd` is in, found as git finds it: from cwd up. */
export const worktreeOf = async (cwd: string): Promise<Worktree | undefined> => {
  for (let dir = cwd; ; dir = NodePath.dirname(dir)) {
    if ((await NodeFs.lstat(NodePath.join(dir, ".git")).catch(() => undefined)) !== undefined) return worktreeAt(dir)
    if (dir === NodePath.dirname(dir)) return undefined
  }
}

/**
 * The folders of the repository `cwd` is in whose files git runs or takes its settings from: its
 * git folders where they really are, the folders its `core.hooksPath` names (see `gitSettingsOf`)
 * and the files its configs include, as written and where they lead (also where they would be made). For the file tools' writes; the sandbox pins
 * the same folder of every repository it pins.
 */
export const hooksFoldersOf = async (cwd: string): Promise<ReadonlyArray<string>> => {
  const worktree = await worktreeOf(cwd)
  if (worktree === undefined) return []
  // Its git folders where they really are: a `.git` link or file may lead to one not named `.git` (`.bare`).
  const gitDirs = await Promise.all([worktree.gitDir, worktree.ownGitDir].map((dir) => NodeFs.realpath(dir).catch(() => undefined)))
  const settings = await gitSettingsOf(worktree)
  const named = [...settings.hooks, ...settings.included]
  const real = await Promise.all(named.map(realOrPlanned))
  // A hooks folder that is cwd or holds it is left out, as the sandbox leaves it: every write would ask.
  const hooks = [...named, ...real].filter((path) => path !== undefined && !isInside(path, cwd))
  return [...new Set([...gitDirs, ...hooks].filter((path) => path !== undefined))]
}

/** Whether a folder is one git takes as a repository's git folder: a `HEAD` beside `objects/` and `refs/`, or a linked worktree's (`commondir`). */
const isGitFolder = async (dir: string): Promise<boolean> => {
  const info = (name: string) => NodeFs.stat(NodePath.join(dir, name)).catch(() => undefined)
  // Most folders have no HEAD: one look each.
  if ((await info("HEAD"))?.isFile() !== true) return false
  const [objects, refs, common] = await Promise.all(["objects", "refs", "commondir"].map(info))
  return (objects?.isDirectory() === true && refs?.isDirectory() === true) || common?.isFile() === true
}

/**
 * Whether `path` (absolute, normalized) is in a git folder below `cwd`, whatever its name. A
 * `.git` file can name one anywhere (`git init --separate-git-dir=gd sub` makes `gd`), and once
 * that worktree is staged as a submodule your own `git status` runs what `gd/config` names: such
 * a folder is kept as `.git/` is. Its parents are looked at up to cwd (cwd itself and above are
 * left out, as a hooks folder holding cwd is: every write would ask). With `itself`, `path` is
 * looked at too: a write *onto* such a folder (`cp config gd`, `unzip -d gd x.zip`, `cp -r evil/.
 * gd`) writes into it, as one onto `.git` does.
 */
export const inGitFolder = async (cwd: string, path: string, seen = new Map<string, Promise<boolean>>(), itself = false): Promise<boolean> => {
  const folders: Array<Promise<boolean>> = []
  for (let dir = itself ? path : NodePath.dirname(path); dir !== cwd && isInside(cwd, dir); dir = NodePath.dirname(dir)) {
    // A line's many paths share their folders: each is looked at once (`seen`, kept by the caller), all at the same time.
    const looked = seen.get(dir) ?? isGitFolder(dir)
    seen.set(dir, looked)
    folders.push(looked)
  }
  return (await Promise.all(folders)).some((found) => found)
}

/** Why a write into a git folder runs later outside the sandbox (see {@link reasonFor}). */
export const gitFolderReason = "git takes its settings or hooks from here (a git folder, core.hooksPath, a config's include) and runs them outside the sandbox"

/**
 * Why a write to `path` (absolute, normalized) runs later outside the sandbox, if it does: in the
 * read-only part of a home folder the cwd holds, or in a hooks folder.
 */
export const reasonFor = (facts: { readonly home: Home | undefined; readonly hooks: ReadonlyArray<string> }, path: string): string | undefined =>
  facts.home !== undefined && readOnlyInHome(facts.home, path)
    ? "the home folder's start-up files, dot folders and folders on PATH run later, outside the sandbox"
    : facts.hooks.some((folder) => isInside(folder, path))
    ? gitFolderReason
    : undefined
