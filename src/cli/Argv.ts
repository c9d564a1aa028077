/**
 * A command line's names checked before @effect/cli parses it, so that a typo gets one line naming
 * it. @effect/cli names the wrong token or none: `run --alow shell hi` was "Received unknown
 * argument: 'shell'" (the value, not the flag), `sessions --bogus` and `sessions list` were "Invalid
 * subcommand for effect-agent", a typo of a command listed the commands without a hint, and a flag
 * that needs a value but ends the line (`run hi --allow`) was dropped and the turn ran without it.
 *
 * Only what is surely wrong is reported here — a flag no command of the line knows, a flag that
 * needs a value and has none, a command or subcommand that does not exist; everything else (values,
 * arguments, --help) is left to @effect/cli. The names are read from the command tree itself
 * (`Command.getUsage`), so a new flag needs nothing here.
 *
 * @since 0.1.0
 */
import * as Command from "@effect/cli/Command"
import * as Descriptor from "@effect/cli/CommandDescriptor"
import type * as Usage from "@effect/cli/Usage"
import * as HashMap from "effect/HashMap"
import * as Option from "effect/Option"
import { terminalSafe } from "./Terminal.js"

/** What a command accepts: its flags (whether each takes a value), whether it takes arguments, its subcommands. */
interface Shape {
  readonly flags: ReadonlyMap<string, boolean>
  readonly takesArguments: boolean
  readonly subcommands: ReadonlyMap<string, Descriptor.Command<unknown>>
}

// @effect/cli's own flags, accepted by every command (`--completions` and `--log-level` take a value).
const builtIns: ReadonlyMap<string, boolean> = new Map([
  ["--help", false], ["-h", false], ["--version", false], ["--wizard", false], ["--completions", true], ["--log-level", true]
])

const named = (usage: Usage.Usage): ReadonlyArray<Usage.Named> => {
  switch (usage._tag) {
    case "Named":
      return [usage]
    case "Concat":
    case "Alternation":
      return [...named(usage.left), ...named(usage.right)]
    case "Optional":
    case "Repeated":
      return named(usage.usage)
    default:
      return []
  }
}

const shapeOf = (usage: Usage.Usage, name: string, subcommands: HashMap.HashMap<string, Descriptor.Command<unknown>>): Shape => {
  const flags = new Map(builtIns)
  let takesArguments = false
  for (const entry of named(usage)) {
    // A flag with no accepted values is a boolean: it takes no value of its own.
    for (const flag of entry.names) if (flag.startsWith("-")) flags.set(flag, Option.isSome(entry.acceptedValues))
    if (entry.names.some((argument) => argument.startsWith("<"))) takesArguments = true
  }
  // @effect/cli lists a command without subcommands as its own only one.
  const children = HashMap.toEntries(subcommands).filter(([child]) => child !== name)
  return { flags, takesArguments, subcommands: new Map(children) }
}

/** A command of the root's list. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyCommand = Command.Command<any, any, any, any>

const commandShape = (command: AnyCommand): Shape => {
  const name = [...Command.getNames(command)][0] ?? ""
  return shapeOf(Command.getUsage(command), name, Command.getSubcommands(command))
}

const descriptorShape = (name: string, command: Descriptor.Command<unknown>): Shape =>
  shapeOf(Descriptor.getUsage(command), name, Descriptor.getSubcommands(command))

/** The edit distance of two short words, a swap of two neighbouring letters one edit (`--yse`, `--yes`). */
const distance = (a: string, b: string): number => {
  const d: Array<Array<number>> = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => i === 0 ? j : j === 0 ? i : 0))
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1)
    }
  }
  return d[a.length]![b.length]!
}

/** The known name `word` most likely meant: one a letter or two away, or the only one it begins. */
/**
 * Other agents' names for a command, with what does it here: `resume` printed only "unknown command"
 * (review 59c), the user left to guess `chat --resume`.
 */
const otherNames: Readonly<Record<string, string>> = {
  resume: "chat --resume",
  continue: "chat --continue",
  approvals: "pending",
  list: "sessions",
  ls: "sessions",
  history: "sessions"
}

export const nearest = (word: string, names: Iterable<string>): string | undefined => {
  // A one-letter flag is too short to guess from, but -v is the usual spelling of --version.
  if (/^-[A-Za-z]$/.test(word)) return word.toLowerCase() === "-v" ? "--version" : undefined
  const all = [...names]
  // Up to one edit in a short word, two in a longer one (dashes not counted).
  const allowed = Math.min(2, Math.max(1, Math.floor(word.replace(/^-+/, "").length / 3)))
  const close = all.map((name) => [name, distance(word, name)] as const).filter(([, d]) => d <= allowed)
    .sort((a, b) => a[1] - b[1])
  if (close.length > 0) return close[0]![0]
  const started = all.filter((name) => word.length >= 3 && name.startsWith(word))
  return started.length === 1 ? started[0] : undefined
}

const meant = (word: string, names: Iterable<string>): string => {
  const guess = nearest(word, names)
  return guess === undefined ? "" : ` (did you mean ${guess}?)`
}

// A flag as @effect/cli reads one: `-c`, `--allow`, `--allow=shell`. A message such as "-x is odd" is not.
const flagLike = /^--?[A-Za-z][A-Za-z0-9-]*(=|$)/

/** A command line read: what is surely wrong with it, as one line, or the line for @effect/cli. */
export type Checked = { readonly _tag: "Wrong"; readonly problem: string } | { readonly _tag: "Line"; readonly args: ReadonlyArray<string> }

/**
 * `args` (the command line after the program's name) checked against `commands` (the root's). A
 * flag's value given after `=` (`--allow=shell:ls`) is passed on as the next word: @effect/cli reads
 * that form for a flag given once but not for a repeatable one (`Received unknown argument`).
 */
export const check = (commands: ReadonlyArray<AnyCommand>, args: ReadonlyArray<string>): Checked => {
  const problem = find(commands, args)
  return problem !== undefined ? { _tag: "Wrong", problem } : { _tag: "Line", args: split(commands, args) }
}

const split = (commands: ReadonlyArray<AnyCommand>, args: ReadonlyArray<string>): ReadonlyArray<string> => {
  const command = commands.find((command) => Command.getNames(command).pipe((names) => [...names][0] === args[0]))
  if (command === undefined) return args
  const flags = commandShape(command).flags
  const end = args.indexOf("--")
  return args.flatMap((token, i) => {
    if ((end >= 0 && i >= end) || !flagLike.test(token) || !token.includes("=")) return [token]
    const name = token.split("=", 1)[0]!
    return flags.get(name) === true ? [name, token.slice(name.length + 1)] : [token]
  })
}

/** What is surely wrong with `args`, as one line, or undefined. */
const find = (commands: ReadonlyArray<AnyCommand>, args: ReadonlyArray<string>): string | undefined => {
  // Help is shown whatever else the line holds.
  const end = args.indexOf("--")
  const options = end < 0 ? args : args.slice(0, end)
  if (options.includes("--help") || options.includes("-h")) return undefined
  const top = new Map(commands.map((command) => [[...Command.getNames(command)][0] ?? "", command] as const))
  let shape: Shape = { flags: builtIns, takesArguments: false, subcommands: new Map() }
  let path: ReadonlyArray<string> = ["effect-agent"]
  let atRoot = true
  let seenArgument = false
  for (let i = 0; i < options.length; i++) {
    const token = options[i]!
    // "run: …" for a command's flags; the program's own name goes before the whole line.
    const where = path.slice(1).join(" ")
    const about = where === "" ? "" : `${where}: `
    const help = ["effect-agent", ...path.slice(1), "--help"].join(" ")
    if (flagLike.test(token)) {
      const name = token.split("=", 1)[0]!
      const takesValue = shape.flags.get(name)
      if (takesValue === undefined) {
        return `${about}unknown option ${terminalSafe(name)}${meant(name, shape.flags.keys())}; ${help} lists the options`
      }
      if (takesValue && !token.includes("=")) {
        if (i + 1 >= options.length) return `${about}${name} needs a value; ${help} says which`
        i++
      }
      continue
    }
    if (token === "-" || seenArgument) {
      seenArgument = true
      continue
    }
    const command = atRoot ? top.get(token) : undefined
    if (command !== undefined) {
      shape = commandShape(command)
      path = [...path, token]
      atRoot = false
      continue
    }
    const subcommand = atRoot ? undefined : shape.subcommands.get(token)
    if (subcommand !== undefined) {
      // A subcommand's own flags and its parent's (given before it) are both read.
      const own = descriptorShape(token, subcommand)
      shape = { ...own, flags: new Map([...shape.flags, ...own.flags]) }
      path = [...path, token]
      continue
    }
    if (atRoot) {
      const guess = token === "help" || token === "version" ? `--${token}` : (otherNames[token] ?? nearest(token, top.keys()))
      return `unknown command ${terminalSafe(token)}${guess === undefined ? "" : ` (did you mean ${guess}?)`}; effect-agent --help lists the commands`
    }
    if (shape.subcommands.size > 0 && !shape.takesArguments) {
      return `${about}unknown subcommand ${terminalSafe(token)}${meant(token, shape.subcommands.keys())}; ${where} has ${[...shape.subcommands.keys()].join(", ")}`
    }
    seenArgument = true
  }
  return undefined
}
