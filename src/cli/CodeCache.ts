/**
 * The CLI's compile cache: what V8 compiled in an earlier run of the same command, handed back to V8
 * so that a start does not compile effect, @effect/cli and the engine again (issue 20 row 8, issue
 * 24 item 5; docs/benchmarks.md has the numbers).
 *
 * - Node ≥ 22.1 has one: `module.enableCompileCache` (ES modules and CommonJS), turned on here
 *   with this module's folder; the program is then the ES chunks, as without a cache.
 * - Node 20 has none for ES modules. There the program also ships as one CommonJS file
 *   (`dist/cli/main.cjs`, scripts/bundle-cli.mjs), compiled here with `vm.Script` and V8's
 *   `cachedData`. The cache is made at the first run of each command (`createCachedData()` at exit,
 *   or at its first full GC if that comes first: see `makeCacheOnce`), so it holds every function
 *   that run compiled, not only the top level as a cache made at compile time would: that is why
 *   this is not `v8-compile-cache`, whose caches are made at compile time, written in place rather
 *   than renamed, and which covers `require` only).
 *
 * The cache file is named by the bundle's content hash (V8 itself checks only the source's length,
 * its own version and its flags), Node's version, the architecture, Node's flags and the command. It
 * is written to a temporary file and renamed, so processes running at once never read half of one;
 * a cache V8 rejects is compiled without and replaced; a folder that cannot be written, is not
 * this user's or that others can write runs the ES chunks, as before, and says nothing.
 * `EFFECT_AGENT_DEBUG=1` runs without it (source maps apply to the ES chunks), and so does
 * `EFFECT_AGENT_NO_CODE_CACHE=1`; `EFFECT_AGENT_CODE_CACHE_DIR` chooses the folder.
 *
 * @since 0.12.0
 * @internal
 */
import { accessSync, closeSync, constants, fstatSync, mkdirSync, openSync, readdirSync, readFileSync, realpathSync, rmSync, type Stats, statSync } from "node:fs"
import * as NodeModule from "node:module"
import { homedir, tmpdir } from "node:os"
import { dirname, isAbsolute, join, resolve } from "node:path"
import { constants as performanceConstants, PerformanceObserver } from "node:perf_hooks"
import * as vm from "node:vm"
import { replaceFile } from "./ReplaceFile.js"

/** The CommonJS program's content hash, set by scripts/bundle-cli.mjs (absent when the CLI runs unbundled). */
declare const EFFECT_AGENT_CLI_BUNDLE_HASH: string | undefined

/** Where this user's caches go, as other CLIs put them: XDG on Linux, the platform's cache folder elsewhere. */
export const defaultFolder = (env: NodeJS.ProcessEnv = process.env): string => {
  const home = (() => {
    try {
      return homedir()
    } catch {
      return ""
    }
  })()
  const xdg = env.XDG_CACHE_HOME
  const base = process.platform === "win32"
    ? env.LOCALAPPDATA
    : process.platform === "darwin"
    ? home === "" ? undefined : join(home, "Library", "Caches")
    : xdg !== undefined && xdg.startsWith("/") ? xdg : home === "" ? undefined : join(home, ".cache")
  return base === undefined || base === "" ? join(tmpdir(), `effect-agent-${process.getuid?.() ?? "user"}`, "code-cache") : join(base, "effect-agent", "code-cache")
}

/** `EFFECT_AGENT_CODE_CACHE_DIR` when set but not absolute: ignored (see {@link folder}). */
const relativeChoice = (env: NodeJS.ProcessEnv): string | undefined => {
  const own = env.EFFECT_AGENT_CODE_CACHE_DIR
  return own === undefined || own === "" || isAbsolute(own) ? undefined : own
}

/**
 * The folder this process keeps its cache in (`EFFECT_AGENT_CODE_CACHE_DIR` when absolute, else the
 * default). Its writes always ask (cli/Settings.ts makes it a protected folder): a cache file is code
 * every later start runs. A relative value is ignored ({@link start} says so once): resolved against
 * the current directory it named a folder of whichever repository a command ran in, whose planted
 * cache V8 would have run (it checks only the source's length, its version and its flags; review 62a),
 * as a relative `EFFECT_AGENT_CONFIG_DIR` is ignored (review 59c).
 */
export const folder = (env: NodeJS.ProcessEnv = process.env): string => {
  const own = env.EFFECT_AGENT_CODE_CACHE_DIR
  return own !== undefined && isAbsolute(own) ? own : defaultFolder(env)
}

/**
 * The folder's real path, made if missing, when this user owns it, no one else can write it and this
 * user can; otherwise undefined (no cache). A cache is code: one another user could write (a shared
 * tmp dir, a folder opened to a group) is never read, and neither is one below a folder another user
 * could write, who could rename ours away and put theirs in its place between this check and the
 * read (a sticky folder such as /tmp is fine: there others cannot rename what is not theirs).
 */
const usableFolder = (folder: string): string | undefined => {
  try {
    mkdirSync(folder, { recursive: true, mode: 0o700 })
    const real = realpathSync(folder)
    const uid = process.getuid?.()
    if (uid !== undefined) {
      if (!ownedAndPrivate(statSync(real), uid)) return undefined
      if (!ancestorsSafe(resolve(folder), uid) || !ancestorsSafe(real, uid)) return undefined
    }
    accessSync(real, constants.W_OK)
    return real
  } catch {
    return undefined
  }
}

/** Owned by this user, and no one else may write it. */
const ownedAndPrivate = (stat: Stats, uid: number) => stat.uid === uid && (stat.mode & 0o022) === 0

/** S_ISVTX (node:fs's constants lack it). */
const stickyBit = 0o1000

/** Every folder above `path` is this user's or root's, and no one else can write it unless it is sticky. */
const ancestorsSafe = (path: string, uid: number): boolean => {
  for (let current = path, parent = dirname(current); parent !== current; current = parent, parent = dirname(current)) {
    const stat = statSync(parent)
    if (stat.uid !== uid && stat.uid !== 0) return false
    if ((stat.mode & 0o022) !== 0 && (stat.mode & stickyBit) === 0) return false
  }
  return true
}

/**
 * The cache file's bytes when this user owns it and no one else can write it (the folder is private,
 * but may have been made by hand with looser modes); undefined when there is none or it is not.
 */
const readOwnCache = (file: string): Buffer | undefined => {
  let fd: number | undefined
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW)
    const uid = process.getuid?.()
    if (uid !== undefined && !ownedAndPrivate(fstatSync(fd), uid)) return undefined
    return readFileSync(fd)
  } catch {
    return undefined
  } finally {
    if (fd !== undefined) closeSync(fd)
  }
}

/**
 * The bundle's text, from its bytes read in one read (a UTF-8 read, `readFileSync(path, "utf8")`, is
 * Node 20's `readFileUtf8`: 310 reads of 8 KiB for the 2.5 MB bundle and the page faults of their
 * growth), decoded as UTF-8 into V8's heap. Not as Latin-1, though esbuild writes ASCII: Node makes a
 * Latin-1 string over 1 MB an external one, and `serve` with 500 watchers then peaked ≈ 15 MB higher
 * (its old space as much larger; 16 alternated rounds, docs/benchmarks.md "row18"), for 40 page faults
 * fewer at a start.
 */
export const bundleSource = (bytes: Buffer): string => bytes.toString("utf8")

/** A short, stable hash of a string (FNV-1a): which flags Node runs with, in a file name. */
const shortHash = (text: string): string => {
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193)
  return (h >>> 0).toString(16).padStart(8, "0")
}

/**
 * What a run's cache is for: the command, since each compiles its own part of the program, and the
 * SQL store `--store` names, whose code (the driver, `@effect/sql`) a cache made by a run on another
 * store lacks — a `sessions --store postgres` with the cache a JSONL `sessions` made compiled `pg`
 * and the store on every start (0.045·10⁹ instructions of a `pending`). The default store, JSONL,
 * keeps the command's name alone. Only a name the CLI knows counts: anything else is the command's.
 */
export const cacheNameOf = (argv: ReadonlyArray<string>): string => {
  const first = argv[2]
  const command = first !== undefined && /^[a-z][a-z-]{0,31}$/.test(first) ? first : "other"
  let store: string | undefined
  for (let i = 3; i < argv.length; i++) {
    const arg = argv[i]!
    if (arg === "--") break
    if (arg === "--store") store = argv[i + 1]
    else if (arg.startsWith("--store=")) store = arg.slice("--store=".length)
  }
  return store === "sqlite" || store === "postgres" ? `${command}-${store}` : command
}

/** Caches of other bundles (an older install) and temporary files left by a killed process, a day untouched, are removed. */
const staleAfterMs = 24 * 60 * 60 * 1000

/** Writes `data` to `file` through a temporary file and a rename, then prunes. A failure is silent: this is a cache. */
const save = (folder: string, file: string, bundleHash: string, data: Buffer) => {
  // Through a random name created exclusively (ReplaceFile): `<file>.<pid>.tmp` could be planted as
  // a link in advance (EFFECT_AGENT_CODE_CACHE_DIR may name any folder), and a "w" open wrote through it.
  try {
    replaceFile(file, data)
  } catch {
    return
  }
  try {
    const now = Date.now()
    for (const name of readdirSync(folder)) {
      if (!name.endsWith(".tmp") && (!name.endsWith(".v8") || name.startsWith(bundleHash))) continue
      const path = join(folder, name)
      if (now - statSync(path).mtimeMs > staleAfterMs) rmSync(path, { force: true })
    }
  } catch {
    // Pruning is housekeeping: another process may have removed the same file.
  }
}

/**
 * Runs `make` once: when the process exits, or at the end of its first full GC if one comes first.
 *
 * V8 drops the bytecode of a function that has not run for a few full GCs (`--bytecode-old-age`, 5),
 * and `createCachedData()` holds only the functions that still have theirs. A start's code runs once,
 * at the start: a long first run of a command (a turn, a listing that builds the index) would leave
 * a cache without it, the program's top level included, which every later start of that command
 * would compile again — a warm `sessions` over 10,000 JSONL sessions ran 2.10·10⁹ instructions with
 * the cache its cold first run left, 1.60·10⁹ with one made by a warm run (docs/benchmarks.md). No
 * bytecode is old at the first full GC, so the cache taken then holds the whole start; what the run
 * compiles after it is compiled again by later runs, which is the command's own work, not its start.
 */
export const makeCacheOnce = (make: () => void) => {
  let made = false
  const once = () => {
    if (made) return
    made = true
    observer.disconnect()
    make()
  }
  const observer = new PerformanceObserver((list) => {
    const major = (entry: object) => (entry as { readonly detail?: { readonly kind?: number } }).detail?.kind === performanceConstants.NODE_PERFORMANCE_GC_MAJOR
    if (list.getEntries().some(major)) once()
  })
  observer.observe({ entryTypes: ["gc"] })
  process.once("exit", once)
}

/**
 * Starts the program from its CommonJS bundle with the compile cache, and answers true; or answers
 * false when the caller must import the ES program itself (the cache then being Node's own, or none).
 */
export const start = (options: { readonly bundle: string; readonly env?: NodeJS.ProcessEnv; readonly argv?: ReadonlyArray<string> }): boolean => {
  const env = options.env ?? process.env
  if (env.EFFECT_AGENT_NO_CODE_CACHE === "1" || env.EFFECT_AGENT_DEBUG === "1") return false
  const relative = relativeChoice(env)
  if (relative !== undefined) {
    process.stderr.write(
      `effect-agent: EFFECT_AGENT_CODE_CACHE_DIR=${JSON.stringify(relative)} is not an absolute path, so it is ignored (a relative one would name a folder in each project you run in)\n`
    )
  }
  const enableCompileCache = (NodeModule as { enableCompileCache?: (dir?: string) => unknown }).enableCompileCache
  if (typeof enableCompileCache === "function") {
    const nodeFolder = usableFolder(join(folder(env), "node"))
    if (nodeFolder !== undefined) enableCompileCache(nodeFolder)
    return false
  }
  const bundleHash = typeof EFFECT_AGENT_CLI_BUNDLE_HASH === "string" ? EFFECT_AGENT_CLI_BUNDLE_HASH : undefined
  // No folder to keep a cache in: the ES chunks start faster than the bundle compiled whole.
  const cacheFolder = bundleHash === undefined ? undefined : usableFolder(folder(env))
  if (bundleHash === undefined || cacheFolder === undefined) return false
  const key = `${process.version}-${process.arch}-${shortHash([...process.execArgv, env.NODE_OPTIONS ?? ""].join("\0"))}`
  const file = join(cacheFolder, `${bundleHash}-${key}-${cacheNameOf(options.argv ?? process.argv)}.v8`)
  // None yet (or not this user's alone): this run makes it.
  const cachedData = readOwnCache(file)
  let source: string
  try {
    source = bundleSource(readFileSync(options.bundle))
  } catch {
    return false
  }
  // CommonJS's own wrapper (`Module.wrap`, which the ES namespace of node:module does not export).
  const wrapped = `(function (exports, require, module, __filename, __dirname) { ${source}\n});`
  // The bundle has no `import()`: what it loads from outside is `require`d (see scripts/bundle-cli.mjs).
  const script = new vm.Script(wrapped, { filename: options.bundle, cachedData })
  if (cachedData === undefined || script.cachedDataRejected === true) makeCacheOnce(() => save(cacheFolder, file, bundleHash, script.createCachedData()))
  const module = { exports: {} }
  const run = script.runInThisContext() as (exports: object, require: NodeJS.Require, module: object, filename: string, dirname: string) => void
  // No stack traces while the program's top level runs: effect's Utils module reads a
  // `new Error().stack` as it loads (to see whether a minifier removed its call wrapper), and V8,
  // to number that stack's lines, scans the whole 2.9 MB bundle for line ends (0.033·10⁹
  // instructions, 2% of a listing). Without frames the check answers "removed" and effect wraps its
  // calls in a `try`, which behaves the same. Stacks are never shown here (`EFFECT_AGENT_DEBUG=1`,
  // which shows them, runs the ES chunks); the limit is back before anything asynchronous runs.
  const stackTraceLimit = Error.stackTraceLimit
  Error.stackTraceLimit = 0
  try {
    run.call(module.exports, module.exports, NodeModule.createRequire(options.bundle), module, options.bundle, dirname(options.bundle))
  } finally {
    Error.stackTraceLimit = stackTraceLimit
  }
  return true
}
