/**
 * Help as users read it: a description with examples for every command, plain text when the output
 * is not a terminal (or `NO_COLOR` is set), and lines wrapped to the terminal's width.
 *
 * @effect/cli renders its help and usage errors as ANSI text through `Console` (`log` for help,
 * `error` for usage errors), in lines as long as the descriptions. Our own output never carries raw
 * escape sequences (terminal text goes through `Render.terminalSafe`, JSON escapes control
 * characters), so the text that does is @effect/cli's: only that is reshaped here.
 *
 * @since 0.1.0
 */
import * as HelpDoc from "@effect/cli/HelpDoc"
import * as Span from "@effect/cli/HelpDoc/Span"
import * as Options from "@effect/cli/Options"
import * as ValidationError from "@effect/cli/ValidationError"
import { statSync } from "node:fs"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"

/** A command's description followed by its examples, each a shell line. */
export const described = (text: string, examples: ReadonlyArray<string>): HelpDoc.HelpDoc =>
  examples.reduce(
    (doc, example) => HelpDoc.sequence(doc, HelpDoc.p(Span.code(`  $ ${example}`))),
    HelpDoc.sequence(HelpDoc.p(text), HelpDoc.p(examples.length === 1 ? "Example:" : "Examples:"))
  )

/**
 * A flag taking one of `values`. @effect/cli's own choice option answers a bad value with "Expected
 * one of the following cases: …", without naming the flag; this one says which flag, what it got and
 * what it takes (`--mode: "yolo" is not one of default, acceptEdits, readOnly, bypass`).
 */
export const choice = <const A extends string>(name: string, values: ReadonlyArray<A>): Options.Options<A> =>
  Options.text(name).pipe(
    Options.withPseudoName(values.join(" | ")),
    Options.mapEffect((value) =>
      (values as ReadonlyArray<string>).includes(value)
        ? Effect.succeed(value as A)
        : Effect.fail(ValidationError.invalidValue(HelpDoc.p(`--${name}: ${JSON.stringify(value)} is not one of ${values.join(", ")}`)))
    )
  )

const invalid = (text: string) => Effect.fail(ValidationError.invalidValue(HelpDoc.p(text)))

/**
 * A number flag. @effect/cli's own answers a bad value with "'abc' is not a float", naming neither
 * the flag nor what it takes in words; this one says `--max-cost: "abc" is not a number`.
 */
export const number = (name: string, kind: "integer" | "float"): Options.Options<number> =>
  Options.text(name).pipe(
    Options.withPseudoName(kind),
    Options.mapEffect((value) => {
      const parsed = value.trim() === "" ? Number.NaN : Number(value)
      if (kind === "integer" ? Number.isSafeInteger(parsed) : Number.isFinite(parsed)) return Effect.succeed(parsed)
      return invalid(`--${name}: ${JSON.stringify(value)} is not ${kind === "integer" ? "a whole number" : "a number"}`)
    })
  )

/** A flag naming a file that must exist. @effect/cli's says "Path '…' must exist", without the flag. */
export const existingFile = (name: string): Options.Options<string> =>
  Options.text(name).pipe(
    Options.withPseudoName("file"),
    Options.mapEffect((value) => {
      const kind = statKind(value)
      return kind === "file" ? Effect.succeed(value) : invalid(`--${name} ${JSON.stringify(value)}: ${kind === "none" ? "no such file" : "not a file"}`)
    })
  )

const statKind = (path: string): "file" | "other" | "none" => {
  try {
    return statSync(path).isFile() ? "file" : "other"
  } catch {
    return "none"
  }
}

// Control Sequence Introducer sequences (colours, bold) — the only escapes @effect/cli writes.
const ansiSequence = /\u001b\[[0-9;]*[A-Za-z]/g

const hasAnsi = (text: string): boolean => text.includes("\u001b[")

/** The text without its escape sequences. */
export const stripAnsi = (text: string): string => text.replace(ansiSequence, "")

/** The width a line takes on screen (escape sequences take none). */
const visibleLength = (text: string): number => stripAnsi(text).length

/**
 * Wraps each line longer than `width` at spaces, continuing at the line's own indentation (a usage
 * line `$ run [--flag] …` continues under its first flag). A word longer than the width keeps its
 * own line rather than being cut.
 */
export const wrap = (text: string, width: number): string =>
  text.split("\n").map((line) => {
    if (visibleLength(line) <= width) return line
    const plainLine = stripAnsi(line)
    const indent = plainLine.length - plainLine.trimStart().length
    const continuation = " ".repeat(plainLine.trimStart().startsWith("$ ") ? indent + 2 : indent)
    const words = line.slice(line.length - line.trimStart().length).split(" ")
    const lines: Array<string> = []
    let current = line.slice(0, line.length - line.trimStart().length)
    let currentLength = visibleLength(current)
    let empty = true
    for (const word of words) {
      const length = visibleLength(word)
      if (!empty && currentLength + 1 + length > width) {
        lines.push(current)
        current = continuation + word
        currentLength = continuation.length + length
        continue
      }
      current += empty ? word : ` ${word}`
      currentLength += (empty ? 0 : 1) + length
      empty = false
    }
    lines.push(current)
    return lines.join("\n")
  }).join("\n")

interface Stream {
  readonly isTTY?: boolean | undefined
  readonly columns?: number | undefined
}

/** Whether to write without colour: not a terminal, or `NO_COLOR` set to anything but "" (no-color.org). */
export const isPlain = (stream: Stream, env: NodeJS.ProcessEnv = process.env): boolean =>
  stream.isTTY !== true || (env.NO_COLOR !== undefined && env.NO_COLOR !== "")

/**
 * Without the padding @effect/cli puts after each command of the root's list (a column of spaces
 * for descriptions it does not show): spaces at a line's end dropped, blank lines one at a time.
 * `effect-agent --help` was 282 lines, 129 of them spaces only.
 */
const unpadded = (text: string): string =>
  text.split("\n").map((line) => line.replace(/[ \t]+((?:\u001b\[[0-9;]*m)*)$/, "$1")).join("\n").replace(/\n{3,}/g, "\n\n")

/**
 * @effect/cli's line for a text value, under every such flag and argument: it says nothing the
 * usage (`--session text`) does not, and the number and file flags are text flags parsed here (see
 * `number`, `existingFile`), so it would call them text.
 */
const textTypeLine = /^[ \t]*(?:\u001b\[[0-9;]*m)*A user-defined piece of text\.(?:\u001b\[[0-9;]*m)*\n/gm

/**
 * @effect/cli's line under a redacted flag (`--database-url`), which says only that the text is
 * secret: the flag's own description says what it takes, and that the URL is never printed.
 */
const confidentialLine = /^[ \t]*(?:\u001b\[[0-9;]*m)*A user-defined piece of text that is confidential\.(?:\u001b\[[0-9;]*m)*\n/gm

/**
 * @effect/cli's line under a boolean flag: the usage (`[--json]`, no value) already says it takes
 * none, and the line stood between the flag and what it does.
 */
const booleanTypeLine = /^[ \t]*(?:\u001b\[[0-9;]*m)*A true or false value\.(?:\u001b\[[0-9;]*m)*\n/gm

/**
 * @effect/cli's line under a directory flag (`--data-dir`): the usage (`--data-dir directory`) says
 * it, and the line stood between the flag and what it is for, as the two above did.
 */
const directoryTypeLine = /^[ \t]*(?:\u001b\[[0-9;]*m)*A directory\.(?:\u001b\[[0-9;]*m)*\n/gm

/**
 * A repeatable flag in a usage line: @effect/cli writes `--allow text...`, which reads as required;
 * it may be given zero or more times, as `[--allow text]...` says. (An option's own heading, at
 * the start of its line, is left as it is.)
 */
const repeatedFlag = /(?<= )--([a-z][a-z0-9-]*) ([a-z]+)\.\.\./g

/**
 * A subcommand in the root's list: @effect/cli writes its parent's whole usage before its name
 * (`- sessions [--cwd text] … rename …`), so the parent read as listed twice. Its line is the
 * parent's line (the one before it that it starts with) and the rest: the parent's flags go.
 */
const subcommandLines = (text: string): string => {
  const lines = text.split("\n")
  let parent: string | undefined
  return lines.map((line) => {
    if (!line.startsWith("  - ")) return line
    const trimmed = line.trimEnd()
    if (parent !== undefined && trimmed.startsWith(`${parent} `)) {
      const name = parent.slice(4).split(" ", 1)[0]!
      return `  - ${name} ${line.slice(parent.length + 1)}`
    }
    parent = trimmed
    return line
  }).join("\n")
}

/** @effect/cli's text shaped for `stream`: plain when it should be, wrapped to its width (80 when it has none), unpadded. */
export const shape = (text: string, stream: Stream, env: NodeJS.ProcessEnv = process.env): string => {
  const width = Math.max(40, stream.isTTY === true && stream.columns !== undefined && stream.columns > 0 ? stream.columns : 80)
  const tidy = subcommandLines(
    (isPlain(stream, env) ? stripAnsi(text) : text).replace(textTypeLine, "").replace(confidentialLine, "").replace(booleanTypeLine, "")
      .replace(directoryTypeLine, "")
  )
  return unpadded(wrap(tidy.replace(repeatedFlag, "[--$1 $2]..."), width))
}

const program = "effect-agent"
const escapes = "(?:\u001b\\[[0-9;]*m)*"
/** @effect/cli's banner (the name) above its header (`effect-agent 0.1.0`): the name once is enough. */
const banner = new RegExp(`^${escapes}${program}${escapes}\\n\\n(?=${escapes}${program} )`)
/** A usage line, `$ replay [--json] …`: @effect/cli leaves out the program, so it did not run as typed. */
const unnamedUsage = new RegExp(`^(${escapes})\\$ (?!${program} )`, "gm")

/**
 * A command's help as it is typed: the program named once at the top, and in its usage lines — with
 * the parent of a subcommand (`command` "sessions rename": `$ effect-agent sessions rename …`).
 */
export const named = (text: string, command?: string): string => {
  const parent = command?.includes(" ") === true ? `${command.split(" ")[0]} ` : ""
  return text.replace(banner, "").replace(unnamedUsage, `$1$ ${program} ${parent}`).replace(optionalNote, "")
}

// @effect/cli's paragraph under every flag that has no default (all of ours but the required ones,
// which the usage line shows without brackets): 137 lines over eight commands, saying nothing the
// usage line's `[--flag]` does not. It takes no setting (CliConfig has none for it), so it goes here.
const optionalNote = /\n+[ \t]*(?:\u001b\[[0-9;]*m)*This setting is optional\.(?:\u001b\[[0-9;]*m)*(?=\n)/g

const shapeArgs = (args: ReadonlyArray<unknown>, stream: Stream, command?: string): ReadonlyArray<unknown> =>
  args.map((arg) => typeof arg === "string" && hasAnsi(arg) ? shape(named(arg, command), stream) : arg)

/**
 * @effect/cli's usage error as the CLI's other errors read: `effect-agent: ` first, and no blank line
 * after it. It wrote `--max-cost: "abc" is not a number` and `Missing argument <sessionId>` bare,
 * followed by an empty line, where every other error of the CLI is one line naming the program;
 * a missing argument or required flag names the command and where its arguments are listed too. @effect/cli's error
 * is a rendered paragraph, so it ends with a newline (the CLI's own lines never do).
 */
export const usageError = (text: string, command: string | undefined): string => {
  const line = stripAnsi(text).trim()
  if (line.includes("\n") || line.startsWith("effect-agent")) return line
  const missing = /^Missing argument (.*)$/.exec(line)
  if (missing !== null && command !== undefined) {
    return `effect-agent: ${command}: missing argument ${missing[1]}; effect-agent ${command} --help lists the arguments`
  }
  const required = /^Expected to find option: '(.*)'$/.exec(line)
  if (required !== null && command !== undefined) {
    return `effect-agent: ${command}: ${required[1]} is required; effect-agent ${command} --help says what it takes`
  }
  return `effect-agent: ${line}`
}

/**
 * Runs `effect` with @effect/cli's help and usage errors shaped for stdout and stderr; `command` is
 * the command the line names, for a usage error to name it.
 */
export const shaped = <A, E, R>(effect: Effect.Effect<A, E, R>, command?: string): Effect.Effect<A, E, R> =>
  Console.consoleWith((console) =>
    Console.withConsole(effect, {
      ...console,
      log: (...args) => console.log(...shapeArgs(args, process.stdout, command)),
      error: (...args) =>
        args.length === 1 && typeof args[0] === "string" && args[0].endsWith("\n")
          ? console.error(usageError(args[0], command))
          : console.error(...shapeArgs(args, process.stderr, command))
    })
  )
