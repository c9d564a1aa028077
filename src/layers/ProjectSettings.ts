/**
 * One trust model for permission settings, shared by the CLI (`run`, `chat`, `approve`, `deny`,
 * `serve`, `acp`), the HTTP server, the ACP agent and programs that embed the engine.
 *
 * Three sources say what a session may do, in this order of precedence:
 *
 * 1. **the user, now** — flags (`--mode`, `--allow`, `--deny`) or an embedder's options;
 * 2. **the user's own settings** — `settings.json` in the user's config folder (see `TrustStore`);
 * 3. **the project's settings** — `.effect-agent/settings.json` in the session's cwd. It comes with
 *    the repository, so it is input from whoever wrote it: until the user trusts that exact file (by
 *    its SHA-256, recorded in the user's config folder), it can only make the agent more careful —
 *    its `deny` and `ask` rules and a narrower mode apply, while its `allow` rules, a wider mode and
 *    its `env` are ignored, and one note says so and how to trust it. A changed file is untrusted
 *    again. Even trusted it stays within `ProjectLimits` (no wildcard interpreters, nothing outside
 *    the project or in `.git/`, no variables that steer programs, no credentials passed on).
 *
 * Rules are tried in that order and the first that matches decides, but a matching `deny` wins from
 * any source. The mode is the flag's (what the user typed for this run: never narrowed, and the note
 * says so); else the user's, else the trusted project's, else `default` — narrowed to the project's
 * when the project asks for a narrower one (`readOnly` < `default` < `acceptEdits`). The commands' environment adds the user's `env` to the trusted project's, the
 * user's values winning. Whatever the rules say, paths outside the cwd and writes into `.git/`,
 * `.effect-agent/` and the user's config folder ask (see `PermissionPolicy`).
 *
 * @since 0.4.0
 */
import * as NodeFs from "node:fs/promises"
import * as NodePath from "node:path"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import type * as Schema from "effect/Schema"
import * as FormatCharacters from "../domain/FormatCharacters.js"
import type * as PermissionPolicy from "./PermissionPolicy.js"
import * as JsonSyntax from "./settings/JsonSyntax.js"
import * as SettingsFile from "./settings/SettingsFile.js"
import { SettingsError } from "./settings/SettingsFile.js"
import * as TrustStore from "./TrustStore.js"
import type * as Environment from "./workspace/Environment.js"
import * as Paths from "./workspace/Paths.js"
import * as SafeFile from "./workspace/SafeFile.js"
import * as Plural from "../domain/Plural.js"

/** A settings or trust file that cannot be used as it is; `message` is one line naming the file and the entry. */
export { SettingsError }
/** The one-line form of a schema's parse error: `rules[1].decision: Expected …`. */
export const firstIssue = SettingsFile.firstIssue
/** `JSON.parse` of a file's text, or its syntax error in one line: `shown:line:column: not valid JSON: what: the line`. */
export const parseJson = JsonSyntax.parse
/** The workspace tools' names: the tools a rule may name unless `tools` says otherwise. */
export const workspaceTools = SettingsFile.workspaceTools

/** Where a project's settings file is, relative to its directory. */
export const relativePath = ".effect-agent/settings.json"
/** The user's own settings file, in the config folder. */
export const userFileName = "settings.json"

/** A project's settings. */
export type ProjectFile = SettingsFile.ProjectSettings
/** The user's own settings. */
export type UserFile = SettingsFile.UserSettings

/** A project's settings file as found: where, its content's hash, whether the user trusts it, and what it says. */
export interface Project {
  /** The real path of the project's cwd joined with `.effect-agent/settings.json`: what trust is recorded for. */
  readonly path: string
  /** The path for messages: relative to the process's directory when inside it. */
  readonly shown: string
  readonly sha256: string
  readonly trust: TrustStore.Status
  readonly settings: ProjectFile
}

/** What to load for a session. */
export interface LoadOptions {
  /** The session's working directory: its `.effect-agent/settings.json` is the project's file. */
  readonly cwd: string
  /** The user's config folder (default `TrustStore.configDir`); tests point it elsewhere. */
  readonly configDir?: string | undefined
  /** The mode the user chose now (`--mode`): it overrides every file's. */
  readonly mode?: PermissionPolicy.Mode | undefined
  /** The rules the user gave now (`--allow`, `--deny`): tried before every file's. */
  readonly rules?: ReadonlyArray<PermissionPolicy.Rule> | undefined
  /** The tool names rules may give (default the workspace tools). */
  readonly tools?: ReadonlyArray<string> | undefined
  /**
   * More folders whose writes always ask, as the config folder's do: what the embedding program
   * runs or trusts later (the CLI's compile cache), which no mode or rule may open to the model.
   */
  readonly protectedPaths?: ReadonlyArray<string> | undefined
}

/** A session's settings, resolved. */
export interface Loaded {
  /** For `PermissionPolicy.decide` / `PermissionPolicy.layer`. */
  readonly policy: PermissionPolicy.Options
  /** For `WorkspaceTools.layer({ env })`: the commands', and a trusted project's own `.mcp.json` servers'. */
  readonly env: Environment.Options
  /**
   * Your own settings' `env` alone: what every other MCP server runs with (your `mcp.json`,
   * `--mcp-config`, a client's). Those run outside the sandbox with your tokens, so a project's
   * `env` never reaches them (`GITHUB_HOST` would send a GitHub server's token to its host).
   */
  readonly userEnv: Environment.Options
  /** The user's config folder these were read with. */
  readonly configDir: string
  readonly user: UserFile | undefined
  readonly project: Project | undefined
  /** Lines to show the user: what the project's file set, or what of it was ignored and how to trust it. */
  readonly notes: ReadonlyArray<string>
}

/** The largest settings file read (a repository could ship anything under that name). */
const maxBytes = 1024 * 1024

/** A path for messages: relative to the process's directory when inside it. */
export const shownPath = (file: string): string => {
  const relative = NodePath.relative(process.cwd(), file)
  return relative === "" || relative.startsWith("..") || NodePath.isAbsolute(relative) ? file : relative
}

/** Why a path's links could not be followed to the end, in plain words (the system's own error says which). */
const whyUnresolved = (file: string): Promise<string> =>
  NodeFs.stat(file).then(
    () => "a link that leads nowhere",
    (error: NodeJS.ErrnoException) => {
      switch (error.code) {
        case "EACCES":
        case "EPERM":
          return "permission denied: a folder on its path cannot be searched by this user"
        case "ELOOP":
          return "a loop of links"
        case "ENOENT":
          return "a link that leads nowhere"
        default:
          return error.code ?? "unknown error"
      }
    }
  )

/** A settings file's bytes, or none when it does not exist; a regular file only, capped, never blocking on a FIFO. */
export const readBytes = (file: string, shown: string): Effect.Effect<Option.Option<Uint8Array>, SettingsError> =>
  Effect.gen(function*() {
    const real = yield* Effect.promise(() => Paths.realPath(file))
    if (!real.exact) return yield* new SettingsError({ reason: "unreadable", message: `${shown}: cannot be read (${yield* Effect.promise(() => whyUnresolved(file))})` })
    return yield* SafeFile.readFile(real.path, maxBytes).pipe(
      Effect.map(Option.some),
      Effect.catchTag("FileError", (error) =>
        error.code === "not_found"
          ? Effect.succeed(Option.none<Uint8Array>())
          : Effect.fail(
            new SettingsError({
              reason: "unreadable",
              message: `${shown}: cannot be read (${error.code === "file_too_large" ? `over ${maxBytes / 1024 / 1024} MiB` : error.code.replace(/_/g, " ")})`
            })
          ))
    )
  })

const parseWith = <A, I>(schema: Schema.Schema<A, I>, text: string, shown: string) =>
  Either.mapLeft(SettingsFile.parse(schema, text, shown), (message) => new SettingsError({ reason: "invalid", message: withMcpHint(message, shown) }))

// Other agents keep MCP servers in their settings file; here they have a file of their own.
const withMcpHint = (message: string, shown: string) =>
  message.startsWith(`${shown}: mcpServers: is unexpected`)
    ? `${message}; ${shown.endsWith(".effect-agent/settings.json") ? "a project's MCP servers go in .mcp.json in its folder" : "MCP servers go in mcp.json beside it"} (docs/mcp.md)`
    : message

/** Parses the text of a project's settings file; the error is one line naming `shown` and the entry. */
export const parseProject = (text: string, shown: string, tools: ReadonlyArray<string> = workspaceTools): Either.Either<ProjectFile, SettingsError> =>
  parseWith(SettingsFile.projectSettings(tools), text, shown)

/** Parses the text of the user's own settings file; the error is one line naming `shown` and the entry. */
export const parseUser = (text: string, shown: string, tools: ReadonlyArray<string> = workspaceTools): Either.Either<UserFile, SettingsError> =>
  parseWith(SettingsFile.userSettings(tools), text, shown)

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes)

/** Reads the user's own settings file in `configDir`; none when there is none. */
export const readUser = Effect.fn("ProjectSettings.readUser")(function*(configDir: string, tools: ReadonlyArray<string> = workspaceTools) {
  const file = NodePath.join(configDir, userFileName)
  const bytes = yield* readBytes(file, file)
  if (Option.isNone(bytes)) return undefined
  return yield* parseUser(text(bytes.value), file, tools)
})

/** Where the project's settings file of `cwd` is, as trust records it: the real path of `cwd` joined with `.effect-agent/settings.json`. */
export const fileOf = (cwd: string): Effect.Effect<string> => Effect.map(Paths.realCwd(cwd), (real) => NodePath.join(real, relativePath))

/** Reads the project's settings file of `cwd` and whether the user trusts it (by the trust entries given); none when there is none. */
export const readProject = Effect.fn("ProjectSettings.readProject")(function*(
  cwd: string,
  trusted: ReadonlyArray<TrustStore.Entry>,
  tools: ReadonlyArray<string> = workspaceTools
) {
  const path = yield* fileOf(cwd)
  const shown = shownPath(NodePath.join(NodePath.resolve(cwd), relativePath))
  const bytes = yield* readBytes(path, shown)
  if (Option.isNone(bytes)) return undefined
  const settings = yield* parseProject(text(bytes.value), shown, tools)
  const sha256 = TrustStore.sha256(bytes.value)
  return { path, shown, sha256, trust: TrustStore.status(trusted, path, sha256), settings } satisfies Project
})

const width: Record<PermissionPolicy.Mode, number> = { readOnly: 0, default: 1, acceptEdits: 2, bypass: 3 }

/** Whether a rule names MCP tools (`mcp__docs__*`): a server's name, which your own servers may share. */
const namesMcpTool = (rule: PermissionPolicy.Rule) => rule.tool?.startsWith("mcp__") === true

/**
 * A project's rule with its origin: one naming MCP tools is for the project's own `.mcp.json`
 * servers (`projectServer`), never for yours of the same name — a repository's `allow
 * mcp__github__*` must not allow your GitHub server's tools. Deny and ask rules cover both anyway.
 */
const ownOrigin = (rule: PermissionPolicy.Rule): PermissionPolicy.Rule => namesMcpTool(rule) ? { ...rule, projectServer: true } : rule

/** What of a project's file applies: all of it once trusted; else only what makes the agent more careful. */
const applied = (project: Project | undefined, base: PermissionPolicy.Mode) => {
  if (project === undefined) return { rules: [], mode: undefined, env: {} }
  const { settings, trust } = project
  // Trusted or not, a project's mode narrows the user's (a trusted one is already the base when the user set none).
  const mode = settings.mode !== undefined && width[settings.mode] < width[base] ? settings.mode : undefined
  if (trust === "trusted") return { rules: (settings.rules ?? []).map(ownOrigin), mode, env: settings.env ?? {} }
  return { rules: (settings.rules ?? []).filter((rule) => rule.decision !== "allow"), mode, env: {} }
}

/** What an untrusted file asked for that was ignored, in words (`2 allow rules`, `mode acceptEdits`, `env`). */
const ignoredOf = (project: Project, base: PermissionPolicy.Mode): ReadonlyArray<string> => {
  if (project.trust === "trusted") return []
  const { env, mode, rules } = project.settings
  const allows = (rules ?? []).filter((rule) => rule.decision === "allow").length
  return [
    ...(allows === 0 ? [] : [Plural.count(allows, "allow rule")]),
    ...(mode !== undefined && width[mode] > width[base] ? [`mode ${mode}`] : []),
    ...((env?.allow ?? []).length > 0 || Object.keys(env?.set ?? {}).length > 0 ? ["env"] : [])
  ]
}

const listed = (parts: ReadonlyArray<string>) =>
  parts.length <= 1 ? parts.join("") : `${parts.slice(0, -1).join(", ")} and ${parts.at(-1)}`

/** A directory as a shell word: bare when it is plain, else single-quoted. */
const shellWord = (text: string) => /^[A-Za-z0-9_./:@%+=,-]+$/.test(text) ? text : `'${text.replace(/'/g, "'\\''")}'`

/** The command that trusts the project's file of `cwd`, as the user would type it. */
export const trustCommand = (cwd: string): string =>
  NodePath.resolve(cwd) === process.cwd() ? "effect-agent trust" : `effect-agent trust ${shellWord(escapeControls(NodePath.resolve(cwd)))}`

/** The note for a project's file: what it set, or what was ignored and how to trust it; a mode given now (`given`) wins over its mode. */
const noteOf = (project: Project, cwd: string, base: PermissionPolicy.Mode, given: PermissionPolicy.Mode | undefined): string | undefined => {
  const ignored = ignoredOf(project, base)
  if (ignored.length > 0) {
    const careful = (project.settings.rules ?? []).some((rule) => rule.decision !== "allow")
    return `${escapeControls(project.shown)} is not trusted${project.trust === "changed" ? " (it changed since you trusted it)" : ""}, so its ${listed(ignored)} ${
      ignored.length === 1 && !ignored[0]!.endsWith("rules") ? "is" : "are"
    } ignored${careful ? " (its deny and ask rules apply)" : ""}; review and trust it with: ${trustCommand(cwd)}`
  }
  const { env, mode, rules } = project.settings
  const parts = [
    ...(mode === undefined ? [] : [given === undefined || given === mode ? `mode ${mode}` : `mode ${mode} (the mode given now, ${given}, wins)`]),
    ...(rules === undefined || rules.length === 0 ? [] : [Plural.count(rules.length, "rule")]),
    ...(env?.allow === undefined && env?.set === undefined ? [] : ["environment"])
  ]
  return parts.length === 0 ? undefined : `${escapeControls(project.shown)}${project.trust === "trusted" ? " (trusted)" : ""}: ${parts.join(", ")}.`
}

/**
 * A project's file that is there but cannot be read — a FIFO, a socket, a device or a folder in its
 * place, a link that leads nowhere, over the size cap — is skipped with one line saying so, as an
 * instructions file is: the repository ships it, and before, a named pipe at `.mcp.json` or
 * `.effect-agent/settings.json` made every `run` in the clone exit 1. Nothing of it applies (an
 * untrusted file's deny and ask rules are the repository's own, which it could as well leave out).
 * A file that reads but is invalid still fails, naming the entry.
 */
export const skipUnreadable = (notes: Array<string>) => <A, R>(read: Effect.Effect<A | undefined, SettingsError, R>): Effect.Effect<A | undefined, SettingsError, R> =>
  Effect.catchIf(read, (error) => error.reason === "unreadable", (error) =>
    Effect.sync(() => {
      notes.push(`${escapeControls(error.message)}; skipped`)
      return undefined
    }))

/**
 * Resolves a session's settings: the user's choices now, the user's own file, and the project's file
 * as far as the user trusts it (see the module's comment). Fails with one line naming the file and
 * the entry when a file is invalid; a trust file that cannot be read leaves every project untrusted
 * and says so.
 */
export const load = Effect.fn("ProjectSettings.load")(function*(options: LoadOptions) {
  const configDir = options.configDir ?? (yield* TrustStore.configDir)
  const tools = options.tools ?? workspaceTools
  const notes: Array<string> = []
  const trusted = yield* TrustStore.entries(configDir).pipe(
    Effect.catchTag("SettingsError", (error) =>
      Effect.as(Effect.sync(() => notes.push(`${error.message}; every project's settings are treated as untrusted`)), [] as ReadonlyArray<TrustStore.Entry>))
  )
  const user = yield* readUser(configDir, tools)
  const project = yield* readProject(options.cwd, trusted, tools).pipe(skipUnreadable(notes))
  // The mode before the project's file narrows it: the user's, else the trusted project's, else default.
  const base = user?.mode ?? (project?.trust === "trusted" ? project.settings.mode : undefined) ?? "default"
  const fromProject = applied(project, base)
  const note = project === undefined ? undefined : noteOf(project, options.cwd, base, options.mode)
  if (note !== undefined) notes.push(note)
  // Each as given and as its real path: a rule or a call may reach it through either.
  const protectedFolders = [configDir, ...(options.protectedPaths ?? [])]
  const realFolders = yield* Effect.forEach(protectedFolders, Paths.realCwd)
  const policy: PermissionPolicy.Options = {
    mode: options.mode ?? fromProject.mode ?? base,
    rules: [...(options.rules ?? []), ...(user?.rules ?? []), ...fromProject.rules],
    protectedPaths: [...new Set([...protectedFolders.map((folder) => NodePath.resolve(folder)), ...realFolders])]
  }
  const env: Environment.Options = {
    allow: [...(user?.env?.allow ?? []), ...(fromProject.env.allow ?? [])],
    set: { ...fromProject.env.set, ...user?.env?.set }
  }
  const userEnv: Environment.Options = { allow: [...(user?.env?.allow ?? [])], set: { ...user?.env?.set } }
  return { policy, env, userEnv, configDir, user, project, notes } satisfies Loaded
})

/** Text with its control and bidirectional-format characters written as `\u…` escapes, so a summary shows what is there. */
export const escapeControls = FormatCharacters.escapeUnprintable

/** A value from a file, quoted with every control and format character escaped. */
const quote = (text: string) => escapeControls(JSON.stringify(text))

/** One rule in words: `allow shell "npm test" (rule "tests")`. */
export const describeRule = (rule: PermissionPolicy.Rule): string => {
  const what = rule.command !== undefined ? ` ${quote(rule.command)}` : rule.path !== undefined ? ` ${quote(rule.path)}` : ""
  return `${rule.decision} ${rule.tool === undefined ? "*" : escapeControls(rule.tool)}${what}  (rule ${quote(rule.name)})`
}

const modeWords: Record<PermissionPolicy.Mode, string> = {
  readOnly: "reads only: writes and commands other than reads are denied",
  default: "reads inside the project are allowed; edits and commands ask",
  acceptEdits: "edits files inside the project without asking",
  bypass: "everything without asking"
}

/** Where a trusted project's `env` goes: never to your own MCP servers (`Loaded.userEnv`). */
const envReach = "commands and this project's MCP servers"

/** How many lines of what a file makes more careful a summary shows before it counts the rest. */
const carefulLines = 12

/**
 * A summary of what a project's file grants once trusted, and what applies either way — for the
 * user to read before trusting it. Every value is quoted with control characters escaped, so a file
 * cannot hide an entry from the screen; every grant is listed, the rest counted past a screenful.
 */
export const summary = (project: Project): ReadonlyArray<string> => {
  const { env, mode, rules } = project.settings
  const allows = (rules ?? []).filter((rule) => rule.decision === "allow")
  const careful = (rules ?? []).filter((rule) => rule.decision !== "allow")
  const grants = [
    ...(mode !== undefined && width[mode] > width.default ? [`mode ${mode}: ${modeWords[mode]}`] : []),
    ...allows.map((rule) => namesMcpTool(rule) ? `${describeRule(rule)}: this project's own MCP server (its .mcp.json), never yours` : describeRule(rule)),
    ...(env?.allow ?? []).map((name) => `passes on ${escapeControls(name)} from your environment to ${envReach}`),
    ...Object.entries(env?.set ?? {}).map(([name, value]) => `sets ${escapeControls(name)}=${quote(value)} for ${envReach}`)
  ]
  const narrows = [...(mode !== undefined && width[mode] < width.default ? [`mode ${mode}: ${modeWords[mode]}`] : []), ...careful.map(describeRule)]
  const wild = allows.some((rule) => rule.command !== undefined && /[*?]/.test(rule.command))
  return [
    `${escapeControls(project.path)}`,
    `sha256 ${project.sha256}`,
    ...(grants.length === 0
      ? ["It grants nothing that needs trust."]
      : ["Once trusted, it lets the agent, without asking:", ...grants.map((line) => `  ${line}`)]),
    ...(wild ? ["  (a * in a command lets the model choose those arguments)"] : []),
    ...(narrows.length === 0 ? [] : [
      "Trusted or not, it makes the agent more careful:",
      ...narrows.slice(0, carefulLines).map((line) => `  ${line}`),
      ...(narrows.length > carefulLines ? [`  … and ${narrows.length - carefulLines} more`] : [])
    ])
  ]
}

/** Whether a trusted file is still as it was trusted: `trusted`, `changed`, or `missing` (no longer there). */
export const entryStatus = Effect.fn("ProjectSettings.entryStatus")(function*(entry: TrustStore.Entry) {
  const bytes = yield* readBytes(entry.path, entry.path)
  if (Option.isNone(bytes)) return "missing" as const
  return TrustStore.sha256(bytes.value) === entry.sha256 ? "trusted" as const : "changed" as const
})

/** Reads the project's file of `cwd` with the user's trust entries, for `trust`: none when there is none. */
export const inspect = Effect.fn("ProjectSettings.inspect")(function*(cwd: string, configDir: string, tools: ReadonlyArray<string> = workspaceTools) {
  return yield* readProject(cwd, yield* TrustStore.entries(configDir), tools)
})
