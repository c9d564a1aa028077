/**
 * What a git command line configures for itself: `git -c alias.x=push x origin` runs `git push`,
 * `git -c alias.x='!sh -c …' x` runs a shell script, `git -c core.pager='…' log` runs the pager it
 * names, and the same comes in through `--config-env`, `GIT_CONFIG_COUNT`/`KEY_n`/`VALUE_n` and
 * git's program variables (`GIT_PAGER=…`, `GIT_SSH_COMMAND=…`) set on the line. A deny or ask rule
 * must see what that runs (`CommandPattern.matchesAnywhere`): a rule naming `git push*` read `git x`.
 *
 * Settings whose value the line does not show — `--config-env` (the value is in the environment),
 * an `include.path` or `includeIf` (another file's settings), `GIT_CONFIG_PARAMETERS`,
 * `GIT_CONFIG_GLOBAL`/`SYSTEM`, `GIT_CONFIG`, `--exec-path`/`GIT_EXEC_PATH` (where git finds its
 * subcommands) — are `opaque`: the line may run anything.
 *
 * @since 0.13.0
 * @internal
 */
import * as GlobalOptions from "./GlobalOptions.js"
import * as RunsLater from "./RunsLater.js"

export interface LineConfig {
  /** The aliases the line defines, by lower-case name, last one winning as in git. */
  readonly aliases: ReadonlyMap<string, string>
  /** Command lines the line's settings make git run through a shell (`core.pager`, `GIT_SSH_COMMAND`, a `!` alias's). */
  readonly scripts: ReadonlyArray<string>
  /** Whether a setting's value is not on the line (see above). */
  readonly opaque: boolean
  /** The index (in the words) of the subcommand git runs, `words.length` when none. */
  readonly subcommand: number
}

/**
 * Git's variables whose value is a program or a command line it runs, and those it falls back on
 * when its own are not set (`EDITOR='…' git commit` runs the editor without a terminal).
 */
const programVariables = new Set([
  "GIT_PAGER", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "GIT_SSH", "GIT_SSH_COMMAND", "GIT_ASKPASS", "GIT_EXTERNAL_DIFF", "GIT_PROXY_COMMAND",
  "EDITOR", "VISUAL", "PAGER", "SSH_ASKPASS"
])

/** Git's variables that bring settings, or subcommands, the line does not show. */
const opaqueVariables = /^GIT_(CONFIG_PARAMETERS|CONFIG_GLOBAL|CONFIG_SYSTEM|CONFIG|EXEC_PATH|CONFIG_KEY_\d+|CONFIG_VALUE_\d+)$/

/** `section.sub.key` → the setting git reads (section and key lower case, the subsection as written). */
const setting = (name: string, value: string): RunsLater.Setting | undefined => {
  const first = name.indexOf(".")
  const last = name.lastIndexOf(".")
  if (first <= 0 || last === name.length - 1) return undefined
  return { section: name.slice(0, first).toLowerCase() + name.slice(first, last), key: name.slice(last + 1).toLowerCase(), value }
}

/**
 * The settings of the simple command `words` (values as the shell gives them) for the git it runs at
 * `git` (the index of the word naming git): its `-c`/`--config-env` options and the variables set
 * before it on the line. A setting whose word the shell makes (`dynamic`: `-c "$X"`) is opaque.
 */
export const of = (words: ReadonlyArray<string>, git: number, dynamic: ReadonlyArray<boolean> = []): LineConfig => {
  const aliases = new Map<string, string>()
  const scripts: Array<string> = []
  let opaque = false
  const take = (name: string, value: string | undefined) => {
    const read = setting(name, value ?? "")
    if (read === undefined) return
    const section = read.section.split(".")[0]!
    if (value === undefined || section === "include" || section === "includeif") opaque = true
    else if (section === "alias" && read.section === "alias") aliases.set(read.key, value)
    else if (RunsLater.runsProgram(read)) scripts.push(value)
  }
  // GIT_CONFIG_COUNT's pairs, read by their index.
  const keys = new Map<string, string>()
  const values = new Map<string, string>()
  for (const [i, word] of words.slice(0, git).entries()) {
    const assignment = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/s.exec(word)
    if (assignment === null) continue
    const [, name, value] = assignment as unknown as [string, string, string]
    // A value the shell makes (`GIT_CONFIG_VALUE_0=$V`) is not what the line shows.
    if (dynamic[i] === true && name.startsWith("GIT_")) opaque = true
    const pair = /^GIT_CONFIG_(KEY|VALUE)_(\d+)$/.exec(name)
    if (pair !== null) (pair[1] === "KEY" ? keys : values).set(pair[2]!, value)
    else if (programVariables.has(name)) scripts.push(value)
    else if (opaqueVariables.test(name)) opaque = true
  }
  for (const [index, name] of keys) take(name, values.get(index))
  const args = words.slice(git + 1)
  const subcommand = git + 1 + GlobalOptions.subcommandIndex("git", args)
  for (let i = git + 1; i < subcommand; i++) {
    const word = words[i]!
    if (word === "-c" && dynamic[i + 1] === true) opaque = true
    else if (word === "-c") {
      const value = words[i + 1] ?? ""
      const eq = value.indexOf("=")
      take(eq < 0 ? value : value.slice(0, eq), eq < 0 ? "true" : value.slice(eq + 1))
    } else if (word === "--config-env" || word.startsWith("--config-env=") || word === "--exec-path" || word.startsWith("--exec-path=")) {
      opaque = true
    }
  }
  return { aliases, scripts, opaque, subcommand }
}
