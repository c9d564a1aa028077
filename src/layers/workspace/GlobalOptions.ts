/**
 * Where a program's subcommand begins after the program's own (global) options: `git -C x push`,
 * `npm --prefix x publish`, `make -C x deploy`, `kubectl --context x delete`. A deny or ask rule
 * naming the subcommand (`npm publish*`) must see it there, and so must the risk of a package
 * manager's subcommand (`npm -w pkg exec …` runs a package like `npm exec …`).
 *
 * Each program's documented options that take the next word as their value are listed; every other
 * word starting with `-` (a flag, `--opt=x`, `-Cx`) is one word. A value that is optional (`make -j
 * 4`) is taken only when it reads as one. Used to find a subcommand only: nothing here allows anything.
 *
 * @since 0.13.0
 * @internal
 */

interface Syntax {
  /** Options that take the next word as their value. */
  readonly valued: ReadonlySet<string>
  /** Options whose value is optional, taken when the next word matches `optionalValue`. */
  readonly optional?: ReadonlySet<string>
  /** Words before the subcommand that are not options but are skipped too (`make VAR=x`, `cargo +nightly`). */
  readonly skipped?: RegExp
  /** Every operand is a subcommand of its own: make's targets (`make clean deploy` makes `deploy` too). */
  readonly everyOperand?: boolean
}

const syntax = (valued: ReadonlyArray<string>, more: Omit<Syntax, "valued"> = {}): Syntax => ({ valued: new Set(valued), ...more })

const kubernetes = [
  "--context", "-n", "--namespace", "--kubeconfig", "--cluster", "--user", "-s", "--server", "--token", "--as", "--as-group", "--as-uid",
  "--certificate-authority", "--client-certificate", "--client-key", "--cache-dir", "--request-timeout", "--tls-server-name", "-v",
  "--profile", "--profile-output", "--log-file", "--password", "--username"
]

const programs: Record<string, Syntax> = {
  git: syntax(["-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path", "--config-env", "--super-prefix", "--attr-source"]),
  npm: syntax([
    "-C", "--prefix", "-w", "--workspace", "--userconfig", "--globalconfig", "--cache", "--registry", "--loglevel", "--otp", "--tag",
    "--access", "--scope", "--include", "--omit", "--before", "--location"
  ]),
  yarn: syntax([
    "--cwd", "--modules-folder", "--cache-folder", "--global-folder", "--link-folder", "--preferred-cache-folder", "--registry", "--mutex",
    "--network-timeout", "--use-yarnrc", "--https-proxy", "--proxy"
  ]),
  pnpm: syntax(["-C", "--dir", "-F", "--filter", "--filter-prod", "--workspace-dir", "--reporter", "--loglevel", "--store-dir", "--config-dir", "--registry"]),
  bun: syntax(["--cwd", "--config", "-c", "--filter", "-F"]),
  cargo: syntax(["--manifest-path", "--config", "-Z", "--color", "-C", "--lockfile-path"], { skipped: /^\+/ }),
  make: syntax(
    ["-C", "--directory", "-f", "--file", "--makefile", "-I", "--include-dir", "-o", "--old-file", "--assume-old", "-W", "--what-if", "--new-file", "--assume-new", "-O", "--output-sync"],
    { optional: new Set(["-j", "--jobs", "-l", "--load-average", "--max-load"]), skipped: /^[A-Za-z_][A-Za-z0-9_.]*[+:?!]?=/, everyOperand: true }
  ),
  docker: syntax(["--context", "-c", "--config", "-H", "--host", "-l", "--log-level", "--tlscacert", "--tlscert", "--tlskey"]),
  podman: syntax(["--connection", "-c", "--url", "--root", "--runroot", "--storage-driver", "--log-level", "--cgroup-manager", "--identity", "--module"]),
  kubectl: syntax(kubernetes),
  oc: syntax(kubernetes),
  helm: syntax([
    "--kube-context", "-n", "--namespace", "--kubeconfig", "--registry-config", "--repository-cache", "--repository-config",
    "--kube-apiserver", "--kube-as-user", "--kube-as-group", "--kube-ca-file", "--kube-token", "--burst-limit", "--kube-tls-server-name"
  ]),
  // Terraform's only form is `-chdir=DIR`: one word.
  terraform: syntax([]),
  tofu: syntax([]),
  go: syntax(["-C"])
}
// GNU make's other names.
programs.gmake = programs.make!

const optionalValue = /^\d+(\.\d+)?$/

/** Whether `program` (a bare name) has global options this module knows. */
export const knows = (program: string): boolean => Object.hasOwn(programs, program)

/**
 * For each index `j` of `words`, where the subcommand is when the program's options are read from
 * `j` on (`words.length` when there is none): computed from the end, so a line of many program
 * names and options is read once however many of them a caller looks at.
 */
export const subcommandFrom = (program: string, words: ReadonlyArray<string>): ReadonlyArray<number> => {
  const known = programs[program]
  const at = new Array<number>(words.length + 1).fill(words.length)
  if (known === undefined) return at.map((_, j) => j)
  for (let j = words.length - 1; j >= 0; j--) {
    const word = words[j]!
    if (known.skipped?.test(word) === true) at[j] = at[j + 1]!
    else if (!word.startsWith("-") || word === "-" || word === "--") at[j] = word === "--" ? Math.min(j + 1, words.length) : j
    else if (known.valued.has(word)) at[j] = at[Math.min(j + 2, words.length)]!
    else if (known.optional?.has(word) === true && optionalValue.test(words[j + 1] ?? "")) at[j] = at[j + 2]!
    else at[j] = at[j + 1]!
  }
  return at
}

/** The index in `args` (the words after the program's) of the subcommand, or `args.length` when there is none. */
export const subcommandIndex = (program: string, args: ReadonlyArray<string>): number => subcommandFrom(program, args)[0]!

/**
 * The indices of `words` (a simple command's) past a word naming `program` where a subcommand of its
 * own begins besides the first: for make, every target after the first (`make clean deploy`) — an
 * operand that is no option, no option's value and no variable. Empty for other programs. One pass.
 */
export const laterSubcommands = (program: string, words: ReadonlyArray<string>, names: (word: string) => boolean): ReadonlyArray<number> => {
  const known = programs[program]
  if (known?.everyOperand !== true) return []
  const out: Array<number> = []
  let seen = false
  let operands = 0
  words.forEach((word, j) => {
    const previous = words[j - 1] ?? ""
    const operand = seen && !word.startsWith("-") && known.skipped?.test(word) !== true && !known.valued.has(previous) &&
      !(known.optional?.has(previous) === true && optionalValue.test(word))
    if (operand && ++operands > 1) out.push(j)
    if (names(word)) {
      seen = true
      operands = 0
    }
  })
  return out
}
