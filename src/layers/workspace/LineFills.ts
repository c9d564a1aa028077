/**
 * What a command of a line writes into a folder without the line naming it, and what a copy or a
 * move lands as: read before a git of the same line runs there (`GitPrograms.chosenByRepository`).
 *
 * `tar xf t.tar && git status` unpacks whatever the archive holds into cwd — a `.git/config`, a
 * staged submodule's `sub/.git` — and no word of the line names it; so do `unzip`, `cpio -i`, `ar
 * x`, `patch` (the files its diff names), a copy of a folder's contents (`cp -r x/. d`, `rsync x/
 * d`, `ditto x d`, a glob's names) and a move or copy run by `xargs`, `parallel` or `find -exec`
 * (its sources and destination come from what the runner reads), and program text the line runs
 * (`python3 -c 'os.rename(…)'`, `perl -e`, `node -e`, an awk program that runs or writes: it may
 * move or write anything below cwd, which it fills). Such a folder is *filled*: what
 * it holds then is known only when the line runs (round 23; before, an exact rule for `tar xf t.tar
 * && git status` ran the unpacked `core.fsmonitor`). A copy, move or link of named sources lands
 * each as `dest/<name>` (`mv d1/sub .` makes `./sub`): those are named, as the destination is.
 *
 * @since 0.1.0
 * @internal
 */
import * as NodePath from "node:path"
import type * as CommandLine from "./CommandLine.js"
import * as CommandRisk from "./CommandRisk.js"

/** Programs that unpack an archive or apply a patch, writing entries the line does not name. */
const unpackers = new Set(["tar", "bsdtar", "unzip", "cpio", "ar", "patch"])

/** Programs that copy, move or link named sources into a destination. */
const placers = new Set(["cp", "mv", "ln", "install", "rsync", "ditto"])

/** Runners that give a program words the line does not show (their input, what find finds). */
const runners = new Set(["xargs", "parallel", "find"])

/** The value of an option `-X v`, `-Xv` or `--long=v` / `--long v`, each time it is given. */
const valuesOf = (args: ReadonlyArray<string>, short: string, long: string): ReadonlyArray<string> =>
  args.flatMap((w, i) => {
    if ((w === short || w === long) && args[i + 1] !== undefined) return [args[i + 1]!]
    if (w.startsWith(`${long}=`)) return [w.slice(long.length + 1)]
    return w.length > 2 && w.startsWith(short) && !w.startsWith("--") ? [w.slice(2)] : []
  })

/** Option letters: dash clusters, and a first word without a dash (`tar xf`, `ar x`). */
const lettersOf = (args: ReadonlyArray<string>): string =>
  args.map((w, i) => (i === 0 && !w.startsWith("-") ? w : /^-[^-]/.test(w) ? w.slice(1) : "")).join("")

/** The folders an unpacker writes into, where it writes at all (`tar x`, not `tar c`; `unzip`, not `unzip -l`). */
const unpackedInto = (program: string, args: ReadonlyArray<string>): ReadonlyArray<string> => {
  const into = (named: ReadonlyArray<string>) => (named.length === 0 ? ["."] : named)
  switch (program) {
    case "tar":
    case "bsdtar":
      return lettersOf(args).includes("x") || args.some((w) => w === "--extract" || w === "--get") ? into(valuesOf(args, "-C", "--directory")) : []
    case "unzip":
      return args.some((w) => /^-[ltvpZz]$/.test(w)) ? [] : into(valuesOf(args, "-d", "-d"))
    case "cpio":
      return /^[^-]*i/.test(lettersOf(args.filter((w) => w.startsWith("-")))) || args.includes("--extract") ? into(valuesOf(args, "-D", "--directory")) : []
    case "ar":
      return /x/.test(args[0]?.replace(/^-/, "") ?? "") ? ["."] : []
    default:
      return args.includes("--dry-run") ? [] : into(valuesOf(args, "-d", "--directory"))
  }
}

/** Options of the placers that take the next word as their value (`cp -S .bak`, `rsync -e ssh`, `install -m 644`). */
const takesValue = /^(?:-[tSeTfmogB]|--(?:target-directory|suffix|rsh|exclude|include|filter|backup-dir|mode|owner|group|files-from|exclude-from|include-from|link-dest|compare-dest|copy-dest|partial-dir|temp-dir|chmod|chown|log-file))$/

/** A word the shell expands as a file name pattern (the names it lands as are not on the line). */
const isGlob = (word: CommandLine.Word) => [...word.value].some((c, i) => !word.quoted[i] && (c === "*" || c === "?" || c === "["))

/** What a copy, move or link fills (a folder's contents copied into it) and the names its sources land as. */
const placed = (program: string, words: ReadonlyArray<CommandLine.Word>): { readonly filled: ReadonlyArray<string>; readonly landed: ReadonlyArray<string> } => {
  const values = words.map((w) => w.value)
  const target = valuesOf(values, "-t", "--target-directory")
  const operands = words.filter((w, i) => !w.value.startsWith("-") && !takesValue.test(values[i - 1] ?? ""))
  const destination = target.at(-1) ?? (operands.length >= 2 ? operands.at(-1)!.value : undefined)
  if (destination === undefined) return { filled: [], landed: [] }
  const sources = target.length > 0 ? operands : operands.slice(0, -1)
  // `x/.` (and rsync's `x/`) copies x's contents; ditto always does; a glob's names are known when it runs.
  const contents = (w: CommandLine.Word) => program === "ditto" || isGlob(w) || w.value.endsWith("/.") || (program === "rsync" && w.value.endsWith("/"))
  const filled = sources.some(contents) ? [destination] : []
  const landed = sources.filter((w) => !contents(w)).flatMap((w) => {
    const name = NodePath.basename(w.value)
    return name === "" || name === "." || name === ".." ? [] : [NodePath.join(destination, name)]
  })
  return { filled, landed }
}

/** Interpreters, with the options that give them program text on the line (`python3 -c`, `perl -pe`, `php -r`). */
const inlineFlags: ReadonlyArray<readonly [RegExp, RegExp]> = [
  [/^(?:python[0-9.]*|pypy[0-9.]*)$/, /^-[A-Za-z]*c$/],
  [/^(?:node|nodejs|bun)$/, /^(?:-[A-Za-z]*[ep]|--eval|--print|--eval=.*|--print=.*)$/],
  [/^deno$/, /^eval$/],
  [/^(?:perl[0-9.]*|ruby|julia)$/, /^-[A-Za-z]*[eE]$/],
  [/^(?:php[0-9.]*)$/, /^-[A-Za-z]*r$/],
  [/^(?:lua[0-9.]*|Rscript|osascript)$/, /^-e$/],
  [/^(?:tclsh|expect)$/, /^-c$/]
]

/** awk and its kin: their program is the first operand (unless `-f` names a file). */
const awks = /^(?:awk|gawk|mawk|nawk)$/

/** Any program `runsProgramText` looks at, in one test: most commands are none of them. */
const interpreters = new RegExp(`^(?:${[...inlineFlags.map(([program]) => program), awks].map((r) => r.source.slice(1, -1)).join("|")})$`)

/**
 * Whether the command runs program text the line holds, which may move or write anything below cwd
 * (`python3 -c 'os.rename(…)'`): given by an option, or read from the line's here-document or pipe
 * (an interpreter with no script: `python3 - <<EOF`). An awk program only when it can run a command
 * or write a file (`system(…)`, `| "cmd"`, `> "file"`): `awk '{print $1}' f` reads.
 */
const runsProgramText = (names: ReadonlyArray<string>, values: ReadonlyArray<string>): boolean =>
  // The program, or one a wrapper runs (`nice python3 -c …`), not a word that only names one (`git log --grep node`).
  names.some((name, at) => {
    if (at > 0 && !CommandRisk.runsOtherPrograms(names[0]!)) return false
    if (!interpreters.test(name)) return false
    const awk = awks.test(name)
    const interpreter = inlineFlags.find(([program]) => program.test(name))
    if (!awk && interpreter === undefined) return false
    // Its options, up to its first operand (a scan that stops there: `watch python3 python3 …` stays linear).
    let end = at + 1
    while (end < values.length && values[end]!.startsWith("-") && values[end] !== "-") end++
    const options = values.slice(at + 1, end)
    const args = values.slice(at + 1, end + 1)
    const operand = end < values.length ? options.length : -1
    if (awk) return !options.some((w) => w === "-f" || w.startsWith("--file")) && operand >= 0 && /system|[|>]/.test(args[operand]!)
    // `python3 -m pytest` runs a module: a file's code, as `python3 s.py` does.
    if (options.some((w) => w === "-m" || /^(?:-V|--version|-h|--help)$/.test(w))) return false
    return options.some((w) => interpreter![1].test(w)) || operand < 0 || args[operand] === "-" || (name === "deno" && args[operand] === "eval")
  })

const nothing = { filled: [], landed: [] }

/**
 * What one simple command (its words from the program on, wrappers included: `nice tar xf t.tar`)
 * fills and lands: folders as the line names them (`.` for cwd), from cwd.
 */
export const of = (words: ReadonlyArray<CommandLine.Word>): { readonly filled: ReadonlyArray<string>; readonly landed: ReadonlyArray<string> } => {
  // Most commands are none of these, and are told apart by their program alone (a line may hold 30,000 of them).
  const first = NodePath.basename(words[0]?.value ?? "")
  if (!unpackers.has(first) && !placers.has(first) && !interpreters.test(first) && !runners.has(first) && !CommandRisk.runsOtherPrograms(first)) return nothing
  const names = words.map((w) => NodePath.basename(w.value))
  if (runsProgramText(names, words.map((w) => w.value))) return { filled: ["."], landed: [] }
  const at = names.findIndex((name) => unpackers.has(name) || placers.has(name))
  if (at < 0) return nothing
  const program = names[at]!
  // Run by xargs, parallel or find: its sources and destination come from what the runner reads.
  if (names.slice(0, at).some((name) => runners.has(name))) return { filled: ["."], landed: [] }
  const args = words.slice(at + 1)
  if (unpackers.has(program)) return { filled: unpackedInto(program, args.map((w) => w.value)), landed: [] }
  return placed(program, args)
}
