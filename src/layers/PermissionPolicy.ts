/**
 * The rule-based permission engine: ordered rules, then a mode.
 *
 * 1. Rules that match a call are collected; any `deny` among them wins. Otherwise the first matching
 *    rule decides (a rule is how a shell command with pipes or chaining gets allowed at all).
 *    A command pattern matches token by token (see `CommandPattern`): its wildcards never match
 *    shell syntax, so `cat *` never allows `cat a; touch x`. An allow rule also covers a command's
 *    hazards only if its own pattern spells them out (`rm *` does not allow `rm -rf /`), and its
 *    wildcards never stand for a way to run another program (`*` does not allow `bash -c …`, `git *`
 *    does not allow `git -c …`: see `CommandRisk`); a deny or ask rule matches more widely: the whole
 *    line, any one of its commands (its program named by a path or after a wrapper, a shell's `-c`
 *    script: see `CommandPattern.matchesAnywhere`), or the raw text.
 *    A path pattern matches the path the call resolves to (after `..` and links), relative to the
 *    real cwd — or, for a pattern starting with `/`, the absolute real path — never the string the
 *    model wrote; deny and ask rules match that string too, so a link never hides a fenced-off path.
 * 2. A command with hazards (chaining, pipes, redirection, substitution, `sudo`, recursive `rm`) is
 *    denied unless a rule allowed it — in every mode.
 * 3. A path outside the session's cwd asks (in `readOnly`, a write there is denied; `bypass` allows),
 *    and so does a write into a protected folder (`.git/`, `.effect-agent/`, `.husky/`, `protectedPaths`,
 *    and what the workspace marked `runsLater`: the home folder's start-up files when cwd holds it,
 *    git's hooks folder), and a git whose repository's own config or hooks name a program it may run
 *    (`CommandAccess.repositoryRuns`: `core.fsmonitor`, a diff driver's `textconv`, …), and a Python
 *    that would import a repository's `json.py` as the standard `json` (`shadowedModules`) — whatever an
 *    allow rule says.
 * 4. The user's "always" decisions apply to later calls of the same scope (for `shell`, the same
 *    program at the same risk, `shell:git:read`, or only the exact command line when the invocation
 *    could run something else; see `CommandRisk`).
 * 5. The mode decides the rest: `default` allows reads inside cwd and asks for writes and commands;
 *    `acceptEdits` also allows edits; `readOnly` allows reads, asks for read-only commands, denies
 *    the rest; `bypass` allows everything.
 *
 * @since 0.1.0
 */
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { Decision } from "../domain/AgentEvent.js"
import * as Plural from "../domain/Plural.js"
import type { OpenToolCall, SessionState } from "../domain/SessionState.js"
import { type PermissionDecision, PermissionEngine, type PermissionRequest } from "../services/PermissionEngine.js"
import type { CommandAccess, PathAccess, PathFence, PreparedCall, ShadowKind, ToolRouter } from "../services/ToolRouter.js"
import * as CommandLine from "./workspace/CommandLine.js"
import * as CommandPattern from "./workspace/CommandPattern.js"
import * as CommandRisk from "./workspace/CommandRisk.js"
import * as Glob from "./workspace/Glob.js"
import * as PythonShadows from "./workspace/PythonShadows.js"
import * as RunsLater from "./workspace/RunsLater.js"

/** How permissive the policy is where no rule matched. */
export const Mode = Schema.Literal("default", "acceptEdits", "readOnly", "bypass")
/** How permissive the policy is where no rule matched. */
export type Mode = typeof Mode.Type

/**
 * A rule. Every field given must match: `tool` (a name, or `*`), `path` (a glob against the resolved
 * path relative to the real cwd, or against the absolute real path when it starts with `/`; `*`
 * stays within a folder, `**` crosses them) and
 * `command` (a pattern against the whole command line: `*` matches words and arguments, never
 * shell syntax or a newline, which must be spelled out, e.g. `npm test | tee log.txt`). `name` is
 * recorded as the event's `policy`.
 */
export const Rule = Schema.Struct({
  name: Schema.String,
  decision: Decision,
  tool: Schema.optional(Schema.String),
  path: Schema.optional(Schema.String),
  command: Schema.optional(Schema.String),
  /**
   * For an MCP tool's rule: it names the tools of a trusted project's server (its `.mcp.json`'s), not
   * of yours. A rule naming MCP tools covers only servers of its own origin: your `mcp__github__*`
   * never allows a project's server that is also named `github`.
   */
  projectServer: Schema.optional(Schema.Literal(true))
})
/** A rule. */
export type Rule = typeof Rule.Type

/** Options of the policy. */
export interface Options {
  readonly mode?: Mode | undefined
  readonly rules?: ReadonlyArray<Rule> | undefined
  /**
   * Absolute real paths whose files decide what later runs do, besides every `.git/` and
   * `.effect-agent/` folder: a write inside one asks as those do (e.g. the user's config folder,
   * where trusted settings are recorded).
   */
  readonly protectedPaths?: ReadonlyArray<string> | undefined
  /**
   * The home folder a rule's leading `~` names (default `HOME`, else the system's): `~/.ssh/**` is
   * that folder's `.ssh`, matched as it is named and as its real path.
   */
  readonly home?: string | undefined
}

/**
 * A path rule's glob (`Glob`: linear, whatever the rule and the path): a double star crosses `/`
 * (and with the slash after it may match nothing), `*` and `?` do not when `separator`.
 */
const pathGlob = (glob: string, separator: boolean): Glob.Glob => {
  const units: Array<Glob.Unit> = []
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!
    if (c === "*" && glob[i + 1] === "*") {
      units.push({ k: "star", crosses: true })
      i++
      if (glob[i + 1] === "/") i++
    } else if (c === "*") units.push({ k: "star", crosses: !separator })
    else if (c === "?") units.push({ k: "one", crosses: !separator })
    else units.push({ k: "lit", c })
  }
  return Glob.compile(units)
}

const relativeTo = (cwd: string, path: string) =>
  path === cwd ? "." : path.startsWith(cwd.endsWith("/") ? cwd : cwd + "/") ? path.slice(cwd.length + (cwd.endsWith("/") ? 0 : 1)) : path

/** A path's place relative to the real cwd, when it is inside it (what relative patterns match). */
const relativeOf = (cwd: string, p: PathAccess): string | undefined =>
  !p.insideCwd ? undefined : p.relative ?? relativeTo(cwd, p.resolved)

/** The path as the call wrote it, without `.` segments and with `..` applied to the words (not the links) before it. */
const asWritten = (requested: string): string => {
  const out: Array<string> = []
  for (const segment of requested.split(/\/+/)) {
    if (segment === "" || segment === ".") continue
    if (segment === ".." && out.length > 0 && out.at(-1) !== "..") out.pop()
    else out.push(segment)
  }
  return `${requested.startsWith("/") ? "/" : ""}${out.join("/")}` || "."
}

/** A path rule's pattern, compiled: what a call's paths are matched against. */
interface PathPattern {
  /** Matched against the absolute real path (the pattern starts with `/`), else against the path relative to the real cwd. */
  readonly absolute: boolean
  readonly glob: Glob.Glob
  /** A deny or ask `X/**` fences the folder `X` itself: reading it (`grep -r x X`, `ls X`) reads under it. */
  readonly folder: Glob.Glob | undefined
}

/** A rule with its path's patterns compiled (`checkedRules`); a rule without them matches no path. */
type Checked = Rule & { readonly patterns?: ReadonlyArray<PathPattern> | undefined }

// Most paths are ASCII, which NFC leaves as they are: normalizing them took ten times the lower-casing.
const nonAscii = /[^\u0000-\u007f]/

/**
 * A path as a deny or ask rule reads it: in lower case and NFC, as the rule's pattern. macOS's and
 * Windows' file systems ignore case (and macOS composed or decomposed accents), and a path keeps its
 * case as written (`.ENV` opens `.env`), so a careful rule folds, as a careful command rule folds a
 * line's words (`matchesFolded`): on a case-sensitive disk it may match more than it names, never less.
 */
const folded = (path: string): string => (nonAscii.test(path) ? path.normalize("NFC") : path).toLowerCase()

/** Whether a rule is careful (deny, ask): it matches more widely than an allow, never less. */
const isCareful = (rule: Rule) => rule.decision !== "allow"

/**
 * The path texts a rule's `path` stands for: a leading `~` is the user's home (as `HOME` names it
 * and as its real path, which calls resolve to), not a folder named `~` in cwd — a deny of
 * `~/.ssh/**` matched only that text, so `/root/.ssh/id_rsa` passed it. A deny or ask also keeps the
 * text as written (a folder `~` in cwd, a word `~/x` a command was given).
 */
const pathTexts = (rule: Rule, home: Home): ReadonlyArray<string> => {
  const path = rule.path!
  const named = home === undefined || !namesHome(rule) ? [path] : (() => {
    const rest = path.slice(1)
    const homes = [...new Set(home)].map((h) => (rest === "" ? h : `${h.endsWith("/") ? h.slice(0, -1) : h}${rest}`))
    return isCareful(rule) ? [path, ...homes] : homes
  })()
  if (!isCareful(rule)) return [...new Set(named.map((text) => spelled(text, false)))]
  // A deny or ask also stands for its words with `..` read away (`src/../.env` is `.env` as a call
  // would write it), and for the real path of the folders it names (as `~` is): a rule written
  // through a link (`/home/u/p/.env`, `/home` → `/usr/home`) fences the real file calls resolve to.
  const texts = named.flatMap((text) => [text, spelled(text, true)])
  return [...new Set([...texts, ...texts.map(realFolders)])]
}

/**
 * A rule's path as a path's text is compared with it: without its `.` segments and repeated
 * slashes (`./src/**` and `src//**` are `src/**`, as calls' paths are read); with `lexical`, also
 * with each `..` taking away the literal word before it.
 */
const spelled = (text: string, lexical: boolean): string => {
  const out: Array<string> = []
  for (const segment of text.split(/\/+/)) {
    if (segment === "" || segment === ".") continue
    if (lexical && segment === ".." && out.length > 0 && out.at(-1) !== ".." && !/[*?]/.test(out.at(-1)!)) out.pop()
    else out.push(segment)
  }
  const joined = out.join("/")
  return text.startsWith("/") ? `/${joined}` : joined === "" ? "." : joined
}

/**
 * An absolute rule's text with the folders before its first wildcard replaced by their real path
 * (the file system's answer now, read once per rule); the text itself when there is none other.
 */
const realFolders = (text: string): string => {
  if (!text.startsWith("/")) return text
  const wild = text.search(/[*?]/)
  const fixed = wild === -1 ? text : text.slice(0, wild)
  const folder = fixed.slice(0, Math.max(1, fixed.lastIndexOf("/")))
  if (folder === "/") return text
  try {
    const real = NodeFs.realpathSync(folder)
    return real === folder ? text : `${real === "/" ? "" : real}${text.slice(folder.length)}`
  } catch {
    return text
  }
}

/** The user's home as `HOME` names it and as its real path; `undefined` when none is known (or it is not absolute). */
type Home = ReadonlyArray<string> | undefined

/** Each home named, with its real path: read once (one per process, unless options name others). */
const homes = new Map<string, ReadonlyArray<string>>()

/** The home a rule's `~` names: the options', else `HOME`, else the system's. The same array for the same home. */
const homeOf = (options: Options): Home => {
  const home = options.home ?? process.env.HOME ?? NodeOs.homedir()
  if (!NodePath.isAbsolute(home)) return undefined
  let known = homes.get(home)
  if (known === undefined) {
    let real = home
    try {
      real = NodeFs.realpathSync(home)
    } catch {
      // A home that does not exist: as named.
    }
    known = [home, real]
    if (homes.size > 16) homes.clear()
    homes.set(home, known)
  }
  return known
}

const namesHome = (rule: Rule) => rule.path !== undefined && (rule.path === "~" || rule.path.startsWith("~/"))

/** A rule with its path's patterns, and the home they were made for. */
type CheckedFor = Checked & { readonly home: Home }

/**
 * Each rule checked once: its patterns compiled for its fields and home as they were. A decision is
 * taken for every call, and a rule object changed in place is checked again (its copy's fields differ).
 */
const checked = new WeakMap<Rule, CheckedFor>()

const checkedRule = (rule: Rule, home: Home): Checked => {
  if (rule.path === undefined) return rule
  const known = checked.get(rule)
  if (
    known !== undefined && known.home === home && known.path === rule.path && known.decision === rule.decision &&
    known.name === rule.name && known.tool === rule.tool && known.command === rule.command
  ) return known
  const careful = isCareful(rule)
  const patterns = pathTexts(rule, home).map((text): PathPattern => {
    const seen = careful ? folded(text) : text
    return {
      absolute: seen.startsWith("/"),
      glob: pathGlob(seen, true),
      folder: careful && seen.endsWith("/**") && seen.length > 3 ? pathGlob(seen.slice(0, -3), true) : undefined
    }
  })
  const made: CheckedFor = { ...rule, patterns, home }
  checked.set(rule, made)
  return made
}

/** The options' rules with their path patterns; the home is looked up only when a rule names it. */
const checkedRules = (options: Options): ReadonlyArray<Checked> => {
  const rules = options.rules ?? []
  const home = rules.some(namesHome) ? homeOf(options) : undefined
  return rules.map((rule) => checkedRule(rule, home))
}

/**
 * A path of a call as a careful rule reads it (`folded`), by every name it has: absolute (its real
 * path, and as written made absolute against the cwd as named) and relative to the cwd (its real
 * path relative to the real cwd — `../secrets/key` when outside it —, and as written made relative
 * to the cwd as named), each also as the call wrote it. A deny of `../secrets/**` so fences
 * `/p/secrets/key`, and a deny of `/p/ws/.env` fences `.env`.
 */
interface FoldedPath {
  readonly cwd: string
  readonly absolutes: ReadonlyArray<string>
  readonly relatives: ReadonlyArray<string>
}

/** Each path folded once per cwd: a decision reads it against every rule. */
const foldedPaths = new WeakMap<PathAccess, FoldedPath>()

const foldedOf = (p: PathAccess, cwd: string): FoldedPath => {
  const known = foldedPaths.get(p)
  if (known !== undefined && known.cwd === cwd) return known
  const seen = foldPath(p, cwd)
  foldedPaths.set(p, seen)
  return seen
}

const foldPath = (p: PathAccess, cwd: string): FoldedPath => {
  const written = asWritten(p.requested)
  const absolute = written.startsWith("/")
  const writtenAbsolute = absolute ? written : asWritten(`${cwd}/${written}`)
  const writtenRelative = absolute ? NodePath.posix.relative(cwd, written) || "." : written
  const unique = (texts: ReadonlyArray<string>) => [...new Set(texts.map(folded))]
  return {
    cwd,
    absolutes: unique([p.resolved, written, writtenAbsolute]),
    relatives: unique([relativeAnywhere(cwd, p), written, writtenRelative])
  }
}

/** The real path relative to the real cwd, inside it or not (`../x`). */
const relativeAnywhere = (cwd: string, p: PathAccess): string =>
  relativeOf(cwd, p) ?? (NodePath.posix.relative(realCwdOf(cwd), p.resolved) || ".")

/** Each cwd's real path, read once (a policy sees one cwd per session). */
const realCwds = new Map<string, string>()

const realCwdOf = (cwd: string): string => {
  let real = realCwds.get(cwd)
  if (real === undefined) {
    try {
      real = NodeFs.realpathSync(cwd)
    } catch {
      real = cwd
    }
    if (realCwds.size > 64) realCwds.clear()
    realCwds.set(cwd, real)
  }
  return real
}

const patternMatches = (pattern: PathPattern, path: string | undefined): boolean =>
  path !== undefined && (pattern.glob.test(path) || pattern.folder?.test(path) === true)

/** Whether a careful rule matches a path by any of its names. */
const foldedMatches = (rule: Checked, seen: FoldedPath): boolean =>
  (rule.patterns ?? []).some((pattern) => (pattern.absolute ? seen.absolutes : seen.relatives).some((text) => patternMatches(pattern, text)))

/**
 * Whether a rule's path matches one path of a call: the resolved path only, for an allow; for a
 * deny or an ask (the careful decisions) the path by every name it has, with case folded.
 */
const pathMatches = (rule: Checked, p: PathAccess, cwd: string): boolean => {
  if (isCareful(rule)) return foldedMatches(rule, foldedOf(p, cwd))
  const relative = relativeOf(cwd, p)
  return (rule.patterns ?? []).some((pattern) => patternMatches(pattern, pattern.absolute ? p.resolved : relative))
}

/**
 * The folder a call walks (`grep -r x W`, `find W`, the `grep` tool) under which a deny or ask path
 * rule may match, if any: a rule that fences `W/secret` concerns a read of the whole tree `W`. A
 * relative rule concerns a walk of cwd or of a folder above it, and of any folder its pattern may
 * reach below by that folder's name relative to cwd: one inside it (`src` for a rule on
 * `src/secret`), or one outside it read as `../…` (a rule starting with `**` reaches below every
 * folder: `grep -r x /usr/include` asks). An absolute rule concerns a walk of any folder a match may
 * lie under.
 */
const walkInto = (rule: Checked, p: PathAccess, cwd: string, fenced: boolean): string | undefined => {
  // A tool's own walk leaves out what the rules fence (see `fence`), when the engine running it applies
  // the fence (`PermissionRequest.fenced`): it need not ask.
  if (p.walked !== true || (p.leavesOut === true && fenced)) return undefined
  const under = (folder: string) => folder === "/" ? "/" : `${folder}/`
  const seen = foldedOf(p, cwd)
  const reaches = (rule.patterns ?? []).some((pattern) => {
    if (pattern.absolute) return seen.absolutes.some((folder) => pattern.glob.opens(under(folder)))
    // A walk of a folder above the cwd reaches every relative path under the cwd.
    return cwd.startsWith(under(p.resolved)) || seen.relatives.some((folder) => pattern.glob.opens(folder === "." ? "" : under(folder)))
  })
  return reaches ? p.requested : undefined
}

/** The first deny or ask path rule a walk of the call may reach below the folder it names, with that folder. */
const walkedInto = (
  rules: ReadonlyArray<Checked>,
  call: PreparedCall,
  line: Line | undefined,
  cwd: string,
  fenced: boolean
): { readonly rule: Checked; readonly folder: string } | undefined => {
  if (!call.paths.some((p) => p.walked === true)) return undefined
  for (const rule of rules) {
    if (rule.decision === "allow" || rule.path === undefined) continue
    const folder = call.paths.map((p) => walkInto(rule, p, cwd, fenced)).find((f) => f !== undefined)
    // The rule's tool and command must match as well (only its path is read differently), read
    // within the decision's bound like every careful match: a line too large to read reaches.
    if (folder !== undefined && commandCovers(rule, call, line, cwd, commandShare(rules))) return { rule, folder }
  }
  return undefined
}

/** Whether a rule's tool and command (not its path) match the call; a line too large to read counts as matched. */
const commandCovers = (rule: Checked, call: PreparedCall, line: Line | undefined, cwd: string, commands: number): boolean => {
  try {
    return matches({ ...rule, path: undefined }, call, line, cwd, false, CommandPattern.budget(CommandPattern.readingLimit, commands))
  } catch (error) {
    if (!(error instanceof CommandPattern.TooMuchToRead)) throw error
    return true
  }
}

/** A leading `NAME=value` word: through a shell it sets the environment of the program after it. */
const isAssignment = (word: string) => /^[A-Za-z_][A-Za-z0-9_]*=/.test(word)

/**
 * Whether an allow rule's wildcards stood for a way to run another program: a command the pattern
 * left to a wildcard that could run something other than what it names (an interpreter, a wrapper,
 * `git -c`, `npm exec`, `find -exec` …, see `CommandRisk`), or one behind a variable assignment.
 */
const wildcardRunsAnother = (pattern: string, command: string, line: CommandLine.Tokenized): boolean =>
  CommandPattern.wildcardCommands(pattern, command, line).some((argv) => isAssignment(argv[0]!) || !CommandRisk.classify(argv).general)

/** Whether a rule names MCP tools (`mcp__github__get_issue`, `mcp__github__*`): a server's name, which a project's server may share. */
const namesMcpTool = (rule: Rule) => rule.tool !== undefined && rule.tool.startsWith("mcp__")

/** `mcp__<server>__*` names every tool of that MCP server. */
const serverWide = (pattern: string, tool: string): boolean =>
  pattern.startsWith("mcp__") && pattern.endsWith("__*") && tool.startsWith(pattern.slice(0, -1))

/**
 * A call's command line as the policy reads it: split once per decision, however many rules are
 * checked against it (51 rules on a 128 KiB line the model wrote took 27 s when each split it again).
 */
interface Line {
  readonly tokenized: CommandLine.Tokenized
  readonly parsed: CommandLine.Parsed
  /** The line in lower case, when it is not already (see `matchesFolded`), tokenized once for every careful rule. */
  readonly folded?: { readonly text: string; readonly tokenized: CommandLine.Tokenized } | undefined
}

const lineOf = (call: PreparedCall): Line | undefined => {
  if (call.command === undefined) return undefined
  const tokenized = CommandLine.tokenize(call.command.text)
  const lower = foldedWords(call.command.text)
  return {
    tokenized,
    parsed: CommandLine.parseTokenized(call.command.text, tokenized),
    ...(lower === call.command.text ? {} : { folded: { text: lower, tokenized: CommandLine.tokenize(lower) } })
  }
}

/**
 * A line or pattern with its words in lower case but its options as written: a program's options are
 * its own and case tells them apart (`make -C dir` names a folder, `make -c` is no option; `git -C`
 * takes one, `git -c` a setting), so folding them would read another line than the one that runs.
 */
const foldedWords = (text: string): string => text.replace(/(?<=^|\s)[^\s-]\S*/g, (word) => word.toLowerCase())

/**
 * Whether a deny or ask rule matches the line with both's words in lower case: where the file system
 * ignores case (macOS's, Windows'), `GIT push` and `/USR/BIN/Git push` run git push, which a deny of
 * `git push*` is for. A careful rule may so match more than it names (`ls FOO` for a deny of `ls
 * foo`), never less.
 */
const matchesFolded = (pattern: string, line: Line, reading?: CommandPattern.Budget): boolean =>
  line.folded !== undefined && CommandPattern.matchesAnywhere(foldedWords(pattern), line.folded.text, line.folded.tokenized, 0, reading)

/**
 * Whether `rule` matches the call. `evenIfWildcardRunsAnother` skips the one check that refuses an
 * allow whose wildcard stood for a way to run another program: what `uncoveredBy` asks to explain an ask.
 */
const matches = (
  rule: Checked,
  call: PreparedCall,
  line: Line | undefined,
  cwd: string,
  evenIfWildcardRunsAnother = false,
  reading?: CommandPattern.Budget
): boolean => {
  if (rule.tool !== undefined && rule.tool !== "*" && rule.tool !== call.tool && !serverWide(rule.tool, call.tool)) return false
  // An allow naming an MCP server is for servers of its origin: yours, or with `projectServer` a trusted project's (`PreparedCall.projectServer`).
  if (rule.decision === "allow" && namesMcpTool(rule) && (call.projectServer === true) !== (rule.projectServer === true)) return false
  if (rule.path !== undefined) {
    const matching = (p: PathAccess) => pathMatches(rule, p, cwd)
    // An allow covers every path of the call; a deny or ask any one of them.
    const matched = rule.decision === "allow" ? call.paths.length > 0 && call.paths.every(matching) : call.paths.some(matching)
    if (!matched) return false
  }
  if (rule.command !== undefined) {
    if (call.command === undefined || line === undefined) return false
    // A deny or an ask (the careful decisions) sees every command the line may run; an allow the line as written.
    const matched = rule.decision !== "allow"
      ? CommandPattern.matchesAnywhere(rule.command, call.command.text, line.tokenized, 0, reading) || matchesFolded(rule.command, line, reading)
      : CommandPattern.matches(rule.command, call.command.text, line.tokenized)
    if (!matched) return false
    if (rule.decision === "allow" && !evenIfWildcardRunsAnother && wildcardRunsAnother(rule.command, call.command.text, line.tokenized)) return false
  }
  // An allow rule must spell out every hazard of the command itself: a wildcard never stands for one.
  if (rule.decision === "allow" && call.command !== undefined) {
    const spelled = CommandPattern.hazardsOf(rule.command)
    if (hazardsOf(call, line).some((h) => !spelled.has(h))) return false
  }
  return true
}

/** The command's hazards, as the router found them and as the policy reads the text itself. */
const hazardsOf = (call: PreparedCall, line: Line | undefined): ReadonlyArray<string> =>
  call.command === undefined || line === undefined ? [] : [...new Set([...call.command.hazards, ...line.parsed.hazards])]

const modeDecision = (mode: Mode, call: PreparedCall): PermissionDecision => {
  const isCommand = call.command !== undefined
  switch (mode) {
    case "bypass":
      return { decision: "allow", policy: "bypass" }
    case "readOnly":
      if (!isCommand && call.risk === "read") return { decision: "allow", policy: "read-only/read" }
      if (isCommand && call.risk === "read") return { decision: "ask", policy: "read-only/command" }
      return { decision: "deny", policy: "read-only/no-writes", reason: "the session is read-only" }
    case "acceptEdits":
      if (!isCommand && (call.risk === "read" || call.risk === "write")) return { decision: "allow", policy: "accept-edits/edit" }
      return { decision: "ask", policy: isCommand ? "accept-edits/command" : "accept-edits/ask" }
    case "default":
      if (!isCommand && call.risk === "read") return { decision: "allow", policy: "default/read" }
      return { decision: "ask", policy: isCommand ? "default/command" : "default/write" }
  }
}

/** The command named in a reason, cut: the question shows the whole line already. */
const shortened = (text: string) => (text.length > 80 ? `${text.slice(0, 79)}…` : text)

/**
 * Why the mode asks about a command an allow rule seemed to cover: the first allow rule that matched
 * it but for a wildcard standing for an invocation that could write or run another program (`sed *`
 * and `sed -i …`), and the command line itself as the pattern that would allow it — checked, so a
 * line whose own words read as wildcards or hazards is never suggested. Only computed for an ask:
 * the user answering it is who needs to know what their rule did not cover, and what to write.
 */
const uncoveredBy = (rules: ReadonlyArray<Checked>, call: PreparedCall, line: Line | undefined, cwd: string): Pick<PermissionDecision, "reason" | "allowCommand"> => {
  if (call.projectServer === true) {
    const yours = rules.find((r) => r.decision === "allow" && namesMcpTool(r) && r.projectServer !== true && matches(r, { ...call, projectServer: undefined }, line, cwd, true))
    if (yours !== undefined) {
      return {
        reason: `your rule ${yours.name} is for your own MCP servers; this server is the project's (its .mcp.json), which only shares the name ` +
          `(a rule with "projectServer": true allows a trusted project's server)`
      }
    }
  }
  if (call.command === undefined || line === undefined) return {}
  const rule = rules.find((r) => r.decision === "allow" && r.command !== undefined && matches(r, call, line, cwd, true))
  if (rule === undefined) return {}
  const refused = CommandPattern.wildcardCommands(rule.command!, call.command.text, line.tokenized)
    .find((argv) => isAssignment(argv[0]!) || !CommandRisk.classify(argv).general)
  const exact: Rule = { name: "suggested", decision: "allow", tool: call.tool, command: call.command.text }
  return {
    reason: `your rule ${rule.name} does not cover it: a rule's wildcard never stands for a command that could write or run ` +
      `another program, or whose options are not all known reads${refused === undefined ? "" : ` (here ${shortened(refused.join(" "))})`}`,
    ...(matches(exact, call, line, cwd) ? { allowCommand: call.command.text } : {})
  }
}

const isInsideOf = (parent: string, path: string) => path === parent || path.startsWith(parent.endsWith("/") ? parent : `${parent}/`)

const isProtected = (cwd: string, p: PathAccess, protectedPaths: ReadonlyArray<string>) =>
  [relativeTo(cwd, p.resolved), p.relative ?? "", p.requested].some(RunsLater.inProtectedFolder) ||
  protectedPaths.some((parent) => isInsideOf(parent, p.resolved)) || p.runsLater !== undefined

/**
 * What stands whatever an allow rule says: a path outside cwd asks (a write there is denied in
 * `readOnly`), and so does a write where files steer later runs — git's config and hooks, the
 * agent's own settings and logs — in every mode that asks; "always" never covers either (it covers a
 * Python line's files when it named them: `shadowsRemembered`). Only
 * `bypass`, which the user chose, passes them.
 */
const guard = (mode: Mode, call: PreparedCall, cwd: string, protectedPaths: ReadonlyArray<string>, shadowsRemembered: boolean): PermissionDecision | undefined => {
  const outside = call.paths.filter((p) => !p.insideCwd)
  if (outside.length > 0) {
    if (mode === "bypass") return { decision: "allow", policy: "bypass" }
    if (mode === "readOnly" && outside.some((p) => p.access === "write")) {
      return { decision: "deny", policy: "read-only/no-writes", reason: "the session is read-only" }
    }
    return { decision: "ask", policy: "outside-cwd" }
  }
  if (call.paths.some((p) => p.access === "write" && isProtected(cwd, p, protectedPaths))) {
    if (mode === "bypass") return { decision: "allow", policy: "bypass" }
    if (mode === "readOnly") return { decision: "deny", policy: "read-only/no-writes", reason: "the session is read-only" }
    return { decision: "ask", policy: "protected-path" }
  }
  const repositoryRuns = call.command?.repositoryRuns ?? []
  if (repositoryRuns.length > 0) {
    if (mode === "bypass") return { decision: "allow", policy: "bypass" }
    return { decision: "ask", policy: "repository-git", reason: repositoryGitReason(repositoryRuns) }
  }
  const shadowed = call.command?.shadowedModules ?? []
  if (shadowed.length > 0 && !shadowsRemembered) {
    if (mode === "bypass") return { decision: "allow", policy: "bypass" }
    return { decision: "ask", policy: "repository-python", reason: shadowedReason(shadowed, call.command?.shadowKinds) }
  }
  return undefined
}

/** Why a git line asks whatever a rule says: the settings and hooks named, never their values (the repository's text), or the notes on what could not be read (an index too large, a git whose folder only its run tells). */
const repositoryGitReason = (runs: ReadonlyArray<string>): string =>
  `the repository's own git config or hooks name programs this git may run, or what they name cannot be read before it runs ` +
  `(${runs.slice(0, 6).join(", ")}${runs.length > 6 ? ", …" : ""}); a rule for git does not cover them`

/** What each kind of file a line would load from the repository stands in for (`PythonShadows.ShadowKind`). */
const shadowReasons: Readonly<Record<ShadowKind, string>> = {
  python: "be imported in place of Python's standard modules or tools",
  perl: "be loaded in place of Perl's own modules (PERL5LIB, PERLLIB, PERL5OPT's -I)",
  program: "run in place of the system's programs (a PATH or GIT_EXEC_PATH entry naming a folder of the repository)",
  library: "be loaded in place of the system's shared libraries (LD_LIBRARY_PATH, GCONV_PATH)",
  pythonLib: "be a Python's own standard library or start-up code (PYTHONHOME, PYTHONUSERBASE, a HOME's .local user site)",
  processor: "be annotation processors javac runs (its class path's META-INF/services)",
  jvm: "be options Maven's launcher gives the JVM it starts, `mvn -v` too (a project's .mvn/jvm.config naming an agent, a class path, …)",
  unknown: "come from folders the check cannot read before the line runs"
}

/**
 * Why a line asks whatever a rule says: the repository's files it would load in place of what the system has (named;
 * their content never shown), with each kind's own reason (round 29), in the order of `shadowReasons`.
 */
const shadowedReason = (files: ReadonlyArray<string>, kinds: CommandAccess["shadowKinds"] = ["python"]): string =>
  `files of the repository would ${Object.entries(shadowReasons).filter(([kind]) => kinds.some((k) => k === kind)).map(([, why]) => why).join(", or ")} ` +
  `(${files.slice(0, 6).join(", ")}${files.length > 6 ? ", …" : ""}); a rule for this line does not cover them`

/**
 * Whether an ask rule matched only one command of a line (or what runs under its program) while
 * the line holds shell syntax the rule does not spell out: such a line stays denied by the hazard
 * check, as it was when an ask rule matched the line as written only.
 */
const askPassesSyntax = (rule: Rule, call: PreparedCall, line: Line | undefined): boolean => {
  if (rule.decision !== "ask" || rule.command === undefined || call.command === undefined || line === undefined) return false
  if (CommandPattern.matches(rule.command, call.command.text, line.tokenized)) return false
  const spelled = CommandPattern.hazardsOf(rule.command)
  return hazardsOf(call, line).some((h) => !spelled.has(h))
}

/** The deny and ask rules with a command: those the careful matcher reads a line for. */
const carefulRules = (rules: ReadonlyArray<Rule>) => rules.filter((rule) => rule.decision !== "allow" && rule.command !== undefined).length

/** Each careful rule's share of the line's own simple commands one decision reads (`CommandPattern.commandsLimit`). */
const commandShare = (rules: ReadonlyArray<Rule>) => Math.max(1, Math.floor(CommandPattern.commandsLimit / Math.max(1, carefulRules(rules))))

/**
 * The rules that match the call, in their order; `undefined` when the line runs more commands than
 * the careful matcher may read in one decision — inside others (`CommandPattern.readingLimit`, shared
 * equally by the deny and ask rules, so each reads the same first commands), or of its own
 * (`CommandPattern.commandsLimit`) — and no deny rule matched what it read.
 */
const matchingRules = (rules: ReadonlyArray<Checked>, call: PreparedCall, line: Line | undefined, cwd: string): ReadonlyArray<Checked> | undefined => {
  const share = Math.max(1, Math.floor(CommandPattern.readingLimit / Math.max(1, carefulRules(rules))))
  const commands = commandShare(rules)
  let unread = false
  const matched = rules.filter((rule) => {
    const reading = CommandPattern.budget(share, commands)
    try {
      return matches(rule, call, line, cwd, false, reading) && !askPassesSyntax(rule, call, line)
    } catch (error) {
      if (!(error instanceof CommandPattern.TooMuchToRead)) throw error
      unread = true
      return false
    }
  })
  return !unread || matched.some((rule) => rule.decision === "deny") ? matched : undefined
}

/** What a line too large to check against the rules gets: a question, in every mode, saying why. */
const tooMuchToRead: PermissionDecision = {
  decision: "ask",
  policy: "too-much-to-read",
  reason: `the command line runs more commands, or more inside others (a shell's -c script, a runner's words, a git's own settings), than are read in ` +
    `one decision (${Plural.grouped(CommandPattern.commandsLimit)} and ${Plural.grouped(CommandPattern.readingLimit)}, shared by your deny and ask rules; ` +
    `${CommandPattern.gitsRead} gits in one command), so no rule or mode decides it`
}

/**
 * The hazard check's deny for a line of more commands than are read against every rule, when no rule could have
 * decided it otherwise: an allow or an ask must spell out the line's hazards (an ask may also match
 * the line as written), so where none does, what the unread commands hold changes only which deny
 * it is (a deny rule's or the hazard check's), never the decision. Without it such a line asked.
 */
const deniedWhateverRead = (rules: ReadonlyArray<Rule>, call: PreparedCall, line: Line | undefined): PermissionDecision | undefined => {
  if (call.command === undefined || line === undefined) return undefined
  const hazards = hazardsOf(call, line)
  if (hazards.length === 0) return undefined
  const couldDecideOtherwise = (rule: Rule) => {
    if (rule.decision === "deny") return false
    if (rule.tool !== undefined && rule.tool !== "*" && rule.tool !== call.tool && !serverWide(rule.tool, call.tool)) return false
    const spelled = CommandPattern.hazardsOf(rule.command)
    if (hazards.every((h) => spelled.has(h))) return true
    return rule.decision === "ask" && (rule.command === undefined || CommandPattern.matches(rule.command, call.command!.text, line.tokenized))
  }
  return rules.some(couldDecideOtherwise) ? undefined : hazardDeny(hazards)
}

const hazardDeny = (hazards: ReadonlyArray<string>): PermissionDecision => ({
  decision: "deny",
  policy: "command-hazards",
  reason: `the command uses ${hazards.join(", ")}, which needs a rule that allows it; run one program at a time`
})

/** The decision of the policy for one request; pure. */
export const decide = (options: Options, request: PermissionRequest): PermissionDecision => {
  const { call, cwd } = request
  const mode = options.mode ?? "default"
  const line = lineOf(call)
  const rules = checkedRules(options)
  const matching = matchingRules(rules, call, line, cwd)
  // Every bound (the line's own commands, what runs inside them, gits in one command) is for the
  // decision's cost: where no rule could decide the line but to deny it, it is denied as the short
  // line is (commandPatternLinear.test.ts, readingBound.test.ts) — a bound never turns a deny into an ask.
  if (matching === undefined) return deniedWhateverRead(rules, call, line) ?? tooMuchToRead
  const denied = matching.find((rule) => rule.decision === "deny")
  if (denied !== undefined) return { decision: "deny", policy: denied.name, reason: `the rule "${denied.name}" forbids it` }
  // A read of a whole tree that may reach what a deny or ask rule fences asks, in every mode: the
  // rule names paths below the folder, and which of them the walk reads is known only when it runs.
  const walked = walkedInto(rules, call, line, cwd, request.fenced === true)
  if (walked !== undefined) {
    return {
      decision: "ask",
      policy: walked.rule.name,
      reason: `the command reads the whole tree under ${walked.folder}, which may hold paths the rule "${walked.rule.name}" ${walked.rule.decision === "deny" ? "forbids" : "asks about"}`
    }
  }
  const first = matching[0]
  if (first?.decision === "ask") return { decision: "ask", policy: first.name }

  if (first === undefined) {
    if (line !== undefined && line.parsed.argv.length === 0) {
      return { decision: "deny", policy: "command-hazards", reason: "the command line could not be read safely (an open quote or unsupported quoting)" }
    }
    const hazards = hazardsOf(call, line)
    if (hazards.length > 0) return hazardDeny(hazards)
  }
  const remembered = request.remembered.find((r) => r.scope === call.scope)
  // An "always" for a Python line covers the files it would import only when its scope names the line and exactly those files.
  const shadows = call.command?.shadowedModules ?? []
  const shadowsRemembered = remembered?.decision === "allow" && shadows.length > 0 && call.command !== undefined &&
    remembered.scope === PythonShadows.rememberedScope(call.command.text, shadows)
  const guarded = guard(mode, call, cwd, options.protectedPaths ?? [], shadowsRemembered)
  if (guarded !== undefined) return guarded
  if (first !== undefined) return { decision: first.decision, policy: first.name }
  if (remembered !== undefined) return { decision: remembered.decision, policy: "remembered" }
  const decided = modeDecision(mode, call)
  return decided.decision === "ask" ? { ...decided, ...uncoveredBy(rules, call, line, cwd) } : decided
}

/**
 * What a tool's own walk of the call leaves out (its `PathAccess.leavesOut` walks): each path a deny
 * or ask rule covering the call matches, read as a direct read's path is (its real path, relative to
 * the real cwd, and as written for a careful rule). Undefined when the call has no such walk or no
 * rule fences anything.
 */
export const fence = (options: Options, request: PermissionRequest): PathFence | undefined => {
  const { call, cwd } = request
  if (!call.paths.some((p) => p.walked === true && p.leavesOut === true)) return undefined
  const line = lineOf(call)
  const rules = checkedRules(options)
  const fencing = rules.filter((rule) => rule.decision !== "allow" && rule.path !== undefined && commandCovers(rule, call, line, cwd, commandShare(rules)))
  if (fencing.length === 0) return undefined
  // Each file the walk meets is folded once, read against every rule, and kept nowhere: the cache a
  // decision's paths go through (`foldedOf`) would only grow by one entry per file, none read again.
  return ({ real, relative, written }) => {
    const seen = foldPath({ requested: written, resolved: real, insideCwd: relative !== undefined, relative, access: "read" }, cwd)
    return fencing.some((rule) => foldedMatches(rule, seen))
  }
}

/** The policy as the permission engine. */
export const layer = (options: Options = {}): Layer.Layer<PermissionEngine> =>
  Layer.succeed(PermissionEngine, {
    decide: (request) => Effect.succeed(decide(options, request)),
    fence: (request) => fence(options, request)
  })

/** What a question adds about a call the user's rule did not cover (see `PermissionDecision.reason`). */
export interface AskReason {
  readonly reason: string
  readonly allowCommand?: string | undefined
}

/** The asks kept for questions not asked yet, at most this many (oldest forgotten): a question never asked holds none forever. */
const keptReasons = 256

/** The reasons of asks, from the decision to the question that asks it (see {@link askReasons}). */
export interface AskReasons {
  /** Notes a decision about a call (the latest decision about a call is the one its question follows); returns it. */
  readonly note: (request: PermissionRequest, decided: PermissionDecision) => PermissionDecision
  /** The reason of the ask about this call, taken once. */
  readonly take: (sessionId: string, toolCallId: string) => AskReason | undefined
  /**
   * The ask about this call, taken once: whether the latest decision about it asked (`undefined`
   * when it did not, or was taken), and its reason if it gave one (see {@link subagentAskReason}).
   */
  readonly takeAsk: (sessionId: string, toolCallId: string) => { readonly reason: AskReason | undefined } | undefined
}

/**
 * Carries an ask's reason from the permission engine to the surface asking the user (the CLI's
 * question, an editor's permission request): the events record only the ask, never the reason, so
 * the process that decided keeps it for its own question.
 */
export const askReasons = (): AskReasons => {
  // Each ask, with its reason (`null` for an ask that gave none).
  const asks = new Map<string, AskReason | null>()
  const keyOf = (sessionId: string, toolCallId: string) => `${sessionId}\u0000${toolCallId}`
  const takeAsk: AskReasons["takeAsk"] = (sessionId, toolCallId) => {
    const key = keyOf(sessionId, toolCallId)
    const asked = asks.get(key)
    asks.delete(key)
    return asked === undefined ? undefined : { reason: asked ?? undefined }
  }
  return {
    note: (request, decided) => {
      const key = keyOf(request.sessionId, request.call.toolCallId)
      // An earlier decision's ask (a subagent's call checked against its parent's session too) never outlives it.
      asks.delete(key)
      if (decided.decision === "ask") {
        asks.set(key, decided.reason === undefined ? null : { reason: decided.reason, allowCommand: decided.allowCommand })
        if (asks.size > keptReasons) asks.delete(asks.keys().next().value!)
      }
      return decided
    },
    take: (sessionId, toolCallId) => takeAsk(sessionId, toolCallId)?.reason,
    takeAsk
  }
}

/**
 * The reason of a subagent's ask (`subagent.asked`), taken by the session that asks the user: the
 * subagent's call is decided on the subagent's session and again on its parent's (see
 * `Subagents.permissions`), and the stricter decision stands, the subagent's own on a tie. So the
 * reason is the one of the policy whose ask stood: the subagent's own when its own decision asked
 * (with the reason it gave, or none — never the parent's, whose rule is not what asked), else the
 * parent's (its own allowed; the parent's ask was stricter). Both are taken, so neither is left
 * waiting for a question that will not come.
 */
export const subagentAskReason = (
  takeAsk: AskReasons["takeAsk"],
  sessionId: string,
  asked: { readonly childSessionId: string; readonly childToolCallId: string }
): AskReason | undefined => {
  const own = takeAsk(asked.childSessionId, asked.childToolCallId)
  const parents = takeAsk(sessionId, asked.childToolCallId)
  return own === undefined ? parents?.reason : own.reason
}

/** What deciding a call again takes (see {@link reasonAgain}): the engine's own tools and permission engine. */
export interface DecideAgain {
  /** The engine's tools: the call is prepared again, as the engine prepared it. */
  readonly tools: ToolRouter.Service
  /** The engine's permission engine, whose decisions leave their reasons where `take` finds them. */
  readonly permissions: PermissionEngine.Service
  readonly take: AskReasons["take"]
}

/**
 * Why the policy asked about a call a stopped process left waiting, for the question asked again
 * (ACP after `session/load`, `chat` on the session). The events keep only the ask and its policy
 * (the call's `askedByPolicy`), and the process that decided kept the reason; so the call is prepared and decided
 * again with the session's policy now, and that decision's reason is given only when it is the
 * stored ask again (same policy): it is then the reason the original ask had. A subagent's call is
 * given none: its parent's process, which narrowed it, is gone.
 */
export const reasonAgain = (
  again: DecideAgain,
  state: SessionState,
  call: OpenToolCall
): Effect.Effect<AskReason | undefined> =>
  Effect.gen(function*() {
    if (call.askedBy !== undefined || call.askedByPolicy === undefined) return undefined
    const tools = again.tools.forSession?.(state.sessionId) ?? again.tools
    const prepared = yield* Effect.option(tools.prepare({ toolCallId: call.toolCallId, tool: call.tool, args: call.args }, state.cwd))
    if (Option.isNone(prepared)) return undefined
    const decided = yield* again.permissions.decide({ sessionId: state.sessionId, cwd: state.cwd, call: prepared.value, remembered: state.remembered })
    const reason = again.take(state.sessionId, call.toolCallId)
    return decided.decision === "ask" && decided.policy === call.askedByPolicy ? reason : undefined
  })
