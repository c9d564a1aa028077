/**
 * A server of a `.mcp.json` that a launcher fetches from a package registry at each start (`npx -y
 * foo`, `pnpm dlx foo`, `bunx foo`, `uvx foo`, `pipx run foo`): trust is for the file's line, and
 * the line names a package, not its code — the registry may serve another `foo` tomorrow (a new
 * release, a taken-over name). Trust cannot bind that; the summary says so, and whether the line
 * pins an exact version (`foo@1.2.3`, `foo==1.2.3`), which at least binds the release.
 *
 * The line is read with each launcher's own option grammar (its documented options, those taking a
 * value included), so that `npx --registry http://evil foo` fetches `foo` — from `http://evil`, which
 * the summary names since it changes who supplies the code — not a package `http://evil`. An option
 * the grammar does not know may take a value or not, so the summary says it cannot tell rather than
 * guess (before redteam15, the first word not starting with `-` was taken for the package).
 *
 * @since 0.14.0
 * @internal
 */

/** What one server fetches, as the line names it. */
export interface Fetched {
  readonly launcher: string
  /** The package whose program runs (`--from`, `--spec`, the first `--package`), or the one named. */
  readonly pkg: string
  /** Whether every package fetched names one exact version. */
  readonly pinned: boolean
  /** Further packages fetched with it (`--with`, more `--package`s). */
  readonly also?: ReadonlyArray<string>
  /** Where the line (an option, or a variable of its `env`) says to fetch from instead of the default registry. */
  readonly sources?: ReadonlyArray<string>
}

/** A launcher's line whose options do not say what it fetches, or from where. */
export interface Unclear {
  readonly launcher: string
  /** The option the grammar does not know, or whose meaning leaves it open. */
  readonly unclear: string
}

/** A launcher's options: those without a value, and what the value of the others is. */
interface Grammar {
  readonly flags: ReadonlySet<string>
  /** Options whose value is a package fetched; with one, the first word is the program to run. */
  readonly packages: ReadonlySet<string>
  /** Options whose value is one more package fetched alongside (`uvx --with`). */
  readonly extras: ReadonlySet<string>
  /** Options whose value says where packages come from (a registry, an index, a config file that may name one). */
  readonly sources: ReadonlySet<string>
  /** Options with a value that changes neither. */
  readonly values: ReadonlySet<string>
  /** Options that leave open what runs or what is fetched (a shell string, pip's own arguments, a requirements file). */
  readonly open: ReadonlySet<string>
  /** Option names that are sources by their shape (`--@scope:registry`, `--config.registry`). */
  readonly sourcePattern?: RegExp
}

const set = (words: string) => new Set(words.split(" ").filter((w) => w !== ""))

// npm's: npm-exec(1) and npm's config (`--registry`, `--@scope:registry`, `--userconfig`).
const npm: Grammar = {
  flags: set("-y --yes --no -q --quiet -s --silent -d --verbose --prefer-offline --offline --prefer-online --ignore-scripts --foreground-scripts -ws --workspaces --include-workspace-root --no-audit --no-fund --no-update-notifier"),
  packages: set("-p --package"),
  extras: set(""),
  sources: set("--registry --userconfig --globalconfig"),
  values: set("--prefix --cache --loglevel -w --workspace"),
  open: set("-c --call"),
  sourcePattern: /^--@[^:]+:registry$/
}

// pnpm's: pnpm dlx, and its global options (`--filter`, `--dir`, `--config.<key>`).
const pnpm: Grammar = {
  flags: set("-s --silent --use-stderr --aggregate-output --stream -r --recursive"),
  packages: set("--package"),
  extras: set(""),
  sources: set("--registry"),
  values: set("-F --filter -C --dir --reporter --loglevel --allow-build --store-dir --cache-dir --workspace-dir"),
  open: set("-c --shell-mode"),
  sourcePattern: /^--(?:config\.)?(?:@[^:]+:)?registry$/
}

// yarn's (berry): yarn dlx [-p,--package #0] [-q,--quiet] <command>.
const yarn: Grammar = {
  flags: set("-q --quiet"),
  packages: set("-p --package"),
  extras: set(""),
  sources: set(""),
  values: set(""),
  open: set("")
}

// bun's: bunx [--bun] [-p,--package <pkg>] <package>.
const bun: Grammar = {
  flags: set("--bun --silent --verbose --no-install"),
  packages: set("-p --package"),
  extras: set(""),
  sources: set(""),
  values: set(""),
  open: set("")
}

// uv's: `uv tool run` / `uvx` and uv's global options.
const uv: Grammar = {
  flags: set(
    "-q --quiet -v --verbose -n --no-cache --isolated --offline -U --upgrade --reinstall --refresh --no-sources --native-tls --no-config " +
      "--no-progress --managed-python --no-managed-python --no-python-downloads --compile-bytecode --no-build-isolation --no-build --no-binary --no-index --show-resolution --lfs"
  ),
  packages: set("--from"),
  extras: set("--with"),
  sources: set("--index --default-index --index-url -i --extra-index-url --find-links -f --config-file"),
  values: set(
    "-p --python --directory --project --cache-dir --python-preference --color --index-strategy --keyring-provider --resolution --prerelease " +
      "--exclude-newer --link-mode -c --constraints --overrides -b --build-constraints --refresh-package -P --upgrade-package --reinstall-package " +
      "--no-build-package --no-binary-package -C --config-setting --env-file"
  ),
  open: set("--with-requirements --with-editable")
}

// pipx's: pipx run [--spec SPEC] [--index-url URL] [--pip-args ARGS] app.
const pipx: Grammar = {
  flags: set("--no-cache --path --pypackages -e --editable --system-site-packages -v --verbose -q --quiet"),
  packages: set("--spec"),
  extras: set(""),
  sources: set("-i --index-url"),
  values: set("--python --backend"),
  open: set("--pip-args")
}

/** Launchers that fetch the package they are given: the program, the subcommand words before the package, and its grammar. */
const launchers: ReadonlyArray<{ readonly program: string; readonly sub: ReadonlyArray<string>; readonly grammar: Grammar; readonly name?: string }> = [
  { program: "npx", sub: [], grammar: npm },
  { program: "npm", sub: ["exec"], grammar: npm },
  { program: "npm", sub: ["x"], grammar: npm, name: "npm exec" },
  { program: "pnpx", sub: [], grammar: pnpm },
  { program: "pnpm", sub: ["dlx"], grammar: pnpm },
  { program: "yarn", sub: ["dlx"], grammar: yarn },
  { program: "bunx", sub: [], grammar: bun },
  { program: "bun", sub: ["x"], grammar: bun },
  { program: "uvx", sub: [], grammar: uv },
  { program: "uv", sub: ["tool", "run"], grammar: uv, name: "uv tool" },
  { program: "pipx", sub: ["run"], grammar: pipx }
]

/**
 * The project's files a launcher reads from the folder it starts in (a project's server starts in
 * the project) that choose who supplies what it fetches, or what runs in its place — each
 * launcher's documented configuration: npm's per-project `.npmrc` (`registry=`, `@scope:registry=`,
 * and for `npm run` `script-shell=`, `node-options=`); pnpm's `.npmrc` and `pnpm-workspace.yaml`;
 * yarn's `.yarnrc.yml` (`npmRegistryServer`, and `yarnPath`, the file yarn runs instead of itself)
 * and yarn 1's `.yarnrc`; bun's `bunfig.toml` and `.npmrc`. uv's tool commands (`uvx`) read no
 * project configuration (uv's docs: "for tool commands … local configuration files will be
 * ignored"), and pip, so pipx, reads no `pip.conf` from the folder it runs in. Keyed by program.
 */
export const projectConfig: Readonly<Record<string, ReadonlyArray<string>>> = {
  npx: [".npmrc"],
  npm: [".npmrc"],
  pnpx: [".npmrc", "pnpm-workspace.yaml"],
  pnpm: [".npmrc", "pnpm-workspace.yaml"],
  yarn: [".yarnrc.yml", ".yarnrc"],
  bunx: ["bunfig.toml", ".npmrc"],
  bun: ["bunfig.toml", ".npmrc"]
}

/** Launchers that run a package the project already has (`node_modules/<name>`, its `node_modules/.bin/<bin>`) instead of fetching it. */
const runsLocalCopy = new Set(["npx", "npm exec", "bunx", "bun x"])

/** A package spec's name (`@scope/foo@^1` → `@scope/foo`); none for a path, URL, tarball or git spec. */
const specName = (spec: string): string | undefined => {
  const match = /^(@[\w.-]+\/[\w.-]+|[\w.-]+)(?:@[^/:]*)?$/.exec(spec)
  return match === null || match[1]!.startsWith(".") ? undefined : match[1]
}

/**
 * The project's paths a launcher's line runs instead of fetching, when they are there: npm's exec
 * (and bun's) runs a package found in the project's `node_modules` — a clone may ship one — and
 * never asks the registry. Relative to the project.
 */
export const localCopies = (fetched: Fetched | Unclear): ReadonlyArray<string> => {
  if ("unclear" in fetched || !runsLocalCopy.has(fetched.launcher)) return []
  return [fetched.pkg, ...(fetched.also ?? [])].flatMap((spec) => {
    const name = specName(spec)
    return name === undefined ? [] : [`node_modules/${name}`, `node_modules/.bin/${name.split("/").at(-1)!}`]
  })
}

/** An exact version after the name: `@1.2.3` (npm's, a scope's leading `@` aside), `==1.2.3` or `@1.2.3` (uv's). */
const exactVersion = /^(@?[^@=\s]+)(?:@|==)v?\d+\.\d+\.\d+(?:[-+][\w.-]+)?$/

/** Variables of a server's `env` that choose where a launcher fetches from (the names only are shown: a value may hold a token). */
const sourceVariable = /^(?:(?:npm|pnpm|yarn|bun)_config_(?:.*registry|userconfig|globalconfig)|yarn_npm_registry_server|(?:uv|pip)_(?:index|index_url|default_index|extra_index_url|find_links|config_file)|pipx_default_index_url)$/i

/** What `command args` fetches from a registry, if it is such a launcher's line (`env`: the server's). */
export const fetchedBy = (command: string, args: ReadonlyArray<string>, env?: Readonly<Record<string, string>>): Fetched | Unclear | undefined => {
  const program = command.split(/[\\/]/).at(-1)!
  for (const launcher of launchers) {
    if (launcher.program !== program) continue
    const read = readLine(launcher.grammar, launcher.sub, args)
    if (read === undefined) continue
    const name = launcher.name ?? [program, ...launcher.sub].join(" ")
    if ("unclear" in read) return { launcher: name, unclear: read.unclear }
    const fromEnv = Object.keys(env ?? {}).filter((key) => sourceVariable.test(key)).map((key) => `${key} (set in its env)`)
    const sources = [...read.sources, ...fromEnv]
    const [pkg, ...also] = read.packages
    return {
      launcher: name,
      pkg: pkg!,
      pinned: read.packages.every((p) => exactVersion.test(p)),
      ...(also.length > 0 ? { also } : {}),
      ...(sources.length > 0 ? { sources } : {})
    }
  }
  return undefined
}

/**
 * Reads a launcher's line: its options (before and after the subcommand), the subcommand's words, and
 * the first word after them — the package, or the program to run when an option named the package.
 * Undefined when it is not that launcher's fetching subcommand, or names no package.
 */
const readLine = (grammar: Grammar, sub: ReadonlyArray<string>, args: ReadonlyArray<string>):
  | { readonly packages: ReadonlyArray<string>; readonly sources: ReadonlyArray<string> }
  | { readonly unclear: string }
  | undefined =>
{
  const named: Array<string> = []
  const extras: Array<string> = []
  const sources: Array<string> = []
  let matched = 0
  let positional: string | undefined
  let optionsEnd = false
  for (let i = 0; i < args.length && positional === undefined; i++) {
    const arg = args[i]!
    if (!optionsEnd && arg === "--") {
      optionsEnd = true
      continue
    }
    if (optionsEnd || !arg.startsWith("-") || arg === "-") {
      if (matched < sub.length) {
        if (arg !== sub[matched]) return undefined
        matched++
        optionsEnd = false
      } else positional = arg
      continue
    }
    const eq = arg.startsWith("--") ? arg.indexOf("=") : -1
    const option = eq > 0 ? arg.slice(0, eq) : arg
    if (grammar.flags.has(option)) continue
    const isSource = grammar.sources.has(option) || grammar.sourcePattern?.test(option) === true
    const known = isSource || grammar.packages.has(option) || grammar.extras.has(option) || grammar.values.has(option)
    // An option not known (or one that leaves open what runs): whether it takes a value, and what
    // the line then fetches, cannot be told — unless the line is not a fetching one at all.
    if (!known || grammar.open.has(option)) {
      return matched < sub.length && !args.slice(i + 1).includes(sub[matched]!) ? undefined : { unclear: option }
    }
    const value = eq > 0 ? arg.slice(eq + 1) : args[++i]
    if (value === undefined) return { unclear: option }
    if (grammar.packages.has(option)) named.push(value)
    else if (grammar.extras.has(option)) extras.push(value)
    else if (isSource) sources.push(`${option} ${value}`)
  }
  if (matched < sub.length) return undefined
  const packages = [...(named.length > 0 ? named : positional === undefined ? [] : [positional]), ...extras]
  return packages.length === 0 ? undefined : { packages, sources }
}

/**
 * The summary's lines for a server that fetches from a registry (see the module's comment).
 * `present`: the project's files now there, of those this line's launcher reads (`projectConfig`,
 * `localCopies`) — said, since they choose who supplies the code or run the project's own copy.
 */
export const describe = (name: string, fetched: Fetched | Unclear, present: ReadonlyArray<string> = []): ReadonlyArray<string> => {
  // A folder above the project's (`../node_modules/foo`) counts as the project's: the launcher reads it as such.
  const local = present.filter((path) => /^(?:\.\.\/)*node_modules\//.test(path))
  const config = present.filter((path) => !local.includes(path))
  const project = [
    ...(config.length > 0
      ? [`  ${name}: ${fetched.launcher} also reads the project's ${config.join(", ")}, which may choose its registry (or what runs in its place); trust covers ${config.length === 1 ? "that file" : "those files"} as they are now`]
      : []),
    ...(local.length > 0
      ? [`  ${name}: the project has its own ${local.join(", ")}, which ${fetched.launcher} runs instead of fetching; trust covers ${local.length === 1 ? "it" : "them"} as they are now`]
      : [])
  ]
  return [describeLine(name, fetched), ...project]
}

const describeLine = (name: string, fetched: Fetched | Unclear): string => {
  if ("unclear" in fetched) {
    return `  ${name}: ${fetched.launcher} fetches packages at each start, but which and from where cannot be told (its option ${JSON.stringify(fetched.unclear)} is not one this summary reads): trust covers this line, not what is fetched`
  }
  const packages = [fetched.pkg, ...(fetched.also ?? [])].map((p) => JSON.stringify(p)).join(", ")
  const from = fetched.sources === undefined
    ? "from its registry"
    : `from where ${fetched.sources.join(", ")} says (not the default registry: that chooses who supplies the code)`
  return `  ${name}: ${fetched.launcher} fetches ${packages} ${from} at each start: trust covers this line, not what the registry serves` +
    (fetched.pinned ? " (an exact version is pinned)" : "; no exact version is pinned, so a new release runs unasked (pin one: name@1.2.3, name==1.2.3)")
}
