/**
 * Splits a command line into tokens the way a POSIX shell would — words (with what quoting did to
 * each character) and operators — and finds what only a shell interpreter could do with it:
 * chaining, subshells, pipes, redirection, substitution, background jobs, `sudo`, recursive `rm`.
 * Commands run without a shell unless a rule allows those.
 *
 * The tokenizer errs on the side of seeing syntax: where `/bin/sh` could read an operator, so does
 * it (a `#` comment is not recognised, so an operator after one still counts). Quoting it does not
 * model (`$'…'`, `$"…"`, an unclosed `$(`) makes the line invalid rather than guessed at.
 *
 * @since 0.1.0
 * @internal
 */
import * as FileNames from "../../domain/FileNames.js"
import type { CommandAccess, ShellHazard } from "../../services/ToolRouter.js"
import * as CommandRisk from "./CommandRisk.js"

/**
 * A word. `value` is the word after quote removal; `quoted[i]` says whether `value[i]` was quoted or
 * escaped; `expands` marks a word a shell would change by substitution (`$…`, backticks) — its
 * `raw` source text is then all that identifies it.
 */
export interface Word {
  readonly _tag: "Word"
  readonly value: string
  readonly quoted: ReadonlyArray<boolean>
  readonly expands: boolean
  readonly raw: string
}

/** Whether a shell would expand the word as a file name pattern: an unquoted `*`, `?` or `[`. */
export const isGlob = (word: Word): boolean => [...word.value].some((c, i) => !word.quoted[i] && (c === "*" || c === "?" || c === "["))

/** An unquoted shell operator: `;` `&` `&&` `|` `||` `(` `)` a redirection, or a newline (`\n`). */
export interface Operator {
  readonly _tag: "Operator"
  readonly op: string
}

/** A token of a command line. */
export type Token = Word | Operator

/** A parsed command line. `argv` is empty when the line is blank, unterminated or invalid. */
export interface Parsed extends CommandAccess {
  readonly tokens: ReadonlyArray<Token>
  /** A quote or substitution is left open. */
  readonly unterminated: boolean
  /** Why the line cannot be parsed safely, if so. */
  readonly invalid?: string | undefined
}

// Longest first: the tokenizer takes the longest operator that matches.
const operators = [";;", "&&", "||", "<<-", "<<", ">>", ">&", "<&", "<>", ">|", "<(", ">(", ";", "&", "|", "<", ">", "(", ")", "\n"]

const hazardOf = (op: string): ReadonlyArray<ShellHazard> => {
  switch (op) {
    case "&":
      return ["background"]
    case "|":
      return ["pipe"]
    case "<(":
    case ">(":
      return ["redirection", "substitution"]
    case ";":
    case ";;":
    case "&&":
    case "||":
    case "\n":
    case "(":
    case ")":
      return ["chaining"]
    default:
      return ["redirection"]
  }
}

/** How deep substitutions may nest (`$(… $(…) …)`). */
export const maxNesting = 64
/** `substitutionEnd`'s answer for a nesting deeper than `maxNesting`. */
const tooDeep = -1

/**
 * The end (exclusive) of a `$(…)`, `${…}` or backtick substitution starting at `start` (at `$` or
 * the backtick), or `undefined` when it is left open. Quotes and nesting inside are followed.
 */
const substitutionEnd = (text: string, start: number, nesting = 0): number | undefined => {
  // Deeper than any line a person writes: refused (`tooDeep`) rather than recursed until the stack overflows.
  if (nesting > maxNesting) return tooDeep
  if (text[start] === "`") {
    for (let i = start + 1; i < text.length; i++) {
      if (text[i] === "\\") i++
      else if (text[i] === "`") return i + 1
    }
    return undefined
  }
  const open = text[start + 1]!
  const close = open === "(" ? ")" : "}"
  let depth = 0
  for (let i = start + 1; i < text.length; i++) {
    const c = text[i]!
    if (c === "\\") {
      i++
    } else if (c === "'") {
      const end = text.indexOf("'", i + 1)
      if (end < 0) return undefined
      i = end
    } else if (c === "\"") {
      let j = i + 1
      for (; j < text.length && text[j] !== "\""; j++) {
        if (text[j] === "\\") j++
        else if (text[j] === "$" && (text[j + 1] === "(" || text[j + 1] === "{") || text[j] === "`") {
          const end = substitutionEnd(text, j, nesting + 1)
          if (end === undefined || end === tooDeep) return end
          j = end - 1
        }
      }
      if (j >= text.length) return undefined
      i = j
    } else if (c === "`" || (c === "$" && (text[i + 1] === "(" || text[i + 1] === "{"))) {
      const end = substitutionEnd(text, i, nesting + 1)
      if (end === undefined || end === tooDeep) return end
      i = end - 1
    } else if (c === open) {
      depth++
    } else if (c === close) {
      depth--
      if (depth === 0) return i + 1
    }
  }
  return undefined
}

/** A tokenized command line. */
export interface Tokenized {
  readonly tokens: ReadonlyArray<Token>
  readonly unterminated: boolean
  readonly invalid?: string
}

/** Splits a command line into words and operators. */
export const tokenize = (text: string): Tokenized => {
  // No program can receive a NUL byte in an argument, and `sh -c` would silently cut the line there;
  // a lone surrogate reaches the program as U+FFFD, a word other than the one the rules read.
  const unnamable = FileNames.unnamable(text)
  if (unnamable !== undefined) return { tokens: [], unterminated: false, invalid: unnamable }
  const tokens: Array<Token> = []
  let value = ""
  let quoted: Array<boolean> = []
  let expands = false
  let inWord = false
  let start = 0
  const add = (s: string, q: boolean) => {
    if (!inWord) start = current
    inWord = true
    value += s
    for (let k = 0; k < s.length; k++) quoted.push(q)
  }
  let current = 0
  const flush = (end: number) => {
    if (inWord) tokens.push({ _tag: "Word", value, quoted, expands, raw: text.slice(start, end) })
    value = ""
    quoted = []
    expands = false
    inWord = false
  }
  let nestedTooDeep = false
  /** A substitution left open, or nested too deep to read. */
  const unreadable = () =>
    nestedTooDeep ? { tokens: [], unterminated: false, invalid: `substitutions are nested deeper than ${maxNesting}` } : { tokens, unterminated: true }
  /** Takes a substitution at `i` into the current word; returns the index after it, or undefined when open (or nested too deep). */
  const substitution = (i: number, q: boolean): number | undefined => {
    const c = text[i]!
    const end = c === "`" || text[i + 1] === "(" || text[i + 1] === "{" ? substitutionEnd(text, i) : variableEnd(i)
    if (end === tooDeep) nestedTooDeep = true
    if (end === undefined || end === tooDeep) return undefined
    add(text.slice(i, end), q)
    expands = true
    return end
  }
  const variableEnd = (i: number) => {
    let j = i + 1
    if (j < text.length && /[@*#?$!0-9-]/.test(text[j]!)) return j + 1
    while (j < text.length && /[A-Za-z0-9_]/.test(text[j]!)) j++
    return j
  }
  for (let i = 0; i < text.length;) {
    current = i
    const c = text[i]!
    if (c === "'") {
      const end = text.indexOf("'", i + 1)
      if (end < 0) return { tokens, unterminated: true }
      add("", true)
      add(text.slice(i + 1, end), true)
      i = end + 1
      continue
    }
    if (c === "\"") {
      add("", true)
      let j = i + 1
      for (; j < text.length && text[j] !== "\""; j++) {
        current = j
        const d = text[j]!
        if (d === "\\" && j + 1 < text.length && "$`\"\\\n".includes(text[j + 1]!)) {
          add(text[j + 1]!, true)
          j++
        } else if (d === "$" || d === "`") {
          const end = substitution(j, true)
          if (end === undefined) return unreadable()
          j = end - 1
        } else {
          add(d, true)
        }
      }
      if (j >= text.length) return { tokens, unterminated: true }
      i = j + 1
      continue
    }
    if (c === "\\") {
      if (i + 1 >= text.length) return { tokens, unterminated: true }
      add(text[i + 1]!, true)
      i += 2
      continue
    }
    if (c === "$" && (text[i + 1] === "'" || text[i + 1] === "\"")) {
      return { tokens, unterminated: false, invalid: `${c}${text[i + 1]}…${text[i + 1]} quoting is not supported` }
    }
    if (c === "$" || c === "`") {
      const end = substitution(i, false)
      if (end === undefined) return unreadable()
      i = end
      continue
    }
    if (c === " " || c === "\t") {
      flush(i)
      i++
      continue
    }
    const op = operators.find((o) => text.startsWith(o, i))
    if (op !== undefined) {
      flush(i)
      tokens.push({ _tag: "Operator", op })
      i += op.length
      continue
    }
    add(c, false)
    i++
  }
  current = text.length
  flush(text.length)
  return { tokens, unterminated: false }
}

/** The simple commands of a token list: its words, split at operators. */
export const segments = (tokens: ReadonlyArray<Token>): ReadonlyArray<ReadonlyArray<Word>> => {
  const out: Array<Array<Word>> = [[]]
  for (const token of tokens) {
    if (token._tag === "Operator") out.push([])
    else out.at(-1)!.push(token)
  }
  return out.filter((s) => s.length > 0)
}

/** The hazards of a token list. */
export const hazardsOf = (tokens: ReadonlyArray<Token>): ReadonlyArray<ShellHazard> => {
  const hazards = new Set<ShellHazard>()
  for (const token of tokens) {
    if (token._tag === "Operator") for (const h of hazardOf(token.op)) hazards.add(h)
    else if (token.expands) hazards.add("substitution")
  }
  for (const words of segments(tokens)) {
    const argv = words.map((w) => w.value)
    // In any case: on a case-insensitive file system (macOS's, Windows') `RM` and `Sudo` run rm and sudo.
    const program = argv[0]?.split("/").at(-1)?.toLowerCase()
    if (program === "sudo" || program === "doas" || program === "su") hazards.add("sudo")
    if (program === "rm" && argv.slice(1).some((a) => /^-[a-zA-Z]*[rR]/.test(a) || a === "--recursive")) hazards.add("recursive_delete")
  }
  return [...hazards]
}

/** The hazards only a shell interpreter acts on (not `sudo` or a recursive `rm`, which run without one). */
export const syntaxHazards: ReadonlySet<ShellHazard> = new Set(["chaining", "pipe", "redirection", "substitution", "background"])

/** Splits and inspects a command line. */
export const parse = (text: string): Parsed => parseTokenized(text, tokenize(text))

/** Inspects a command line already split (`tokenize`): a caller that reads it several ways splits it once. */
export const parseTokenized = (text: string, { invalid, tokens, unterminated }: Tokenized): Parsed => {
  const bad = unterminated || invalid !== undefined
  return {
    text,
    argv: bad ? [] : tokens.flatMap((t) => (t._tag === "Word" ? [t.value] : [])),
    hazards: bad ? [] : hazardsOf(tokens),
    tokens: bad ? [] : tokens,
    unterminated,
    invalid
  }
}

/** The risk of running a command: what the program is known to do, else "write". */
export const riskOf = (argv: ReadonlyArray<string>) => CommandRisk.classify(argv).risk

/** An option's name (`--rsh=`, `-oProxyCommand=`, a glued `-e`), a setting's key (`ProxyCommand=`), a pager's `+!`: what comes before a command line in a word. */
const beforeLine = /^(?:--?[A-Za-z0-9-]*=|-[A-Za-z](?=\S)|[A-Za-z_][A-Za-z0-9_.-]*=|[+:!]+)/

/**
 * The command line a word may hold for a program that runs another (`watch 'git push'`, `ssh host
 * '…'`, `tmux send-keys '…'`, `ssh -o ProxyCommand='…'`, `rsync -e '…'`, `less '+!…'`): only a word
 * with a space or shell syntax in it (a plain word is one the line shows already), with an option's
 * name, a setting's key before `=` and a pager's or editor's `+`, `:`, `!` taken off. `undefined` for
 * any other word.
 */
export const lineInWord = (word: Word): string | undefined => {
  if (word.expands || !/[\s;&|<>()`$]/.test(word.value)) return undefined
  let text = word.value.trimStart()
  for (let cut = beforeLine.exec(text); cut !== null && cut[0].length > 0; cut = beforeLine.exec(text)) text = text.slice(cut[0].length).trimStart()
  return text === "" ? undefined : text
}
