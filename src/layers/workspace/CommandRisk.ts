/**
 * What running a command (argv, no shell) can do, and how far a user's "always" answer about it
 * reaches.
 *
 * A program on the read list is "read" only when every option it is given is known not to write or
 * run anything (`sort -o F`, `uniq IN OUT`, `sed -n "1e …"`, `find -exec`, `git -c …` are not reads).
 * Such a read generalises to `shell:<program>:read`; a known write, destructive or network program
 * to `shell:<program>:<risk>`. Everything that could run another command, or that the classifier
 * does not fully understand (interpreters, wrappers like `env` and `xargs`, unknown git
 * subcommands which may be aliases, unknown options of a read-list program), is remembered for
 * exactly that command line and nothing wider.
 *
 * @since 0.1.0
 * @internal
 */
import type { Risk } from "../../domain/AgentEvent.js"
import * as GlobalOptions from "./GlobalOptions.js"
import * as Options from "./Options.js"

/** The risk of an invocation, and whether an "always" answer about it may cover others like it. */
export interface Classification {
  readonly risk: Risk
  /** False: remembered for this exact command line only. */
  readonly general: boolean
}

const exact = (risk: Risk = "write"): Classification => ({ risk, general: false })
const general = (risk: Risk): Classification => ({ risk, general: true })

/** Options of a read-list program that are not reads (and how its arguments read). */
interface OptionRule extends Options.Syntax {
  /** Short option letters that write or run something. */
  readonly short?: string
  /** Long options that write or run something (GNU tools accept any unambiguous prefix of them). */
  readonly long?: ReadonlyArray<string>
  /** True when the positional arguments are reads; false marks a write. */
  readonly positionals?: (args: ReadonlyArray<string>) => boolean
}

const readPrograms: Record<string, OptionRule> = {
  ls: {}, cat: {}, head: {}, tail: {}, wc: {}, pwd: {}, echo: {}, grep: {}, which: {}, stat: {}, du: {}, df: {},
  diff: {}, cmp: {}, cut: {}, basename: {}, dirname: {}, realpath: {}, whoami: {}, uname: {}, true: {}, false: {},
  nl: {}, tac: {}, od: {}, md5sum: {}, sha1sum: {}, sha256sum: {}, sha512sum: {}, readlink: {}, printenv: {}, id: {}, seq: {},
  printf: {},
  rg: { long: ["--pre", "--hostname-bin"], longArg: ["--pre", "--hostname-bin"] },
  file: { short: "C", long: ["--compile"], shortArg: "emfFP", longArg: ["--magic-file", "--files-from", "--separator", "--exclude", "--parameter"] },
  tree: { short: "oR", long: ["--output"], shortArg: "oLPIH", longArg: ["--filelimit", "--timefmt", "--sort", "--charset", "--fromfile", "--gitfile", "--infofile", "--hintro", "--houtro"] },
  date: {
    short: "s",
    long: ["--set"],
    shortArg: "dfrs",
    // `-I[FMT]`: `date -Iseconds` is not `-s econds`.
    shortOptional: "I",
    longArg: ["--date", "--file", "--reference", "--set", "--rfc-3339"],
    // `--iso-8601[=FMT]`; `--resolution` takes none (coreutils 9.1).
    longOptional: ["--iso-8601"],
    // `date MMDDhhmm` sets the clock.
    positionals: (args) => args.every((a) => a.startsWith("+"))
  },
  sort: {
    short: "oT",
    long: ["--output", "--compress-program", "--temporary-directory"],
    shortArg: "kotST",
    longArg: ["--key", "--output", "--field-separator", "--buffer-size", "--temporary-directory", "--compress-program", "--batch-size", "--parallel", "--files0-from", "--random-source", "--sort"]
  },
  // `uniq IN OUT` writes OUT.
  uniq: { shortArg: "fsw", longArg: ["--skip-fields", "--skip-chars", "--check-chars"], longOptional: ["--all-repeated", "--group"], positionals: (args) => args.length <= 1 }
}

/**
 * Interpreters: the options that give each program text on the line (`python3 -c`, `perl -pe`,
 * `php -r`) and those taking the next word as their value, which a scan for the program text steps
 * over (`awk -v x=1 'BEGIN{…}'`, `perl -I . -e`, `node -r fs -e`, `python3 -W ignore -c`). One list,
 * for what runs other programs here and for what program text fills (`LineFills`).
 */
export const interpreters: ReadonlyArray<{ readonly names: RegExp; readonly inline: RegExp; readonly takesValue: RegExp }> = [
  { names: /^(?:python[0-9.]*|pypy[0-9.]*)$/, inline: /^-[A-Za-z]*c$/, takesValue: /^-[WXQ]$/ },
  {
    names: /^(?:node|nodejs|bun)$/,
    inline: /^(?:-[A-Za-z]*[ep]|--eval|--print|--eval=.*|--print=.*)$/,
    takesValue: /^(?:-[rC]|--(?:require|import|loader|experimental-loader|conditions|env-file|input-type|title|inspect-port|preload|cwd|tsconfig-override|config))$/
  },
  { names: /^deno$/, inline: /^eval$/, takesValue: /^(?:-[AIL]|--(?:config|import-map|location|cert|env-file))$/ },
  { names: /^(?:perl[0-9.]*|ruby|julia)$/, inline: /^-[A-Za-z]*[eE]$/, takesValue: /^(?:-[IrCFLJpt]|--(?:require|encoding|project|threads|procs|load|sysimage))$/ },
  { names: /^(?:php[0-9.]*)$/, inline: /^-[A-Za-z]*r$/, takesValue: /^-[dcz]$/ },
  { names: /^(?:lua[0-9.]*|Rscript|osascript)$/, inline: /^-e$/, takesValue: /^-[l]$/ },
  { names: /^(?:tclsh|expect)$/, inline: /^-c$/, takesValue: /^$/ },
  // awk's program is its first operand, `-e`/`--source`'s value (gawk), or a file's (`-f`, `-E`).
  { names: /^(?:awk|gawk|mawk|nawk)$/, inline: /^(?:-e|--source)$/, takesValue: /^(?:-[vFfEil]|--(?:assign|field-separator|file|exec|include|load))$/ }
]

/**
 * Programs whose arguments are (or can be) another command or a program text: interpreters,
 * wrappers, and editors, pagers and debuggers, whose command-line commands (`vim -c '!…'`,
 * `less '+!…'`, `gdb -ex 'shell …'`, `emacs --eval`) run anything; database shells and macro
 * processors with a shell escape (`sqlite3 db '.shell …'`, `psql -c '\! …'`, m4's `syscmd`);
 * openers that hand a file to whatever the desktop runs for it (`xdg-open x.desktop`); and
 * schedulers that run a command later, outside the sandbox (`at`, `crontab`, `systemd-run`).
 */
const runsCommands = new RegExp(`^(?:env|xargs|nice|ionice|nohup|timeout|time|watch|strace|ltrace|setsid|stdbuf|flock|chroot|unshare|nsenter|setpriv|parallel|script|exec|eval|command|builtin|sudo|doas|su|runuser|sh|bash|dash|zsh|ksh|mksh|fish|csh|tcsh|busybox|${interpreters.map((i) => i.names.source.slice(4, -2)).join("|")}|tee|ssh|rsync|scp|sftp|tmux|screen|npx|pnpx|bunx|uvx|pipx|vim?|nvim|view|ex|ed|emacs|emacsclient|gdb|lldb|less|more|most|m4|dc|sqlite3|psql|mysql|mariadb|xdg-open|gio|kde-open[0-9]*|gnome-open|exo-open|open|see|run-mailcap|sensible-browser|sensible-editor|sensible-pager|x-www-browser|www-browser|at|batch|crontab|systemd-run|ssh-agent)$`)
/**
 * More programs whose job is to run the command after them (with a CPU set, limits, a fake root, a
 * display, another group, out of a Flatpak's sandbox, under a debugger or a proxy, when files
 * change …), shells and interpreters besides the common ones, and the shell's own words that run
 * code (`! cmd`, `coproc`, `source`, `.`, `trap`, a compound command's keyword, `mapfile -C`,
 * `enable -f`, `hash -p`): a line through a shell can start with them.
 */
const runsCommandsToo = new Set([
  "taskset", "chrt", "prlimit", "numactl", "setarch", "linux32", "linux64", "i386", "x86_64", "fakeroot", "fakechroot", "faketime",
  "eatmydata", "nocache", "trickle", "valgrind", "catchsegv", "perf", "rr", "sg", "newgrp", "pkexec", "sudoedit", "firejail", "bwrap",
  "flatpak", "flatpak-spawn", "runcon", "cgexec", "chpst", "daemonize", "start-stop-daemon", "dbus-run-session", "dbus-launch",
  "xvfb-run", "systemd-inhibit", "caffeinate", "unbuffer", "rlwrap", "torsocks", "tsocks", "proxychains", "proxychains4", "socat",
  "entr", "watchexec", "nodemon", "ifne", "chronic", "vipe", "pee", "sem", "lckdo", "hyperfine", "capsh", "toybox",
  // systemd's sudo, parallel runners (`xe`, `rush`), compiler launchers, a folder's programs, a package manager's launcher,
  // nix-shell (`--run`/`--command`, and a shell.nix's hook whatever its arguments) and pkgx (`pkgx node …`).
  "run0", "xe", "rush", "ccache", "sccache", "distcc", "icecc", "run-parts", "corepack", "nix-shell", "pkgx",
  // cross-env runs the command after its settings, cross-env-shell the words after them as a shell line (round 30).
  "cross-env", "cross-env-shell",
  "ash", "yash", "posh", "oksh", "loksh", "rbash", "pwsh", "powershell", "nu", "xonsh", "elvish", "rc", "es",
  "irb", "erb", "ipython", "luajit", "Rscript", "R", "julia", "guile", "racket", "sbcl", "ghci", "runghc", "runhaskell", "jshell",
  "groovy", "scala", "kotlin", "elixir", "iex", "erl", "escript", "tsx", "ts-node", "vite-node", "wish",
  "!", ".", "source", "coproc", "trap", "function", "if", "then", "else", "elif", "while", "until", "for", "do", "case", "select", "{",
  "fc", "mapfile", "readarray", "enable", "hash",
  // zsh's precommand modifiers: `noglob git -C x status` runs git.
  "noglob", "nocorrect"
])
/** Whether a program's arguments are (or can be) another command or a program text: an interpreter or a wrapper. */
export const runsOtherPrograms = (program: string): boolean => runsCommands.test(program) || runsCommandsToo.has(program)
/**
 * Whether a simple command (argv) could run another program: one of its words names a wrapper or an
 * interpreter (after a variable or another wrapper too: `FOO=1 watch …`, `nice tmux …`), or its
 * invocation is remembered for its exact line (`git clone -u …`, `tar --to-command=…`).
 */
export const mayRunAnother = (argv: ReadonlyArray<string>): boolean =>
  argv.some((word) => runsOtherPrograms(word.split("/").at(-1)!)) || !classify(argv).general
/** Package manager subcommands that run a command given on the line. */
const packageRunners = new Set(["exec", "x", "dlx", "create"])
const packageManagers = new Set(["npm", "pnpm", "yarn", "bun"])
/**
 * A package manager's subcommand, after its own options (`npm -w pkg exec …`, `pnpm -C x dlx …`) and
 * yarn's `workspace <name>` (`yarn workspace pkg exec …`): read at the first word only, `npm --prefix .
 * exec x` was a write like `npm test`, which "always" on `npm test` covered. yarn's `workspaces
 * foreach` runs a command of its own in each package: a runner too.
 */
/**
 * Whether npm's subcommand runs a package: npm takes any unique prefix of a command (`npm exe` is
 * `npm exec`), and `npm init <name>` (`create`, `innit`, and their prefixes) runs `create-<name>`.
 */
const npmRuns = (sub: string, args: ReadonlyArray<string>): boolean =>
  (sub.length >= 3 && "exec".startsWith(sub)) ||
  ((["init", "create", "innit"].some((name) => sub.length >= 2 && name.startsWith(sub))) && args.slice(args.indexOf(sub) + 1).some((a) => !a.startsWith("-")))

const packageSubcommand = (program: string, args: ReadonlyArray<string>): string => {
  let at = GlobalOptions.subcommandIndex(program, args)
  if (program === "yarn" && args[at] === "workspace") at += 2 + GlobalOptions.subcommandIndex(program, args.slice(at + 2))
  if (program === "yarn" && args[at] === "workspaces" && args[at + 1] === "foreach") return "exec"
  return args[at] ?? ""
}

/** Short options of a word, and whether a word is a long option a list names or abbreviates (`Options`). */
const shortLetters = Options.shortLetters
const longNames = Options.names

/**
 * npm's (and pnpm's) settings that name a configuration file or a program it runs or loads. npm
 * takes any unambiguous prefix of a setting (`--userc`), so a prefix counts; `--global`, a setting
 * of its own and the prefix of `--globalconfig`, does not.
 */
const npmProgramSettings = [
  "--userconfig", "--globalconfig", "--script-shell", "--node-options", "--onload-script", "--git", "--shell", "--editor", "--browser",
  "--viewer", "--init-module", "--node-gyp"
]
const npmNamesProgram = (arg: string): boolean => {
  const long = npmLong(arg)
  return long.split("=")[0] !== "--global" && longNames(long, npmProgramSettings)
}
/**
 * npm's option parser (nopt) takes a long option after one dash too: `-script-shell ./x` is
 * `--script-shell ./x`, and so is a prefix of it (`-scr=./x`). A cluster of one-letter options
 * read so errs towards asking.
 */
const npmLong = (arg: string): string => arg.length > 2 && arg.startsWith("-") && !arg.startsWith("--") ? `-${arg}` : arg
/**
 * `npm config set script-shell ./x` (`npm set`, `npm c set`, pnpm's, yarn's `config set yarnPath`):
 * it runs nothing itself, but writes a setting that names the program every later `npm test` (or
 * `yarn`) runs — in your own `~/.npmrc` with no sandbox, a project's with `--location=project`.
 */
const setsProgramSetting = (program: string, args: ReadonlyArray<string>): boolean => {
  const at = GlobalOptions.subcommandIndex(program, args)
  const sub = args[at]
  const rest = sub === "set" ? args.slice(at + 1) : (sub === "config" || sub === "c") && args[at + 1] === "set" ? args.slice(at + 2) : []
  const keys = program === "yarn" ? ["yarnPath", "yarn-path"] : npmProgramSettings.map((setting) => setting.slice(2))
  return rest.some((arg) => !arg.startsWith("-") && keys.includes(arg.split("=")[0]!))
}
/** pnpm's: the same settings, also as `--config.<key>=…`, its way of setting any of them on the line. */
const pnpmNamesProgram = (arg: string): boolean => {
  const long = npmLong(arg)
  return npmNamesProgram(long.startsWith("--config.") ? `--${long.slice("--config.".length)}` : long)
}

/** Version and environment managers, and their subcommands (or options) that run a command given after them. */
const managerRunners: Record<string, ReadonlyArray<string>> = {
  nix: ["develop", "shell", "run", "-c", "--command", "print-dev-env", "fmt"],
  direnv: ["exec"],
  devbox: ["run", "shell"],
  mise: ["exec", "x", "run", "r", "watch", "w", "tool-stub"],
  rtx: ["exec", "x", "run"],
  asdf: ["exec"],
  pixi: ["run", "r", "exec", "x", "shell"],
  volta: ["run"],
  fnm: ["exec"],
  nvm: ["exec", "run"],
  rbenv: ["exec"],
  pyenv: ["exec"],
  nodenv: ["exec"],
  goenv: ["exec"],
  jenv: ["exec"],
  stack: ["exec", "run", "runghc", "runhaskell", "ghci", "repl", "eval", "script"],
  cabal: ["exec", "run", "repl", "script"],
  opam: ["exec", "exec--", "env"],
  ghcup: ["run"],
  rustup: ["run"],
  sdk: ["exec"],
  flox: ["activate"],
}

/**
 * Programs, and their subcommands (every invocation when none are listed), that trust the
 * repository's code to run later, outside the sandbox and with no question: direnv's `allow` (the
 * user's shell hook runs `.envrc` at the next `cd`), mise's `trust` (a `mise.toml`'s `[env]`
 * scripts and hooks, at every later prompt), and what installs git hooks that run the repository's
 * scripts at the user's next commit (`pre-commit install`, `lefthook install`, husky).
 */
const trustGrants: Record<string, ReadonlyArray<string>> = {
  direnv: ["allow", "permit", "grant", "edit"],
  mise: ["trust"],
  rtx: ["trust"],
  "pre-commit": ["install", "install-hooks", "init-templatedir"],
  lefthook: ["install", "add"],
  husky: [],
  "simple-git-hooks": []
}

/** Whether `args` of `program` run a command after a manager's subcommand (`managerRunners`) or trust the repository's code (`trustGrants`). */
const managesOrTrusts = (program: string) => (args: ReadonlyArray<string>): boolean =>
  trustGrants[program]?.length === 0 || args.some((a) => (managerRunners[program] ?? []).includes(a) || (trustGrants[program] ?? []).includes(a))

/**
 * Programs that an option or operand can tell to run a program, load code or read a configuration
 * that does (`tar --to-command=sh`, `zip -TT cmd`, `man -P cmd`, `gcc -wrapper`, `wget
 * --use-askpass`, `make --eval`, `cmake -E env`, `docker run`, `uv run`, `go test -exec`): such an
 * invocation is remembered for its exact line, and a rule's wildcard never stands for it. Every word
 * is looked at, values and operands too, so a word the classifier misreads errs towards asking.
 */
const runsNamedPrograms: Record<string, (args: ReadonlyArray<string>) => boolean> = {
  // Old-style `tar cIf prog …`: the first word's letters are options too.
  tar: (args) =>
    args.some((a, i) =>
      /[IF]/.test(i === 0 && !a.startsWith("-") ? a : shortLetters(a)) ||
      longNames(a, ["--to-command", "--checkpoint-action", "--use-compress-program", "--rsh-command", "--rmt-command", "--info-script", "--new-volume-script"])
    ),
  zip: (args) => args.some((a) => shortLetters(a).includes("TT") || longNames(a, ["--unzip-command"])),
  // The pager, the browser, and a configuration file (which can define the pager).
  man: (args) => args.some((a) => /[PHC]/.test(shortLetters(a)) || longNames(a, ["--pager", "--html", "--config-file"])),
  wget: (args) => args.some((a) => shortLetters(a).includes("e") || longNames(a, ["--execute", "--use-askpass", "--config"])),
  // `--eval`, and a variable set on the line (`CC=…`, `SHELL=…`), which the makefile's recipes run.
  make: (args) => args.some((a) => shortLetters(a).includes("E") || longNames(a, ["--eval"]) || (!a.startsWith("-") && a.includes("="))),
  // `-E` runs a command (`cmake -E env …`), `-P`/`-C` a script, `-D` can name a compiler launcher.
  cmake: (args) => args.some((a) => /^-[EPCD]/.test(a)),
  // A wrapper or a plugin, a folder of programs to run (`-B`), specs, options read from a file (`@file`).
  ...Object.fromEntries(
    ["gcc", "g++", "cc", "c++", "clang", "clang++", "ld"].map((program) => [
      program,
      (args: ReadonlyArray<string>) => args.some((a) => /^(-wrapper$|-B|--?specs|-Xclang$|--?ld-path|-fuse-ld=.*\/|@)/.test(a) || a.includes("plugin"))
    ])
  ),
  ...Object.fromEntries(
    ["docker", "podman", "nerdctl"].map((program) => [program, (args: ReadonlyArray<string>) => args.some((a) => ["run", "exec", "create", "start", "debug"].includes(a))])
  ),
  kubectl: (args) => args.some((a) => ["exec", "run", "debug", "attach", "cp"].includes(a)),
  ...Object.fromEntries(["uv", "poetry", "pipenv", "pdm", "hatch", "conda", "mamba", "dotnet"].map((program) => [program, (args: ReadonlyArray<string>) => args.some((a) => a === "run" || a === "exec" || a === "tool")])),
  // Version and environment managers that run the command after a subcommand (`mise exec -- id`, `nix develop -c id`, `direnv exec . id`).
  // And what trusts the repository's code to run later (`direnv allow`, `mise trust`, `pre-commit install`).
  ...Object.fromEntries([...Object.keys(managerRunners), ...Object.keys(trustGrants)].map((program) => [program, managesOrTrusts(program)])),
  // A program given by name (`go test -exec`, `-toolexec`, `-vettool`) or through configuration (`cargo --config`).
  go: (args) => args.some((a) => /^--?(exec|toolexec|vettool)(=|$)/.test(a) || a === "generate"),
  cargo: (args) => args.some((a) => longNames(a, ["--config"]) || a === "-Z" || a.startsWith("-Z")),
  // A library loaded into the process: a PKCS#11 provider (`-D`, `ssh-add -s`/`-e`), a FIDO one (`-w`, `ssh-add -S`).
  "ssh-keygen": (args) => args.some((a) => /[Dw]/.test(shortLetters(a))),
  "ssh-add": (args) => args.some((a) => /[seS]/.test(shortLetters(a))),
  // An engine or a provider (a shared library), or a configuration that loads one; `engine` is
  // also the subcommand and a key format (`-inform engine`).
  openssl: (args) => args.some((a) => a.includes("engine") || /^-(provider|provider-path|config|propquery)$/.test(a)),
  // An OpenSSL engine, or a config file (which can name one).
  curl: (args) => args.some((a) => shortLetters(a).includes("K") || longNames(a, ["--engine", "--config"])),
  // Programs gpg runs (a photo viewer, its agent, dirmngr, the keyserver helpers' folder) or options read from a file.
  ...Object.fromEntries(["gpg", "gpg2"].map((program) => [program, (args: ReadonlyArray<string>) =>
    args.some((a) => longNames(a, ["--photo-viewer", "--exec-path", "--agent-program", "--dirmngr-program", "--options", "--load-extension", "--homedir"]))])),
  // The diff program it runs.
  ...Object.fromEntries(["sdiff", "diff3"].map((program) => [program, (args: ReadonlyArray<string>) => args.some((a) => longNames(a, ["--diff-program"]))])),
  // A configuration file (which sets the rest), a shell or a program npm runs, code node loads.
  npm: (args) => args.some(npmNamesProgram) || setsProgramSetting("npm", args),
  pnpm: (args) => args.some(pnpmNamesProgram) || setsProgramSetting("pnpm", args),
  // GNU split's `--filter=CMD`: each piece is written to CMD, run through a shell.
  split: (args) => args.some((a) => longNames(a, ["--filter"])),
  // coreutils install's `--strip-program=CMD`, run on each file it installs with `-s`.
  install: (args) => args.some((a) => longNames(a, ["--strip-program"])),
  // A `.yarnrc` whose `yarn-path` is the script yarn runs in its place.
  yarn: (args) => args.some((a) => longNames(a, ["--use-yarnrc"])) || setsProgramSetting("yarn", args)
}

const destructivePrograms = new Set(["rm", "rmdir", "mv", "dd", "shred", "chmod", "chown", "chgrp", "kill", "pkill", "killall", "truncate", "mkfs", "unlink"])
const networkPrograms: ReadonlySet<string> = new Set(["curl", "wget", "nc", "ncat", "ftp", "telnet"])

/** Whether every option of `args` is a read for `rule` (GNU tools accept any unambiguous prefix of a long option). */
const optionsAreReads = (rule: OptionRule, args: ReadonlyArray<string>): boolean => {
  const { long, operands, short } = Options.parse(rule, args)
  if ([...(rule.short ?? "")].some((letter) => short.has(letter))) return false
  if ([...long].some((name) => longNames(name, rule.long ?? []))) return false
  return rule.positionals === undefined || rule.positionals(operands)
}

// sed: a script is a read when it only prints, deletes, moves between lines or substitutes without
// the `e` (run) and `w` (write) flags. Anything else — `e`, `w`, `W`, `r`, `R`, `a`, `i`, `c`, … — is not.
const sedScriptIsRead = (script: string): boolean => {
  let i = 0
  const n = script.length
  const skipSpace = () => {
    while (i < n && /\s/.test(script[i]!)) i++
  }
  /** Reads up to an unescaped `delim`, returning false when none. */
  const until = (delim: string): boolean => {
    for (; i < n; i++) {
      if (script[i] === "\\") i++
      else if (script[i] === delim) {
        i++
        return true
      }
    }
    return false
  }
  const address = (): boolean => {
    const c = script[i]
    if (c === undefined) return true
    if (/[0-9]/.test(c)) {
      while (i < n && /[0-9~]/.test(script[i]!)) i++
    } else if (c === "$") {
      i++
    } else if (c === "/") {
      i++
      if (!until("/")) return false
      while (i < n && /[IM]/.test(script[i]!)) i++
    } else if (c === "\\") {
      const delim = script[i + 1]
      if (delim === undefined) return false
      i += 2
      if (!until(delim)) return false
      while (i < n && /[IM]/.test(script[i]!)) i++
    }
    return true
  }
  while (i < n) {
    skipSpace()
    if (i >= n) break
    if (script[i] === ";" || script[i] === "}" || script[i] === "{") {
      i++
      continue
    }
    if (!address()) return false
    skipSpace()
    if (script[i] === ",") {
      i++
      skipSpace()
      if (script[i] === "+" || script[i] === "~") i++
      if (!address()) return false
      skipSpace()
    }
    if (script[i] === "!") {
      i++
      skipSpace()
    }
    const command = script[i++]
    if (command === undefined) return false
    if ("pPdDnNgGhHxz=F{}".includes(command)) continue
    if ("qQlL".includes(command)) {
      skipSpace()
      while (i < n && /[0-9]/.test(script[i]!)) i++
      continue
    }
    if (command === "#" || command === ":" || command === "b" || command === "t" || command === "T") {
      // A comment or a label runs to the end of the line (labels also to `;`).
      while (i < n && script[i] !== "\n" && !(command !== "#" && script[i] === ";")) i++
      continue
    }
    if (command === "s" || command === "y") {
      const delim = script[i++]
      if (delim === undefined || delim === "\n" || delim === "\\") return false
      if (!until(delim) || !until(delim)) return false
      if (command === "s") {
        while (i < n && /[gpiImM0-9]/.test(script[i]!)) i++
        if (i < n && !/[\s;}]/.test(script[i]!)) return false
      }
      continue
    }
    return false
  }
  return true
}

const sed = (args: ReadonlyArray<string>): Classification => {
  const scripts: Array<string> = []
  const positionals: Array<string> = []
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    if (arg === "--") {
      positionals.push(...args.slice(i + 1))
      break
    }
    if (["-n", "--quiet", "--silent", "-E", "-r", "--regexp-extended", "-s", "--separate", "-z", "--null-data", "-u", "--unbuffered", "--posix", "--debug", "--sandbox"].includes(arg)) continue
    if (arg === "-e" || arg === "--expression") {
      if (i + 1 >= args.length) return exact()
      scripts.push(args[++i]!)
    } else if (arg.startsWith("--expression=")) {
      scripts.push(arg.slice("--expression=".length))
    } else if (/^-[nErsuz]*e./.test(arg)) {
      scripts.push(arg.slice(arg.indexOf("e") + 1))
    } else if (/^-[nErsuz]+$/.test(arg)) {
      continue
    } else if (arg === "-l" || /^-l\d+$/.test(arg) || arg.startsWith("--line-length=")) {
      if (arg === "-l") i++
    } else if (arg.startsWith("-") && arg.length > 1) {
      // -i (in place), -f (a script we cannot see), and anything unknown.
      return exact()
    } else {
      positionals.push(arg)
    }
  }
  if (scripts.length === 0) {
    if (positionals.length === 0) return exact()
    scripts.push(positionals.shift()!)
  }
  return scripts.every(sedScriptIsRead) ? general("read") : exact()
}

// find: tests and actions that only look and print. `-exec`, `-execdir`, `-ok`, `-okdir` run
// commands, `-delete` deletes, `-fprint*` and `-fls` write; anything not listed is not a read.
const findTestsWithArgument = new Set([
  "-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex", "-iregex", "-lname", "-ilname", "-samefile",
  "-newer", "-anewer", "-cnewer", "-type", "-xtype", "-size", "-perm", "-user", "-group", "-uid", "-gid", "-links", "-inum",
  "-mtime", "-atime", "-ctime", "-mmin", "-amin", "-cmin", "-used", "-maxdepth", "-mindepth", "-regextype", "-fstype", "-printf",
  "-context"
])
const findTestsAlone = new Set([
  "-print", "-print0", "-ls", "-prune", "-quit", "-true", "-false", "-empty", "-readable", "-writable", "-executable", "-nouser",
  "-nogroup", "-xdev", "-mount", "-depth", "-d", "-daystart", "-follow", "-noleaf", "-ignore_readdir_race", "-noignore_readdir_race",
  "-not", "-a", "-and", "-o", "-or", "!", "(", ")", ",", "-H", "-L", "-P"
])
const find = (args: ReadonlyArray<string>): Classification => {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    if (arg === "-delete") return exact("destructive")
    if (findTestsAlone.has(arg) || /^-O[0-3]$/.test(arg)) continue
    if (findTestsWithArgument.has(arg) || /^-newer[aBcmt][aBcmt]$/.test(arg) || arg === "-D") {
      i++
      continue
    }
    if (arg.startsWith("-")) return exact()
  }
  return general("read")
}

const gitSafeGlobals = new Set(["--no-pager", "--no-optional-locks", "--literal-pathspecs", "--no-replace-objects", "--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs"])
const gitReads = new Set(["status", "log", "diff", "show", "blame", "ls-files", "rev-parse", "describe", "shortlog", "ls-tree", "rev-list", "show-ref", "merge-base", "count-objects"])
const gitWrites: Record<string, Risk> = {
  add: "write", commit: "write", mv: "write", merge: "write", stash: "write", tag: "write", init: "write", apply: "write",
  "cherry-pick": "write", revert: "write", reset: "destructive", clean: "destructive", checkout: "destructive", rm: "destructive",
  restore: "destructive", switch: "write", push: "network", fetch: "network", pull: "network", clone: "network", "ls-remote": "network"
}
// Options of git commands that write a file, run a program, or load configuration or hooks.
const gitDeniedLong = ["--output", "--ext-diff", "--exec", "--upload-pack", "--receive-pack", "--config", "--template", "--exec-path", "--extcmd", "--tool"]
const gitBranchListing: OptionRule = {
  shortArg: "",
  longArg: ["--contains", "--no-contains", "--merged", "--no-merged", "--sort", "--format", "--points-at"],
  // Optional values (git 2.39's parse-options): `git branch --color newb` creates `newb`.
  longOptional: ["--abbrev", "--color", "--column"],
  positionals: (args) => args.length === 0
}
const gitBranchReadOptions = /^(-[arlv]+|--(all|remotes|list|verbose|show-current|contains|no-contains|merged|no-merged|sort|format|points-at|color|no-color|column|no-column|ignore-case|abbrev|no-abbrev|omit-empty)(=.*)?)$/

const git = (args: ReadonlyArray<string>): Classification => {
  let i = 0
  while (i < args.length && args[i]!.startsWith("-")) {
    // `-c`, `-C`, `--exec-path`, `--git-dir`, `-p` (a pager), …: not what the user approved.
    if (!gitSafeGlobals.has(args[i]!)) return exact()
    i++
  }
  const sub = args[i]
  if (sub === undefined) return exact()
  const rest = args.slice(i + 1)
  const deniedOption = rest.some((a) => {
    // `-c` sets configuration (`clone -c core.sshCommand=…`); `clone -u` is `--upload-pack`.
    if (a === "-c" || (sub === "clone" && a === "-u") || a.startsWith("ext::")) return true
    return longNames(a, gitDeniedLong)
  })
  if (sub === "branch") {
    const listing = rest.filter((a) => a.startsWith("-")).every((a) => gitBranchReadOptions.test(a))
    const hasList = rest.some((a) => a === "--list" || /^-[arv]*l/.test(a))
    // With --list, words are patterns; otherwise a word names a branch to create.
    return listing && (hasList || optionsAreReads(gitBranchListing, rest)) ? general("read") : exact()
  }
  if (gitReads.has(sub)) return deniedOption ? exact() : general("read")
  const risk = gitWrites[sub]
  // Unknown subcommands may be aliases, which can run anything.
  if (risk === undefined || deniedOption) return exact()
  return general(risk)
}

/** Classifies an invocation run without a shell. */
export const classify = (argv: ReadonlyArray<string>): Classification => {
  const given = argv[0] ?? ""
  const program = given.split("/").at(-1) ?? ""
  const args = argv.slice(1)
  if (runsOtherPrograms(program)) return exact(program === "ssh" || program === "rsync" || program === "scp" || program === "sftp" ? "network" : "write")
  // A program named in another case is that program where the file system ignores case (macOS's,
  // Windows'): `Bash -c …`, `GIT -c alias.x='!…' x`, `Npx x` were ordinary writes, which `shell:*`
  // allowed. It is classified as its lower-case name would be, and never as a read, nor for the
  // same program in "always" (it may be another program where case counts): at most a general write.
  const folded = program.toLowerCase()
  if (folded !== program) {
    const asFolded = classify([given.slice(0, given.length - program.length) + folded, ...args])
    return asFolded.general && asFolded.risk === "write" ? asFolded : exact(asFolded.risk === "read" ? "write" : asFolded.risk)
  }
  // A path to a program is not the program of that name: `./cat` may be anything.
  const named = given.includes("/") ? "" : program
  if (named === "git") return git(args)
  if (named === "find") return find(args)
  if (named === "sed") return sed(args)
  const rule = Object.hasOwn(readPrograms, named) ? readPrograms[named] : undefined
  if (rule !== undefined) return optionsAreReads(rule, args) ? general("read") : exact()
  const runsNamed = Object.hasOwn(runsNamedPrograms, program) ? runsNamedPrograms[program] : undefined
  if (runsNamed !== undefined && runsNamed(args)) return exact(networkPrograms.has(program) ? "network" : "write")
  if (destructivePrograms.has(program)) return general("destructive")
  if (networkPrograms.has(program)) return general("network")
  if (packageManagers.has(program)) {
    const sub = packageSubcommand(program, args)
    if (packageRunners.has(sub) || (program === "npm" && npmRuns(sub, args))) return exact()
    if (program !== "bun" && ["install", "add", "i", "ci"].includes(sub)) return general("network")
  }
  return general("write")
}

const severity: Record<Risk, number> = { read: 0, write: 1, network: 2, destructive: 3 }

/**
 * Classifies a command line of several simple commands (argv each). When a shell runs the line it
 * can do anything a program can: the risk is the highest of its commands', at least "write", and
 * an "always" answer covers only this line.
 */
export const classifyLine = (commands: ReadonlyArray<ReadonlyArray<string>>, shellSyntax: boolean): Classification => {
  const each = commands.map(classify)
  if (!shellSyntax && each.length === 1) return each[0]!
  const risk = each.reduce<Risk>((worst, c) => (severity[c.risk] > severity[worst] ? c.risk : worst), "write")
  return exact(risk)
}

/**
 * What an "always" answer about a command covers: `shell:<program>:<risk>` for a command that
 * generalises, else the exact command line. A command with shell syntax is always exact.
 */
export const scopeOf = (command: { readonly text: string; readonly argv: ReadonlyArray<string> }, classification: Classification, shellSyntax: boolean): string =>
  classification.general && !shellSyntax
    ? `shell:${command.argv[0]}:${classification.risk}`
    : `shell:exact:${command.text.trim()}`
