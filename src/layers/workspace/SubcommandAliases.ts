/**
 * The other names a package manager takes for a subcommand, so that a deny or ask rule naming one
 * (`npm run deploy*`) holds for the others (`npm rum deploy`, `npm urn deploy`, `npm run-script
 * deploy`, `npm runScript deploy`): npm's own alias table (its `lib/utils/cmd-list.js`: aliases,
 * typos it accepts, and any unique prefix of a command or alias), pnpm's and bun's aliases, the
 * programs that are a subcommand under another name (`npx` is `npm exec`, `pnpx` is `pnpm dlx`, `bunx`
 * is `bun x`), and the scripts a package manager runs without `run` (`npm test`, `pnpm build`,
 * `yarn build`, `bun build` if not a builtin).
 *
 * Used for deny and ask rules only (`CommandPattern.matchesAnywhere`): nothing here allows anything,
 * and a name read too widely only makes such a rule fence more.
 *
 * @since 0.13.0
 * @internal
 */
import type * as CommandLine from "./CommandLine.js"
import * as WordIndex from "./WordIndex.js"

interface Table {
  /** Each other name and the command it stands for. */
  readonly aliases: ReadonlyMap<string, string>
  /** The commands, when a unique prefix of a command or an alias names it (npm). */
  readonly abbreviated?: ReadonlyArray<string>
  /** The command that runs a script (`run-script`, `run`). */
  readonly run: string
  /**
   * Which subcommands run the script of their own name: a set (npm's `test`, `start`, …), or every
   * word that is not one of these builtins (pnpm, yarn and bun run a script named like no command).
   */
  readonly scripts: { readonly only: ReadonlySet<string> } | { readonly except: ReadonlySet<string> }
}

const npmCommands = [
  "access", "adduser", "audit", "bugs", "cache", "ci", "completion", "config", "dedupe", "deprecate", "diff", "dist-tag", "docs",
  "doctor", "edit", "exec", "explain", "explore", "find-dupes", "fund", "get", "help", "help-search", "hook", "init", "install",
  "install-ci-test", "install-test", "link", "ll", "login", "logout", "ls", "org", "outdated", "owner", "pack", "ping", "pkg", "prefix",
  "profile", "prune", "publish", "query", "rebuild", "repo", "restart", "root", "run-script", "sbom", "search", "set", "shrinkwrap",
  "star", "stars", "start", "stop", "team", "test", "token", "undeprecate", "uninstall", "unpublish", "unstar", "update", "version",
  "view", "whoami"
]

// npm's `aliases` (npm 11 names the runner `run` and `run-script` its alias: one class either way).
const npmAliases: ReadonlyArray<readonly [string, string]> = [
  ["author", "owner"], ["home", "docs"], ["issues", "bugs"], ["info", "view"], ["show", "view"], ["find", "search"], ["add", "install"],
  ["unlink", "uninstall"], ["remove", "uninstall"], ["rm", "uninstall"], ["r", "uninstall"], ["un", "uninstall"], ["rb", "rebuild"],
  ["list", "ls"], ["ln", "link"], ["create", "init"], ["i", "install"], ["it", "install-test"], ["cit", "install-ci-test"],
  ["up", "update"], ["c", "config"], ["s", "search"], ["se", "search"], ["tst", "test"], ["t", "test"], ["ddp", "dedupe"],
  ["v", "view"], ["run", "run-script"], ["clean-install", "ci"], ["clean-install-test", "install-ci-test"], ["x", "exec"],
  ["why", "explain"], ["la", "ll"], ["verison", "version"], ["ic", "ci"], ["innit", "init"], ["in", "install"], ["ins", "install"],
  ["inst", "install"], ["insta", "install"], ["instal", "install"], ["isnt", "install"], ["isnta", "install"], ["isntal", "install"],
  ["isntall", "install"], ["install-clean", "ci"], ["isntall-clean", "ci"], ["hlep", "help"], ["dist-tags", "dist-tag"],
  ["upgrade", "update"], ["udpate", "update"], ["rum", "run-script"], ["sit", "install-ci-test"], ["urn", "run-script"],
  ["ogr", "org"], ["add-user", "adduser"]
]

const tables: Record<string, Table> = {
  npm: {
    aliases: new Map(npmAliases),
    abbreviated: [...npmCommands, ...npmAliases.map(([name]) => name)],
    run: "run-script",
    scripts: { only: new Set(["test", "start", "stop", "restart"]) }
  },
  pnpm: {
    aliases: new Map([
      ["i", "install"], ["rm", "remove"], ["uninstall", "remove"], ["un", "remove"], ["uni", "remove"], ["up", "update"],
      ["upgrade", "update"], ["ls", "list"], ["la", "list"], ["ll", "list"], ["t", "test"], ["tst", "test"], ["ln", "link"],
      ["dislink", "unlink"], ["rb", "rebuild"], ["it", "install-test"], ["run-script", "run"], ["c", "config"], ["m", "recursive"],
      ["multi", "recursive"]
    ]),
    run: "run",
    scripts: {
      except: new Set([
        "add", "install", "update", "remove", "link", "unlink", "import", "rebuild", "prune", "fetch", "install-test", "patch",
        "patch-commit", "patch-remove", "audit", "list", "outdated", "why", "licenses", "run", "exec", "dlx", "create", "publish", "pack",
        "recursive", "server", "store", "root", "bin", "setup", "init", "deploy", "doctor", "config", "get", "set", "env", "cat-file",
        "cat-index", "find-hash", "self-update", "approve-builds", "ignored-builds", "help", "version", "dedupe", "sbom", "cache",
        "catalog", "owner", "login", "logout", "whoami", "docs", "view", "stars"
      ])
    }
  },
  yarn: {
    aliases: new Map(),
    run: "run",
    scripts: {
      except: new Set([
        "access", "add", "audit", "autoclean", "bin", "cache", "check", "config", "constraints", "create", "dedupe", "dlx", "exec",
        "explain", "generate-lock-entry", "global", "help", "import", "info", "init", "install", "licenses", "link", "list", "login",
        "logout", "node", "npm", "outdated", "owner", "pack", "patch", "patch-commit", "plugin", "policies", "publish", "rebuild",
        "remove", "run", "search", "set", "stage", "tag", "team", "unlink", "unplug", "up", "upgrade", "upgrade-interactive", "version",
        "versions", "why", "workspace", "workspaces"
      ])
    }
  },
  bun: {
    aliases: new Map([["i", "install"], ["a", "add"], ["rm", "remove"], ["c", "create"]]),
    run: "run",
    scripts: {
      except: new Set([
        "run", "test", "x", "exec", "repl", "install", "add", "remove", "update", "outdated", "audit", "link", "unlink", "publish",
        "patch", "patch-commit", "pm", "info", "build", "init", "create", "upgrade", "why", "feedback", "completions", "help"
      ])
    }
  }
}

/** Programs that are another's subcommand under a name of their own: `npx cowsay` is `npm exec cowsay`. */
const programAliases: Record<string, readonly [program: string, subcommand: string]> = {
  npx: ["npm", "exec"],
  pnpx: ["pnpm", "dlx"],
  bunx: ["bun", "x"]
}

/** The names of the words {@link spelledAs} rewrites for `program`: its own and those of the programs that are its subcommand (`npx` for npm). */
export const namesOf = (program: string): ReadonlyArray<string> =>
  knows(program) ? [program, ...Object.keys(programAliases).filter((name) => programAliases[name]![0] === program)] : []

/** Whether `program` has other names for its subcommands that this module knows. */
export const knows = (program: string): boolean => Object.hasOwn(tables, program)

/**
 * The command `word` names for `program`, as the program reads it: itself, an alias's command, or —
 * for npm — the one command or alias it is a unique prefix of (npm takes `runScript` as `run-script`).
 * `undefined` when it names no command the table knows (then it may be a script's name).
 */
const commandOf = (table: Table, word: string): string | undefined => {
  const name = table.abbreviated !== undefined && /[A-Z]/.test(word) ? word.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`) : word
  const direct = table.aliases.get(name)
  if (direct !== undefined) return direct
  if (table.abbreviated === undefined || name === "") return name
  let found: string | undefined
  for (const candidate of table.abbreviated) {
    if (candidate === name) return name
    if (!candidate.startsWith(name)) continue
    if (found !== undefined) return undefined
    found = candidate
  }
  return found === undefined ? undefined : table.aliases.get(found) ?? found
}

const runsScript = (table: Table, command: string | undefined): boolean =>
  command !== undefined && ("only" in table.scripts ? table.scripts.only.has(command) : !table.scripts.except.has(command))

interface Text {
  readonly value: string
  readonly quoted: ReadonlyArray<boolean>
  readonly raw: string
}

/** `word` reading `value`, unquoted. */
const spelled = <W extends Text>(word: W, value: string): W => ({
  ...word,
  value,
  raw: value,
  quoted: [...value].map(() => false)
})

/**
 * `words` (a simple command's) with each subcommand of `program` written the way a rule names it
 * (`subcommand`, the plain start of the rule's second word), or `undefined` when none differs:
 * another name of the same command (`npm rum deploy` → `npm run deploy` for `npm run deploy*`), a
 * program that is the subcommand (`npx x` → `npm exec x`), a script run without `run` (`npm test` →
 * `npm run test`, `pnpm build` → `pnpm run build`) and, for a rule naming a script, the same script
 * run with `run` (`pnpm run deploy` → `pnpm deploy`). Reads only the words naming the program (`WordIndex`),
and copies the words only when one is replaced.
 */
export const spelledAs = <W extends CommandLine.Word>(program: string, subcommand: string, words: ReadonlyArray<W>): ReadonlyArray<W> | undefined => {
  const table = tables[program]
  if (table === undefined) return undefined
  const named = commandOf(table, subcommand)
  const ruleRuns = named === table.run
  const ruleScript = runsScript(table, named)
  // Only the words naming the program or a program that is its subcommand are read, in their order.
  const index = WordIndex.of(words)
  const at = namesOf(program).flatMap((name) => index.named.get(name) ?? []).sort((x, y) => x - y)
  if (at.length === 0) return undefined
  const from = WordIndex.subcommandFrom(index, program)
  // Where a word is replaced: the index of the subcommand and the words put in its place.
  const replaced = new Map<number, ReadonlyArray<W>>()
  for (const i of at) {
    const name = index.values[i]!.split("/").at(-1)!
    const alias = Object.hasOwn(programAliases, name) ? programAliases[name] : undefined
    if (alias !== undefined && alias[0] === program) {
      const [as, sub] = alias
      if (commandOf(table, sub) === named) replaced.set(i, [spelled(words[i]!, as), spelled(words[i]!, subcommand)])
      continue
    }
    if (name !== program) continue
    const sub = from[i + 1]!
    const word = words[sub]
    if (word === undefined || word.value === subcommand) continue
    const command = commandOf(table, word.value)
    if (named !== undefined && command === named) replaced.set(sub, [spelled(word, subcommand)])
    else if (ruleRuns && runsScript(table, command ?? word.value)) {
      replaced.set(sub, [spelled(word, subcommand), spelled(word, "only" in table.scripts ? command! : word.value)])
    } else if (ruleScript && command === table.run) replaced.set(sub, [])
  }
  if (replaced.size === 0) return undefined
  return words.flatMap((word, i) => replaced.get(i) ?? [word])
}

/** Programs that run a package's program by name: `npx foo`, `pnpx foo`, `bunx foo`. */
const runnerPrograms: ReadonlySet<string> = new Set(["npx", "pnpx", "bunx"])

/**
 * Package managers' subcommands that do the same (`npm exec`, `npm x`, `pnpm dlx`, `yarn dlx`, `bun x`).
 * `pnpm exec` and `yarn exec` run what the project has installed, not a package by name: not these.
 */
const runnerSubcommands: Readonly<Record<string, (subcommand: string) => boolean>> = {
  npm: (subcommand) => commandOf(tables.npm!, subcommand) === "exec",
  pnpm: (subcommand) => subcommand === "dlx",
  yarn: (subcommand) => subcommand === "dlx",
  bun: (subcommand) => subcommand === "x"
}

/**
 * The words a rule names a package runner by (`["npx"]` for `npx*` or `npx foo*`, `["pnpm", "dlx"]`
 * for `pnpm dlx*`), from the plain start of its first word and its second: `undefined` when it names none.
 */
export const runnerNamed = (first: string | undefined, second: string | undefined): ReadonlyArray<string> | undefined =>
  first === undefined ? undefined
  : runnerPrograms.has(first) ? [first]
  : second !== undefined && Object.hasOwn(runnerSubcommands, first) && runnerSubcommands[first]!(second) ? [first, second]
  : undefined

/** The names of the words {@link runnerSpelledAs} rewrites: the runners' own and their package managers'. */
export const runnerNames: ReadonlyArray<string> = [...runnerPrograms, ...Object.keys(runnerSubcommands)]

/**
 * `words` (a simple command's) with every way to run a package by name written as the rule names one
 * (`named`, see {@link runnerNamed}), the runner's own options after it left out: for `npx foo*`,
 * `npm exec -- foo`, `npm x --yes foo`, `pnpm dlx foo`, `yarn dlx foo`, `bunx foo` and `bun x foo`
 * read `npx foo` (a rule naming one runner named only that one, and `npm exec*` only npm's). `undefined`
 * when the command runs none. One pass over the words.
 */
export const runnerSpelledAs = <W extends CommandLine.Word>(named: ReadonlyArray<string>, words: ReadonlyArray<W>): ReadonlyArray<W> | undefined => {
  const spans = runnerSpans(words)
  if (spans.length === 0) return undefined
  const out: Array<W> = []
  let next = 0
  for (const { first, last } of spans) {
    for (let i = next; i < first; i++) out.push(words[i]!)
    for (const word of named) out.push(spelled(words[first]!, word))
    next = last + 1
  }
  for (let i = next; i < words.length; i++) out.push(words[i]!)
  return out
}

/**
 * Where a simple command runs a package by name: each runner's words, from the word naming it to its
 * last option (`npm exec --yes` of `npm exec --yes foo`). The same whatever runner a rule names, so
 * read once per command (`WordIndex`), and only for a command with a word naming a runner.
 */
const runnerSpans = (words: ReadonlyArray<CommandLine.Word>): ReadonlyArray<{ readonly first: number; readonly last: number }> => {
  const index = WordIndex.of(words)
  return WordIndex.memo(index, "runnerSpans", () => {
    if (!WordIndex.names(index, runnerNames)) return []
    const { values } = index
    const spans: Array<{ first: number; last: number }> = []
    for (let i = 0; i < words.length; i++) {
      const name = values[i]!.split("/").at(-1)!
      let last = -1
      if (runnerPrograms.has(name)) last = i
      else if (Object.hasOwn(runnerSubcommands, name)) {
        const at = WordIndex.subcommandFrom(index, name)[i + 1]!
        if (at < words.length && runnerSubcommands[name]!(values[at]!)) last = at
      }
      if (last < 0) continue
      const first = i
      i = last
      while (i + 1 < words.length && values[i + 1]!.startsWith("-")) i++
      spans.push({ first, last: i })
    }
    return spans
  })
}
