/**
 * Reading a program's argument list as the program reads it: one parser for the command rules
 * (`CommandRisk`, `CommandPaths`, `LineFills`).
 *
 * Programs built on getopt_long (GNU tar, make, sed, grep, cp, mv, du, ls, wget, …), curl and git's
 * subcommands (parse-options) take a long option by any unambiguous prefix of its name: `tar
 * --to-comm=sh`, `make --ev=…`, `sed --expr=…`, `grep --recur`, `cp --targ=d`, `curl --conf k`,
 * `git clone --templ=t` run as the full names do (round 26, checked with the binaries here). Some
 * do not: git's own options before the subcommand, `find`'s predicates, node, python, clap programs
 * (cargo, rg, deno), mawk. A rule that read such a program's long options exactly could be led past by
 * an abbreviation, so a rule says which a program is (`prefixes`) and which of its long options it
 * knows: a prefix is read against those. A prefix naming several known options records each (a check
 * for any of them errs towards seeing it); when some take a value and it has no `=`, which word is
 * the value and which an operand depends on the program and its version: `unsure`, and the caller asks.
 *
 * @since 0.1.0
 * @internal
 */

/** How a program's arguments read: which short letters and long options take a value, and whether long ones are abbreviated. */
export interface Syntax {
  /** Short option letters taking a value (the rest of the cluster, or the next word). */
  readonly shortArg?: string
  /** Short option letters whose value is optional and only the rest of the cluster (`sed -i.bak`, `gawk -d/tmp/d`). */
  readonly shortOptional?: string
  /** Long options taking a value (`--x=v` or `--x v`), with their dashes. */
  readonly longArg?: ReadonlyArray<string>
  /**
   * Long options whose value is optional and only after `=` (`date --iso-8601[=FMT]`, `uniq --group[=M]`, `git branch
   * --color[=W]`), with their dashes: the next word is an operand, as for a flag.
   */
  readonly longOptional?: ReadonlyArray<string>
  /** Long options taking none, with their dashes: with `longArg` and `longOptional`, what a prefix is read against. */
  readonly longFlags?: ReadonlyArray<string>
  /** Whether the program takes a long option by any unambiguous prefix (getopt_long, git's parse-options). */
  readonly prefixes?: boolean
  /** Whether `--no-<name>` negates an option and takes no value (git's parse-options). */
  readonly negations?: boolean
  /** Whether the first operand ends the options (awk: gawk's getopt does not permute); else options may follow operands. */
  readonly inOrder?: boolean
}

/** Arguments split into options and operands. */
export interface Parsed {
  /** Short letters seen. */
  readonly short: ReadonlySet<string>
  /** Long options seen, with dashes: the known names a word abbreviates, else the word's name as written. */
  readonly long: ReadonlySet<string>
  /** Option values, by letter or long name (the last given). */
  readonly values: ReadonlyMap<string, string>
  /** Every option value in the order given, with its letter or long name (`-C a -C b`, `-e p -e q`). */
  readonly given: ReadonlyArray<readonly [option: string, value: string]>
  readonly operands: ReadonlyArray<string>
  /** Where each operand is in `args`. */
  readonly operandsAt: ReadonlyArray<number>
  /** An ambiguous prefix of options some of which take a value, given without `=`: the operands are not known. */
  readonly unsure: boolean
}

/** The known long options `name` (with dashes) stands for: itself when known or when prefixes are not read, else those it abbreviates. */
export const resolve = (syntax: Syntax, name: string): ReadonlyArray<string> => {
  if (syntax.prefixes !== true) return [name]
  const known = [...(syntax.longArg ?? []), ...(syntax.longOptional ?? []), ...(syntax.longFlags ?? [])]
  if (known.includes(name)) return [name]
  const named = known.filter((long) => long.startsWith(name))
  return named.length > 0 ? named : [name]
}

/**
 * Splits `args` as `syntax` reads them; `--` ends the options. Unknown letters in a cluster count as
 * options (not as a value), so a misread cluster errs towards seeing more options.
 */
export const parse = (syntax: Syntax, args: ReadonlyArray<string>): Parsed => {
  const short = new Set<string>()
  const long = new Set<string>()
  const given: Array<readonly [string, string]> = []
  const operandsAt: Array<number> = []
  const set = (option: string, value: string) => given.push([option, value])
  let unsure = false
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    if (arg === "--" || (syntax.inOrder === true && !(arg.startsWith("-") && arg.length > 1))) {
      for (let k = arg === "--" ? i + 1 : i; k < args.length; k++) operandsAt.push(k)
      break
    }
    if (arg.startsWith("--")) {
      const at = arg.indexOf("=")
      const name = at < 0 ? arg : arg.slice(0, at)
      if (syntax.negations === true && name.startsWith("--no-")) {
        long.add(name)
        continue
      }
      const named = resolve(syntax, name)
      for (const each of named) long.add(each)
      if (at >= 0) {
        for (const each of named) set(each, arg.slice(at + 1))
      } else if (named.some((each) => (syntax.longArg ?? []).includes(each))) {
        if (named.length > 1) unsure = true
        if (i + 1 < args.length) for (const each of named) set(each, args[i + 1]!)
        i++
      }
    } else if (arg.startsWith("-") && arg.length > 1) {
      for (let k = 1; k < arg.length; k++) {
        const letter = arg[k]!
        short.add(letter)
        if ((syntax.shortOptional ?? "").includes(letter)) {
          if (k < arg.length - 1) set(letter, arg.slice(k + 1))
          break
        }
        if ((syntax.shortArg ?? "").includes(letter)) {
          const value = k < arg.length - 1 ? arg.slice(k + 1) : args[++i]
          if (value !== undefined) set(letter, value)
          break
        }
      }
    } else {
      operandsAt.push(i)
    }
  }
  return { short, long, values: new Map(given), given, operands: operandsAt.map((at) => args[at]!), operandsAt, unsure }
}

/**
 * Whether a word is a long option that one of `names` (with dashes) is, or abbreviates: a check for
 * options that run or write something, read loosely (a prefix shared with another option counts too,
 * which only asks).
 */
export const names = (word: string, named: ReadonlyArray<string>): boolean => {
  if (!word.startsWith("--")) return false
  const name = word.split("=")[0]!
  return name.length > 2 && named.some((option) => option.startsWith(name))
}

/** Short options of a word: every letter of a `-xyz` cluster (a value glued to a letter reads as letters too, which errs towards asking). */
export const shortLetters = (word: string): string => (word.startsWith("-") && !word.startsWith("--") ? word.slice(1) : "")
