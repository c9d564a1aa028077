/**
 * Matching a rule's command pattern against a command line, token by token rather than as text.
 *
 * Both are tokenized the same way (`CommandLine.tokenize`). An unquoted `*` in the pattern matches
 * any run of plain word characters and word breaks, `?` one plain character; neither ever matches
 * an operator (`;` `&&` `|` `>` `(` newline …), a substituted word (`$…`, backticks), a newline
 * inside a word, nor — when the line runs through a shell — a word the shell would expand (an
 * unquoted glob or a leading `~`). Such syntax matches only where the pattern spells out the same
 * token: `npm test | tee log.txt` allows exactly that pipe, and `cat *` allows no pipe at all.
 *
 * @since 0.1.0
 * @internal
 */
import * as CommandLine from "./CommandLine.js"
import * as CommandRisk from "./CommandRisk.js"
import * as Glob from "./Glob.js"
import * as GitLineConfig from "./GitLineConfig.js"
import * as GlobalOptions from "./GlobalOptions.js"
import * as SubcommandAliases from "./SubcommandAliases.js"
import * as WordIndex from "./WordIndex.js"

export type Unit =
  | { readonly k: "ch"; readonly c: string; readonly free: boolean }
  | { readonly k: "sep" }
  | { readonly k: "op"; readonly op: string }
  | { readonly k: "dyn"; readonly raw: string }

export type PatternUnit =
  | { readonly k: "lit"; readonly c: string }
  | { readonly k: "star" }
  | { readonly k: "one" }
  | { readonly k: "sep" }
  | { readonly k: "op"; readonly op: string }
  | { readonly k: "dyn"; readonly raw: string }

const sep = { k: "sep" } as const

/** How many words and units the matcher has visited (see `WordIndex.visited`): what the tests count a decision's work by. */
export const visited = WordIndex.visited

const visit = WordIndex.visit

/**
 * A line's units, kept for as long as its tokens are: a decision tokenizes the line once and matches
 * it against every rule, and a long line's units (one per character) took seconds to make again per rule.
 */
const unitsMade = new WeakMap<ReadonlyArray<CommandLine.Token>, ReadonlyArray<Unit>>()

const commandUnits = (tokens: ReadonlyArray<CommandLine.Token>): ReadonlyArray<Unit> => {
  const made = unitsMade.get(tokens)
  if (made !== undefined) return made
  const units = unitsOf(tokens)
  unitsMade.set(tokens, units)
  return units
}

/** The line's segments (see `CommandLine.segments`), kept as its units are. */
const segmentsMade = new WeakMap<ReadonlyArray<CommandLine.Token>, ReadonlyArray<ReadonlyArray<CommandLine.Word>>>()

const segmentsOf = (tokens: ReadonlyArray<CommandLine.Token>) => {
  const made = segmentsMade.get(tokens)
  if (made !== undefined) return made
  const segments = CommandLine.segments(tokens)
  segmentsMade.set(tokens, segments)
  return segments
}

const unitsOf = (tokens: ReadonlyArray<CommandLine.Token>): ReadonlyArray<Unit> => {
  visit(tokens.length)
  const throughShell = tokens.some((t) => t._tag === "Operator" || t.expands)
  const units: Array<Unit> = []
  let previousWord = false
  for (const token of tokens) {
    if (token._tag === "Operator") {
      units.push({ k: "op", op: token.op })
      previousWord = false
      continue
    }
    if (previousWord) units.push(sep)
    previousWord = true
    if (token.expands || (throughShell && WordIndex.globs(token))) units.push({ k: "dyn", raw: token.raw })
    else for (const c of token.value) units.push({ k: "ch", c, free: c !== "\n" && c !== "\r" })
  }
  return units
}

const patternUnits = (tokens: ReadonlyArray<CommandLine.Token>): ReadonlyArray<PatternUnit> => {
  const units: Array<PatternUnit> = []
  let previousWord = false
  for (const token of tokens) {
    if (token._tag === "Operator") {
      units.push({ k: "op", op: token.op })
      previousWord = false
      continue
    }
    if (previousWord) units.push(sep)
    previousWord = true
    if (token.expands) {
      units.push({ k: "dyn", raw: token.raw })
      continue
    }
    ;[...token.value].forEach((c, i) => {
      const wild = !token.quoted[i]
      units.push(wild && c === "*" ? { k: "star" } : wild && c === "?" ? { k: "one" } : { k: "lit", c })
    })
  }
  return units
}

const free = (u: Unit) => u.k === "sep" || (u.k === "ch" && u.free)

const same = (p: PatternUnit, u: Unit): boolean => {
  switch (p.k) {
    case "lit":
      return u.k === "ch" && u.c === p.c
    case "one":
      return u.k === "ch" && u.free
    case "sep":
      return u.k === "sep"
    case "op":
      return u.k === "op" && u.op === p.op
    case "dyn":
      return u.k === "dyn" && u.raw === p.raw
    case "star":
      return false
  }
}

/**
 * Whether the pattern units match all of the command units: the set of pattern positions reached so
 * far, advanced one unit at a time (no backtracking blow-up; a pattern whose literal start differs
 * is done at the first unit, so checking a long line against many rules stays cheap).
 */
const matchUnits = (pattern: ReadonlyArray<PatternUnit>, units: ReadonlyArray<Unit>, starts: ReadonlyArray<Start> = [], open = false): boolean => {
  // Where a match may also begin or go on (ascending unit indices): the position is added again there.
  let nextStart = 0
  const lastStart = starts.at(-1)?.at ?? -1
  const m = pattern.length
  // The positions reached before the current unit, and those reached after it (swapped at each unit).
  let current = new Int32Array(m + 1)
  let following = new Int32Array(m + 1)
  // The step at which a position was last added: a position is listed once per step.
  const added = new Int32Array(m + 1).fill(-1)
  let step = 0
  /** Adds position `i` to `list` (holding `count`) and, a star matching nothing too, those after it; the new count. */
  const add = (list: Int32Array, count: number, i: number): number => {
    for (;;) {
      if (added[i] === step) return count
      added[i] = step
      list[count++] = i
      if (i === m || pattern[i]!.k !== "star") return count
      i++
    }
  }
  let count = add(current, 0, 0)
  for (let u = 0; u < units.length; u++) {
    visit(1)
    const unit = units[u]!
    while (nextStart < starts.length && starts[nextStart]!.at <= u) {
      const start = starts[nextStart++]!
      if (start.at === u) count = add(current, count, start.position)
    }
    step++
    let reached = 0
    for (let k = 0; k < count; k++) {
      const i = current[k]!
      if (i === m) continue
      const p = pattern[i]!
      // A star takes a free unit and stays; anything else takes the unit it is the same as and moves on.
      const to = p.k === "star" ? (free(unit) ? i : -1) : same(p, unit) ? i + 1 : -1
      if (to >= 0) reached = add(following, reached, to)
    }
    if (reached === 0 && u >= lastStart) return false
    const swap = current
    current = following
    following = swap
    count = reached
    // No position left: nothing is read until the next place a match may begin.
    if (count === 0) u = Math.max(u, starts[nextStart]!.at - 1)
  }
  // A line that goes on with words not known here (`open`) may match from any position still reached.
  if (open) return count > 0
  for (let k = 0; k < count; k++) if (current[k] === m) return true
  return false
}

/** A pattern's text read once: its tokens, and what the matchers make of them (each made when first asked). */
interface Read {
  readonly tokens: CommandLine.Tokenized
  compiled?: { readonly units: ReadonlyArray<PatternUnit>; readonly hazards: ReadonlyArray<string> } | null
  hazards?: ReadonlySet<string>
  anyText?: Glob.Glob
}

/**
 * Patterns read, by their text. A policy's rules are checked against every call, and each check
 * read a rule's pattern again (tokenized up to five times in one `matchesAnywhere`, its raw-text glob
 * compiled each time): the rules do not change, so each is read once. Bounded — patterns up to
 * `keptLength` characters (rules; a suggested rule made of a model's long line is read each time),
 * `kept` of them, all dropped when full — so no text the model writes can grow it.
 */
const read = new Map<string, Read>()
const kept = 512
const keptLength = 4_096

const readPattern = (pattern: string): Read => {
  const known = read.get(pattern)
  if (known !== undefined) return known
  const fresh: Read = { tokens: CommandLine.tokenize(pattern) }
  if (pattern.length <= keptLength) {
    if (read.size >= kept) read.clear()
    read.set(pattern, fresh)
  }
  return fresh
}

const compiledOf = (r: Read) => {
  if (r.compiled === undefined) {
    const parsed = r.tokens
    r.compiled = parsed.unterminated || parsed.invalid !== undefined ? null : { units: patternUnits(parsed.tokens), hazards: CommandLine.hazardsOf(parsed.tokens) }
  }
  return r.compiled ?? undefined
}

/** A compiled pattern, or undefined when the pattern itself does not parse (it then matches nothing). */
export const compile = (pattern: string) => compiledOf(readPattern(pattern))

/** A command line's units as `matches` reads them (for the matcher's tests). */
export const lineUnits = (command: string): ReadonlyArray<Unit> => commandUnits(CommandLine.tokenize(command).tokens)

/**
 * Whether `pattern` matches the whole command line (strictly: wildcards never match syntax). `line` is
 * the command tokenized, when the caller has it already.
 */
export const matches = (pattern: string, command: string, line: CommandLine.Tokenized = CommandLine.tokenize(command)): boolean => {
  const compiled = compile(pattern)
  if (compiled === undefined || line.unterminated || line.invalid !== undefined) return false
  return matchUnits(compiled.units, commandUnits(line.tokens))
}

/** The program a pattern names in its first word, when that word is plain text (no wildcard, no substitution). */
const programNamed = (pattern: string): string | undefined => {
  const first = readPattern(pattern).tokens.tokens[0]
  if (first === undefined || first._tag !== "Word" || first.expands || first.value === "") return undefined
  return [...first.value].some((c, i) => !first.quoted[i] && (c === "*" || c === "?")) ? undefined : first.value
}

/** The plain start of a pattern's word at `index`, before any wildcard (`publish` of `npm publish*`), if it has one. */
const plainStartOf = (pattern: string, index: number): string | undefined => {
  const word = readPattern(pattern).tokens.tokens[index]
  if (word === undefined || word._tag !== "Word" || word.expands) return undefined
  const wild = [...word.value].findIndex((c, i) => !word.quoted[i] && (c === "*" || c === "?"))
  const named = wild < 0 ? word.value : word.value.slice(0, wild)
  return named === "" ? undefined : named
}

/** The plain start of a pattern's second word (`publish` of `npm publish*`), if it has one. */
const subcommandNamed = (pattern: string): string | undefined => plainStartOf(pattern, 1)

/** A place in a command's units (`at`) where the match may be at a pattern's `position` too. */
interface Start {
  readonly at: number
  readonly position: number
}

/**
 * Where, in a simple command's units, a command run under `program`'s name may begin: at each word
 * that names it — by that name after a wrapper (`command git …`, `env X=1 git …`, `nice git …`), or
 * by a path to it (`/usr/bin/git …`: at its last part, so that the word reads as the bare name) —
 * and, for git and the other programs `GlobalOptions` knows, where its subcommand begins after the
 * program's own options (`git --no-pager -C . push`, `npm --prefix x publish`, `make -C x deploy`),
 * at the pattern's `afterProgram` (its position after the program's word). One pass over the words,
 * and the matcher takes every start in the same linear pass, however many such words a line holds.
 * Over-reporting (`echo git push`) only makes a deny rule deny more.
 */
const startsUnder = (program: string, afterProgram: number | undefined, words: ReadonlyArray<CommandLine.Word>): ReadonlyArray<Start> => {
  const index = WordIndex.of(words)
  const { dynamic, offsets } = index
  // A word the shell makes is no start, but still names the program for make's later targets.
  const naming = index.named.get(program) ?? []
  visit(naming.length)
  if (naming.length === 0) return []
  const named = naming.filter((i) => !dynamic[i])
  const starts: Array<Start> = []
  // Where the subcommand is after the program's own options, read once for the whole line.
  const subcommand = GlobalOptions.knows(program) && afterProgram !== undefined ? WordIndex.subcommandFrom(index, program) : undefined
  for (const i of named) {
    const word = words[i]!
    if (i > 0 || word.value !== program) starts.push({ at: offsets[i]! + word.value.length - program.length, position: 0 })
    if (subcommand === undefined || afterProgram === undefined) continue
    const sub = subcommand[i + 1]!
    if (sub > i + 1 && sub < words.length && !dynamic[sub]) starts.push({ at: offsets[sub]!, position: afterProgram })
  }
  // make's later targets (`make clean deploy`) are where a match may begin too.
  if (subcommand !== undefined && afterProgram !== undefined) {
    for (const j of WordIndex.laterSubcommands(index, program)) {
      if (!dynamic[j]) starts.push({ at: offsets[j]!, position: afterProgram })
    }
  }
  return starts.sort((a, b) => a.at - b.at)
}

/**
 * How much of a line the careful matcher may still read in one decision: the simple commands it
 * visits inside other commands (a shell's `-c` script, a runner's word, git's alias, …), at every
 * depth and for every rule, each counted once per visit. A hostile line of 8,000 `sh -c 'a b'`
 * commands, each read again under 50 rules, held a decision (and the event loop) 12 s; spent,
 * reading stops with {@link TooMuchToRead} and the policy asks instead of deciding. The line's own
 * commands are not counted: the line is at most 128 KiB, and they are read in a linear pass a rule.
 */
export interface Budget {
  left: number
  /**
   * The line's own simple commands it may still read. Each rule reads every one of them: 16,000
   * `a;a;a…` commands under 100 deny and ask rules held a decision 10 s (1.6 million reads), and a
   * settings file may hold 500 rules. Spent, reading stops with {@link TooMuchToRead} too.
   */
  commands: number
}

/** The commands inside other commands a decision may read, counted over every rule it checks (see {@link Budget}). */
export const readingLimit = 20_000

/** The line's own simple commands a decision may read, counted over every rule it checks (see {@link Budget}). */
export const commandsLimit = 100_000

/** A fresh budget for one decision (or one rule's share of it). */
export const budget = (limit = readingLimit, commands = Number.POSITIVE_INFINITY): Budget => ({ left: limit, commands })

/** Thrown by {@link matchesAnywhere} when its {@link Budget} is spent: what was not read cannot be decided. */
export class TooMuchToRead extends Error {
  constructor() {
    super("too much to read")
  }
}

const spend = (reading: Budget) => {
  if (--reading.left < 0) throw new TooMuchToRead()
}

/**
 * Whether `pattern` matches the command line anywhere a deny rule should see it: the whole line, any
 * one of its simple commands, the command a simple command runs under the pattern's program (by a
 * path to it, or after a wrapper: `/usr/bin/git push`, `command git push`, see `startsUnder`), or the
 * raw text with `*` matching anything. Each simple command visited inside another spends one of
 * `reading`; a spent budget throws {@link TooMuchToRead}.
 */
export const matchesAnywhere = (
  pattern: string,
  command: string,
  line: CommandLine.Tokenized = CommandLine.tokenize(command),
  depth = 0,
  reading: Budget = budget(Number.POSITIVE_INFINITY)
): boolean => {
  const r = readPattern(pattern)
  r.anyText ??= Glob.anyText(pattern)
  if (r.anyText.test(command.trim())) return true
  const compiled = compiledOf(r)
  if (compiled === undefined) return false
  if (matchUnits(compiled.units, commandUnits(line.tokens))) return true
  const program = programNamed(pattern)
  const afterProgram = program !== undefined && compiled.units[program.length]?.k === "sep" ? program.length + 1 : undefined
  const subcommand = afterProgram === undefined ? undefined : subcommandNamed(pattern)
  const runner = SubcommandAliases.runnerNamed(plainStartOf(pattern, 0), subcommand)
  // What the rule asks of each simple command, named once here: a long line holds many.
  const spelling = program === undefined || subcommand === undefined ? undefined : {
    names: SubcommandAliases.namesOf(program),
    key: JSON.stringify(["spelledAs", program, subcommand]),
    make: (words: ReadonlyArray<CommandLine.Word>) => SubcommandAliases.spelledAs(program, subcommand, words)
  }
  const running = runner === undefined ? undefined : {
    names: SubcommandAliases.runnerNames,
    key: JSON.stringify(["runnerSpelledAs", ...runner]),
    make: (words: ReadonlyArray<CommandLine.Word>) => SubcommandAliases.runnerSpelledAs(runner, words)
  }
  return segmentsOf(line.tokens).some((words) => {
    if (depth > 0) spend(reading)
    else if (--reading.commands < 0) throw new TooMuchToRead()
    if (matchUnits(compiled.units, commandUnits(words), program === undefined ? [] : startsUnder(program, afterProgram, words))) return true
    const spelledOut = spelling === undefined ? undefined : rewritten(words, spelling)
    if (spelledOut !== undefined && matchUnits(compiled.units, commandUnits(spelledOut), startsUnder(program!, afterProgram, spelledOut))) return true
    // A rule naming a way to run a package by name (`npx foo*`) holds for the others (`npm exec foo`, `pnpm dlx foo`, `bunx foo`).
    const asRunner = running === undefined ? undefined : rewritten(words, running)
    if (asRunner !== undefined && matchUnits(compiled.units, commandUnits(asRunner), startsUnder(runner![0]!, afterProgram, asRunner))) return true
    if (depth >= 4) return false
    // What git runs by the line's own settings (`git -c alias.x=push x`, `git -c core.pager='…' log`).
    if (gitConfigured(pattern, words, depth, reading)) return true
    // The script of a shell's `-c` (`bash -c 'git push'`, after a wrapper or a path too) is a command line of its own,
    // and so is the line a wrapper takes as an option's value (`env -S 'git push'`, `flock f -c 'git push'`).
    if (scriptsOf(words).some((script) => matchesAnywhere(pattern, script.text, script.tokenized, depth + 1, reading))) return true
    // What a runner composes from its words (`parallel git ::: push`), or runs with words it reads from elsewhere (`xargs git`).
    const composed = composedOf(words)
    if (composed.lines !== undefined && matchesAnywhere(pattern, composed.lines.text, composed.lines.tokenized, depth + 1, reading)) return true
    return composed.open.some((template) =>
      matchUnits(compiled.units, commandUnits(template), program === undefined ? [] : startsUnder(program, afterProgram, template), true)
    )
  }) || (depth < 4 && wordScriptsMatch(pattern, line.tokens, depth, reading))
}

/**
 * A simple command's words rewritten as a rule names a command (`SubcommandAliases.spelledAs`: a package
 * manager's other names; `runnerSpelledAs`: the ways to run a package), made once by `key` however many
 * rules ask, and only for a command with a word that `names` (the same words array, so its units and
 * index are made once too).
 */
const rewritten = (
  words: ReadonlyArray<CommandLine.Word>,
  rewriting: {
    readonly names: ReadonlyArray<string>
    readonly key: string
    readonly make: (words: ReadonlyArray<CommandLine.Word>) => ReadonlyArray<CommandLine.Word> | undefined
  }
) => {
  const index = WordIndex.of(words)
  if (!WordIndex.names(index, rewriting.names)) return undefined
  return WordIndex.memo(index, rewriting.key, () => {
    const out = rewriting.make(words)
    if (out !== undefined) visit(out.length)
    return out
  })
}

/** Whether `pattern` matches anywhere in the word scripts of a line (see {@link wordScriptsOf}), read as one line. */
const wordScriptsMatch = (pattern: string, tokens: ReadonlyArray<CommandLine.Token>, depth: number, reading: Budget): boolean => {
  const scripts = wordScriptsOf(tokens, depth > 0)
  return scripts !== undefined && matchesAnywhere(pattern, scripts.text, scripts.tokenized, depth + 1, reading)
}

/**
 * A word of a line that may run another program, read as a command line of its own: what `watch
 * 'git push'`, `tmux new 'git push'`, `tmux send-keys 'git push' Enter`, `ssh host 'git push'`,
 * `parallel ::: 'git push'`, `python3 -c 'os.system("git push")'`, `echo 'git push' | sh`, `rsync -e
 * '…'`, `ssh -o ProxyCommand='…'`, `tar --to-command='…'`, `git clone -u '…'` or `less '+!…'` run.
 * Only words with a space or shell syntax in them (`CommandLine.lineInWord`). Every such word of the
 * line is read when one of its commands could run another program (`CommandRisk.mayRunAnother`):
 * over-reading (`sh -c "echo 'git push'"`) only makes a deny rule deny more.
 */
const wordScriptsMade = new WeakMap<ReadonlyArray<CommandLine.Token>, Lines | null>()

/**
 * Command lines read as one: each tokenized on its own (an open quote in one never hides the next)
 * and joined by newlines, so that a rule is matched against all of them in one pass however many a
 * line holds (20,000 quoted words, each matched on its own against 50 rules, took a decision 10 s).
 */
interface Lines {
  readonly text: string
  readonly tokenized: CommandLine.Tokenized
}

const newline: CommandLine.Token = { _tag: "Operator", op: "\n" }

const linesOf = (texts: ReadonlyArray<string>): Lines | undefined => {
  if (texts.length === 0) return undefined
  const tokens: Array<CommandLine.Token> = []
  for (const text of texts) {
    if (tokens.length > 0) tokens.push(newline)
    for (const token of CommandLine.tokenize(text).tokens) tokens.push(token)
  }
  return { text: texts.join("\n"), tokenized: { tokens, unterminated: false } }
}

/** Whether one of a line's commands could run another program (a wrapper, an interpreter, `git clone -u`, …). */
const runsAnother = (tokens: ReadonlyArray<CommandLine.Token>): boolean =>
  segmentsOf(tokens).some((words) => CommandRisk.mayRunAnother(words.map((w) => w.value)))

/**
 * The word scripts of a line as one (see {@link Lines}), when one of its commands could run another
 * program or, `inScript`, the line is itself one a word held (`python3 -c '…os.system("git push")'`).
 * A line's tokens are read at one depth only (the policy's at the top, those made here below it).
 */
const wordScriptsOf = (tokens: ReadonlyArray<CommandLine.Token>, inScript: boolean): Lines | undefined => {
  let made = wordScriptsMade.get(tokens)
  if (made === undefined) {
    const texts = inScript || runsAnother(tokens)
      ? tokens.flatMap((token) => {
        const text = token._tag === "Word" ? CommandLine.lineInWord(token) : undefined
        return text === undefined ? [] : [text]
      })
      : []
    made = linesOf(texts) ?? null
    wordScriptsMade.set(tokens, made)
  }
  return made ?? undefined
}

type Composed = ReturnType<typeof composedBy>

/** What a simple command's runner composes (see `composedBy`), made once per line however many rules are checked. */
const composedMade = new WeakMap<ReadonlyArray<CommandLine.Word>, Composed>()

const composedOf = (words: ReadonlyArray<CommandLine.Word>): Composed => {
  const made = composedMade.get(words) ?? composedBy(words)
  composedMade.set(words, made)
  return made
}

/** GNU parallel's separators of its argument sources (`::::` names files). */
const sources = new Set([":::", "::::", ":::+", "::::+"])

/** How many command lines a `parallel` line's sources are spelled out into at most; past that its arguments count as not known. */
const composedLimit = 256

/**
 * The command lines a runner of a simple command composes from its words: `parallel`'s template (the
 * words before its first source) with each combination of its `:::` arguments put in its `{…}`
 * places or after it (`parallel git ::: push` runs `git push`, `parallel ::: 'git push'` `git push`);
 * and, as `open` templates, those it gives words the line does not show: `xargs` (its standard
 * input or `-a` file), `parallel` with no `:::`, a `::::` or `-a` file or more combinations than
 * {@link composedLimit}. An open template is cut at its first replacement string (`{}`, xargs'
 * `-I` one), where unknown words go. The template keeps the runner's own options: a pattern's program is
 * found after them as after any wrapper (`startsUnder`).
 */
const composedBy = (words: ReadonlyArray<CommandLine.Word>): { readonly lines?: Lines | undefined; readonly open: ReadonlyArray<ReadonlyArray<CommandLine.Word>> } => {
  const at = words.findIndex((w) => !w.expands && ["parallel", "xargs"].includes(w.value.split("/").at(-1)!))
  if (at < 0) return { open: [] }
  const rest = words.slice(at + 1)
  if (words[at]!.value.split("/").at(-1) === "xargs") {
    // `-I R`, `-IR`, `-i`, `--replace[=R]`: the words from the first holding R on are filled in from the input.
    const option = rest.findIndex((w) => /^(-I|-i|--replace)/.test(w.value))
    const replace = option < 0 ? undefined : /^-I./.test(rest[option]!.value) ? rest[option]!.value.slice(2) : rest[option]!.value === "-I" ? rest[option + 1]?.value : rest[option]!.value.split("=")[1] ?? "{}"
    const cut = replace === undefined || replace === "" ? -1 : rest.findIndex((w, i) => i > option + (rest[option]!.value === "-I" ? 1 : 0) && w.value.includes(replace))
    return { open: [cut < 0 ? rest : rest.slice(0, cut)] }
  }
  const first = rest.findIndex((w) => sources.has(w.value))
  const template = first < 0 ? rest : rest.slice(0, first)
  const placeholder = template.findIndex((w) => /\{[^}]*\}/.test(w.value))
  const openTemplate = placeholder < 0 ? template : template.slice(0, placeholder)
  const fromFile = template.some((w) => /^(-a|--arg-file|--pipe|--pipepart)/.test(w.value)) || rest.some((w) => w.value.startsWith("::::"))
  if (first < 0 || fromFile) return { open: [openTemplate] }
  // The `:::` sources: the words after each separator.
  const groups: Array<Array<string>> = []
  for (const word of rest.slice(first)) {
    if (sources.has(word.value)) groups.push([])
    else groups.at(-1)!.push(word.value)
  }
  const count = groups.reduce((n, g) => n * Math.max(g.length, 1), 1)
  if (count > composedLimit) return { open: [openTemplate] }
  let combinations: Array<Array<string>> = [[]]
  for (const group of groups) combinations = combinations.flatMap((c) => (group.length === 0 ? [c] : group.map((v) => [...c, v])))
  const values = template.map((w) => w.value)
  return {
    lines: linesOf(combinations.map((args) => {
      const joined = args.join(" ")
      return placeholder < 0 ? [...values, joined].join(" ") : values.map((v) => v.replace(/\{[^}]*\}/g, joined)).join(" ")
    })),
    open: []
  }
}

/** Wrappers that run a command line given as an option's value, and those options (`-S` of env splits it into words). */
const lineOptions: Readonly<Record<string, ReadonlyArray<string>>> = {
  env: ["-S", "--split-string"],
  flock: ["-c", "--command"],
  script: ["-c", "--command"],
  sg: ["-c"],
  su: ["-c", "--command"],
  runuser: ["-c", "--command"],
  "nix-shell": ["--run", "--command"],
  entr: ["-s"]
}

/** The command line the first such wrapper of a simple command runs (`env -S '…'`, `env -S'…'`, `--split-string=…`, `script -qc '…'`), if any. */
const optionScript = (words: ReadonlyArray<CommandLine.Word>): string | undefined => {
  const at = words.findIndex((word) => !word.expands && Object.hasOwn(lineOptions, word.value.split("/").at(-1)!))
  if (at < 0) return undefined
  const options = lineOptions[words[at]!.value.split("/").at(-1)!]!
  for (let i = at + 1; i < words.length; i++) {
    const { value } = words[i]!
    // The option alone, or a short one last in a cluster (`script -qc '…'`): its value is the next word.
    const alone = options.some((o) => o === value || (o.length === 2 && !o.startsWith("--") && new RegExp(`^-[A-Za-z]*${o[1]}$`).test(value)))
    if (alone) return words[i + 1]?.expands === false ? words[i + 1]!.value : undefined
    const option = options.find((o) => (o.startsWith("--") ? value.startsWith(`${o}=`) : value.startsWith(o) && value.length > o.length))
    if (option !== undefined) return value.slice(option.length + (option.startsWith("--") ? 1 : 0))
  }
  return undefined
}

/**
 * Whether a git of the simple command `words` runs what `pattern` matches by the settings the line
 * gives it (`GitLineConfig`): an alias as its subcommand, spelled out (`git x origin` with
 * `alias.x=push` is `git push origin`; a `!` alias is a shell line, its arguments after it), a program
 * a setting names, or settings the line does not show, which may run anything and so match.
 */
const gitConfigured = (pattern: string, words: ReadonlyArray<CommandLine.Word>, depth: number, reading: Budget): boolean => {
  const runs = gitRunsOf(words)
  if (runs === tooManyGits) throw new TooMuchToRead()
  return runs.some((run) => run.opaque || run.lines.some((line) => matchesAnywhere(pattern, line.text, line.tokenized, depth + 1, reading)))
}

/**
 * The gits of one simple command whose line settings are read. Each is read over the command's words
 * (`GitLineConfig.of`), so a line of 32,000 words `git git git …` cost a billion word visits, on the
 * event loop, in one decision. Past this many, what they run is not read: the decision asks
 * ({@link TooMuchToRead}), unless a deny rule matched. A real command names git a few times at most.
 */
export const gitsRead = 32

/** The git runs of a command naming git more than {@link gitsRead} times: not read. */
const tooManyGits: ReadonlyArray<GitRun> = []

/** What one git of a simple command runs by the line's settings: anything (`opaque`), or these command lines. */
interface GitRun {
  readonly opaque: boolean
  readonly lines: ReadonlyArray<Lines>
}

/** The git runs of a simple command (see {@link gitConfigured}), in the order of its gits, made once per command however many rules read them. */
const gitRunsOf = (words: ReadonlyArray<CommandLine.Word>): ReadonlyArray<GitRun> => {
  const index = WordIndex.of(words)
  if (!index.named.has("git")) return []
  return WordIndex.memo(index, "gitRuns", () => {
    const expands = words.map((w) => w.expands)
    if ((index.named.get("git") ?? []).filter((git) => !expands[git]).length > gitsRead) return tooManyGits
    const runs: Array<GitRun> = []
    for (const git of index.named.get("git") ?? []) {
      if (expands[git]) continue
      visit(words.length)
      const config = GitLineConfig.of(index.values, git, expands)
      if (config.opaque) {
        runs.push({ opaque: true, lines: [] })
        continue
      }
      const texts = [...config.scripts]
      const named = words[config.subcommand]
      const alias = named === undefined || named.expands ? undefined : config.aliases.get(named.value.toLowerCase())
      if (alias !== undefined) {
        const rest = words.slice(config.subcommand + 1).map((w) => w.raw).join(" ")
        // The options before the alias stay: an alias may name another the line defines.
        texts.push(alias.startsWith("!") ? `${alias.slice(1)} ${rest}` : [...words.slice(git, config.subcommand).map((w) => w.raw), alias, rest].join(" "))
      }
      if (texts.length > 0) runs.push({ opaque: false, lines: texts.map((text) => ({ text, tokenized: CommandLine.tokenize(text) })) })
    }
    return runs
  })
}

const shells = new Set(["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "busybox"])

/**
 * The command lines a simple command runs as a shell's `-c` script or a wrapper's option (see
 * {@link shellScript}, {@link optionScript}), tokenized once per line however many rules read them.
 */
const scriptsMade = new WeakMap<ReadonlyArray<CommandLine.Word>, ReadonlyArray<Lines>>()

const scriptsOf = (words: ReadonlyArray<CommandLine.Word>): ReadonlyArray<Lines> => {
  let made = scriptsMade.get(words)
  if (made === undefined) {
    made = [shellScript(words), optionScript(words)].flatMap((text) => (text === undefined ? [] : [{ text, tokenized: CommandLine.tokenize(text) }]))
    scriptsMade.set(words, made)
  }
  return made
}

/** The script of the first shell's `-c` in a simple command (`sh -c '…'`, `env bash -ec '…'`), if any. */
const shellScript = (words: ReadonlyArray<CommandLine.Word>): string | undefined => {
  const shell = words.findIndex((word) => !word.expands && shells.has(word.value.split("/").at(-1)!))
  if (shell < 0) return undefined
  const flag = words.findIndex((word, i) => i > shell && /^-[A-Za-z]*c[A-Za-z]*$/.test(word.value))
  const script = flag < 0 ? undefined : words[flag + 1]
  return script === undefined || script.expands ? undefined : script.value
}

/** A token list split at its operators, empty commands kept, so a pattern's commands line up with a line's it matches. */
const commandsOf = (tokens: ReadonlyArray<CommandLine.Token>): ReadonlyArray<ReadonlyArray<CommandLine.Word>> => {
  const out: Array<Array<CommandLine.Word>> = [[]]
  for (const token of tokens) {
    if (token._tag === "Operator") out.push([])
    else out.at(-1)!.push(token)
  }
  return out
}

const hasWildcard = (words: ReadonlyArray<CommandLine.Word>) =>
  words.some((word) => !word.expands && [...word.value].some((c, i) => !word.quoted[i] && (c === "*" || c === "?")))

/**
 * The simple commands (argv) of `command` in which a wildcard of `pattern` stood for words — those
 * the pattern does not spell out. Meant for a pattern that `matches` the line: wildcards never match
 * an operator, so the pattern's commands and the line's line up one to one (when they do not, every
 * command of the line is returned).
 */
export const wildcardCommands = (
  pattern: string,
  command: string,
  line: CommandLine.Tokenized = CommandLine.tokenize(command)
): ReadonlyArray<ReadonlyArray<string>> => {
  const patternCommands = commandsOf(readPattern(pattern).tokens.tokens)
  const lineCommands = commandsOf(line.tokens).map((words) => words.map((w) => w.value))
  if (patternCommands.length !== lineCommands.length) return lineCommands.filter((argv) => argv.length > 0)
  return lineCommands.filter((argv, i) => argv.length > 0 && hasWildcard(patternCommands[i]!))
}

/** The hazards a pattern spells out itself (a rule allows a command only if it spells out all of the command's). */
export const hazardsOf = (pattern: string | undefined): ReadonlySet<string> => {
  if (pattern === undefined) return new Set()
  const r = readPattern(pattern)
  r.hazards ??= new Set(compiledOf(r)?.hazards ?? [])
  return r.hazards
}

