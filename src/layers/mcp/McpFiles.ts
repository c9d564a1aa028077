/**
 * The project's files a trusted `.mcp.json` runs: its servers start outside the sandbox, in the
 * project, so `{"command": "node", "args": ["tools/mcp.js"]}` runs whatever `tools/mcp.js` holds at
 * the next session's start — and the agent can rewrite that file (`write_file` in `acceptEdits`, a
 * sandboxed command). Trust is therefore bound to these files too (`McpSettings`): a changed one,
 * or one made where none was, makes the `.mcp.json` untrusted again.
 *
 * Why bind their content rather than protect them (make them `RunsLater`): a file that does not
 * exist yet cannot be bound read-only in the sandbox, a link can be swapped for another, and the
 * user's own edit (or a build writing the script) needs no special path; a hash sees every one of
 * them the same way, fails closed, and costs a few reads at a session's start instead of at every
 * command. What it does not see: code the named files load in turn (an `import` of another file,
 * a package `npx` or `uv run` finds) — the summary says so.
 *
 * What counts as named, for each stdio server: its command, each argument and each word of each
 * variable's value (split on white space and `:`), and of a `--option=value` its value; each that
 * is a path inside the project (not the project itself) — with the names node and python would
 * also run for it (`tools/mcp` → `tools/mcp.js`; a folder → the files a launcher runs from it,
 * `index.js`, `package.json`, `__main__.py`, …), present or not.
 *
 * What a server keeps as its data is not bound: a file whose name says it is a database, a log or
 * a document (`--db-path ./test.db`), and a folder's other files (a filesystem server given
 * `./docs`). The server writes them itself, the user and the agent edit them; bound, each such
 * write made every later session ask for trust again, which teaches nothing but to say yes. Never
 * what the server runs, whatever its name (`scriptWords`): before, `node tools/server.md` bound no
 * file, and code written into it after trust ran at the next start (review 59c).
 *
 * @since 0.5.0
 * @internal
 */
import { createHash } from "node:crypto"
import { constants, readlinkSync } from "node:fs"
import * as NodeFs from "node:fs/promises"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import * as RegularFiles from "../RegularFiles.js"
import * as Environment from "../workspace/Environment.js"
import * as Paths from "../workspace/Paths.js"
import * as McpConfig from "./McpConfig.js"
import * as RegistryFetch from "./RegistryFetch.js"

const isInside = (parent: string, child: string) => Paths.isInside(NodePath, parent, child)

/**
 * What is read: each file hashed up to `bytes`, `totalBytes` in all; at most `names` names — the
 * reads a session's start makes. A `.mcp.json` naming more, or files holding more (links to one
 * large file count once each), is refused (`McpSettings`): binding some of them would leave the
 * others unbound.
 */
export const limits = { names: 1024, bytes: 64 * 1024 * 1024, totalBytes: 256 * 1024 * 1024 } as const

/** Suffixes a launcher tries for a name given without one (node's, python's, a shell script's). */
const suffixes = [".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".py", ".sh", ".json"]

/** The files a launcher runs from a folder it is given: node's (its `index.*`, or `package.json`'s `main`), python's. */
const folderEntries = ["index.js", "index.mjs", "index.cjs", "index.ts", "index.mts", "index.cts", "package.json", "__main__.py"]

/**
 * Names of data, not code: what a server reads and writes as it runs (a database, a log, rows), or
 * a document. No launcher runs one, and none names a program to run (a configuration file does —
 * `.json`, `.yaml`, `.toml` stay bound).
 */
const dataExtensions = new Set([".db", ".sqlite", ".sqlite3", ".db3", ".duckdb", ".log", ".jsonl", ".ndjson", ".csv", ".tsv", ".parquet", ".md", ".markdown"])

/** One name of the project a server runs: where (relative to the project) and what is there now. */
export interface Bound {
  readonly path: string
  /** `sha256:<hex>`, `absent`, `folder`, `special` (not a regular file), `large:<size>:sha256:<hex of the first bytes>`; either of the two after `outside:"<real path>":` for a link out. */
  readonly state: string
}

/**
 * The files a program reads its commands from when it is run in the project, unnamed: a package
 * manager's `package.json` scripts (`npm run mcp`, `yarn start`), a `Makefile`'s rules, a
 * `justfile`'s recipes. What they run is what the server runs. With them, the configuration a
 * package manager or launcher reads from the project, which may choose its registry or what runs
 * in its place (`RegistryFetch.projectConfig`: `.npmrc`, `.yarnrc.yml`, `bunfig.toml`).
 */
const programFiles: Readonly<Record<string, ReadonlyArray<string>>> = {
  npm: ["package.json", ...RegistryFetch.projectConfig.npm!],
  pnpm: ["package.json", ...RegistryFetch.projectConfig.pnpm!],
  yarn: ["package.json", ...RegistryFetch.projectConfig.yarn!],
  bun: ["package.json", ...RegistryFetch.projectConfig.bun!],
  npx: RegistryFetch.projectConfig.npx!,
  pnpx: RegistryFetch.projectConfig.pnpx!,
  bunx: RegistryFetch.projectConfig.bunx!,
  // `uv run x`, `poetry run x`, `pipenv run x`: the project's scripts (`[project.scripts]`, Pipfile's
  // `[scripts]`), its dependencies and index (`[tool.uv]`, `uv.toml`). Not `uv tool run` (`readsNoProject`).
  uv: ["pyproject.toml", "uv.toml", "uv.lock"],
  poetry: ["pyproject.toml", "poetry.lock", "poetry.toml"],
  pipenv: ["Pipfile", "Pipfile.lock"],
  make: ["Makefile", "makefile", "GNUmakefile"],
  just: ["justfile", "Justfile", ".justfile"],
  // `deno task x` runs `deno.json`'s tasks or `package.json`'s scripts; `deno run` reads `deno.json`'s imports.
  deno: ["deno.json", "deno.jsonc", "package.json"]
}

/**
 * Interpreters: programs that run a script named by their first argument that is not an option
 * (`node tools/server.md`, `sh run.log`). That argument is code whatever its name says, and so are
 * the values of the options before it (`node --require ./hook.md x.js`): the data exception
 * (`dataExtensions`) never applies to them, nor to the command itself.
 */
const interpreters = /^(?:node|nodejs|deno|bun|tsx|ts-node|python(?:[0-9.]*)|pypy3?|sh|bash|zsh|dash|ksh|fish|ruby|perl|php|lua(?:jit)?|Rscript|osascript|pwsh)$/

/** Options of an interpreter that run code given inline (`sh -c`, `node -e`, `python -c`): no script file follows. */
const inlineCode = new Set(["-c", "-e", "-p", "--eval", "--print"])

/** Options of an interpreter that take the next word as their value (node's loaders, python's `-W`/`-X`, ruby's and perl's `-I`/`-r`). */
const valueOptions = new Set(["-r", "--require", "--import", "--loader", "--experimental-loader", "-C", "--conditions", "--env-file", "--input-type", "--title", "-W", "-X", "-I", "--config"])

/**
 * Options of an interpreter known to take no value (python's `-u`, node's `--inspect`): a word
 * after one is the script. After an option in neither list, the next word may be its value or the
 * script, so both it and the word after it are code (`node --stack-size 4000 server.md`).
 */
const switches: ReadonlyArray<readonly [RegExp, RegExp]> = [
  [/^python|^pypy/, /^-[uBEsSOqIPbdivx]+$/],
  [/^(?:node|nodejs|deno|bun|tsx|ts-node)$/, /^--(?:inspect(?:-brk|-wait)?|no-[a-z-]+|enable-source-maps|expose-gc|trace-[a-z-]+|experimental-(?!loader$)[a-z-]+|harmony(?:-[a-z-]+)?|abort-on-uncaught-exception|preserve-symlinks(?:-main)?|watch|test|frozen-intrinsics|pending-deprecation|throw-deprecation)$/],
  [/^(?:sh|bash|zsh|dash|ksh|fish)$/, /^(?:-[eilnsuvx]+|--(?:login|norc|noprofile|posix|restricted|verbose))$/]
]

/** Whether `option` is one `program` (its name) is known to take without a value. */
const isSwitch = (program: string, option: string): boolean =>
  switches.some(([programs, options]) => programs.test(program) && options.test(option))

/**
 * The words of `program args` that are code whatever their names: for an interpreter, its script
 * and the values of its options before it (and, after an option it may not know, the word after
 * its possible value: see `isSwitch`); for `python -m a.b`, the files python runs for the
 * module (`a/__init__.py`, `a/b.py`, `a/b/__init__.py`, `a/b/__main__.py`); for `node --run x`,
 * the `package.json` whose script it runs.
 */
const scriptWords = (program: string, args: ReadonlyArray<string>): { readonly code: ReadonlyArray<string>; readonly above: ReadonlyArray<string> } => {
  const name = program.split("/").at(-1) ?? ""
  if (!interpreters.test(name)) return { code: [], above: [] }
  const code: Array<string> = []
  const python = /^python|^pypy/.test(name)
  const module = python ? pythonModule(args) : undefined
  // Whether the option just read may take the next word as its value without saying so.
  let unknownBefore = false
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    if (arg === "--") {
      unknownBefore = false
      continue
    }
    if (!arg.startsWith("-")) {
      code.push(arg)
      const next = args[i + 1]
      if (unknownBefore && next !== undefined && !next.startsWith("-")) code.push(next)
      return { code, above: [] }
    }
    const [option, value] = arg.includes("=") ? [arg.slice(0, arg.indexOf("=")), arg.slice(arg.indexOf("=") + 1)] : [arg, undefined]
    if (option === "--run") return { code: ["package.json"], above: ["package.json"] }
    if (python && module !== undefined) return { code: [...code, ...moduleFiles(module)], above: [] }
    if (inlineCode.has(option)) return { code, above: [] }
    unknownBefore = false
    const given = value ?? (valueOptions.has(option) && i + 1 < args.length ? args[++i]! : undefined)
    if (given !== undefined) code.push(given, ...(nodePreloads.has(option) && !python ? packageOf(given) : []))
    else unknownBefore = !isSwitch(name, option)
  }
  return { code, above: [] }
}

/**
 * The files python runs for `-m a.b` (`a/__init__.py`, `a/b.py`, `a/b/__init__.py`, `a/b/__main__.py`);
 * none for a name that is not a module's.
 */
const moduleFiles = (module: string): ReadonlyArray<string> => {
  const parts = module.split(".").filter((part) => part !== "")
  if (parts.length === 0 || parts.some((part) => part.includes("/"))) return []
  const prefixes = parts.map((_, k) => parts.slice(0, k + 1).join("/"))
  return [...prefixes.map((prefix) => `${prefix}/__init__.py`), `${prefixes.at(-1)}.py`, `${prefixes.at(-1)}/__main__.py`]
}

/**
 * The module `python args` runs (`-m x`, `-mx`, `-Bm x`, `-um x`: options read as Python reads a
 * cluster, `PythonShadows.pythonStart`), if it runs one (review 65a: only an exact `-m` was read).
 */
export const pythonModule = (args: ReadonlyArray<string>): string | undefined => {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    if (!arg.startsWith("-") || arg === "-" || arg === "--") return undefined
    if (arg.startsWith("--")) {
      if (arg === "--check-hash-based-pycs") i++
      continue
    }
    for (let k = 1; k < arg.length; k++) {
      if (arg[k] === "m") return arg.length > k + 1 ? arg.slice(k + 1) : args[i + 1]
      if (arg[k] === "c") return undefined
      if (/[WXQ]/.test(arg[k]!)) {
        if (k === arg.length - 1) i++
        break
      }
    }
  }
  return undefined
}

/** Node's options whose value is a module it loads before the script (`-r hook`, `--import=hook`). */
const nodePreloads = new Set(["-r", "--require", "--import", "--loader", "--experimental-loader"])

/**
 * The project's folder node loads a module named bare from (`-r hook`, `--import @scope/hook/register`):
 * `node_modules/<name>` (bound as a folder: its `package.json`'s entries and `index.*`). None for a
 * path or a URL, bound as named.
 */
const packageOf = (module: string): ReadonlyArray<string> =>
  /^(?:\.|\/|[A-Za-z][\w+.-]*:)/.test(module) || module === "" ? [] : [`node_modules/${module}`]

/**
 * The files `NODE_OPTIONS` (a server's `env`) makes node load (review 65a): a preload's value
 * (`--require hook`, `--import=./x.mjs`), a bare name as `node_modules/<name>`. Its other words are
 * bound as any variable's are.
 */
const nodeOptionFiles = (value: string): ReadonlyArray<string> => {
  const words = value.split(/\s+/).filter((word) => word !== "")
  return words.flatMap((word, i) => {
    const equals = word.indexOf("=")
    const [option, given] = equals > 0 ? [word.slice(0, equals), word.slice(equals + 1)] : [word, words[i + 1]]
    return nodePreloads.has(option) && given !== undefined ? [given, ...packageOf(given)] : []
  })
}

/** The most words after `uv` read for its subcommand: its global options and `tool run`, with room to spare. */
const uvWords = 64

/**
 * Whether `program rest` is uv's tool command, `uv tool run x` (`uvx`'s long name): uv's docs say
 * "for tool commands, which operate at the user level, local configuration files will be ignored",
 * so none of the project's files is bound for it. One whose options cannot be told (`Unclear`)
 * binds them: over-binding costs a question, under-binding leaves a file unbound.
 */
const readsNoProject = (program: string, rest: ReadonlyArray<string>): boolean => {
  if (program !== "uv") return false
  const fetched = RegistryFetch.fetchedBy(program, rest)
  return fetched !== undefined && !("unclear" in fetched) && fetched.launcher === "uv tool"
}

/**
 * Where a package manager or a Python project tool looks for a program it is told to run before
 * anything else: `pnpm exec x`, `pnpm x`, `yarn x`, `yarn exec x`, `bun run x`, `bun x` run the
 * project's `node_modules/.bin/x`; `uv run x`, `poetry run x` its `.venv/bin/x` (npm's and `npx`'s
 * are `RegistryFetch.localCopies`). Keyed by program; the subcommands that come before the name.
 */
const binFolders: Readonly<Record<string, { readonly folder: string; readonly sub: ReadonlySet<string> }>> = {
  pnpm: { folder: "node_modules/.bin", sub: new Set(["exec", "run"]) },
  yarn: { folder: "node_modules/.bin", sub: new Set(["exec", "run"]) },
  bun: { folder: "node_modules/.bin", sub: new Set(["run", "x", "exec"]) },
  uv: { folder: ".venv/bin", sub: new Set(["run"]) },
  poetry: { folder: ".venv/bin", sub: new Set(["run"]) }
}

/** The most words after such a launcher that may be the program's name (its options' values can come first: `pnpm --filter a exec x`). */
const binWords = 3

/**
 * Options that make a launcher run from another folder of the project, as if started there (review
 * 64a): `pnpm --dir tools exec x` and `pnpm -C tools x` run `tools/node_modules/.bin/x`, as do
 * `yarn --cwd tools x`, `bun --cwd tools x` and `npx --prefix tools x`; `uv run --directory tools x`
 * (or `--project`) and `poetry -C tools run x` run `tools/.venv/bin/x` and read `tools/pyproject.toml`.
 */
const folderOptions: Readonly<Record<string, RegExp>> = {
  pnpm: /^(?:--dir|-C)$/,
  yarn: /^--cwd$/,
  bun: /^--cwd$/,
  npx: /^--prefix$/,
  npm: /^--prefix$/,
  uv: /^(?:--directory|--project)$/,
  poetry: /^(?:-C|--directory|-P|--project)$/,
  // `make -C tools mcp` reads `tools/Makefile` (review 65a).
  make: /^(?:-C|--directory)$/
}

/**
 * Options that run a workspace package's program from its own folder, named by package rather than
 * by folder (`pnpm --filter pkg exec x`, `pnpm -F pkg x`, `npm exec -w pkg x`, `bun --filter pkg x`);
 * and yarn's `workspace pkg x`. Which folder that is only the workspace's files say, so trust cannot
 * bind the program there as it binds `--dir`'s: such a line is refused (`workspaceRun`).
 */
const workspaceOptions: Readonly<Record<string, RegExp>> = {
  pnpm: /^(?:--filter|-F|--filter-prod)(?:=|$)|^-F./,
  npm: /^(?:--workspace|-w|--workspaces|-ws)(?:=|$)/,
  npx: /^(?:--workspace|-w|--workspaces|-ws)(?:=|$)/,
  bun: /^(?:--filter|-F)(?:=|$)/
}

/** The option (or yarn's subcommand) by which a launcher's line runs a workspace package's program, if it does (`workspaceOptions`). */
export const workspaceRun = (command: string, args: ReadonlyArray<string>): string | undefined => {
  const program = command.split("/").at(-1) ?? ""
  if (program === "yarn") return args.find((arg) => !arg.startsWith("-")) === "workspace" ? "workspace" : undefined
  const option = workspaceOptions[program]
  if (option === undefined) return undefined
  const end = args.indexOf("--")
  return (end === -1 ? args : args.slice(0, end)).find((arg) => option.test(arg))
}

/** The folders a launcher's line says to run from (`folderOptions`), as written, and the indexes of the words that name them. */
const launchFolders = (program: string, args: ReadonlyArray<string>): { readonly folders: ReadonlyArray<string>; readonly at: ReadonlySet<number> } => {
  const option = folderOptions[program]
  const folders: Array<string> = []
  const at = new Set<number>()
  if (option !== undefined) {
    for (let i = 0; i < args.length && args[i] !== "--"; i++) {
      const arg = args[i]!
      const equals = arg.startsWith("--") ? arg.indexOf("=") : -1
      if (equals > 0 && option.test(arg.slice(0, equals))) folders.push(arg.slice(equals + 1)), at.add(i)
      else if (option.test(arg) && i + 1 < args.length) folders.push(args[i + 1]!), at.add(i), at.add(++i)
      // A short option's value joined to it (`pnpm -Ctools`, `make -Ctools`, review 65a).
      else if (/^-[A-Za-z]./.test(arg) && option.test(arg.slice(0, 2))) folders.push(arg.slice(2)), at.add(i)
    }
  }
  return { folders: folders.filter((folder) => folder !== ""), at }
}

/**
 * The files of the project such a launcher's line may run (`binFolders`): for each of the first
 * words after it that is not an option or a subcommand, that name in the launcher's folder — of the
 * project, and of each folder the line runs it from (`launchFolders`). One that is an option's value
 * instead binds a name where no file is, which costs nothing.
 */
const projectBins = (command: string, args: ReadonlyArray<string>): ReadonlyArray<string> => {
  const program = command.split("/").at(-1) ?? ""
  const launcher = binFolders[program]
  if (launcher === undefined) return []
  const { at, folders } = launchFolders(program, args)
  return args.filter((arg, i) => !at.has(i) && !arg.startsWith("-") && !launcher.sub.has(arg) && !arg.includes("/") && arg !== "." && arg !== "..")
    .slice(0, binWords)
    .flatMap((name) => ["", ...folders].map((folder) => NodePath.join(folder, launcher.folder, name)))
}

/**
 * What a launcher's line reads from the folders it says to run from (`launchFolders`), relative to
 * the project: its files there and in each folder between it and the project (`programFiles`: a
 * `package.json`'s scripts, `pyproject.toml`), and for `npx --prefix` its local copies there.
 */
const folderFiles = (command: string, args: ReadonlyArray<string>, copies: ReadonlyArray<string>): ReadonlyArray<string> => {
  const program = command.split("/").at(-1) ?? ""
  return launchFolders(program, args).folders.flatMap((folder) => {
    const between: Array<string> = []
    for (let at = NodePath.normalize(folder); at !== "." && at !== "/" && !at.startsWith(".."); at = NodePath.dirname(at)) between.push(at)
    return [...between.flatMap((at) => (programFiles[program] ?? []).map((file) => NodePath.join(at, file))), ...copies.map((copy) => NodePath.join(folder, copy))]
  })
}

/**
 * The local sources a launcher builds and runs at each start (review 64a): `uvx --from . x`,
 * `uv tool run --from ./tools x`, `pipx run --spec . x`, a `--with` path — a package made from the
 * project's files (`setup.py`, `pyproject.toml`, its modules), none of which trust can bind as it
 * binds a script: a build runs whatever the sources say. A requirement (`x==1.2`) or a URL is
 * fetched instead (`RegistryFetch`); a path or `file:` one is the project's.
 */
export const localBuilds = (server: McpConfig.Stdio): ReadonlyArray<string> => {
  const fetched = RegistryFetch.fetchedBy(server.command, server.args ?? [], server.env)
  if (fetched === undefined || "unclear" in fetched) return []
  // npm's `@scope/name` and `user/repo` (GitHub's) are fetched; a Python requirement never holds a `/` but as a path or URL.
  const python = /^(?:uvx|uv tool|pipx run)$/.test(fetched.launcher)
  return [fetched.pkg, ...(fetched.also ?? [])].filter((spec) =>
    /^(?:\.|\/|~)|^file:|@\s*file:|\.(?:whl|tgz|tar\.gz|zip)$/i.test(spec) || (python && !spec.includes("://") && spec.includes("/"))
  )
}

/** The state of what trust refuses (`refusals`), before why; `McpSettings` refuses a `.mcp.json` with one. */
export const refusedState = "refused:"

/**
 * What trust refuses in a `.mcp.json`'s servers, one `Bound` each (its path the server's name, its
 * state `refusedState` and why): a `PATH` folder or an absolute command that leads through `/proc` or
 * `/dev` (`realPath`), and a launcher that builds the project's sources (`localBuilds`). In the
 * combined hash, a state trust never records: a `.mcp.json` trusted before is untrusted again.
 */
export const refusals = (servers: McpConfig.Servers, cwd?: string): ReadonlyArray<Bound> =>
  Object.entries(servers).flatMap(([name, server]) => {
    if (!("command" in server)) return []
    const loading = cwd === undefined ? [] : projectLoadPaths(server, cwd)
    // A script named through `/proc` or `/dev` (`node /proc/self/cwd/server.js`): the project, read in the server (mend65trust).
    const scripts = cwd === undefined ? [] : [...words(server).code].filter((word) =>
      word !== server.command && !word.startsWith("-") && (NodePath.isAbsolute(word) || word.startsWith("..")) && realPath(NodePath.resolve(cwd, word)) === undefined
    )
    const ran = envProgram(server)
    const through = [
      ...searchFolders(server.env?.PATH).refused,
      ...(ran?.own === true ? searchFolders(ran.path).refused : []),
      ...(NodePath.isAbsolute(server.command) && realPath(server.command) === undefined ? [server.command] : []),
      ...scripts
    ]
    const builds = localBuilds(server)
    const workspace = workspaceRun(server.command, server.args ?? [])
    return [
      ...(workspace === undefined ? [] : [{
        path: name,
        state: `${refusedState}runs a workspace package's program (${JSON.stringify(workspace)}), from a folder only the workspace's files name, which trust cannot bind: name the folder (--dir, --cwd, --prefix) or the program's path`
      }]),
      ...through.map((folder) => ({
        path: name,
        state: `${refusedState}names ${JSON.stringify(folder)}, which leads through /proc or /dev: what is there depends on the process reading it (for the server, the project)`
      })),
      ...builds.map((spec) => ({
        path: name,
        state: `${refusedState}builds ${JSON.stringify(spec)}, local sources, at each start, which trust cannot bind: install the package and name its program`
      })),
      ...loading.map((variable) => ({
        path: name,
        state: `${refusedState}sets ${variable} to a folder or file of the project, from which its program loads code trust cannot bind (a \`sitecustomize.py\`, a library): point it outside the project, or leave it out`
      }))
    ]
  })

/**
 * The variables of `server`'s `env` that make its program load code from a folder (or file) of the
 * project `cwd` (review 65a): `PYTHONPATH=pylib` runs `pylib/sitecustomize.py` and any module the
 * server imports from there, `PYTHONPATH=.` undoes `PYTHONSAFEPATH`, `NODE_PATH`, `PERL5LIB`,
 * `RUBYLIB`, `LD_LIBRARY_PATH`, `LD_PRELOAD` alike (`McpConfig.loaderVariables`). Which files such a
 * folder yields depends on what the program imports, so none can be bound: the server is refused, as
 * a shell command's path through such a folder is (`CommandPaths`). An entry is inside when it is
 * relative, empty (the folder the program starts in) or, by real path, under the project's.
 */
const projectLoadPaths = (server: McpConfig.Stdio, cwd: string): ReadonlyArray<string> => {
  const project = realPath(NodePath.resolve(cwd)) ?? cwd
  return Object.entries(server.env ?? {}).filter(([variable, value]) => {
    // Options (`NODE_OPTIONS`, `PERL5OPT`, `RUBYOPT`) name files, bound as words (`nodeOptionFiles`), not folders.
    if (!McpConfig.loaderVariables.has(variable) || /OPT(?:IONS)?$/.test(variable) || value === "") return false
    return value.split(variable === "LD_PRELOAD" ? /[\s:]+/ : ":").some((entry) => {
      // A preload named without a `/` is searched for in the system's folders, not the project.
      if (variable === "LD_PRELOAD" && !entry.includes("/")) return false
      const real = realPath(NodePath.resolve(cwd, entry === "" ? "." : entry))
      return real === undefined || real === project || isInside(project, real)
    })
  }).map(([variable]) => variable)
}

/**
 * Names whose meaning depends on the process that reads them: `/proc/self/cwd` is the folder the
 * reader stands in — for a server, the project it starts in, whatever the agent's is — and
 * `/dev/fd`, `/dev/stdin` lead back to `/proc/self` (review 64a: `"PATH": "/proc/self/cwd/bin:…"`
 * ran the project's `bin/mcp-server`, bound by no name).
 */
const processPaths = /^\/(?:proc|dev)(?:\/|$)/

/** The most links followed in one path, as the kernel's `MAXSYMLINKS`. */
const maxLinks = 40

/**
 * Where absolute `path` leads, its links followed one by one as the kernel follows them: its real
 * path — from a name that is not there on, the rest as written (it can hold no link now) — or none
 * when it leads through `/proc` or `/dev` (`processPaths`; read in the agent, they would name
 * another process's folders than the server's) or through more than `maxLinks` links.
 */
export const realPath = (path: string): string | undefined => {
  const pending = path.split("/")
  let at = "/"
  for (let links = 0; pending.length > 0;) {
    const part = pending.shift()!
    if (part === "" || part === ".") continue
    if (part === "..") {
      at = NodePath.dirname(at)
      continue
    }
    const next = NodePath.join(at, part)
    if (processPaths.test(next)) return undefined
    let target: string
    try {
      target = readlinkSync(next)
    } catch (error) {
      // Not a link: go on from it. Not there (or not readable): nothing after it is a link now.
      if ((error as NodeJS.ErrnoException).code === "EINVAL") at = next
      else return processPaths.test(NodePath.join(next, ...pending)) ? undefined : NodePath.join(next, ...pending)
      continue
    }
    if (++links > maxLinks) return undefined
    if (NodePath.isAbsolute(target)) at = "/"
    pending.unshift(...target.split("/"))
  }
  return at
}

/**
 * Where the program of a server whose command is bare (no `/`) is looked up: the absolute folders of
 * `path` (its `env`'s `PATH`, or the agent's), each as `realPath` gives it — so a folder that is a
 * link into the project, or `/proc/self/cwd/bin`, is searched where trust read it (review 64a) — and
 * which of them are refused: those leading through `/proc` or `/dev`, never searched.
 */
export const searchFolders = (path: string | undefined): { readonly folders: ReadonlyArray<string>; readonly refused: ReadonlyArray<string> } => {
  const folders: Array<string> = []
  const refused: Array<string> = []
  for (const folder of Environment.searchFolders(path)) {
    const real = realPath(folder)
    if (real === undefined) refused.push(folder)
    else folders.push(real)
  }
  return { folders, refused }
}

/** What `env` (GNU's, BSD's common options) does before it runs a program, as it reads its line. */
export interface EnvLine {
  /** Whether it starts from an empty environment (`-i`, `-`, `--ignore-environment`). */
  readonly clears: boolean
  /** The variables it removes (`-u NAME`, `--unset=NAME`). */
  readonly unset: ReadonlyArray<string>
  /** Its `NAME=value` words, in order. */
  readonly assignments: ReadonlyArray<string>
  /** The index in its arguments of the program it runs (`args.length` when none). */
  readonly programAt: number
  /** Whether its line says more than is read here (`-S`, `-C`, `-P`, an option not known): who runs what cannot be told. */
  readonly unclear: boolean
}

/** `env`'s options that take a value (in the word or the next one), and those that take none. */
const envValueOptions = new Set(["u", "C", "S", "P", "a"])
const envSwitches = new Set(["i", "0", "v"])
const envLongValue = /^--(?:unset|chdir|split-string|argv0)$/
const envLongSwitch = /^--(?:ignore-environment|null|debug|list-signal-handling|(?:block|default|ignore)-signal(?:=.*)?)$/

/**
 * How `env` reads `args` when `command` is `env` (`/usr/bin/env`), else none. `-C`, `-S`, `-P` and an
 * option not known make it `unclear`: env runs from another folder, splits a string into more words,
 * or searches another `PATH`, and the words after it are not what runs.
 */
export const envLine = (command: string, args: ReadonlyArray<string>): EnvLine | undefined => {
  if (command.split("/").at(-1) !== "env") return undefined
  let clears = false
  let unclear = false
  const unset: Array<string> = []
  let i = 0
  for (; i < args.length; i++) {
    const arg = args[i]!
    if (arg === "--") {
      i++
      break
    }
    if (arg === "-") {
      clears = true
      continue
    }
    if (!arg.startsWith("-")) break
    if (arg.startsWith("--")) {
      const equals = arg.indexOf("=")
      const option = equals > 0 ? arg.slice(0, equals) : arg
      if (option === "--ignore-environment") clears = true
      else if (envLongValue.test(option)) {
        const value = equals > 0 ? arg.slice(equals + 1) : args[++i] ?? ""
        if (option === "--unset") unset.push(value)
        else if (option !== "--argv0") unclear = true
      } else if (!envLongSwitch.test(arg)) unclear = true
      continue
    }
    for (let k = 1; k < arg.length; k++) {
      const letter = arg[k]!
      if (letter === "i") clears = true
      if (envValueOptions.has(letter)) {
        const value = k + 1 < arg.length ? arg.slice(k + 1) : args[++i] ?? ""
        if (letter === "u") unset.push(value)
        else if (letter !== "a") unclear = true
        break
      }
      if (!envSwitches.has(letter)) unclear = true
    }
  }
  const assignments: Array<string> = []
  for (; i < args.length && /^[^=/]+=/.test(args[i]!); i++) assignments.push(args[i]!)
  return { clears, unset, assignments, programAt: i, unclear }
}

/**
 * The files a server's command may be, by real folder: for a bare command and an `env` that sets
 * `PATH`, the file each folder of it (`searchFolders`) would hold for it (`bin/mcp-server`,
 * `/abs/project/bin/node`), in the order they are searched; for an absolute command, the file in its
 * folder's real path (`/tmp/link/srv`, a link to the project's folder). Those inside the project are
 * bound (`namedPaths`) — the program the server runs is one of them when it is there — and
 * `McpConnection` spawns the one it found by that path, refusing one in the project found otherwise.
 */
export const pathCandidates = (server: McpConfig.Stdio): ReadonlyArray<string> => {
  const path = server.env?.PATH
  const ran = envProgram(server)
  // The program `env` runs (`/usr/bin/env node`), looked up as env looks it up (mend65trust).
  const ranBy = ran === undefined ? [] : candidatesIn(ran.path, ran.program)
  if (NodePath.isAbsolute(server.command)) {
    const folder = realPath(NodePath.dirname(server.command))
    return [...(folder === undefined ? [] : [NodePath.join(folder, NodePath.basename(server.command))]), ...ranBy]
  }
  if (path === undefined || server.command.includes("/")) return ranBy
  return [...candidatesIn(path, server.command), ...ranBy]
}

/** The files `path`'s folders would hold for the bare `program`, in search order. */
const candidatesIn = (path: string | undefined, program: string): ReadonlyArray<string> => {
  if (path === undefined) return []
  // A relative folder is never searched (`Environment.searchPath`), but its file is bound as named: one made there says so.
  const relative = path.split(NodePath.delimiter).filter((folder) => folder !== "" && !NodePath.isAbsolute(folder))
  return [...searchFolders(path).folders, ...relative].map((folder) => NodePath.join(folder, program))
}

/**
 * The bare program a server's `env` runs and the `PATH` env searches for it: env's own last `PATH=`,
 * else none after `-i` (the system's default folders), else the server's `env`'s (none: the agent's).
 */
export const envProgram = (server: McpConfig.Stdio): { readonly program: string; readonly path: string | undefined; readonly own: boolean } | undefined => {
  const line = envLine(server.command, server.args ?? [])
  const program = line === undefined || line.unclear ? undefined : server.args?.[line.programAt]
  if (line === undefined || program === undefined || program.includes("/")) return undefined
  const assigned = line.assignments.filter((word) => word.startsWith("PATH=")).at(-1)
  if (assigned !== undefined) return { program, path: assigned.slice("PATH=".length), own: true }
  return { program, path: line.clears || line.unset.includes("PATH") ? undefined : server.env?.PATH, own: line.clears || line.unset.includes("PATH") }
}

/** Whether `word` names a program whose line may run the project's files: an interpreter, a launcher, `make`. */
const isProgram = (word: string): boolean => {
  const name = word.split("/").at(-1) ?? ""
  return interpreters.test(name) || Object.hasOwn(programFiles, name) || Object.hasOwn(folderOptions, name) || Object.hasOwn(binFolders, name)
}

/** The most words after a program that a wrapper runs read as its line (`env python3 -B -m x`). */
const lineWords = 256

/**
 * The programs a server's launch runs, each with the words after it: its command with all its
 * arguments, and each program among them a wrapper runs — `env python3 -m x`, `uv run python -m x`,
 * `poetry run python -m x`, `corepack pnpm exec x`, `env make -C tools` — every such word, since a
 * wrapper's option may take a value (over-reading binds a name where no file is, which costs
 * nothing); `uv run -m x` (`--module`) runs a python. Shared by what trust binds (`namedPaths`) and
 * when a python server is given `PYTHONSAFEPATH` (`McpConnection`), so the two read a launch alike
 * (review 65a: `env python3 -m tools.server` bound no `tools/server.py`).
 */
export const programLines = (server: McpConfig.Stdio): ReadonlyArray<{ readonly program: string; readonly args: ReadonlyArray<string> }> => {
  const words = [server.command, ...(server.args ?? [])]
  const lines: Array<{ readonly program: string; readonly args: ReadonlyArray<string> }> = [{ program: server.command, args: server.args ?? [] }]
  words.forEach((word, i) => {
    if (i > 0 && isProgram(word)) lines.push({ program: word, args: words.slice(i + 1, i + 1 + lineWords) })
    if (word.split("/").at(-1) === "uv" && words[i + 1] === "run") {
      const module = words.findIndex((option, k) => k > i + 1 && (option === "-m" || option === "--module"))
      if (module !== -1) lines.push({ program: "python", args: ["-m", ...words.slice(module + 1, module + 1 + lineWords)] })
    }
  })
  return lines
}

/** The words python reads for `server` when it runs one, its own options first (`programLines`). */
export const pythonLines = (server: McpConfig.Stdio): ReadonlyArray<ReadonlyArray<string>> =>
  programLines(server).filter((line) => /^(?:python[0-9.]*|pypy3?)$/.test(line.program.split("/").at(-1) ?? "")).map((line) => line.args)

/**
 * The words of a server's launch that may name a file: the command, each argument, each word of
 * each variable's value, and of an argument that holds a command line (`sh -c "node tools/mcp.js"`)
 * each of its words; of `--option=value` its value too. With them, the files a program among those
 * words reads its commands from (`programFiles`).
 */
const words = (server: McpConfig.Stdio): { readonly words: ReadonlyArray<string>; readonly code: ReadonlySet<string>; readonly above: ReadonlyArray<string> } => {
  const out: Array<string> = []
  const above: Array<string> = []
  // The words that are code whatever their names say (`scriptWords`), the command first.
  const code = new Set<string>([server.command])
  const addScripts = (program: string, rest: ReadonlyArray<string>) => {
    const scripts = scriptWords(program, rest)
    for (const word of scripts.code) out.push(word), code.add(word)
    above.push(...scripts.above)
  }
  // `rest`: the words after `word` on its line, which may say the program reads no project file.
  const add = (word: string, rest: ReadonlyArray<string> = []) => {
    out.push(word)
    const equals = word.indexOf("=")
    if (equals > 0) out.push(word.slice(equals + 1))
    const program = word.split("/").at(-1) ?? ""
    if (!readsNoProject(program, rest)) {
      for (const file of programFiles[program] ?? []) {
        out.push(file)
        if (program !== "make") above.push(file)
      }
    }
  }
  // What a program on the line runs (`scriptWords`, `projectBins`, `folderFiles`, its local copies).
  const addProgram = (program: string, rest: ReadonlyArray<string>) => {
    addScripts(program, rest)
    // A launcher that runs the project's own copy of the package it names, when there is one.
    const fetched = RegistryFetch.fetchedBy(program, rest, server.env)
    const copies = fetched === undefined ? [] : RegistryFetch.localCopies(fetched)
    out.push(...copies), above.push(...copies)
    const ran = projectBins(program, rest)
    for (const file of [...ran, ...folderFiles(program, rest, copies)]) out.push(file), code.add(file)
    above.push(...ran)
  }
  const addLine = (line: string) => {
    add(line)
    // A shell's separators and quotes: the words of a command line an argument holds.
    const pieces = line.split(/[\s;&|()<>'"`]+/)
    // The words after each are taken for uv alone, and a few: a line of 50,000 words stays linear.
    if (pieces.length > 1) pieces.forEach((piece, i) => {
      add(piece, piece.endsWith("uv") ? pieces.slice(i + 1, i + 1 + uvWords) : [])
      // A program on the line (`sh -c "node tools/server.md"`); a program is a line's first word or one after a separator.
      if (isProgram(piece)) addProgram(piece, pieces.slice(i + 1, i + 1 + uvWords).filter((word) => word !== ""))
    })
  }
  add(server.command, server.args ?? [])
  // The command's line, and the line of each program a wrapper runs (`env`, `corepack`, `uv run`: `programLines`).
  for (const line of programLines(server)) addProgram(line.program, line.args)
  for (const arg of server.args ?? []) addLine(arg)
  for (const value of Object.values(server.env ?? {})) for (const word of value.split(/[\s:]+/)) add(word)
  for (const file of nodeOptionFiles(server.env?.NODE_OPTIONS ?? "")) out.push(file), code.add(file)
  // A bare command is looked up in the server's own `PATH` when its `env` sets one: the program a
  // folder of it inside the project holds is what runs (review 63b: `"PATH": "<project>/bin:…"`).
  for (const file of pathCandidates(server)) out.push(file), code.add(file)
  return { words: out.filter((word) => word !== "" && !word.startsWith("-") && !word.includes("://")), code, above }
}

/**
 * The folders above `cwd` whose files a launcher started in `cwd` reads too, nearest first: npm's
 * project is the nearest folder above with a `package.json` (its `.npmrc`, its scripts, its
 * `node_modules`, which `npx` runs), pnpm's workspace root holds `pnpm-workspace.yaml`, yarn reads
 * every `.yarnrc.yml` up to `/`, uv and poetry take the nearest `pyproject.toml`, just the nearest
 * `justfile`. A repository's monorepo puts them at its root, above a package's `.mcp.json`. Up to,
 * not into, the user's home folder: it and the folders holding it are the user's own (`~/.npmrc`).
 */
export const foldersAbove = (cwd: string, home: string = NodeOs.homedir()): ReadonlyArray<string> => {
  const out: Array<string> = []
  let below = cwd
  for (let folder = NodePath.dirname(cwd); folder !== below && !isInside(folder, home); below = folder, folder = NodePath.dirname(folder)) out.push(folder)
  return out
}

/**
 * The paths inside `cwd` (real) a server's launch names, with the names a launcher tries for them;
 * relative, sorted, all of them — or, for a file naming more than `limits.names`, the first
 * `limits.names` and one word's names more, which is enough to refuse it (`McpSettings`). Before,
 * all were made first: a 1 MiB `.mcp.json` of 140,000 words was 1.7 million paths, 5 s of the
 * event loop and 200 MB.
 */
export const namedPaths = (cwd: string, servers: McpConfig.Servers, above: ReadonlyArray<string> = foldersAbove(cwd)): ReadonlyArray<string> => {
  const paths = new Set<string>()
  for (const server of Object.values(servers)) {
    if (!("command" in server)) continue
    const launch = words(server)
    // What a launcher reads from the folders above: those names exactly, relative to `cwd` (`../.npmrc`).
    for (const folder of above) {
      if (paths.size > limits.names) break
      for (const file of launch.above) paths.add(NodePath.relative(cwd, NodePath.join(folder, file)))
    }
    for (const word of launch.words) {
      if (paths.size > limits.names) break
      const path = codeInProject(cwd, word, launch.code)
      if (path === undefined) continue
      const relative = NodePath.relative(cwd, path)
      if (dataExtensions.has(NodePath.extname(relative).toLowerCase()) && !launch.code.has(word)) continue
      paths.add(relative)
      if (NodePath.extname(relative) === "") for (const suffix of suffixes) paths.add(relative + suffix)
    }
  }
  return [...paths].sort()
}

/**
 * The path inside `cwd` a launch's word names, if one: as written, or — for code (`words`' `code`)
 * named from outside (`node /outside/link.js`, `python3 ../link/server.py`) — where its links lead,
 * as the kernel follows them (`realPath`): a link or a folder on the way into the project runs the
 * project's file, which trust must bind as if named (mend65trust).
 */
const codeInProject = (cwd: string, word: string, code: ReadonlySet<string>): string | undefined => {
  const path = NodePath.resolve(cwd, word)
  if (path !== cwd && isInside(cwd, path)) return path
  if (!code.has(word)) return undefined
  const real = realPath(path)
  return real !== undefined && real !== cwd && isInside(cwd, real) ? real : undefined
}

/** The state of a file past the bytes `bound` reads in all (`limits.totalBytes`). */
export const overBudget = "over-budget"

/**
 * The state of a name past the names `bound` covers in all (`limits.names`), a launcher's
 * configuration's included; its path is the configuration file's that named it.
 */
export const overNames = "over-names"

/** The state of a launcher's configuration file that sends the launcher further out (`pointsOut`), before the setting: `points-out:cache`. */
export const pointsOutState = "points-out:"

/**
 * The settings of a launcher's configuration that send it to more configuration, or to code, in
 * places whose content trust cannot bind: npm's `userconfig`/`globalconfig` (files it reads next,
 * taken from a project's `.npmrc`: checked with npm 11.19), `prefix` (whose `etc/npmrc` it reads),
 * `cache` (where `npx` keeps the packages it runs, and runs them again from), pnpm's `cache-dir` (its
 * `dlx` cache) and `store-dir` (the packages it links in), and yarn's cache and global folders.
 */
const redirecting = /^\s*["']?(userconfig|globalconfig|prefix|cache|cache-dir|store-dir|cacheFolder|cache-folder|globalFolder|global-folder)["']?\s*[=:]/im

/** The first setting of a launcher's configuration file (`path`, relative to `cwd`) that sends it further out, if one does. */
const pointsOut = async (cwd: string, path: string): Promise<string | undefined> => {
  const text = await RegularFiles.readRegular(NodePath.join(cwd, path), packageJsonBytes, { followLinks: true }).then((bytes) => bytes.toString("utf8"), () => "")
  return redirecting.exec(text)?.[1]
}

/**
 * The SHA-256 of a file's first `limits.bytes`, opened without waiting on a FIFO, taken from `budget`;
 * its state. A file reached through a link that leads out of `within` says where it leads: the same
 * bytes there are not the same file — what is outside the project can change with no edit in it.
 */
const fileState = async (path: string, budget: { left: number }, within: string): Promise<string> => {
  const state = await contentState(path, budget)
  if (!state.startsWith("sha256:") && !state.startsWith("large:")) return state
  const real = await NodeFs.realpath(path).catch(() => path)
  return isInside(within, real) ? state : `outside:${JSON.stringify(real)}:${state}`
}

const contentState = async (path: string, budget: { left: number }): Promise<string> => {
  // Links are followed: what the launch runs is where the link leads, and a swapped link changes it.
  const handle = await NodeFs.open(path, constants.O_RDONLY | constants.O_NONBLOCK).catch(() => undefined)
  if (handle === undefined) return (await NodeFs.lstat(path).catch(() => undefined)) === undefined ? "absent" : "unreadable"
  try {
    const info = await handle.stat()
    if (info.isDirectory()) return "folder"
    if (!info.isFile()) return "special"
    const reading = Math.min(info.size, limits.bytes)
    if (reading > budget.left) return overBudget
    budget.left -= reading
    const hash = createHash("sha256")
    const buffer = Buffer.alloc(1024 * 1024)
    let read = 0
    while (read < limits.bytes) {
      const { bytesRead } = await handle.read(buffer, 0, Math.min(buffer.length, limits.bytes - read), read)
      if (bytesRead === 0) break
      hash.update(buffer.subarray(0, bytesRead))
      read += bytesRead
    }
    const hex = hash.digest("hex")
    return info.size > limits.bytes ? `large:${info.size}:sha256:${hex}` : `sha256:${hex}`
  } catch {
    return "unreadable"
  } finally {
    await handle.close()
  }
}

/**
 * What is at each path a trusted project's servers name (`namedPaths`) now, and for a folder what is
 * at the files a launcher runs from it (`folderEntries`, present or not; `package.json` names its
 * `main`, which node runs in their place).
 */
export const bound = async (cwd: string, named: ReadonlyArray<string>): Promise<ReadonlyArray<Bound>> => {
  const out: Array<Bound> = []
  const budget = { left: limits.totalBytes }
  const seen = new Set(named)
  const queue = [...named]
  const top = foldersAbove(cwd).at(-1) ?? cwd
  for (let i = 0; i < queue.length; i++) {
    const path = queue[i]!
    const within = isInside(cwd, NodePath.join(cwd, path)) ? cwd : top
    const state = await fileState(NodePath.join(cwd, path), budget, within)
    const elsewhere = state.startsWith("sha256:") && configNames.has(nameInProject(path)) ? await pointsOut(cwd, path) : undefined
    out.push({ path, state: elsewhere === undefined ? state : `${pointsOutState}${elsewhere}` })
    if (state.startsWith("sha256:") && configNames.has(nameInProject(path))) {
      for (const more of await configPaths(cwd, path)) {
        // Past what trust covers, the file is refused (`McpSettings`), never bound in part; the
        // configuration file that named one too many is the one said.
        if (seen.size > limits.names) {
          out.push({ path, state: overNames })
          break
        }
        if (!seen.has(more)) {
          seen.add(more)
          queue.push(more)
        }
      }
    }
    if (state !== "folder") continue
    const main = await packageMain(cwd, path)
    for (const entry of [...folderEntries.map((name) => NodePath.join(path, name)), ...main]) {
      const entryState = await fileState(NodePath.join(cwd, entry), budget, within)
      if (entryState !== "folder") out.push({ path: entry, state: entryState })
    }
  }
  return out
}

/** A launcher's configuration files in the project (`RegistryFetch.projectConfig`), by their path there. */
const configNames = new Set(Object.values(RegistryFetch.projectConfig).flat())

/** A bound path as its folder names it: `../../.npmrc` (a folder above `cwd`) is `.npmrc`. */
export const nameInProject = (path: string): string => path.replace(/^(?:\.\.\/)+/, "")

/**
 * The project's paths a launcher's configuration file names, with a launcher's names for them: its
 * values may name a program or code run in the launcher's place (`.yarnrc.yml`'s `yarnPath`, `.npmrc`'s
 * `script-shell` or `node-options=--require ./x.js`). Every value word that is a path inside the
 * project counts — over-binding a name where no file is costs nothing, missing one leaves code unbound.
 */
const configPaths = async (cwd: string, file: string): Promise<ReadonlyArray<string>> => {
  const text = await RegularFiles.readRegular(NodePath.join(cwd, file), packageJsonBytes, { followLinks: true }).then((bytes) => bytes.toString("utf8"), () => "")
  // A name counts once: counted with its repeats, a file of many repeated lines reached the limit
  // early and the names after them were dropped unrefused (a preload after 60 `script-shell=` lines).
  const paths = new Set<string>()
  // A file above `cwd` names paths from its own folder (a root `.yarnrc.yml`'s `yarnPath`), within the folders trust reads.
  const from = NodePath.dirname(NodePath.join(cwd, file))
  const top = foldersAbove(cwd).at(-1) ?? cwd
  for (const word of text.split(/[\s=:"',[\]{}]+/)) {
    if (word === "" || word.startsWith("-") || word.startsWith("#") || word.startsWith(";")) continue
    const path = NodePath.resolve(from, word)
    if (path === cwd || path === from || !isInside(top, path) || (!isInside(cwd, path) && !isInside(from, path))) continue
    const relative = NodePath.relative(cwd, path)
    if (relative === file || dataExtensions.has(NodePath.extname(relative).toLowerCase())) continue
    for (const path of [relative, ...(NodePath.extname(relative) === "" ? suffixes.map((suffix) => relative + suffix) : [])]) paths.add(path)
    if (paths.size > limits.names) break
  }
  return [...paths]
}

/** The most of a folder's `package.json` read for its `main`. */
const packageJsonBytes = 1024 * 1024

/**
 * A folder's `package.json` as text: a regular file only (links followed, as node follows them), at
 * most `packageJsonBytes`; none otherwise. Before, `readFile` read any kind of file whole: a link to
 * `/dev/zero` read 600 MB into memory at `trust` and at each start of a session the file was trusted for.
 */
const packageJsonText = (file: string): Promise<string | undefined> =>
  RegularFiles.readRegular(file, packageJsonBytes, { followLinks: true }).then((bytes) => bytes.toString("utf8"), () => undefined)

/**
 * The files a folder's `package.json` names as its entries, relative to the project, those inside it:
 * its `main`, and each path among its `exports` (what node loads for `-r hook`, `--import hook`, in
 * `main`'s place: `{"exports": {".": {"require": "./lib/main.js"}}}`), at most `limits.names`.
 */
const packageMain = async (cwd: string, folder: string): Promise<ReadonlyArray<string>> => {
  const text = await packageJsonText(NodePath.join(cwd, folder, "package.json"))
  if (text === undefined) return []
  const found: Array<string> = []
  const walk = (node: unknown, depth: number): void => {
    if (typeof node === "string") found.push(node)
    else if (typeof node === "object" && node !== null && depth < 16 && found.length < limits.names) for (const child of Object.values(node)) walk(child, depth + 1)
  }
  try {
    const parsed: unknown = JSON.parse(text)
    if (typeof parsed !== "object" || parsed === null) return []
    walk((parsed as { main?: unknown }).main, 0)
    walk((parsed as { exports?: unknown }).exports, 0)
  } catch {
    return []
  }
  return found.filter((entry) => entry !== "" && !entry.includes("*")).flatMap((entry) => {
    const path = NodePath.resolve(cwd, folder, entry)
    return path !== cwd && isInside(cwd, path) ? [NodePath.relative(cwd, path)] : []
  }).slice(0, limits.names)
}

/**
 * The hash trust records for a `.mcp.json` whose bytes hash to `fileHash` and whose servers name
 * `files`: the file's own hash when they name none in the project (as before), else one over both.
 */
export const combinedHash = (fileHash: string, files: ReadonlyArray<Bound>): string =>
  files.length === 0
    ? fileHash
    : createHash("sha256").update(`effect-agent mcp trust 1\n${fileHash}\n${files.map((f) => `${JSON.stringify(f.path)} ${f.state}`).join("\n")}\n`).digest("hex")
