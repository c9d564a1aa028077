/**
 * What the rules read from a simple command's words, read once however many rules a decision checks:
 * which words the shell makes (a unit of their own to the matcher), where each word's units begin,
 * the words by the program they name, and — per program, when first asked — where its subcommand is
 * after its options. A 65,000-word line took 130–170 ms per deny or ask rule when each rule made
 * these passes over every word again; now the line costs its length once and a rule what it names.
 *
 * @since 0.13.0
 * @internal
 */
import type * as CommandLine from "./CommandLine.js"
import * as GlobalOptions from "./GlobalOptions.js"

/**
 * How many words and units the matcher has visited, over all calls: the tests count a decision's
 * work with it (a long line must cost its length once, not once per rule), never its time.
 */
export const visited = { count: 0 }

export const visit = (n: number) => {
  visited.count += n
}

/**
 * Whether an unquoted `{…}` of the word holds an unquoted `,` or `..`: bash expands it into words
 * (`{git,push} origin` runs `git push origin`, `{sh,-c,'…'}` a shell), so a wildcard never stands
 * for it. Over-reading (`{a,b` … `}` across what bash would not pair) only makes an allow match less.
 */
const bracesExpand = (word: CommandLine.Word): boolean => {
  const unquoted = (i: number) => !word.quoted[i]
  const open = [...word.value].findIndex((c, i) => c === "{" && unquoted(i))
  if (open < 0) return false
  const close = word.value.lastIndexOf("}")
  if (close < open || !unquoted(close)) return false
  const inside = word.value.slice(open + 1, close)
  return [...inside].some((c, i) => unquoted(open + 1 + i) && (c === "," || (c === "." && inside[i + 1] === "." && unquoted(open + 2 + i))))
}

/** Whether a shell would expand the word as a file name pattern, a home directory or a brace expansion. */
export const globs = (word: CommandLine.Word) =>
  [...word.value].some((c, i) => !word.quoted[i] && (c === "*" || c === "?" || c === "[")) || (word.value.startsWith("~") && !word.quoted[0]) ||
  bracesExpand(word)

export interface WordIndex {
  readonly values: ReadonlyArray<string>
  /** Whether the word is one unit to the matcher: one the shell makes (a substitution, or a glob when the line runs through a shell). */
  readonly dynamic: ReadonlyArray<boolean>
  /** Where each word's units begin among the command's (a separator between words, a dynamic word one unit). */
  readonly offsets: ReadonlyArray<number>
  /** The indices of the words naming each program, by the last part of their path (`/usr/bin/git` names `git`). */
  readonly named: ReadonlyMap<string, ReadonlyArray<number>>
  /** What a rule reads from these words, made once by `key` (see {@link memo}). */
  readonly made: Map<string, unknown>
}

const made = new WeakMap<ReadonlyArray<CommandLine.Word>, WordIndex>()

/** The index of a simple command's words, made once per command (its words array is kept as its line's tokens are). */
export const of = (words: ReadonlyArray<CommandLine.Word>): WordIndex => {
  const known = made.get(words)
  if (known !== undefined) return known
  visit(words.length)
  const throughShell = words.some((w) => w.expands)
  const values = words.map((w) => w.value)
  const dynamic = words.map((word) => word.expands || (throughShell && globs(word)))
  const offsets: Array<number> = []
  const named = new Map<string, Array<number>>()
  let at = 0
  words.forEach((word, i) => {
    if (i > 0) at++
    offsets.push(at)
    at += dynamic[i] ? 1 : word.value.length
    const name = word.value.split("/").at(-1)!
    const list = named.get(name)
    if (list === undefined) named.set(name, [i])
    else list.push(i)
  })
  const index: WordIndex = { values, dynamic, offsets, named, made: new Map() }
  made.set(words, index)
  return index
}

/** What `make` reads from the words under `key`, made once per command: the rules naming the same thing share it. */
export const memo = <A>(index: WordIndex, key: string, make: () => A): A => {
  if (index.made.has(key)) return index.made.get(key) as A
  const value = make()
  index.made.set(key, value)
  return value
}

/** Whether any word names one of `programs` (by the last part of its path). */
export const names = (index: WordIndex, programs: Iterable<string>): boolean => {
  for (const program of programs) if (index.named.has(program)) return true
  return false
}

/** Where `program`'s subcommand is when its options are read from each index on (`GlobalOptions.subcommandFrom`), read once per program. */
export const subcommandFrom = (index: WordIndex, program: string): ReadonlyArray<number> =>
  memo(index, `subcommandFrom\0${program}`, () => {
    visit(index.values.length)
    return GlobalOptions.subcommandFrom(program, index.values)
  })

/** The later subcommands of `program` (`GlobalOptions.laterSubcommands`: make's later targets), read once per program. */
export const laterSubcommands = (index: WordIndex, program: string): ReadonlyArray<number> =>
  memo(index, `laterSubcommands\0${program}`, () => {
    visit(index.values.length)
    return GlobalOptions.laterSubcommands(program, index.values, (value) => value.split("/").at(-1) === program)
  })
