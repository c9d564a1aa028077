/**
 * What files a command line names, for the shell tool's outside-path check. Any word may name a
 * file (`cat notes.md`, where `notes.md` is a link out of the workspace), so every argument is a
 * candidate, and so is every part of a word a program may read as a path:
 *
 * - the value of `--name=value`, of `name=value` (`dd if=…`, `make VAR=…`) and of `@file` (response files);
 * - the path of a `file:` URL (`curl file:///etc/passwd`), `%XX` decoded;
 * - the rest of a short option cluster (`-fPATH`, `-o/x`, `-I/usr/include`): every suffix after the
 *   option letter, since which letters take a value differs from program to program;
 * - relative words again against a `-C dir` / `--directory=dir` (git, make, tar work from there);
 * - the file of a redirection, and the script of `sh -c` / `bash -c …`, read as a command line itself.
 *
 * What cannot be known before the command runs — a word the shell expands (`$HOME`, `$(…)`, backticks),
 * `~user`, a file list a program reads names from — counts as outside. Through a shell, unquoted
 * globs are expanded here as the shell would (bounded). A command that walks trees (`grep -r`, `rg`,
 * `find`, `du`, `ls -R`, `cp -r`, `rsync -a`, `tar c`, …) has its trees searched for links that lead
 * out, within caps of entries and time; a link found, or a cap reached, counts as outside. Whether this
 * particular build of the program would follow such a link does not matter: GNU, BSD and busybox differ.
 *
 * Over-reporting only ever makes the policy ask; nothing here allows anything.
 *
 * @since 0.4.0
 * @internal
 */
import type { Dirent } from "node:fs"
import * as NodeFs from "node:fs/promises"
import * as NodePath from "node:path"
import * as Effect from "effect/Effect"
import type { PathAccess } from "../../services/ToolRouter.js"
import * as CommandLine from "./CommandLine.js"
import * as CommandRisk from "./CommandRisk.js"
import * as Glob from "./Glob.js"
import * as GlobalOptions from "./GlobalOptions.js"
import * as Options from "./Options.js"
import * as LineFills from "./LineFills.js"
import * as PythonShadows from "./PythonShadows.js"
import * as Paths from "./Paths.js"
import * as Walk from "./Walk.js"

/** What a command line names, before anything is resolved. */
export interface Named {
  /** Texts that may name a file: absolute, `~/…`, or relative to cwd. */
  readonly files: ReadonlyArray<string>
  /** Words whose meaning is known only when the command runs, with why. */
  readonly unknown: ReadonlyArray<{ readonly word: string; readonly why: string }>
  /** Unquoted globs the shell expands. */
  readonly globs: ReadonlyArray<CommandLine.Word>
  /** Folders a command walks recursively (as written; relative to cwd). */
  readonly trees: ReadonlyArray<string>
  /**
   * Paths git reads relative to the root of the repository it runs in (`git show HEAD:secret`,
   * `git diff -- :/secret`), with the folder it runs in (`base`, relative to cwd: `-C dir`, else "").
   */
  readonly fromRepositoryRoot: ReadonlyArray<{ readonly path: string; readonly base: string }>
  /**
   * Where each git the line runs works (`GitPrograms`): the folder it starts from (relative to cwd:
   * `-C dir`, else "") and the git folder `--git-dir` names, when it does. A word naming git after a
   * wrapper or runner counts too (`nice git status`, `xargs git`).
   */
  readonly gits: ReadonlyArray<GitAt>
  /**
   * Texts of `files` that only a git's own folder words name — `-C dir`, `--git-dir=dir`, `GIT_DIR=dir`
   * (lazygit's `-p`, `-g`): git reads the repository there and writes nothing onto that folder, as a
   * command's destination does (`cp config gd`, `unzip -d gd`). See `RunsLater.isGitFolder`'s callers.
   */
  readonly readByGit: ReadonlyArray<string>
  /**
   * Texts a command that moves, removes, copies, links or unpacks files names (`mv y y.old`, `rm -rf
   * y`, `cp -r x y`): a git after it in a folder one of them names, or one holding it, may find
   * other contents there than the check read (see `GitPrograms.chosenByRepository`).
   */
  readonly swapped: ReadonlyArray<string>
  /**
   * Folders a command fills with entries the line does not name (`tar xf t.tar`, `cp -r x/. d`,
   * `patch -p1 < p.diff`: `LineFills`), cwd as `.`, each from every folder the line may have moved
   * to: a git after it whose folder, repository or submodule one holds may find other contents there
   * than the check read — cwd included, unlike `swapped`.
   */
  readonly filled: ReadonlyArray<string>
  /** Where each Python that puts its folder first on its import path starts (`python3 -c`, `-m`): see `PythonShadows`. */
  readonly pythons: ReadonlyArray<PythonShadows.PythonAt>
}

/** Where a git of a line works: see {@link Named.gits}. */
export interface GitAt {
  readonly base: string
  readonly gitDir?: string | undefined
  /** Config files the line makes git read besides the repository's (`GIT_CONFIG_GLOBAL=…`, `-c include.path=…`), relative to cwd. */
  readonly configs?: ReadonlyArray<string> | undefined
  /** The worktree `--work-tree` or `GIT_WORK_TREE` names (relative to cwd): git looks for the index's submodules there. */
  readonly workTree?: string | undefined
  /** Index files `GIT_INDEX_FILE` names for it, as written: git takes a relative one from its worktree's root. */
  readonly indexFiles?: ReadonlyArray<string> | undefined
  /** Why the folder this git works in is known only when it runs (`find -execdir git …`, `xargs -I{} git -C {} …`): it asks. */
  readonly unknownFolder?: string | undefined
  /** Whether this git makes the repository it works in (`git init`, `git clone`): a folder not there yet holds nothing it runs. */
  readonly makesRepository?: boolean | undefined
}

/** A path as a program that moved to `base` takes it: an absolute one stays. */
const from = (base: string, path: string) => (NodePath.isAbsolute(path) ? path : NodePath.join(base, path))

/**
 * Where git works after its own options `-C dir` (each one from the last), `--git-dir` and
 * `--work-tree` (from the folder the last `-C` moved to, wherever they stand: git sets GIT_DIR, then
 * moves, then resolves it), and the files `-c include.path=` names; lazygit's `-p`/`--path`,
 * `-g`/`--git-dir` and `-w`/`--work-tree` the same way.
 */
const gitAt = (program: string, args: ReadonlyArray<CommandLine.Word>): { readonly at: GitAt; readonly folderWords: ReadonlySet<number> } => {
  let base = ""
  let gitDir: string | undefined
  let workTree: string | undefined
  const configs: Array<string> = []
  let byVariable = false
  // The indices of the words naming the folder git moves to or its git folder (the option and its value).
  const folderWords = new Set<number>()
  const values = args.map((w) => w.value)
  const lazygit = program === "lazygit"
  const end = lazygit ? values.length : GlobalOptions.subcommandIndex("git", values)
  const valueOf = (i: number, short: string, long: string): string | undefined => {
    const v = values[i]!
    if (v === short || v === long) return values[i + 1]
    if (v.startsWith(`${long}=`)) return v.slice(long.length + 1)
    return short.length === 2 && v.startsWith(short) && v.length > 2 ? v.slice(2) : undefined
  }
  for (let i = 0; i < Math.min(end, values.length); i++) {
    const next = values[i + 1]
    const moved = valueOf(i, lazygit ? "-p" : "-C", lazygit ? "--path" : "-C")
    const named = valueOf(i, lazygit ? "-g" : "--git-dir", "--git-dir")
    const tree = valueOf(i, lazygit ? "-w" : "--work-tree", "--work-tree")
    if (moved !== undefined || named !== undefined) {
      folderWords.add(i)
      // `-C dir`, `--git-dir dir`: the value is the next word (`-Cdir`, `--git-dir=dir` hold it).
      if (!/^-[^-]./.test(values[i]!) && !values[i]!.includes("=")) folderWords.add(i + 1)
    }
    if (moved !== undefined) base = from(base, moved)
    else if (named !== undefined) gitDir = named
    else if (tree !== undefined) workTree = tree
    else if (values[i] === "-c" && next !== undefined && includePath.test(next)) configs.push(next.slice(next.indexOf("=") + 1))
    else if ((values[i] === "--config-env" && next !== undefined && includePath.test(next)) || includePath.test(values[i]!.replace(/^--config-env=/, "")) && values[i]!.startsWith("--config-env=")) {
      // `--config-env=include.path=V`: the file is V's value, from the environment it runs in.
      byVariable = true
    }
  }
  const subcommand = lazygit ? undefined : values[end]
  const at = {
    base,
    ...(subcommand === "init" || subcommand === "clone" ? { makesRepository: true } : {}),
    ...(gitDir === undefined ? {} : { gitDir: from(base, gitDir) }),
    ...(workTree === undefined ? {} : { workTree: from(base, workTree) }),
    ...(configs.length === 0 ? {} : { configs }),
    ...(byVariable ? { unknownFolder: "--config-env names a config file it includes by a variable's value" } : {})
  }
  return { at, folderWords }
}

/** Programs that move, remove, copy, link or unpack files: what a folder holds may be another's after them (see `Named.swapped`). */
const swaps = new Set(["mv", "rm", "rmdir", "cp", "rsync", "ln", "tar", "bsdtar", "unzip", "install", "ditto", "cpio", "unlink", "scp"])

/** find's actions that run a program: `-execdir` and `-okdir` in the folder of each file found. */
const findRuns = new Set(["-exec", "-execdir", "-ok", "-okdir"])

/** The string xargs replaces with each line it reads (`-I R`, `-iR`, `--replace[=R]`), if it replaces one. */
const xargsReplaces = (words: ReadonlyArray<string>): string | undefined => {
  for (let i = 0; i < words.length; i++) {
    const w = words[i]!
    if (w === "-I") return words[i + 1]
    if (/^-[Ii]./.test(w)) return w.slice(2)
    if (w === "-i" || w === "--replace") return "{}"
    if (w.startsWith("--replace=")) return w.slice("--replace=".length)
  }
  return undefined
}

/**
 * Why the folders the gits a command starts work in are known only when they run, if they are:
 * find's `-execdir` runs its program in the folder of each match (at any depth, past the search's
 * reach); a placeholder in a git's folder, git folder or subcommand (`find -exec git -C {} …`,
 * `xargs -I{} git -C {} …`, `parallel git -C {} …`) is filled from what the runner finds or reads;
 * xargs and parallel add their input to a git with no subcommand yet (`xargs git -C`). `gitWords`:
 * the words after the command's own git, when it starts one. A git after a wrapper that does not
 * move (`nice`, `timeout`, `flock f`) works where the line says.
 */
const folderKnownWhenRun = (argv: ReadonlyArray<string>, at: GitAt, gitWords: ReadonlyArray<string> | undefined): string | undefined => {
  const programs = new Set(argv.map((w) => NodePath.basename(w)))
  const find = programs.has("find")
  if (find && argv.some((w) => w === "-execdir" || w === "-okdir")) return "find -execdir runs it in each folder it finds"
  const xargs = programs.has("xargs")
  const parallel = programs.has("parallel")
  const replaced = xargs ? xargsReplaces(argv) : undefined
  const placeholder = parallel ? "{" : replaced ?? (find ? "{}" : undefined)
  const runner = parallel ? "parallel" : xargs ? "xargs" : "find"
  // git's own words up to its subcommand (a `-C…` in the input's place is an option too), before parallel's inputs and find's `;`.
  const words = gitWords ?? []
  const stop = words.findIndex((w) => /^(?::::|;$|\+$)/.test(w))
  const own = stop < 0 ? words : words.slice(0, stop)
  const sub = GlobalOptions.subcommandIndex("git", own)
  // Git's variables on the command too (`xargs -I{} env GIT_DIR={} git status`).
  const named = [at.base, at.gitDir ?? "", ...(at.configs ?? []), ...own.slice(0, sub + 1), ...argv.filter((w) => w.startsWith("GIT_"))]
  if (placeholder !== undefined && named.some((w) => w.includes(placeholder))) return `${runner} fills in its folder`
  if (gitWords !== undefined && (xargs || parallel) && replaced === undefined && sub >= own.length) return `${runner} adds its input to git's options`
  return undefined
}

/** A `-c` setting that makes git read another config file (git takes only an absolute one, or `~/…`, from the command line). */
const includePath = /^include(?:if\..*)?\.path=/is

/** Programs that show a repository by running git in it (`tig` runs `git status` and `git log`; `tig -C dir` as git's). */
const gitFrontends = new Set(["tig", "lazygit", "gitui", "gitk", "git-cola"])

/** Git's variables naming its git folder, and the config files it reads in place of the user's. */
const gitDirVariables = /^(?:GIT_DIR|GIT_COMMON_DIR)=(.*)$/s
const configVariables = /^(?:GIT_CONFIG_GLOBAL|GIT_CONFIG_SYSTEM|GIT_CONFIG)=(.*)$/s
/**
 * The homes whose global config git reads (round 28: `HOME=. git status` ran a repository's `.gitconfig`'s
 * `core.fsmonitor`, `XDG_CONFIG_HOME=. git status` its `git/config`), and the files there.
 */
const homeVariable = /^HOME=(.*)$/s
const xdgConfigVariable = /^XDG_CONFIG_HOME=(.*)$/s
const homeConfigs = (home: string) => [NodePath.join(home, ".gitconfig"), NodePath.join(home, ".config", "git", "config")]
/** The index git reads in place of the git folder's own: its gitlinks are the submodules git looks into. */
const indexVariable = /^GIT_INDEX_FILE=(.*)$/s
const workTreeVariable = /^GIT_WORK_TREE=(.*)$/s

/** Shell words that open a compound command or negate one: the program is the word after them (`{ cd x; }`, `f(){ cd x; }`, `! cd x`). */
const reservedWords = new Set(["{", "!", "if", "then", "else", "elif", "while", "until", "do",
  // zsh's `-` precommand modifier runs the command after it (`zsh -c '- git -C x status'`; in bash, a command not found).
  "-"])

/**
 * The words of the command the line's own shell runs, after the words that run it there: `command`
 * (its `-p`; not with `-v`/`-V`, which only tell what a name is), `builtin`, bash's `time` (its
 * `-p`), and `--`. `command cd x; git status` moves the git as `cd x` does: the check read only the
 * first word, and git 2.39 ran `x`'s `core.fsmonitor` under an exact rule for the line.
 */
const shellRuns = (words: ReadonlyArray<string>): ReadonlyArray<string> => {
  let i = 0
  // zsh's precommand modifiers `noglob`, `nocorrect` and `-` run the builtin after them as well (`zsh -c 'noglob cd x; git status'`).
  while (words[i] === "command" || words[i] === "builtin" || words[i] === "time" || words[i] === "noglob" || words[i] === "nocorrect" || words[i] === "-") {
    const start = i++
    for (; words[i] === "--" || /^-[pvV]+$/.test(words[i] ?? ""); i++) if (/[vV]/.test(words[i]!)) return words.slice(start)
    // bash: `time [-p] [!] pipeline`, `time { list; }` run in the line's shell too.
    if (words[start] === "time") while (words[i] === "!" || words[i] === "{") i++
  }
  return words.slice(i)
}

/** What a command of the line does to the line's own shell that moves its gits where the check cannot follow, if it does. */
const movesShellUnread = (words: ReadonlyArray<string>): string | undefined => {
  const own = shellRuns(words)
  if (own[0] === "." || own[0] === "source") return "a script it sources first may move it or set git's variables"
  if (own[0] !== "eval") return undefined
  // eval's text runs in the line's shell: a move or a variable it sets there is the line's.
  const parsed = CommandLine.tokenize(own.slice(1).join(" "))
  const inner = parsed.unterminated || parsed.invalid !== undefined ? undefined : simpleCommands(parsed.tokens).commands
  const moves = (command: ReadonlyArray<CommandLine.Word>) => {
    const first = command.findIndex((w) => !reservedWords.has(w.value))
    const values = command.slice(Math.max(first, 0)).map((w) => w.value)
    const program = shellRuns(values.slice(Math.max(values.findIndex((v) => !assignment.test(v)), 0)))[0] ?? ""
    return values.some((v) => /^GIT_[A-Z_]*=/.test(v)) || /^(?:cd|pushd|popd|\.|source|export|declare|typeset|readonly|set|eval)$/.test(program)
  }
  return inner === undefined || inner.some(({ words }) => moves(words)) ? "eval may move it or set git's variables" : undefined
}

/** Most folders a line's gits are looked for in (every `cd` multiplies them), and most git folders and config files its variables name. */
const placesLimit = 8

/** C's `isspace`, which git's parser of `GIT_CONFIG_PARAMETERS` separates entries with. */
const isSpace = (c: string | undefined) => c !== undefined && " \t\n\v\f\r".includes(c)

/**
 * One single-quoted part of `GIT_CONFIG_PARAMETERS` starting at `from`, as git's `sq_dequote_step`
 * reads it: `'a'\''b'` and `'a'\!'b'` (a quote or `!` escaped between quoted parts) are one text.
 * `next`: where the text goes on after the closing quote; `undefined` when there is no closing quote.
 */
const dequoteStep = (text: string, from: number): { readonly value: string; readonly next: number } | undefined => {
  if (text[from] !== "'") return undefined
  let value = ""
  for (let i = from + 1; ;) {
    const close = text.indexOf("'", i)
    if (close < 0) return undefined
    value += text.slice(i, close)
    const escaped = text[close + 2]
    if (text[close + 1] !== "\\" || (escaped !== "'" && escaped !== "!") || text[close + 3] !== "'") return { value, next: close + 1 }
    value += escaped
    i = close + 4
  }
}

/**
 * The settings `GIT_CONFIG_PARAMETERS` holds, as git reads them: entries separated by spaces, each
 * `'key=value'` (older gits) or `'key'='value'`, or `'key'=` (no value). `undefined` for a text git
 * does not read so (it refuses it): the check does not guess what another git would take from it.
 */
const configParameters = (text: string): ReadonlyArray<{ readonly key: string; readonly value?: string }> | undefined => {
  const settings: Array<{ readonly key: string; readonly value?: string }> = []
  let i = 0
  const skipSpaces = () => {
    while (isSpace(text[i])) i++
  }
  skipSpaces()
  while (i < text.length) {
    const key = dequoteStep(text, i)
    if (key === undefined) return undefined
    i = key.next
    if (i >= text.length || isSpace(text[i])) {
      const equals = key.value.indexOf("=")
      settings.push(equals < 0 ? { key: key.value.trim() } : { key: key.value.slice(0, equals).trim(), value: key.value.slice(equals + 1) })
    } else if (text[i] === "=") {
      i++
      if (i >= text.length || isSpace(text[i])) settings.push({ key: key.value.trim() })
      else {
        const value = dequoteStep(text, i)
        if (value === undefined || (value.next < text.length && !isSpace(text[value.next]))) return undefined
        settings.push({ key: key.value.trim(), value: value.value })
        i = value.next
      }
    } else return undefined
    skipSpaces()
  }
  return settings
}

/**
 * The config files git includes because the line's variables say so, as the line writes them:
 * `GIT_CONFIG_PARAMETERS` (`'include.path'='/x'`, as git quotes it, or `'include.path=/x'`) and the
 * pairs `GIT_CONFIG_KEY_<n>`/`GIT_CONFIG_VALUE_<n>` (`GIT_CONFIG_COUNT`). Before, an exact rule for
 * `GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=include.path GIT_CONFIG_VALUE_0=$PWD/x.cfg git status` ran what
 * `x.cfg` named: only `-c include.path=` was read. `unread`: why the files are known only when git
 * runs (a `GIT_CONFIG_PARAMETERS` the check cannot read as git does), if they are.
 */
const includedByVariables = (assigned: ReadonlyArray<string>): { readonly files: ReadonlyArray<string>; readonly unread?: string } => {
  const settings = assigned.flatMap((word) => /^GIT_CONFIG_PARAMETERS=(.*)$/s.exec(word)?.[1] ?? []).map(configParameters)
  const parameters = settings.flatMap((read) => read ?? []).flatMap(({ key, value }) => (includeKey.test(key) && value !== undefined && value !== "" ? [value] : []))
  const pairs = new Map<string, { key?: string; value?: string }>()
  for (const word of assigned) {
    const pair = /^GIT_CONFIG_(KEY|VALUE)_(\d+)=(.*)$/s.exec(word)
    if (pair === null) continue
    const entry = pairs.get(pair[2]!) ?? {}
    pairs.set(pair[2]!, pair[1] === "KEY" ? { ...entry, key: pair[3]! } : { ...entry, value: pair[3]! })
  }
  const counted = [...pairs.values()].flatMap(({ key, value }) => (key !== undefined && value !== undefined && includeKey.test(key) && value !== "" ? [value] : []))
  const files = [...parameters, ...counted]
  return settings.includes(undefined) ? { files, unread: "GIT_CONFIG_PARAMETERS in a form git does not read" } : { files }
}

/** A config key that makes git read another file. */
const includeKey = /^include(?:if\..*)?\.path$/is

/**
 * Where a line's gits really work: each from every folder the line may have moved to first (`cd dir &&`, `pushd dir;`,
 * kept with where it was: which runs first is not read), with the git folder and config files the line's variables
 * name (`GIT_DIR=evil git status`, `export GIT_DIR=…;`, `env GIT_CONFIG_GLOBAL=./x git status`), taken from the folder
 * git works in, as git takes them. Over-reporting only makes the policy read more repositories.
 */
const placed = (gits: ReadonlyArray<GitAt>, places: ReadonlyArray<string>, assigned: ReadonlyArray<string>): ReadonlyArray<GitAt> => {
  const valuesOf = (variables: RegExp) => [...new Set(assigned.flatMap((word) => variables.exec(word)?.[1] ?? []).filter((v) => v !== ""))]
  const gitDirs = valuesOf(gitDirVariables)
  const included = includedByVariables(assigned)
  const homes = [...valuesOf(homeVariable).flatMap(homeConfigs), ...valuesOf(xdgConfigVariable).map((xdg) => NodePath.join(xdg, "git", "config"))]
  const configs = [...new Set([...valuesOf(configVariables), ...included.files, ...homes])]
  const indexes = valuesOf(indexVariable)
  // More than the check reads are not dropped (a 9th include was never read): the gits ask.
  const unread = included.unread ??
    ([gitDirs, configs, indexes].some((values) => values.length > placesLimit) ? `more than ${placesLimit} git folders, config files or indexes its variables name` : undefined)
  // The option wins over the variable, as in git; the last one set is the one a line means.
  const workTree = valuesOf(workTreeVariable).at(-1)
  return gits.flatMap((at) =>
    places.flatMap((place) => {
      const base = NodePath.join(place, at.base)
      const own = (at.configs ?? []).map((file) => NodePath.isAbsolute(file) || file.startsWith("~") ? file : NodePath.join(place, file))
      const files = [...own, ...configs.slice(0, placesLimit).map((file) => from(base, file))]
      const indexFiles = [...(at.indexFiles ?? []), ...indexes.slice(0, placesLimit)]
      const shared = {
        base,
        ...(files.length === 0 ? {} : { configs: files }),
        ...(indexFiles.length === 0 ? {} : { indexFiles }),
        ...(at.workTree !== undefined ? { workTree: from(place, at.workTree) } : workTree !== undefined ? { workTree: from(base, workTree) } : {}),
        ...(at.unknownFolder === undefined && unread === undefined ? {} : { unknownFolder: at.unknownFolder ?? unread }),
        ...(at.makesRepository === true ? { makesRepository: true } : {})
      }
      const gitDir = at.gitDir === undefined ? [] : [from(place, at.gitDir)]
      // Past the limit the git asks (`unread`): the first ones are still read.
      const named = [...gitDir, ...gitDirs.slice(0, placesLimit).map((dir) => NodePath.join(base, dir))]
      return named.length === 0 ? [shared] : named.map((dir) => ({ ...shared, gitDir: dir }))
    })
  )
}

/**
 * GNU env's options as its getopt reads them (coreutils 9.1 `env --help`, and `-a`/`--argv0` of later versions): short
 * clusters whose `u`, `a`, `C`, `S` take the rest or the next word (`env -vu FOO -C d`, `-iC d`), long options by any
 * unambiguous prefix (`--ch d`, `--chd=d`, `--un FOO`); the `--…-signal` options take a value only with `=`.
 */
const envSyntax: Options.Syntax = {
  shortArg: "uaCS",
  longArg: ["--unset", "--chdir", "--split-string", "--argv0"],
  longFlags: ["--ignore-environment", "--null", "--debug", "--block-signal", "--default-signal", "--ignore-signal", "--list-signal-handling", "--help", "--version"],
  prefixes: true,
  inOrder: true
}

/**
 * sudo's options as its getopt reads them (sudo 1.9: `+Aa:BbC:c:D:Eeg:Hh::iKklNnPp:R:r:SsT:t:U:u:Vv`, long ones by any
 * unambiguous prefix) and doas's (`+a:C:Lnsu:`): a cluster's letter that takes a value takes the rest or the next word
 * (`sudo -Eu me`, `doas -nu me`). Round 30: a fixed list of single options read `sudo -Eu me PATH=bin git status` as
 * ending at `me`, and the `PATH` was not read.
 */
const sudoSyntax: Options.Syntax = {
  shortArg: "aCcDgpRrTtUu",
  shortOptional: "h",
  longArg: [
    "--auth-type", "--close-from", "--login-class", "--chdir", "--group", "--host", "--prompt", "--chroot", "--role", "--type", "--command-timeout",
    "--other-user", "--user"
  ],
  longOptional: ["--preserve-env"],
  longFlags: [
    "--askpass", "--background", "--bell", "--edit", "--help", "--set-home", "--login", "--remove-timestamp", "--reset-timestamp", "--list",
    "--no-update", "--non-interactive", "--preserve-groups", "--stdin", "--shell", "--version", "--validate"
  ],
  prefixes: true,
  inOrder: true
}
const doasSyntax: Options.Syntax = { shortArg: "aCu", inOrder: true }
/** util-linux 2.38's unshare and nsenter options (`unshare --help`), read by prefix, ending at the program. */
const unshareSyntax: Options.Syntax = {
  shortArg: "RwSGl",
  shortOptional: "muinpUCT",
  longArg: [
    "--root", "--wd", "--setuid", "--setgid", "--monotonic", "--boottime", "--propagation", "--setgroups", "--map-user", "--map-group", "--map-users",
    "--map-groups", "--load-interp"
  ],
  longOptional: ["--mount", "--uts", "--ipc", "--net", "--pid", "--user", "--cgroup", "--time", "--kill-child", "--mount-proc"],
  longFlags: ["--fork", "--map-root-user", "--map-current-user", "--map-auto", "--keep-caps", "--help", "--version"],
  prefixes: true,
  inOrder: true
}
const nsenterSyntax: Options.Syntax = {
  shortArg: "tSGW",
  shortOptional: "muinpCUTrw",
  longArg: ["--target", "--setuid", "--setgid", "--wdns"],
  longOptional: ["--mount", "--uts", "--ipc", "--net", "--pid", "--cgroup", "--user", "--time", "--root", "--wd"],
  longFlags: ["--all", "--preserve-credentials", "--no-fork", "--follow-context", "--env", "--user-parent", "--help", "--version"],
  prefixes: true,
  inOrder: true
}
/**
 * Wrappers that start their program in another folder, and the options naming it: `sudo -D dir` (`--chdir`), `unshare -w
 * dir` (`--wd`), `nsenter -w dir` (`--wd`, `-W`/`--wdns`). Round 30: `unshare -w sub git status` ran sub's repository's
 * `core.fsmonitor` under an exact rule, its git read from cwd.
 */
const startsElsewhere: Record<string, { readonly syntax: Options.Syntax; readonly options: ReadonlyArray<string> }> = {
  sudo: { syntax: sudoSyntax, options: ["D", "--chdir"] },
  unshare: { syntax: unshareSyntax, options: ["w", "--wd"] },
  nsenter: { syntax: nsenterSyntax, options: ["w", "--wd", "W", "--wdns"] }
}

/** The folder `cd dir`, `pushd dir` or a wrapper's `env -C dir`/`--chdir=dir` (`sudo -D dir`, …) moves to, if the words name one. */
const movesTo = (words: ReadonlyArray<string>): string | undefined => {
  const program = NodePath.basename(words[0] ?? "")
  if (program === "cd" || program === "pushd") return words.slice(1).find((w) => !w.startsWith("-") || w === "-")?.replace(/^-$/, "") || undefined
  const elsewhere = Object.hasOwn(startsElsewhere, program) ? startsElsewhere[program] : undefined
  if (elsewhere !== undefined) {
    return Options.parse(elsewhere.syntax, words.slice(1)).given.filter(([option]) => elsewhere.options.includes(option)).at(-1)?.[1]
  }
  if (program !== "env") return undefined
  // env's options end at its program (`env pip3 -C x` does not move) or `--`; its assignments and a lone `-` (getopt
  // stops there) are read past, as before, so an option after them still counts (errs towards moving, which asks).
  let moved: string | undefined
  for (let from = 1; from < words.length;) {
    const rest = words.slice(from)
    const parsed = Options.parse(envSyntax, rest)
    for (const [option, value] of parsed.given) {
      // `-S` splits its value into more of env's words: read where `CommandPattern`'s wrapper lines read it.
      if (option === "S" || option === "--split-string") return moved
      if (option === "C" || option === "--chdir") moved = value
    }
    const next = parsed.operandsAt[0]
    // After `--` (or `-u --`'s value, where env's options end at the assignment anyway) the next word is the program.
    if (next === undefined || rest[next - 1] === "--") return moved
    const word = rest[next]!
    if (word !== "-" && !assignment.test(word)) return moved
    from += next + 1
  }
  return moved
}

/**
 * Whether a `cd`, `pushd` or `popd` moves where the line cannot say: `cd` alone (home), `cd -` (the
 * previous folder, `$OLDPWD` from the environment), `cd ''`, `pushd` alone or `pushd +N`/`-N` and
 * every `popd` (the folder stack). What follows works there: `cd && cat .bashrc` reads the home
 * folder's, `cd - && git status` runs the git of wherever the agent was started from.
 */
const movesToUnknown = (program: string, args: ReadonlyArray<string>, searched: boolean): "stack" | "searched" | undefined => {
  if (program === "popd") return "stack"
  if (program !== "cd" && program !== "pushd") return undefined
  const end = args.indexOf("--")
  const operands = end >= 0 ? args.slice(end + 1) : args.filter((a) => !/^-[LPe@n]+$/.test(a))
  const to = operands[0]
  if (to === undefined || to === "" || to === "-" || (program === "pushd" && /^[+-]\d+$/.test(to))) return "stack"
  // With CDPATH (or bash's cdable_vars) a folder not named from `/` or `.` is looked for first where the shell says.
  return searched && !/^(\/|\.\.?(\/|$))/.test(to) ? "searched" : undefined
}

/**
 * Whether a line's `cd dir` may be searched for (see `NamedOptions.cdSearched`): a word naming
 * `CDPATH` (`CDPATH=x cd a`, `export CDPATH`, `read CDPATH`) or bash's `cdable_vars`.
 */
export const searchesFolders = /CDPATH|cdable_vars/

/** Most words and parts of words looked at per command; past it, the command counts as unchecked. */
export const maxCandidates = 1000

const separators = new Set([";", ";;", "&&", "||", "|", "&", "\n", "(", ")", "<(", ">("])
const heredocs = new Set(["<<", "<<-"])
const shells = /^(sh|bash|dash|zsh|ksh|mksh|ash|busybox)$/
const assignment = /^[A-Za-z_][A-Za-z0-9_]*=/
/** Programs whose `-C dir` (or `--directory=dir`) makes relative paths relative to `dir`. */
/**
 * Variables that give `git init`/`git clone` a template, or a config file that may name one (`init.templateDir`, also
 * in the home's `.gitconfig`), or name the startup file a downloader reads (`CURL_HOME=.` and a `.curlrc` saying
 * `remote-name`, `WGETRC`): see `LineFills.gitMade` and `LineFills.downloadedInto`.
 */
const gitTemplateVariables = /^(?:GIT_(?:TEMPLATE_DIR|CONFIG\w*)|CURL_HOME|XDG_CONFIG_HOME|HOME|WGETRC)=/

/** Python interpreters (`CommandRisk.interpreters`' first), their debug builds (`python3-dbg`, `python3.11d`) and the launcher `py`. */
const pythonNames = /^(?:python[0-9.]*(?:-dbg|d)?|pypy[0-9.]*|py)$/
/** Tools whose `run` starts the Python named after it in a project's environment (`poetry run python -m …`). */
const pythonRunners = /^(?:uv|poetry|pdm|hatch|pipenv|conda|mamba|micromamba|rye)$/
/** uv's options (its own, and `run`'s) that take the next word as their value, unless given with `=`. */
const uvTakesValue = /^(?:-[pCPw]|--(?:directory|project|cache-dir|config-file|color|python|python-preference|python-fetch|allow-insecure-host|with|with-editable|with-requirements|extra|group|only-group|no-group|package|index|default-index|index-url|extra-index-url|find-links|index-strategy|keyring-provider|resolution|prerelease|exclude-newer|link-mode|env-file|config-setting|refresh-package|reinstall-package|upgrade-package))$/
/**
 * `uv [options] run [options] -m mod` (`--module`): uv's own Python runs the module, as `python -m` does, in the folder
 * `--directory` names (uv moves there first). Before, only `uv run -m` was read: `uv --quiet run -m json.tool` was not.
 * `-m` is a flag and the module run's first positional, so the options after it count too (`uv run -m --directory sub
 * json.tool`), as does an `m` in a short group (`uv run -qm json.tool`).
 */
const uvRun = (program: string, args: ReadonlyArray<string>): { readonly module: boolean; readonly directory?: string } | undefined => {
  if (program !== "uv") return undefined
  let run = false
  let module = false
  let directory: string | undefined
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!
    if (!run && a === "run") run = true
    else if (a === "--" || !a.startsWith("-") || a === "-") break
    else if (a === "--module" || a.startsWith("--module=")) module ||= run
    else if (a.startsWith("--directory=")) directory = a.slice("--directory=".length)
    else if (uvTakesValue.test(a)) {
      if (a === "--directory" && args[i + 1] !== undefined) directory = args[i + 1]
      i++
    } else if (!a.startsWith("--")) {
      // A short group (`-qm`): `m` is `-m`; `p`, `C`, `P`, `w` take the rest of the group or the next word.
      const letters = a.slice(1)
      const taking = letters.search(/[pCPw]/)
      if (run && (taking < 0 ? letters : letters.slice(0, taking)).includes("m")) module = true
      if (taking === letters.length - 1) i++
    }
  }
  return run ? { module, ...(directory === undefined ? {} : { directory }) } : undefined
}
/** `PYTHONPATH=…`, whose entries any Python the command starts (`pip3`, a script's) puts on `sys.path`. */
const pythonPathVariable = /^PYTHONPATH=(.*)$/s
/**
 * `PERL5OPT`'s `-I` folders (`PERL5OPT=-I.`, `-wIlib`, `-I lib`), which Perl puts before its own library as `PERL5LIB`'s
 * (round 28: `PERL5OPT=-I. shasum a.txt` ran a repository's `strict.pm`). A `-M`/`-m` names the module itself: the line shows it.
 */
const perlOptFolders = (value: string): ReadonlyArray<string> => {
  const folders: Array<string> = []
  const switches = value.split(/\s+/).filter((s) => s !== "")
  for (let i = 0; i < switches.length; i++) {
    const at = /^-[^IMmdDC]*I(.*)$/s.exec(switches[i]!)
    if (at === null) continue
    if (at[1] !== "") folders.push(at[1]!)
    else if (switches[i + 1] !== undefined) folders.push(switches[++i]!)
  }
  return folders
}
/** What a folder a search variable puts first is checked for (see `PythonShadows.PythonAt.language`). */
type SearchLanguage = "program" | "library" | "perl" | "pythonLib" | "python" | "processor" | "jvm"
/**
 * Search paths whose relative or empty entries put a folder of the repository before the system's (round 27): `PATH`
 * (the shell's programs, and those a command starts: git's `ssh`, a pager, make's compiler), `GIT_EXEC_PATH` (git puts
 * it first on the `PATH` of what it starts: `git fetch` ran its `git-upload-pack`), `LD_LIBRARY_PATH` (every program's
 * shared libraries) and `GCONV_PATH` (glibc's character set modules); `PERL5LIB`/`PERLLIB` and `PERL5OPT`'s `-I` (any
 * Perl's modules, round 26/28); and the folders any Python takes its own code from (round 28): `PYTHONHOME` (the standard
 * library: `h/lib/python3.11`, and `hlib/…` for `PYTHONHOME=h`, as Python 3.11 joins them), `PYTHONUSERBASE` and, without
 * it, `HOME`'s `.local` (the user site, whose `usercustomize.py` and `.pth` files run at start). What a folder holds is
 * checked as a Python's (see `PythonShadows.shadowing`).
 */
const searchVariables: ReadonlyArray<{
  readonly variable: string
  readonly language: SearchLanguage
  /** The folders one relative entry names (relative to where the command starts). */
  readonly folders?: (entry: string) => ReadonlyArray<string>
  /** The entries of the variable's value, when not `:`-separated. */
  readonly entries?: (value: string) => ReadonlyArray<string>
}> = [
  { variable: "PATH", language: "program" },
  { variable: "GIT_EXEC_PATH", language: "program" },
  { variable: "LD_LIBRARY_PATH", language: "library" },
  { variable: "GCONV_PATH", language: "library" },
  { variable: "PERL5LIB", language: "perl" },
  { variable: "PERLLIB", language: "perl" },
  { variable: "PERL5OPT", language: "perl", entries: perlOptFolders },
  { variable: "PYTHONHOME", language: "pythonLib", folders: (entry) => [NodePath.join(entry, "lib"), NodePath.normalize(`${entry}lib`)] },
  { variable: "PYTHONUSERBASE", language: "pythonLib", folders: (entry) => [NodePath.join(entry, "lib")] },
  { variable: "HOME", language: "pythonLib", folders: (entry) => [NodePath.join(entry, ".local", "lib")] }
]
/** The variables a line's earlier commands set for later ones that the check reads: the search paths, javac's `CLASSPATH`, Maven's `MAVEN_BASEDIR`. */
const lineVariables = [...searchVariables.map(({ variable }) => variable), "CLASSPATH", "JDK_JAVAC_OPTIONS", "MAVEN_BASEDIR"]
/**
 * The class path whose `META-INF/services/javax.annotation.processing.Processor` files name the annotation processors a
 * javac loads and runs (round 29: `javac X.java` ran a repository's `P.class`, javac 17): its `-cp`/`-classpath`/
 * `--class-path`, else `CLASSPATH`, else `.` (an agent's own `CLASSPATH` is not read: over-asks only). None with
 * `-proc:none`, or a processor path the line names (`-processorpath`, `--processor-path`, `--processor-module-path`):
 * what runs then is what the line shows, as `PERL5OPT=-MMine` is.
 */
const javacClassPath = (args: ReadonlyArray<string>, variable: string | undefined): ReadonlyArray<string> => {
  let classPath = variable ?? "."
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    if (arg === "-proc:none" || /^(?:-processorpath|--processor-path|--processor-module-path)(?:=|$)/.test(arg)) return []
    if (/^(?:-cp|-classpath|--class-path)$/.test(arg) && args[i + 1] !== undefined) classPath = args[++i]!
    else if (arg.startsWith("--class-path=")) classPath = arg.slice("--class-path=".length)
  }
  return searchEntries(classPath)
}
/**
 * `PATH=$PATH:/opt/x`, `PATH="/opt/x:${PATH}"`: the shell expands only `$PATH` there, to the line's own earlier value, or
 * else the environment's (`path`: absolute folders only). Read as that value, not as a word known only when the command
 * runs: an everyday line that asked (round 28). Any other expansion (`$HOME/bin`, `$(pwd)`, `~/bin`) stays unknown.
 */
const knownPathWord = (w: CommandLine.Word, before: CommandLine.Word | undefined, path: string): CommandLine.Word | undefined => {
  const at = w.expands ? /^PATH=("?)(.*)\1$/s.exec(w.raw) : null
  if (at === null || before?.expands === true) return undefined
  const own = (entry: string) => entry === "$PATH" || entry === "${PATH}"
  const entries = at[2]!.split(":")
  if (entries.some((entry) => !own(entry) && /[$`"'\\~]/.test(entry))) return undefined
  const earlier = before === undefined ? path : before.value.slice("PATH=".length)
  const value = `PATH=${entries.map((entry) => (own(entry) ? earlier : entry)).join(":")}`
  return { ...w, value, expands: false, quoted: [...value].map(() => true) }
}
/**
 * A command's words with `$PATH` read (see `knownPathWord`), from `line` (the line's PATH before the command). Bash assigns a
 * command's prefix `NAME=value` words left to right, each `$PATH` the one before (`PATH=bin PATH=$PATH:/usr/bin git status`
 * ran `bin/git`: review 53), and expands its arguments before any (`export PATH=$PATH:/x` reads the line's).
 */
const knownPathWords = (words: ReadonlyArray<CommandLine.Word>, line: CommandLine.Word | undefined, path: string): ReadonlyArray<CommandLine.Word> => {
  let running = line
  let prefix = true
  return words.map((w, k) => {
    // An assignment's name is unquoted, so its raw text shows it (`PATH=$PATH:/x` expands: its value does not tell).
    prefix &&= assignment.test(w.raw) || (reservedWords.has(w.raw) && words.slice(0, k).every((r) => reservedWords.has(r.raw)))
    const read = knownPathWord(w, prefix ? running : line, path) ?? w
    if (prefix && searchWords("PATH", [w]).length > 0) running = read
    return read
  })
}
/**
 * The PATH an inner script (`eval '…'`, `bash -c '…'`) starts with: the line's, or the last one its command sets before it
 * (`PATH=bin eval …`, `env PATH=bin bash -c …`), or none when the shell expands it (its `$PATH` stays unknown: review 53).
 */
const innerPath = (before: CommandLine.Word | undefined, line: CommandLine.Word | undefined, path: string | undefined): string | undefined => {
  const set = before ?? line
  return set === undefined ? path : set.expands ? undefined : set.value.slice("PATH=".length)
}
/**
 * Whether a command's program is a file of the repository the line names (`./build/app`, `build/app`): what it loads
 * from the search paths its command sets is its own code, which the rule chose to run (round 28).
 */
const ownProgram = (w: CommandLine.Word): boolean =>
  !w.expands && w.value.includes("/") && !w.value.startsWith("/") && !w.value.startsWith("~") && !NodePath.normalize(w.value).startsWith("..")
/** How many distinct folders `searchVariables` name a line's check reads (a folder is read once); past that, it asks. */
const searchedLimit = 64
/**
 * The distinct folders the line's search paths put first, from each place it may have moved to, or one note past
 * `searchedLimit` (`PATH=1:2:…:20000 git status` read 20,000 folders, 1.5 s, before the bound).
 */
const searchedFolders = (
  places: ReadonlyArray<string>,
  searched: ReadonlyArray<Searched>
): ReadonlyArray<Searched & { readonly unknownFolder?: string }> => {
  // Relative folders and absolute ones (read only inside cwd: `PATH=$PATH:/opt/x` names the environment's) each to the bound.
  const distinct = new Map<string, Searched>()
  let absolute = 0
  for (const place of places) {
    for (const at of searched) {
      const folder = from(place, at.base)
      const key = `${at.language}:${folder}:${at.alongside?.join(":") ?? ""}`
      if (!distinct.has(key) && NodePath.isAbsolute(folder)) absolute++
      distinct.set(key, { ...at, base: folder })
      if (distinct.size - absolute > searchedLimit || absolute > searchedLimit) {
        return [{ base: "", language: at.language, unknownFolder: `more than ${searchedLimit} folders a search path of the line (PATH, LD_LIBRARY_PATH, PERL5LIB, …) names` }]
      }
    }
  }
  return [...distinct.values()]
}
/** A folder a search variable puts first, and the absolute folders beside it in a `PATH` (whose programs it may stand in for). */
interface Searched {
  readonly base: string
  readonly language: SearchLanguage
  readonly alongside?: ReadonlyArray<string>
}
/** Variables whose values the check reads from the line: git's, the search paths, javac's and Maven's, `CDPATH`. */
const checkedVariable = (name: string): boolean =>
  lineVariables.includes(name) || /^(?:GIT_[A-Za-z0-9_]*|XDG_CONFIG_HOME|PYTHONPATH|PYTHONSAFEPATH|CDPATH)$/.test(name)
/**
 * The variable (or a name reference) that a builtin sets to a value read or computed when it runs, if the check reads it:
 * `printf -v HOME .`, `read PATH <<< …`, `getopts`, `for`/`select`'s variable, and `declare -n R=HOME` (then `R=.` sets
 * HOME). (`mapfile HOME` makes it an array, which bash does not export: checked, git kept the real home.)
 * Round 30: `printf -v HOME . && git status` ran ./.gitconfig's `core.fsmonitor`, read as a printf.
 */
const builtinSets = (program: string, args: ReadonlyArray<string>): string | undefined => {
  switch (program) {
    case "printf": {
      const name = Options.parse({ shortArg: "v" }, args).values.get("v")
      return name !== undefined && checkedVariable(name) ? `printf -v ${name}` : undefined
    }
    case "read":
      return Options.parse({ shortArg: "adinNptu" }, args).operands.find(checkedVariable)
    case "getopts":
      return args.slice(1).find(checkedVariable)
    case "declare":
    case "typeset":
    case "local":
      return args.some((a) => /^-[A-Za-z]*n/.test(a)) ? `${program} -n` : undefined
    // A loop's variable (`for PATH in bin:/usr/bin; do git status; done`).
    case "for":
    case "select":
      return args[0] !== undefined && checkedVariable(args[0]) ? `${program} ${args[0]}` : undefined
  }
  return undefined
}


/**
 * Programs whose `NAME=value` arguments set variables for the program they run (`env PATH=bin git`, `sudo PATH=bin git`,
 * `cross-env PATH=bin git`, after `npx` too: the scan finds the first setter among the command's words).
 */
const setsForProgram = /^(?:env|sudo|doas|cross-env|cross-env-shell)$/
/** How many words (1, or 2 with its value the next word) the option `value` takes as `syntax` reads it. */
const optionWords = (syntax: Options.Syntax, value: string): number => (Options.parse(syntax, [value, "x"]).operandsAt.includes(1) ? 1 : 2)
/**
 * What cross-env reads as a setting: any word its (unanchored) pattern finds `NAME=` in, `'…'` or `"…"` after it cut
 * (`cross-env 'x PATH=bin' git` sets `PATH` to `bin`), as the word it stands for.
 */
const crossEnvSetting = /(\w+)=('(.*)'|"(.*)"|(.*))/s
const crossEnvWord = (w: CommandLine.Word): CommandLine.Word | undefined => {
  const found = crossEnvSetting.exec(w.value)
  if (found === null) return undefined
  return w.expands ? w : plainWord(`${found[1]}=${found[3] ?? found[4] ?? found[5] ?? ""}`)
}
/** env's long options that take a value, by any prefix that names only them (GNU's getopt: `--split`, `--un`). */
const envLongValues = [["--unset", 3], ["--chdir", 3], ["--argv0", 3], ["--split-string", 3]] as const
/**
 * How many words env's option at `k` takes (1, or 2 with its value the next word), and the text of a `-S`/`--split-string`
 * (`-S TEXT`, `-iSTEXT`, `--split-string=TEXT`, `--sp TEXT`) if it is one.
 */
const envOption = (words: ReadonlyArray<CommandLine.Word>, k: number): { readonly taken: number; readonly split?: string } => {
  const value = words[k]!.value
  const next = words[k + 1]?.value ?? ""
  if (value.startsWith("--")) {
    const [name, ...given] = value.split("=")
    const long = envLongValues.find(([option, letters]) => name!.length >= letters && option.startsWith(name!))
    if (long === undefined) return { taken: 1 }
    const text = given.length > 0 ? given.join("=") : next
    return { taken: given.length > 0 ? 1 : 2, ...(long[0] === "--split-string" ? { split: text } : {}) }
  }
  // A cluster of short options: the first that takes a value takes the rest of the word, or the next word.
  const valued = /[uCaS]/.exec(value.slice(1))
  if (valued === null) return { taken: 1 }
  const rest = value.slice(valued.index + 2)
  const text = rest === "" ? next : rest
  return { taken: rest === "" ? 2 : 1, ...(valued[0] === "S" ? { split: text } : {}) }
}
/**
 * The words after an `env` (or `sudo`, `doas`, `cross-env`) of the command, from `at`, that set a variable for the program
 * it runs: its `NAME=value` words (quoted too: env reads them, not the shell) before that program, and a setter's there
 * in turn (`env env PATH=bin git`, `sudo env PATH=bin git`: review 57). Any other program's argument that looks like one
 * (`echo "PATH=bin"`, `git commit -m "PATH=x"`) sets nothing (round 29: it was read as a `PATH`, an over-ask). env's
 * `-S` text is read as the words env splits it into (`env -S 'PATH=bin git status'`); `unread` is one it cannot split as
 * the shell would (a quote, a backslash, a `$`), which the caller asks about.
 */
const setterWords = (words: ReadonlyArray<CommandLine.Word>, at: number): { readonly set: ReadonlyArray<CommandLine.Word>; readonly unread?: string } => {
  const setter = words.findIndex((w, k) => k >= at && setsForProgram.test(NodePath.basename(w.value)))
  if (setter < 0) return { set: [] }
  const set: Array<CommandLine.Word> = []
  const rest = [...words.slice(setter)]
  for (let k = 1, kind = NodePath.basename(rest[0]!.value); k < rest.length; k++) {
    const value = rest[k]!.value
    const env = kind === "env"
    const crossed = kind.startsWith("cross-env") ? crossEnvWord(rest[k]!) : undefined
    if (crossed !== undefined) set.push(crossed)
    else if (assignment.test(value)) set.push(rest[k]!)
    else if (env && value.startsWith("-") && value !== "-") {
      const { taken, split } = envOption(rest, k)
      k += taken - 1
      if (split === undefined) continue
      if (/["'\\$`#]/.test(split)) return { set, unread: value }
      // The split words stand where the option was: env reads them as its own arguments.
      rest.splice(k + 1, 0, ...split.split(/[ \t\n\v\f\r]+/).filter((t) => t !== "").map(plainWord))
    } else if ((kind === "sudo" || kind === "doas") && value.startsWith("-")) k += optionWords(kind === "sudo" ? sudoSyntax : doasSyntax, value) - 1
    else if (setsForProgram.test(NodePath.basename(value))) kind = NodePath.basename(value)
    else if (!value.startsWith("-")) break
  }
  return { set }
}
const setForProgram = (words: ReadonlyArray<CommandLine.Word>, at: number): ReadonlyArray<CommandLine.Word> => setterWords(words, at).set
/** A word as text no shell expands (one env's `-S` split out). */
const plainWord = (text: string): CommandLine.Word => ({ _tag: "Word", value: text, raw: text, expands: false, quoted: [...text].map(() => false) })
/** The words of a command that set `variable` (one the shell expands too). */
const searchWords = (variable: string, words: ReadonlyArray<CommandLine.Word>) =>
  words.filter((w) => w.raw.startsWith(`${variable}=`) || w.value.startsWith(`${variable}=`))
/** A search path's entries, as folders from where its program starts (an empty one is that folder); `~` is not read. */
const searchEntries = (value: string): ReadonlyArray<string> =>
  value.split(":").filter((entry) => !entry.startsWith("~")).map((entry) => NodePath.normalize(entry === "" ? "." : entry))
/**
 * What a command exports for the commands after it: its `NAME=value` words when it is `export`
 * (not `export -n`) or `declare`/`typeset`/`local` with `-x`. A prefix (`X=1 cmd`) holds for its command only.
 */
const exportedBy = (program: string, args: ReadonlyArray<CommandLine.Word>): ReadonlyArray<string> =>
  exports(program, args) ? args.filter((w) => !w.expands && assignment.test(w.value)).map((w) => w.value) : []
const exports = (program: string, args: ReadonlyArray<CommandLine.Word>): boolean => {
  const options = args.filter((w) => /^-[A-Za-z]+$/.test(w.value)).map((w) => w.value)
  return program === "export" ? !options.some((o) => o.includes("n")) : /^(?:declare|typeset|local)$/.test(program) && options.some((o) => o.includes("x"))
}

const changesDirectory = new Set(["git", "make", "gmake", "tar", "bsdtar"])
/** How GNU make reads its options; every option that is a prefix of one taking a value is listed (an exact name wins). */
const makeOptions: Options.Syntax = {
  shortArg: "CfIoW",
  longArg: ["--directory", "--file", "--makefile", "--include-dir", "--old-file", "--assume-old", "--what-if", "--new-file", "--assume-new", "--eval"],
  longFlags: [
    "--always-make", "--environment-overrides", "--ignore-errors", "--keep-going", "--just-print", "--dry-run", "--recon", "--question",
    "--no-builtin-rules", "--no-builtin-variables", "--silent", "--quiet", "--no-silent", "--stop", "--touch", "--trace", "--version",
    "--print-directory", "--no-print-directory", "--warn-undefined-variables", "--check-symlink-times", "--print-data-base", "--debug", "--jobs",
    "--load-average", "--max-load", "--output-sync", "--help"
  ],
  prefixes: true
}
/**
 * Options that name a file holding more file names, with the letters a prefix of each needs before it names no other
 * option of any program (`--files-f`, `--files0`, `--from-`, `--fromf`: GNU tools take any unambiguous prefix;
 * `--file`, `--files` (rg's), `--from` are options of their own elsewhere).
 */
const fileListOptions: ReadonlyArray<readonly [option: string, letters: number]> = [["--files-from", 8], ["--files0-from", 8], ["--from-file", 7], ["--fromfile", 7]]
const fileLists = (word: string): boolean => {
  const name = word.split("=")[0]!
  return word.startsWith("--") && fileListOptions.some(([option, letters]) => name.length >= letters && option.startsWith(name))
}
/**
 * Programs whose long options, read by prefix, reach a file list with fewer letters (`tar --files list`,
 * `du --file=l0`, `wc --f=l0`, `sort --fil`: tar 1.34, coreutils 9.1), and the options those letters may also begin.
 */
const tarFileLists: Options.Syntax = { longArg: ["--file", "--files-from", "--format", "--force-local", "--full-time"], prefixes: true }
const fileListPrefixes: Record<string, Options.Syntax> = {
  tar: tarFileLists,
  bsdtar: tarFileLists,
  du: { longArg: ["--files0-from"], prefixes: true },
  wc: { longArg: ["--files0-from"], prefixes: true },
  sort: { longArg: ["--files0-from", "--field-separator"], prefixes: true }
}

/** How a recursive program reads its arguments: enough to tell options' values from operands. */
interface Walker extends Options.Syntax {
  /** Whether this invocation walks trees, from what `Options.parse` found. */
  readonly walks: (args: Options.Parsed) => boolean
  /** The first operand is a pattern, unless one of these options (short letters, long names) gave it. */
  readonly pattern?: { readonly short: string; readonly long: ReadonlyArray<string> }
  /** The folder walked when no operand is given. */
  readonly byDefault?: string
}

const always = () => true
/** Whether any of these short letters or long options (`--name`) was given. */
const any = (short: string, long: ReadonlyArray<string>) => (args: Options.Parsed) =>
  [...short].some((c) => args.short.has(c)) || long.some((name) => args.long.has(name))
const dashed = (names: ReadonlyArray<string>) => names.map((name) => `--${name}`)

/** grep's `-d`/`--directories` value, which grep too reads by any unambiguous prefix (`rec`; `re` is also `read`). */
const recurses = (value: string | undefined): boolean => value !== undefined && value.length >= 3 && "recurse".startsWith(value)
/** GNU grep, coreutils, diffutils and ag (getopt_long) take a long option by any unambiguous prefix (`grep --recur`). */
const grepLike: Walker = {
  walks: (a) => any("rR", ["--recursive", "--dereference-recursive"])(a) || recurses(a.values.get("d")) || recurses(a.values.get("--directories")),
  // `--binary` names itself, not a prefix of `--binary-files` (an exact name wins).
  longFlags: ["--recursive", "--dereference-recursive", "--binary"],
  prefixes: true,
  shortArg: "efmABCdD",
  longArg: dashed(["regexp", "file", "max-count", "after-context", "before-context", "context", "directories", "devices", "label", "include", "exclude", "exclude-from", "exclude-dir", "binary-files", "group-separator"]),
  pattern: { short: "ef", long: ["--regexp", "--file"] },
  byDefault: "."
}
const ripgrep: Walker = {
  walks: always,
  shortArg: "efgtTmABCMjEdr",
  longArg: dashed([
    "regexp", "file", "glob", "iglob", "type", "type-not", "type-add", "type-clear", "max-count", "after-context", "before-context", "context",
    "max-columns", "threads", "encoding", "max-depth", "maxdepth", "replace", "pre", "pre-glob", "max-filesize", "colors", "context-separator",
    "field-match-separator", "field-context-separator", "path-separator", "sort", "sortr", "ignore-file", "dfa-size-limit", "regex-size-limit",
    "engine", "hostname-bin", "hyperlink-format", "color", "generate"
  ]),
  // `--files` and `--type-list` take no pattern.
  pattern: { short: "ef", long: ["--regexp", "--file", "--files", "--type-list"] },
  byDefault: "."
}
const recursive = (short: string, long: ReadonlyArray<string>, syntax: Options.Syntax = {}): Walker => ({ walks: any(short, long), longFlags: long, ...syntax })
/**
 * What getopt_long programs add: their long options by prefix. A prefix is read against the options listed, which
 * must hold every option that is itself a prefix of a listed one taking a value (du's `--time`, grep's `--binary`).
 */
const gnu = (walker: Walker): Walker => ({ ...walker, prefixes: true })
const walkers: Record<string, Walker> = {
  grep: grepLike,
  egrep: grepLike,
  fgrep: grepLike,
  rg: ripgrep,
  // ag 2.2's getopt_long table: `-a` is a flag, `--after`/`--before`/`--context` take a value only after `=`, `-g` gives
  // the pattern (file names; every operand is a tree).
  ag: gnu({
    walks: always,
    shortArg: "ABCGgmpW",
    longArg: dashed([
      "ackmate-dir-filter", "color-line-number", "color-match", "color-path", "depth", "filename-pattern", "file-search-regex", "ignore",
      "ignore-dir", "max-count", "pager", "path-to-ignore", "width", "workers"
    ]),
    longOptional: dashed(["after", "before", "context"]),
    longFlags: dashed(["ackmate", "color", "filename"]),
    pattern: { short: "g", long: ["--filename-pattern"] },
    byDefault: "."
  }),
  ack: { walks: always, shortArg: "ABCmg", pattern: { short: "", long: [] }, byDefault: "." },
  du: gnu({ walks: always, shortArg: "BdtX", longArg: dashed(["block-size", "max-depth", "threshold", "exclude", "exclude-from", "time-style", "files0-from"]), longFlags: ["--time"], byDefault: "." }),
  ls: gnu({ ...recursive("R", ["--recursive"]), shortArg: "ITw", longArg: dashed(["ignore", "hide", "tabsize", "width", "block-size", "format", "sort", "time", "time-style", "quoting-style", "indicator-style"]), byDefault: "." }),
  tree: { walks: always, shortArg: "LPIoHT", longArg: dashed(["filelimit", "timefmt", "sort", "charset", "fromfile", "hintro", "houtro"]), byDefault: "." },
  cp: gnu(recursive("rRa", ["--recursive", "--archive"], { shortArg: "St", longArg: dashed(["suffix", "target-directory"]) })),
  rsync: recursive("ra", ["--recursive", "--archive"], {
    shortArg: "eBfTM",
    longArg: dashed(["rsh", "filter", "exclude", "include", "exclude-from", "include-from", "temp-dir", "block-size", "remote-option", "rsync-path"])
  }),
  scp: recursive("r", [], { shortArg: "cFiJloPS" }),
  zip: recursive("rR", ["--recurse-paths", "--recurse-patterns"], { shortArg: "bnti" }),
  diff: gnu(recursive("r", ["--recursive"], {
    shortArg: "CUxXIFSL",
    longArg: dashed(["exclude", "exclude-from", "ignore-matching-lines", "label", "starting-file", "from-file", "to-file"]),
    // `--new-file` is `-N`, a flag (diffutils 3.8): read as taking a value, it hid the first tree.
    longOptional: dashed(["context", "unified", "color"]),
    longFlags: dashed(["recursive", "new-file"])
  })),
  chmod: gnu(recursive("R", ["--recursive"])),
  chown: gnu(recursive("R", ["--recursive"])),
  chgrp: gnu(recursive("R", ["--recursive"]))
}

/** tar's actions, which GNU tar takes by any unambiguous prefix (`tar --cre`). */
const tarActions: Options.Syntax = {
  longFlags: ["--create", "--append", "--update", "--catenate", "--concatenate", "--compare", "--delete", "--diff", "--extract", "--get", "--list"],
  prefixes: true
}

/** Whether `program` (a bare name) is one whose trees `treesOf` reads. */
const walksTrees = (program: string): boolean => program === "find" || program === "tar" || program === "bsdtar" || Object.hasOwn(walkers, program)

/** The trees `argv` walks, as written, or none. */
export const treesOf = (argv: ReadonlyArray<string>): ReadonlyArray<string> => {
  const program = NodePath.basename(argv[0] ?? "")
  const args = argv.slice(1)
  if (program === "find") {
    // find [-H|-L|-P|-D opts|-Olevel]… [starting point…] [expression]
    let i = 0
    while (i < args.length && /^-([HLP]|O\d|D)$/.test(args[i]!)) i += args[i] === "-D" ? 2 : 1
    const starts: Array<string> = []
    for (; i < args.length && !/^[-(!]/.test(args[i]!); i++) starts.push(args[i]!)
    return starts.length > 0 ? starts : ["."]
  }
  if (program === "tar" || program === "bsdtar") {
    // c (create), r (append), u (update), in a leading bundle (`tar czf`) or as options.
    const bundle = args[0] !== undefined && !args[0].startsWith("-") ? args[0] : ""
    const parsed = Options.parse(tarActions, bundle === "" ? args : args.slice(1))
    return /[cru]/.test(bundle) || any("cru", ["--create", "--append", "--update"])(parsed) ? parsed.operands : []
  }
  const walker = Object.hasOwn(walkers, program) ? walkers[program]! : undefined
  if (walker === undefined) return []
  const parsed = Options.parse(walker, args)
  // An ambiguous prefix of an option taking a value: the value may be a tree.
  if (parsed.unsure) return args.filter((arg) => !arg.startsWith("-"))
  if (!walker.walks(parsed)) return []
  const patternGiven = walker.pattern === undefined || any(walker.pattern.short, walker.pattern.long)(parsed)
  const trees = patternGiven ? parsed.operands : parsed.operands.slice(1)
  return trees.length > 0 ? trees : walker.byDefault === undefined ? [] : [walker.byDefault]
}

/** The parts of one argument a program may read as a path. */
const partsOf = (value: string): ReadonlyArray<string> => {
  const parts = [value]
  if (value.startsWith("--")) {
    const at = value.indexOf("=")
    if (at > 0) parts.push(value.slice(at + 1))
  } else if (value.startsWith("-") && value.length > 2) {
    // `-fPATH`: every suffix after the first letter, for the first letters of a cluster, and every
    // suffix that starts like a path of its own (`-xzf/abs`, `-o~/x`).
    for (let k = 2; k < value.length; k++) {
      if (k < 18 || value[k] === "/" || value[k] === "~" || value[k] === ".") parts.push(value.slice(k))
    }
  } else {
    const at = value.indexOf("=")
    if (at > 0) parts.push(value.slice(at + 1))
    if (value.startsWith("@") && value.length > 1) parts.push(value.slice(1))
  }
  return parts
}

/**
 * The path a `file:` URL names (`curl file:///etc/passwd` reads it as `cat` would): after the
 * host, if any, `%XX` decoded (curl decodes them), also cut at a query or fragment; `unknown` when
 * the program expands it itself (curl's `{a,b}` and `[1-3]`) or it cannot be decoded.
 */
const fileUrlPaths = (url: string): { readonly paths: ReadonlyArray<string> } | { readonly unknown: string } => {
  let rest = url.slice("file:".length)
  if (rest.startsWith("//")) {
    const slash = rest.indexOf("/", 2)
    rest = slash < 0 ? "/" : rest.slice(slash)
  }
  if (/[{}[\]]/.test(rest)) return { unknown: "a URL pattern the program expands" }
  try {
    const path = decodeURIComponent(rest)
    return { paths: [path, path.split(/[?#]/)[0]!].filter((p) => p !== "") }
  } catch {
    return { unknown: "a URL that cannot be decoded" }
  }
}

/** Git's subcommands whose operands may be `<rev>:<path>` (a file of a commit, of the index: `HEAD:secret`, `:secret`). */
const gitRevisionReaders = new Set([
  "show", "cat-file", "diff", "difftool", "grep", "archive", "ls-tree", "log", "whatchanged", "blame", "annotate", "rev-parse", "checkout", "restore"
])
/** Git's subcommands where `a:b` is a refspec or an address, never a path. */
const gitRemoteSubcommands = new Set(["push", "fetch", "pull", "clone", "remote", "ls-remote", "submodule", "config", "send-email", "request-pull", "credential"])
/** Where git reads a `<rev>:<path>`'s path: relative to cwd when written `./…` or `../…`, else from the repository's root. */
const gitRevisionPath = (path: string): { readonly fromRoot: string } | { readonly fromCwd: string } =>
  path === "." || path === ".." || path.startsWith("./") || path.startsWith("../") ? { fromCwd: path } : { fromRoot: path }

/**
 * The paths a git operand names that are not the word itself: a pathspec's magic (`:/secret`,
 * `:(top)secret` from the repository's root; `:(glob)x`, `:!x` from cwd) and, for a subcommand that
 * reads `<rev>:<path>`, that path (`HEAD:secret` from the root, `HEAD:../x` from cwd; `HEAD:` is the root).
 * Over-reporting (`--since 12:00` read as a revision, each `:` of a word read as the revision's end) only asks.
 */
export const gitNames = (word: string, revisions: boolean): ReadonlyArray<{ readonly fromRoot: string } | { readonly fromCwd: string }> => {
  if (word.startsWith(":(")) {
    const close = word.indexOf(")")
    if (close < 0) return []
    const magic = word.slice(2, close).split(",").map((m) => m.trim())
    const rest = word.slice(close + 1)
    return [magic.includes("top") ? { fromRoot: rest } : { fromCwd: rest }]
  }
  if (word.startsWith(":")) {
    // `:/path` (top), `:!x`/`:^x` (exclude), optionally ended by `:`; `:N:path` is the index's stage N.
    const stage = /^:[0-3]:(.*)$/s.exec(word)
    if (stage !== null) return revisions ? [gitRevisionPath(stage[1]!)] : []
    const short = /^:([/!^]*):?(.*)$/s.exec(word)!
    const [magic, rest] = [short[1]!, short[2]!]
    if (magic.includes("/")) return [{ fromRoot: rest }]
    if (magic !== "") return [{ fromCwd: rest }]
    return revisions ? [gitRevisionPath(rest)] : []
  }
  if (!revisions) return []
  // Any `:` may end the revision: a revision holds almost any character (`HEAD^{/[f]ix}`,
  // `HEAD@{1 minute ago}`, `HEAD^{/a:b}:x`), so the path after each is a candidate.
  const names: Array<{ readonly fromRoot: string } | { readonly fromCwd: string }> = []
  for (let colon = word.indexOf(":", 1); colon > 0; colon = word.indexOf(":", colon + 1)) {
    const path = word.slice(colon + 1)
    // An address (`https://…`) or a message (`fix: x`) is no path.
    if (!path.startsWith("//") && !/^\s/.test(path)) names.push(gitRevisionPath(path))
  }
  return names
}

/** The words of each simple command of a token list, and the files its redirections name. */
const simpleCommands = (tokens: ReadonlyArray<CommandLine.Token>) => {
  const commands: Array<{ words: Array<CommandLine.Word>; hereStrings: Array<CommandLine.Word> }> = [{ words: [], hereStrings: [] }]
  const redirected: Array<CommandLine.Word> = []
  let redirection: string | undefined
  let hereString = false
  for (const token of tokens) {
    if (token._tag === "Operator") {
      if (separators.has(token.op)) {
        commands.push({ words: [], hereStrings: [] })
        redirection = undefined
      } else {
        // `<<<` reads as `<<` then `<`: a here-string, the command's input.
        hereString = redirection === "<<" && token.op === "<"
        redirection = token.op
      }
      continue
    }
    if (redirection !== undefined) {
      // A here-document's word is its delimiter, not a file; a here-string's is text (and, to a shell, its script).
      if (hereString) commands.at(-1)!.hereStrings.push(token)
      else if (!heredocs.has(redirection)) redirected.push(token)
      redirection = undefined
      hereString = false
      continue
    }
    commands.at(-1)!.words.push(token)
  }
  return { commands: commands.filter((c) => c.words.length > 0), redirected }
}

/**
 * What a command line (its tokens) names. `throughShell`: the line runs through `/bin/sh -c`, so
 * unquoted globs and a leading `~` expand.
 */
export interface NamedOptions {
  /**
   * Whether a relative `cd dir` may move elsewhere than `./dir`: the command's environment carries
   * `CDPATH` (dash and bash look for `dir` in each of its folders before cwd), or the line names
   * it or bash's `cdable_vars` (`cd NAME` moves to `$NAME`). Such a move counts as one to a folder
   * known only when the command runs; one named from `/` or `.` (`cd ./a`) is never searched for.
   */
  readonly cdSearched?: boolean
  /**
   * The `PATH` the line's commands get (`Environment.build`'s: absolute folders only): what `$PATH` stands for in
   * `PATH=$PATH:/opt/x` (round 28). Without it, such a word is known only when the command runs.
   */
  readonly path?: string | undefined
}

export const named = (tokens: ReadonlyArray<CommandLine.Token>, throughShell: boolean, depth = 0, options: NamedOptions = {}): Named => {
  const cdSearched = options.cdSearched === true || tokens.some((t) => t._tag === "Word" && searchesFolders.test(t.value))
  const files: Array<string> = []
  const unknown: Array<{ word: string; why: string }> = []
  const globs: Array<CommandLine.Word> = []
  const trees: Array<string> = []
  const fromRepositoryRoot: Array<{ path: string; base: string }> = []
  const gits: Array<GitAt> = []
  // The texts git's own folder words name, and those any other word names (see `Named.readByGit`).
  const byGit = new Set<string>()
  const byOthers = new Set<string>()
  const swapped: Array<string> = []
  const filled: Array<string> = []
  const pythons: Array<string> = []
  // Why a Python's folder is known only when it runs (a `PYTHONPATH` the shell expands).
  const pythonsUnknown: Array<string> = []
  // The folders a line's programs and libraries are searched for in first (a relative or empty `PATH` entry, round 27).
  const searched: Array<Searched> = []
  const searchedKeys = new Set<string>()
  const valueIds = new Map<string, number>()
  const linkable: Array<string> = []
  // Why the line's own shell may move its gits where the check cannot follow (`. ./s.sh`, `eval "cd x"`), if it may.
  let shellMoved: string | undefined
  const { commands, redirected } = simpleCommands(tokens)
  // Where the line may have moved before its gits run, and every `NAME=value` word it holds (see `placed`).
  const places: Array<string> = [""]
  let placesDropped = false
  const assigned: Array<string> = []
  // Whether the line's variables so far give git init/clone a template or config, and Python a safe path (kept as
  // flags: a line may hold 20,000 assignments and as many commands).
  let gitTemplated = false
  let pythonSafe = false
  // The `PYTHONPATH` words the line set or exported so far (the last one holds).
  let pythonPath: CommandLine.Word | undefined
  // The `searchVariables` words the line set or exported so far (the last of each holds).
  const searchPaths = new Map<string, CommandLine.Word>()
  const searchSet = (words: ReadonlyArray<CommandLine.Word>) => {
    for (const variable of lineVariables) {
      const last = searchWords(variable, words).at(-1)
      if (last !== undefined) searchPaths.set(variable, last)
    }
  }
  /** What a command line of the line names (a shell's `-c` script, a line a runner takes as a word), added to the line's own. */
  // A word that may be one (`perhaps`) adds only the files it names: it may be a program text (`awk '{print $1}'`) that no shell reads.
  const lineIn = (text: string, perhaps = false, path = options.path) => {
    const parsed = CommandLine.tokenize(text)
    if (parsed.unterminated || parsed.invalid !== undefined) {
      if (!perhaps) unknown.push({ word: text, why: "a script that cannot be read" })
      return
    }
    const inner = named(parsed.tokens, true, depth + 1, { cdSearched, path })
    files.push(...inner.files)
    const readByGit = new Set(inner.readByGit)
    for (const file of inner.files) (readByGit.has(file) ? byGit : byOthers).add(file)
    swapped.push(...inner.swapped)
    filled.push(...inner.filled)
    for (const at of inner.pythons) {
      if (at.language === undefined) pythons.push(at.base)
      else searched.push({ base: at.base, language: at.language, ...(at.alongside === undefined ? {} : { alongside: at.alongside }) })
    }
    if (!perhaps) unknown.push(...inner.unknown)
    globs.push(...inner.globs)
    trees.push(...inner.trees)
    fromRepositoryRoot.push(...inner.fromRepositoryRoot)
    gits.push(...inner.gits)
  }
  // A line one of whose words names a wrapper or an interpreter: its words with a space or shell syntax may be command
  // lines (`env -S 'cat /x'`, `watch 'cat /x'`, `flock f -c 'cat /x'`), read as those are.
  const runsAnother = depth < 4 && commands.some(({ words }) => words.some((w) => CommandRisk.runsOtherPrograms(NodePath.basename(w.value))))

  const word = (w: CommandLine.Word, bases: ReadonlyArray<string>, gitFolder = false): void => {
    const before = files.length
    wordFiles(w, bases)
    for (const file of files.slice(before)) (gitFolder ? byGit : byOthers).add(file)
  }
  const wordFiles = (w: CommandLine.Word, bases: ReadonlyArray<string>): void => {
    if (w.expands) {
      unknown.push({ word: w.raw, why: "the shell expands it when the command runs" })
      return
    }
    if (throughShell && CommandLine.isGlob(w)) {
      globs.push(w)
      return
    }
    for (const part of partsOf(w.value)) {
      if (/^~[^/]/.test(part)) {
        unknown.push({ word: part, why: "another user's home folder" })
        continue
      }
      if (fileLists(part)) unknown.push({ word: part, why: "a list of file names read when the command runs" })
      const texts = [part]
      if (/^file:/i.test(part)) {
        const url = fileUrlPaths(part)
        if ("unknown" in url) unknown.push({ word: part, why: url.unknown })
        else texts.push(...url.paths)
      }
      for (const file of texts) {
        files.push(file)
        if (!file.startsWith("/") && !file.startsWith("~")) for (const base of bases) files.push(NodePath.join(base, file))
      }
    }
  }

  for (const w of redirected) word(w, [])
  for (const { words: given, hereStrings } of commands) {
    // `PATH=$PATH:/opt/x` read as the value the shell gives it (see `knownPathWord`).
    const linePath = searchPaths.get("PATH")
    const words = options.path === undefined ? given : knownPathWords(given, linePath, options.path)
    // The PATH a script the k-th word holds starts with.
    const pathAt = (k: number) => innerPath(searchWords("PATH", words.slice(0, k)).at(-1), linePath, options.path)
    const gitsBefore = gits.length
    let at = 0
    // bash's `time` keyword (its `-p`, `--`) times the command after it, whose prefix sets its variables (`time PATH=bin git
    // status` ran bin/git: round 30); only first, before any assignment (`X=1 time …` runs the program `time`).
    const keyword = (w: CommandLine.Word) => !w.expands && !w.quoted.some(Boolean)
    for (let timed = false; at < words.length && keyword(words[at]!);) {
      const value = words[at]!.value
      if (reservedWords.has(value) || value === "time") timed = value === "time"
      else if (!(timed && (value === "-p" || value === "--"))) break
      at++
    }
    // `NAME=value cmd …`: the values are words too; the program is the first word after them.
    // A `PATH` is a list of folders to search, not a file: its relative entries are read below (`searchVariables`), and
    // an absolute one (`PATH=/opt/x:$PATH`) is no path the command writes or reads (round 28: it asked as outside cwd).
    for (; at < words.length && !words[at]!.expands && assignment.test(words[at]!.value); at++) {
      if (!words[at]!.value.startsWith("PATH=")) word(words[at]!, [], gitDirVariables.test(words[at]!.value))
    }
    const programWord = words[at]
    // A line's variables for Python: `PYTHONSAFEPATH` holds for later commands only when exported (`export`,
    // `declare -x`), and any other word naming it (`unset`, `env -u`, `PYTHONSAFEPATH=`) may undo that; a
    // `PYTHONPATH` holds from an export or a bare assignment (which changes an exported one's value).
    if (words.some((w) => w.raw.includes("PYTHONSAFEPATH"))) {
      pythonSafe = programWord !== undefined && exportedBy(NodePath.basename(programWord.value), words.slice(at + 1)).some((v) => PythonShadows.safePath.test(v))
    }
    const pathWords = (from: ReadonlyArray<CommandLine.Word>) => from.filter((w) => w.raw.startsWith("PYTHONPATH=") || pythonPathVariable.test(w.value))
    if (programWord === undefined) {
      pythonPath = pathWords(words).at(-1) ?? pythonPath
      searchSet(words)
      // A bare assignment changes an exported variable's value for the commands after it (`HOME=.; git status` ran
      // ./.gitconfig's core.fsmonitor: round 30), as `set -a` exports any: read as git's variables too.
      const bare = words.filter((w) => !w.expands && assignment.test(w.value)).map((w) => w.value)
      assigned.push(...bare)
      gitTemplated ||= bare.some((v) => gitTemplateVariables.test(v))
      continue
    }
    if (programWord.expands) unknown.push({ word: programWord.raw, why: "the shell expands it when the command runs" })
    const args = words.slice(at + 1)
    const argv = [programWord.value, ...args.map((w) => w.value)]
    const program = NodePath.basename(programWord.value)
    // What the line's own shell runs (`command cd x` is `cd x`).
    const own = shellRuns(argv)
    if (shellMoved === undefined && !programWord.expands) shellMoved = movesShellUnread(own)
    const move = movesToUnknown(NodePath.basename(own[0] ?? ""), own.slice(1), cdSearched)
    if (move !== undefined) {
      const where = move === "stack" ? "home, the previous folder, the folder stack" : "looked for in CDPATH, or a variable's value"
      unknown.push({ word: argv.join(" "), why: `it moves to a folder known only when the command runs (${where})` })
    }
    // A builtin that sets a variable the check reads to a value known only when it runs (`printf -v HOME .`, `for PATH in …`).
    const setUnread = builtinSets(NodePath.basename(own[0] ?? ""), own.slice(1))
    if (setUnread !== undefined) unknown.push({ word: setUnread, why: "it sets a variable git, a Python or the shell reads to a value known only when it runs" })
    const bases: Array<string> = []
    if (changesDirectory.has(program)) {
      args.forEach((w, i) => {
        const v = w.value
        if (v === "-C" && args[i + 1] !== undefined) bases.push(args[i + 1]!.value)
        else if (/^-C./.test(v)) bases.push(v.slice(2))
        else if (v.startsWith("--directory=")) bases.push(v.slice("--directory=".length))
      })
      // GNU tar and make take `--directory` by any unambiguous prefix (`tar --direc=sub`, `make --dir=sub`), its value as the next
      // word too, and `-C` in a cluster (`tar -xvCsub`).
      const syntax = program === "git" ? undefined : program === "make" || program === "gmake" ? makeOptions : LineFills.tarOptions
      if (syntax !== undefined) for (const [option, folder] of Options.parse(syntax, args.map((w) => w.value)).given) if (option === "--directory" || option === "C") bases.push(folder)
    }
    // Git as the program, or named after a wrapper or runner (`nice git status`, `xargs git`, `watch git status`), or a
    // git browser (`tig`), whose git reads the repository's config as git's own does.
    // find runs one after an action (`find . -execdir git status \;`).
    const runsGit = (name: string) => name === "git" || gitFrontends.has(name)
    const gitWord = runsGit(program)
      ? at
      : CommandRisk.runsOtherPrograms(program) || program === "find"
      ? words.findIndex((w, k) => k > at && runsGit(NodePath.basename(w.value)) && (program !== "find" || findRuns.has(words[k - 1]!.value)))
      : -1
    const read = gitWord < 0 ? undefined : gitAt(NodePath.basename(words[gitWord]!.value), words.slice(gitWord + 1))
    // `GIT_DIR=gd` after `env` or `export` names git's folder too.
    const argsFrom = files.length
    const setsVariables = /^(?:env|export|declare|typeset|local|readonly|let)$/.test(program)
    // A setter's `PATH=` (`env PATH=…`, `sudo PATH=/usr/bin …`) is a search path, read below, not a file.
    const setWords = new Set(setForProgram(words, at))
    args.forEach((w, i) => {
      if ((setsVariables || setWords.has(w)) && !w.expands && w.value.startsWith("PATH=")) return
      word(w, bases, read?.folderWords.has(at + i - gitWord) === true || gitDirVariables.test(w.value))
    })
    // After a wrapper too (`nice mv …`, `xargs rm -rf`).
    if (words.some((w, k) => k >= at && swaps.has(NodePath.basename(w.value)))) swapped.push(...files.slice(argsFrom))
    // What it unpacks, patches or copies in without naming it, and what named sources land as (`mv d1/sub .` makes `./sub`).
    // A template or config file a variable names (`GIT_TEMPLATE_DIR=t git init`, `export GIT_CONFIG_GLOBAL=g.cfg; git init`).
    const fills = LineFills.of(words.slice(at), gitTemplated || words.some((w) => gitTemplateVariables.test(w.value)))
    // A fill at or through what an earlier command put in place (`ln -s . out`, `mv x/dot out`) may go through a
    // link that command made: where it lands is known only when the line runs, so it counts as filling cwd.
    filled.push(...fills.filled.map((folder) => (linkable.some((placed) => Paths.isInside(NodePath, placed, folder)) ? "." : folder)))
    swapped.push(...fills.landed)
    if (swaps.has(program) && !/^(?:rm|rmdir|unlink)$/.test(program)) linkable.push(...files.slice(argsFrom), ...fills.landed)
    // What sets a variable: the command's prefix, a setter's words (`env`, `sudo`, `cross-env`), `export`'s or `declare`'s, and
    // any of a wrapper's, which may hand them to a shell (`watch 'GIT_DIR=x git status'`, `parallel GIT_DIR=x git …`); another
    // program's argument that looks like one (`git status -- "HOME=."`, `echo HOME=.`) sets nothing (round 30: it was read as
    // git's home, an over-ask).
    const assignments = (setsVariables || CommandRisk.runsOtherPrograms(program) ? words : [...words.slice(0, at), ...setForProgram(words, at)])
      .filter((w) => !w.expands && assignment.test(w.value)).map((w) => w.value)
    assigned.push(...assignments)
    gitTemplated ||= assignments.some((v) => gitTemplateVariables.test(v))
    const exported = exportedBy(program, args)
    gitTemplated ||= exported.some((v) => gitTemplateVariables.test(v))
    // A Python as the program, after a wrapper (`nice python3 -m json.tool x.json`) or a project runner (`poetry run
    // python …`), from the wrapper's folder (`env -C dir`).
    const pythonWord = words.findIndex(
      (w, k) => k >= at && pythonNames.test(NodePath.basename(w.value)) && (k === at || CommandRisk.runsOtherPrograms(program) || pythonRunners.test(program))
    )
    // `PYTHONSAFEPATH` reaches the Python only as the program or after `env` and assignments: a wrapper may clear it (`sudo`, `env -i`).
    const plainlyBefore = pythonWord >= at && words.slice(at, pythonWord).every((w, k) => (k === 0 ? w.value === "env" : assignment.test(w.value)))
    const safePath = (pythonSafe || words.some((w) => PythonShadows.safePath.test(w.value))) && (pythonWord === at || plainlyBefore)
    const started = pythonWord >= 0 ? PythonShadows.pythonStart(words.slice(pythonWord + 1).map((w) => w.value), safePath) : undefined
    // The folder the program (or the Python a wrapper or uv starts) runs in: `env -C sub pip3`, `uv --directory sub run …`.
    const uv = uvRun(program, args.map((w) => w.value))
    const pythonFolder = () => uv?.directory ?? movesTo(words.slice(at, pythonWord > at ? pythonWord : program === "env" ? words.length : at).map((w) => w.value)) ?? ""
    if (started?.fromFolder === true || uv?.module === true) pythons.push(pythonFolder())
    // A `PYTHONPATH` the command carries or the line set before: each relative entry is a folder any Python it starts
    // (`pip3`, `pytest`, a script's) imports from, unless `-E`/`-I` has it ignore the environment.
    // env's `-S` text with a quote, a backslash or a `$`: what it sets is known only when env splits it.
    const unsplit = setterWords(words, at).unread
    if (unsplit !== undefined) unknown.push({ word: unsplit, why: "env -S splits it into variables and a command when it runs" })
    const carried = pathWords(exports(program, args) ? words : [...words.slice(0, at), ...setForProgram(words, at)]).at(-1)
    const pathWord = carried ?? pythonPath
    if (exports(program, args)) pythonPath = carried ?? pythonPath
    else if (pathWord !== undefined && started?.ignoresEnv !== true) {
      if (pathWord.expands) pythonsUnknown.push(`${pathWord.raw}: the shell expands it when the command runs`)
      else {
        // Absolute entries too, read inside cwd only (`PYTHONPATH=/abs/repo/lib` is the repository's code, round 29), and
        // bounded with the other search paths' folders (a 20,000-entry `PYTHONPATH` read each folder).
        for (const entry of searchEntries(pythonPathVariable.exec(pathWord.value)![1]!)) searched.push({ base: from(pythonFolder(), entry), language: "python" })
      }
    }
    // A `PATH`, `PERL5LIB`, `PYTHONHOME`, … the same way, from the folder the command starts in (round 27: `PATH=bin:/usr/bin
    // git status` ran the repository's `bin/git`; round 26: `PERL5LIB=. shasum f` its `strict.pm`). One the shell expands is a
    // word known only when it runs, asked about already. The repository's own program (`LD_LIBRARY_PATH=build ./build/app`)
    // is its code with whatever it loads: the rule chose to run it (round 28; it asked before).
    if (exports(program, args)) searchSet(words)
    else if (!ownProgram(programWord)) {
      // The command's own value (its prefix's, or the line's) is where its program is looked up, and one its arguments
      // set (`env PATH=x cmd`) its program's: both are read (review 53: the quoted `PATH=…` script of `eval 'PATH=$PATH
      // git status'` hid the line's `PATH=bin:/bin`).
      const setBy = (variable: string) => [searchWords(variable, words.slice(0, at)).at(-1) ?? searchPaths.get(variable), searchWords(variable, setForProgram(words, at)).at(-1)]
      for (const { variable, language, folders, entries, set } of searchVariables.flatMap((v) => [...new Set(setBy(v.variable))].map((set) => ({ ...v, set })))) {
        if (set === undefined || set.expands) continue
        const value = set.value.slice(variable.length + 1)
        // Absolute entries too: one naming a folder of the repository (`PATH=/abs/repo/bin:/usr/bin`) is one (round 28);
        // `PythonShadows.shadowing` reads only those inside cwd.
        const named = entries === undefined ? searchEntries(value) : entries(value).filter((e) => !e.startsWith("~")).map((e) => NodePath.normalize(e))
        // The names a `PATH` folder may stand in for: the programs of its absolute folders too (`PATH=bin:/opt/x/bin mytool`).
        const alongside = language === "program" ? value.split(":").filter((e) => NodePath.isAbsolute(e)) : []
        const start = pythonFolder()
        // The value by a number: a key holds it once however long it is.
        if (!valueIds.has(value)) valueIds.set(value, valueIds.size)
        const valueId = valueIds.get(value)!
        for (const entry of named) {
          for (const folder of folders?.(entry) ?? [entry]) {
            // Each once (`PATH=$PATH:/opt/x a; ` × 4,000 names the same folders 4,000 times).
            const key = `${language}\0${start}\0${folder}\0${valueId}`
            if (searchedKeys.has(key)) continue
            searchedKeys.add(key)
            searched.push({ base: from(start, folder), language, ...(alongside.length === 0 ? {} : { alongside }) })
          }
        }
      }
    }
    // A javac as the program or after a wrapper, from the folder it starts in (`env -C sub javac …`).
    const javacWord = words.findIndex((w, k) => k >= at && NodePath.basename(w.value) === "javac" && (k === at || CommandRisk.runsOtherPrograms(program)))
    if (javacWord >= 0) {
      const classPath = searchWords("CLASSPATH", words.slice(0, javacWord)).at(-1) ?? searchPaths.get("CLASSPATH")
      // Options javac reads when it runs, from an `@file` or `JDK_JAVAC_OPTIONS` (`-cp tools`, `-processorpath tools`
      // ran tools' processor: review 57): not read, asked.
      const setBefore = [...words.slice(0, javacWord), ...setForProgram(words, at)]
      if (words.slice(javacWord + 1).some((w) => w.value.startsWith("@")) || searchWords("JDK_JAVAC_OPTIONS", setBefore).length > 0 || searchPaths.has("JDK_JAVAC_OPTIONS")) {
        pythonsUnknown.push("javac's options from an @file or JDK_JAVAC_OPTIONS, read when it runs (they may name the processors it runs)")
      } else if (classPath?.expands !== true) {
        const start = movesTo(words.slice(at, javacWord).map((w) => w.value)) ?? ""
        const given = words.slice(javacWord + 1).map((w) => w.value)
        for (const entry of javacClassPath(given, classPath?.value.slice("CLASSPATH=".length))) searched.push({ base: from(start, entry), language: "processor" })
      }
    }
    // A Maven as the program or after a wrapper: its launcher (`mvn`, `mvnDebug`) gives the JVM it starts the options of the
    // project's `.mvn/jvm.config` — `mvn -v` too — from the first folder holding a `.mvn/` at or above where it starts, or
    // its `-f` file's folder, or `MAVEN_BASEDIR` (round 30: `-javaagent:a.jar` there ran the repository's jar).
    const mavenWord = words.findIndex((w, k) => k >= at && /^(?:mvn|mvnDebug)$/.test(NodePath.basename(w.value)) && (k === at || CommandRisk.runsOtherPrograms(program)))
    if (mavenWord >= 0) {
      const start = movesTo(words.slice(at, mavenWord).map((w) => w.value)) ?? ""
      const given = words.slice(mavenWord + 1).map((w) => w.value)
      const file = given.findIndex((v) => v === "-f" || v === "--file")
      const pom = file >= 0 ? given[file + 1] : undefined
      const baseDir = searchWords("MAVEN_BASEDIR", [...words.slice(0, mavenWord), ...setForProgram(words, at)]).at(-1) ?? searchPaths.get("MAVEN_BASEDIR")
      if (baseDir?.expands === true) pythonsUnknown.push(`${baseDir.raw}: the shell expands it when the command runs`)
      const bases = baseDir !== undefined ? [baseDir.value.slice("MAVEN_BASEDIR=".length)] : pom === undefined ? [""] : [pom, NodePath.dirname(pom)]
      for (const base of bases) searched.push({ base: from(start, base), language: "jvm" })
    }
    if (read !== undefined) {
      // A wrapper's own move (`env -C dir git status`) is the git's first.
      const wrapper = gitWord > at ? movesTo(words.slice(at, gitWord).map((w) => w.value)) : undefined
      const own = read.at
      gits.push(wrapper === undefined ? own : { ...own, base: from(wrapper, own.base), ...(own.gitDir === undefined ? {} : { gitDir: from(wrapper, own.gitDir) }) })
    }
    const moved = programWord.expands ? undefined : movesTo(own)
    if (moved !== undefined && gitWord < 0) {
      // Past the limit, a place is not dropped: the line's gits work where the check does not read.
      for (const place of [...places]) {
        const to = NodePath.join(place, moved)
        if (places.includes(to)) continue
        if (places.length < placesLimit) places.push(to)
        else placesDropped = true
      }
    }
    if (program === "git") {
      const values = args.map((w) => w.value)
      const sub = GlobalOptions.subcommandIndex("git", values)
      const subcommand = values[sub] ?? ""
      if (!gitRemoteSubcommands.has(subcommand)) {
        const revisions = gitRevisionReaders.has(subcommand)
        args.slice(sub + 1).forEach((w, i, operands) => {
          if (w.expands) return
          // `-L 1,5:../x`, `-L:main:../x` (log's line ranges): a file from cwd after the last `:`.
          const colon = w.value.lastIndexOf(":")
          const fromCwd = (file: string) => files.push(file, ...bases.map((base) => NodePath.join(base, file)))
          if (colon >= 0 && (w.value.startsWith("-L") || operands[i - 1]?.value === "-L")) fromCwd(w.value.slice(colon + 1))
          if (w.value.startsWith("-")) return
          for (const name of gitNames(w.value, revisions)) {
            if ("fromCwd" in name) fromCwd(name.fromCwd)
            else for (const base of ["", ...bases]) fromRepositoryRoot.push({ path: name.fromRoot, base })
          }
        })
      }
    }
    if (program === "tar") {
      // Option letters: dash clusters, and the first word without a dash (old-style `tar cfT x.tar list`).
      const letters = args.map((w, i) => (i === 0 && !w.value.startsWith("-") ? w.value : /^-[^-]/.test(w.value) ? w.value.slice(1) : "")).join("")
      if (letters.includes("T")) unknown.push({ word: "-T", why: "a list of file names read when the command runs" })
      if (letters.includes("P") || args.some((w) => w.value.length >= 4 && "--absolute-names".startsWith(w.value))) {
        unknown.push({ word: "-P", why: "an archive's member names, kept absolute" })
      }
    }
    const listsByPrefix = Object.hasOwn(fileListPrefixes, program) ? fileListPrefixes[program] : undefined
    for (const w of listsByPrefix === undefined ? [] : args) {
      const named = w.value.startsWith("--") ? Options.resolve(listsByPrefix!, w.value.split("=")[0]!) : []
      if (!fileLists(w.value) && named.some((option) => fileListOptions.some(([list]) => list === option))) unknown.push({ word: w.value, why: "a list of file names read when the command runs" })
    }
    // `unzip -:` keeps an archive's `../` members.
    if (program === "unzip" && args.some((w) => /^-[^-]*:/.test(w.value))) unknown.push({ word: "-:", why: "an archive's member names, `../` kept" })
    // The trees the program walks, and those a program after a wrapper walks (`nice grep -r x .`, `timeout 5 find .`).
    const wraps = CommandRisk.runsOtherPrograms(program)
    argv.forEach((value, k) => {
      if (k > 0 && (!wraps || !walksTrees(NodePath.basename(value)))) return
      for (const tree of treesOf(k === 0 ? argv : argv.slice(k))) {
        trees.push(tree)
        if (!tree.startsWith("/")) for (const base of bases) trees.push(NodePath.join(base, tree))
      }
    })
    // The script of `sh -c …` is a command line of its own, after a wrapper too (`env A=1 sh -c …`, `nice sh -c …`).
    const shell = words.findIndex((w, k) => k >= at && !w.expands && shells.test(NodePath.basename(w.value)))
    const flag = shell < 0 ? -1 : words.findIndex((w, k) => k > shell && /^-[A-Za-z]*c[A-Za-z]*$/.test(w.value))
    const script = flag < 0 ? undefined : words[flag + 1]
    if (script !== undefined && !script.expands && depth < 4) lineIn(script.value, false, pathAt(flag + 1))
    // eval's words, joined, are a line its shell runs (`eval 'PATH=bin git status'` ran bin/git: round 29; read word by
    // word below, a leading `PATH=` was cut as a setting's name).
    if (own[0] === "eval" && own.length > 1 && depth < 4 && !words.slice(at).some((w) => w.expands)) lineIn(own.slice(1).join(" "), false, pathAt(at + 1))
    // A here-string fed to a shell with no script of its own is its script (`bash <<< 'git -C x status'`).
    if (shell >= 0 && script === undefined && depth < 4) for (const text of hereStrings) text.expands ? unknown.push({ word: text.raw, why: "the shell expands it when the command runs" }) : lineIn(text.value, false, pathAt(words.length))
    // cross-env-shell joins the words after its settings and runs them through a shell (`cross-env-shell 'cd x && git
    // status'`, `cross-env-shell git status`): one line, read as a shell's `-c` script is (round 30).
    const crossShell = words.findIndex((w, k) => k >= at && !w.expands && NodePath.basename(w.value) === "cross-env-shell")
    const crossAfter = crossShell < 0 ? [] : words.slice(crossShell + 1)
    const crossFirst = crossAfter.findIndex((w) => crossEnvWord(w) === undefined)
    const crossLine = crossFirst < 0 ? [] : crossAfter.slice(crossFirst)
    const readAsLine = new Set(crossLine)
    if (crossLine.length > 0 && depth < 4 && !crossLine.some((w) => w.expands)) lineIn(crossLine.map((w) => w.value).join(" "), false, pathAt(words.length - crossLine.length))
    if (runsAnother) {
      // The last `PATH=` word so far, kept as the words go (a command may hold 20,000 of them).
      let pathBefore: CommandLine.Word | undefined
      for (const w of words) {
        const text = w === script || readAsLine.has(w) ? undefined : CommandLine.lineInWord(w)
        if (text !== undefined) lineIn(text, true, innerPath(pathBefore, linePath, options.path))
        if (searchWords("PATH", [w]).length > 0) pathBefore = w
      }
    }
    // The command's gits, its own (first) and its scripts', whose folders are known only when they run.
    for (let i = gitsBefore; i < gits.length; i++) {
      const gitWords = i === gitsBefore && gitWord >= 0 ? words.slice(gitWord + 1).map((w) => w.value) : undefined
      const why = folderKnownWhenRun(words.slice(at).map((w) => w.value), gits[i]!, gitWords)
      if (why !== undefined) gits[i] = { ...gits[i]!, unknownFolder: why }
    }
  }
  const readByGit = [...byGit].filter((file) => !byOthers.has(file))
  // Why the line's gits and Pythons work where the check does not read, if they may.
  const why = shellMoved ?? (placesDropped ? `it moves to more than ${placesLimit} folders the check reads` : undefined)
  return { files: [...new Set(files)], unknown, globs, trees: [...new Set(trees)], fromRepositoryRoot, gits: placed(gits, places, assigned).map((at) => {
      return why === undefined || at.unknownFolder !== undefined ? at : { ...at, unknownFolder: why }
    }), readByGit, swapped: [...new Set(swapped)],
    filled: [...new Set(places.flatMap((place) => filled.map((folder) => from(place, folder))))],
    pythons: [
      ...[...new Set(places.flatMap((place) => pythons.map((base) => from(place, base))))].map((base) => (why === undefined ? { base } : { base, unknownFolder: why })),
      ...[...new Set(pythonsUnknown)].map((unknownFolder) => ({ base: "", unknownFolder })),
      ...searchedFolders(places, searched).map((at) => ({ ...at, ...(why === undefined ? {} : { unknownFolder: why }) }))
    ] }
}

/**
 * The root of the repository git finds from `dir`: the nearest folder at or above it holding a
 * `.git` (a folder or a file). With none, `dir` itself (git then finds nothing: the word is read
 * where it is).
 */
const repositoryRoot = async (dir: string): Promise<string> => {
  for (let at = dir; ; at = NodePath.dirname(at)) {
    if (await NodeFs.lstat(NodePath.join(at, ".git")).then(() => true, () => false)) return at
    if (NodePath.dirname(at) === at) return dir
  }
}

/** How far the checks may go. */
export interface Caps {
  /** Most entries one tree walk or glob expansion looks at. */
  readonly maxEntries: number
  readonly maxDepth: number
  /** How long all walks of one command may take. */
  readonly timeBudgetMillis: number
}

/** One path component's glob (`Glob`, linear): quoted characters literal, a bracket expression any one character (a superset is enough here). */
const componentGlob = (component: string, quoted: ReadonlyArray<boolean>): Glob.Glob => {
  const units: Array<Glob.Unit> = []
  for (let i = 0; i < component.length; i++) {
    const c = component[i]!
    if (quoted[i]) units.push({ k: "lit", c })
    else if (c === "*") units.push({ k: "star", crosses: true })
    else if (c === "?") units.push({ k: "one", crosses: true })
    else if (c === "[" && component.indexOf("]", i + 2) >= 0) {
      units.push({ k: "one", crosses: true })
      i = component.indexOf("]", i + 2)
    } else units.push({ k: "lit", c })
  }
  return Glob.compile(units)
}

/**
 * The paths an unquoted glob expands to (folders followed as the shell follows them; dot files
 * included, a superset of what a shell matches), or why they cannot be checked: the cap was reached
 * first, or a name that is not UTF-8 matched.
 */
export const expandGlob = async (word: CommandLine.Word, cwd: string, home: string, maxEntries: number): Promise<ReadonlyArray<string> | { readonly unchecked: string }> => {
  let value = word.value
  let quoted = word.quoted
  let start = cwd
  if (value.startsWith("~/") && !quoted[0]) {
    start = home
    value = value.slice(2)
    quoted = quoted.slice(2)
  } else if (value.startsWith("/")) {
    start = "/"
  }
  // Components, each with its quoting.
  const components: Array<{ text: string; quoted: ReadonlyArray<boolean> }> = []
  let from = 0
  for (let i = 0; i <= value.length; i++) {
    if (i === value.length || value[i] === "/") {
      if (i > from) components.push({ text: value.slice(from, i), quoted: quoted.slice(from, i) })
      from = i + 1
    }
  }
  let current = [start]
  let seen = 0
  for (const component of components) {
    const wild = [...component.text].some((c, i) => !component.quoted[i] && (c === "*" || c === "?" || c === "["))
    if (!wild) {
      current = current.map((dir) => NodePath.join(dir, component.text))
      continue
    }
    const pattern = componentGlob(component.text, component.quoted)
    const next: Array<string> = []
    for (const dir of current) {
      let entries: Array<Dirent<Buffer>>
      try {
        entries = await NodeFs.readdir(dir, { withFileTypes: true, encoding: "buffer" })
      } catch {
        continue
      }
      seen += entries.length
      if (seen > maxEntries) return { unchecked: `a pattern matching more than ${maxEntries} entries: not checked` }
      for (const entry of entries) {
        const name = Paths.nameOf(entry.name)
        // The shell matches such a name and passes its bytes on: the path it names cannot be looked at.
        if (name === undefined) {
          if (pattern.test(entry.name.toString("utf8"))) return { unchecked: `a pattern matching a name that is not UTF-8 (${Paths.escapedName(entry.name)}): not checked` }
        } else if (pattern.test(name)) next.push(NodePath.join(dir, name))
      }
    }
    current = next
  }
  return current
}

/**
 * Resolves what a command line names into the paths the permission check sees: each file, each
 * glob match, each link out of a walked tree; what cannot be checked is outside, with a note.
 */
export const check = (
  what: Named,
  options: {
    readonly cwd: string
    readonly access: "read" | "write"
    readonly resolve: (requested: string) => Effect.Effect<PathAccess>
    readonly caps: Caps
    readonly now: () => number
    /**
     * Whether the command may run with another `HOME` than the agent's (one set in the settings'
     * `env`, or on the line: `HOME=/x; cat ~/y`, `env HOME=/x sh -c 'cat ~/y'`): then a `~` the
     * shell expands is not the agent's home, and counts as outside.
     */
    readonly otherHome?: boolean
    /**
     * Whether the line runs without a shell: no one expands its `~` then, and the program opens
     * `~/x` in cwd — through a `~` there that may be a link out — so that path is checked too.
     */
    readonly literalTilde?: boolean
  }
): Effect.Effect<ReadonlyArray<PathAccess>> =>
  Effect.gen(function*() {
    const { access, caps, cwd } = options
    const unchecked = (requested: string, resolved: string, note: string): PathAccess => ({ requested, resolved, insideCwd: false, access, note })
    const out: Array<PathAccess> = what.unknown.map((u) => unchecked(u.word, u.word, `${u.why}: not known before it runs`))
    const root = yield* Paths.realCwd(cwd)
    const home = process.env.HOME ?? "/"
    if (what.files.length + what.globs.length + what.trees.length + what.fromRepositoryRoot.length > maxCandidates) {
      return [...out, unchecked("(the command line)", "(the command line)", `more than ${maxCandidates} words and parts of words: not checked`)]
    }
    const deadline = options.now() + caps.timeBudgetMillis
    const tilde = (text: string) => text === "~" || text.startsWith("~/")
    const texts: Array<string> = []
    for (const text of what.files) {
      if (options.otherHome === true && tilde(text)) out.push(unchecked(text, text, "~ with the HOME the command runs with: not known before it runs"))
      else texts.push(text)
      if (options.literalTilde === true && tilde(text)) texts.push(`./${text}`)
    }
    const namedTexts = texts.length
    // Git's root-relative paths, from the root of the repository each runs in (cwd's, or `-C`'s).
    const tops = new Map<string, string>()
    for (const { base, path } of what.fromRepositoryRoot) {
      const top = tops.get(base) ?? (yield* Effect.promise(() => repositoryRoot(NodePath.resolve(root, base))))
      tops.set(base, top)
      texts.push(NodePath.join(top, path))
    }
    for (const glob of what.globs) {
      if (options.otherHome === true && tilde(glob.value) && glob.quoted[0] !== true) {
        out.push(unchecked(glob.raw, glob.raw, "~ with the HOME the command runs with: not known before it runs"))
        continue
      }
      const matches = yield* Effect.promise(() => expandGlob(glob, root, home, caps.maxEntries))
      if ("unchecked" in matches) out.push(unchecked(glob.raw, glob.raw, matches.unchecked))
      else texts.push(...matches)
    }
    // A text that a glob or git's root also gives may name a destination: only the files' own are git's.
    const readByGit = new Set(what.readByGit)
    for (const text of texts.slice(namedTexts)) readByGit.delete(text)
    const resolved = yield* Effect.forEach([...new Set(texts)], options.resolve)
    out.push(...resolved.map((p) => readByGit.has(p.requested) ? { ...p, readByGit: true } : p))
    for (const tree of what.trees) {
      const at = yield* options.resolve(tree)
      // The policy reads a walked folder's rules for paths below it (a deny of `/etc/**` concerns `grep -r x /`).
      out.push({ ...at, walked: true })
      // A tree outside is already asked about; a file is not a tree.
      if (!at.insideCwd) continue
      const info = yield* Effect.promise(() => NodeFs.stat(at.resolved).catch(() => undefined))
      if (info?.isDirectory() !== true) continue
      const links: Array<PathAccess> = []
      const summary = yield* Walk.walk({
        root: at.resolved,
        allowed: (real) => Walk.isInside(root, real),
        skipFolder: () => false,
        maxFileBytes: 0,
        maxEntries: caps.maxEntries,
        maxDepth: caps.maxDepth,
        deadline,
        now: options.now,
        onSkippedLink: (path, target) => {
          const shown = Paths.display(NodePath, root, NodePath.join(at.resolved, path))
          links.push(target.exact ? { requested: shown, resolved: target.path, insideCwd: false, access } : unchecked(shown, target.path, "a link that cannot be resolved"))
          return links.length < 20
        }
      }).pipe(Effect.orElseSucceed(() => undefined))
      out.push(...links)
      if (summary === undefined) out.push(unchecked(tree, at.resolved, "a tree that could not be walked: not checked for links that lead out"))
      else if (summary.stopped.length > 0 && links.length < 20) {
        const why = summary.stopped.includes("time") ? "took too long to walk" : summary.stopped.includes("depth") ? `is deeper than ${caps.maxDepth} levels` : `has more than ${caps.maxEntries} entries`
        out.push(unchecked(tree, at.resolved, `a tree that ${why}: not fully checked for links that lead out`))
      }
    }
    const seen = new Set<string>()
    return out.filter((p) => {
      const key = `${p.requested}\0${p.resolved}\0${p.insideCwd}\0${p.walked === true}`
      if (seen.has(key)) return false
      seen.add(key)
      return true
    })
  })
