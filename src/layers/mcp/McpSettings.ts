/**
 * Which MCP servers a session starts, from three sources, later ones replacing earlier servers of
 * the same name:
 *
 * 1. **the project's `.mcp.json`** in the session's cwd — a server is a program the repository
 *    chose, so it starts only once the user trusts that exact file, under the same rule as the
 *    project's settings (`TrustStore`: its SHA-256 recorded in the user's config folder, a changed
 *    file untrusted again). Until then nothing of it starts, and one note says so and how to trust it;
 * 2. **the user's own `mcp.json`** in the config folder;
 * 3. **the user, now** — `--mcp-config <file>`, or an embedder's / client's list.
 *
 * This module reads files only; it never loads the SDK (see `McpTools` for that).
 *
 * @since 0.5.0
 */
import * as NodeFs from "node:fs/promises"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as ProjectSettings from "../ProjectSettings.js"
import { SettingsError } from "../settings/SettingsFile.js"
import * as TrustStore from "../TrustStore.js"
import * as Paths from "../workspace/Paths.js"
import * as McpConfig from "./McpConfig.js"
import * as McpFiles from "./McpFiles.js"
import * as RegistryFetch from "./RegistryFetch.js"

/** A file that cannot be used as it is; `message` is one line naming it and the entry. */
export { SettingsError }

/** The project's MCP file, relative to its directory. */
export const projectFileName = ".mcp.json"
/** The user's own MCP file, in the config folder. */
export const userFileName = "mcp.json"

/** A project's `.mcp.json` as found: where, its hash, whether the user trusts it, and what it says. */
export interface Project {
  /** The real path of the cwd joined with `.mcp.json`: what trust is recorded for. */
  readonly path: string
  readonly shown: string
  /**
   * What trust records: the file's SHA-256, or — when its servers name files of the project
   * (`McpFiles`: `node tools/mcp.js`) — one over it and what those files hold, so that a changed
   * script makes the file untrusted again.
   */
  readonly sha256: string
  readonly trust: TrustStore.Status
  readonly file: McpConfig.File
  /** The project's files its servers name, and what is there now (see `McpFiles`). */
  readonly files: ReadonlyArray<McpFiles.Bound>
  /**
   * The file is as an earlier version trusted it, when trust covered the file alone: it reads
   * `changed` (its files were never reviewed), and the note says why rather than "it changed".
   */
  readonly widened?: true
}

/** What to load. */
export interface LoadOptions {
  readonly cwd: string
  /** The user's config folder (default `TrustStore.configDir`). */
  readonly configDir?: string | undefined
  /** Servers the user gives now (`--mcp-config`, a client's list): they win over both files. */
  readonly servers?: McpConfig.Servers | undefined
  /** Where `servers` start: the folder of the file they come from (`--mcp-config`'s), `clientFolder` for a client's list. None: in `cwd`. */
  readonly serversFolder?: string | undefined
}

/** The servers of a session, resolved. */
export interface Loaded {
  readonly servers: McpConfig.Servers
  readonly project: Project | undefined
  /** Lines to show the user: the project's servers that were not started, and how to trust them. */
  readonly notes: ReadonlyArray<string>
  /**
   * Where a server starts when not in `cwd`, by name (`McpTools` `folders`): a server of the user's
   * own `mcp.json` starts in the config folder, one of `--mcp-config`'s in that file's folder. A
   * launcher looks for what to run in the folder it starts in — `npx` a package in
   * `node_modules/.bin`, `python -m` a module, `uvx` the project's index — so a server the user named
   * for every project, started in a clone, ran the clone's code. The project's own (trusted) servers
   * start in `cwd`; a client's where `serversFolder` says.
   */
  readonly folders: Readonly<Record<string, string>>
  /**
   * For each of the project's servers that starts, whether it may start again in this session
   * (`McpTools` `mayStart`): only while the `.mcp.json` and the files it names are as they were
   * trusted. A server stopped (a crash, a timeout) is started again by its next call, and runs the
   * workspace's files as they are then — which the model may have rewritten since.
   */
  readonly recheck: Readonly<Record<string, Effect.Effect<void, SettingsError>>>
}

const parsed = (text: string, shown: string) =>
  Either.mapLeft(McpConfig.parse(text, shown), (message) => new SettingsError({ reason: "invalid", message }))

/** Reads an MCP configuration file (`--mcp-config`); fails with one line when it is missing or invalid. */
export const readFile = Effect.fn("McpSettings.readFile")(function*(file: string) {
  const shown = ProjectSettings.shownPath(NodePath.resolve(file))
  const bytes = yield* ProjectSettings.readBytes(NodePath.resolve(file), shown)
  if (Option.isNone(bytes)) return yield* new SettingsError({ reason: "unreadable", message: `${shown}: no such file` })
  return yield* parsed(new TextDecoder().decode(bytes.value), shown)
})

/** Reads the user's own `mcp.json` in `configDir`; none when there is none. */
export const readUser = Effect.fn("McpSettings.readUser")(function*(configDir: string) {
  const file = NodePath.join(configDir, userFileName)
  const bytes = yield* ProjectSettings.readBytes(file, file)
  if (Option.isNone(bytes)) return undefined
  return yield* parsed(new TextDecoder().decode(bytes.value), file)
})

/** Where the project's `.mcp.json` of `cwd` is, as trust records it: the real path of `cwd` joined with `.mcp.json`. */
export const fileOf = (cwd: string): Effect.Effect<string> => Effect.map(Paths.realCwd(cwd), (real) => NodePath.join(real, projectFileName))

/**
 * Reads the project's `.mcp.json` of `cwd` and whether the user trusts it; none when there is none.
 * With `onlyIfKnown`, the files its servers name are read only when `trusted` has an entry for it:
 * a `.mcp.json` the user never trusted is untrusted whatever they hold, and a cloned repository's
 * (links to large files outside it) costs no reads at each session's start. Its `sha256` is then
 * the file's alone — not what `trust` records, which reads them (`inspect`).
 */
export const readProject = Effect.fn("McpSettings.readProject")(function*(
  cwd: string,
  trusted: ReadonlyArray<TrustStore.Entry>,
  { onlyIfKnown = false }: { readonly onlyIfKnown?: boolean } = {}
) {
  const path = yield* fileOf(cwd)
  const shown = ProjectSettings.shownPath(NodePath.join(NodePath.resolve(cwd), projectFileName))
  const bytes = yield* ProjectSettings.readBytes(path, shown)
  if (Option.isNone(bytes)) return undefined
  const file = yield* parsed(new TextDecoder().decode(bytes.value), shown)
  const files = onlyIfKnown && !trusted.some((entry) => entry.path === path) ? [] : yield* boundFiles(path, file)
  const fileHash = TrustStore.sha256(bytes.value)
  const sha256 = McpFiles.combinedHash(fileHash, files)
  const trust = TrustStore.status(trusted, path, sha256)
  // Trusted by an earlier version, whose trust was the file's hash alone: not "changed", widened.
  const widened = trust === "changed" && files.length > 0 && TrustStore.status(trusted, path, fileHash) === "trusted"
  return { path, shown, sha256, trust, file, files, ...(widened ? { widened } : {}) } satisfies Project
})

/**
 * The project's files the servers of `file` (at `path`) name, and what they hold (`McpFiles`). Past
 * what trust reads, the list ends in a state trust never records (`overNames`, `overBudget`): at a
 * session's start the project is then untrusted again, and `inspect` refuses it (`overLimits`).
 * Before, it failed every session there — a file a local user makes in a folder above (`/tmp/.npmrc`),
 * or the agent's own edit of the project's `.npmrc`, stopped every later run in the project.
 */
const boundFiles = (path: string, file: McpConfig.File): Effect.Effect<ReadonlyArray<McpFiles.Bound>> => {
  const named = McpFiles.namedPaths(NodePath.dirname(path), file.mcpServers)
  // What trust refuses (a `PATH` through `/proc`, a launcher building the project's sources) is one more state it never records.
  const refused = McpFiles.refusals(file.mcpServers, NodePath.dirname(path))
  if (named.length > McpFiles.limits.names) return Effect.succeed([{ path: "", state: McpFiles.overNames }, ...refused])
  return Effect.promise(() => McpFiles.bound(NodePath.dirname(path), named)).pipe(Effect.map((files) => [...files, ...refused]))
}

/**
 * Why trust refuses the files `project`'s servers name, if it does: more names or bytes than it
 * reads, with the file that went past the limit (a launcher's configuration, `/tmp/.npmrc` say).
 */
const overLimitsReason = (project: Project): string | undefined => {
  const shown = (path: string) => ProjectSettings.escapeControls(ProjectSettings.shownPath(NodePath.resolve(NodePath.dirname(project.path), path)))
  const overNames = project.files.find((bound) => bound.state === McpFiles.overNames)
  if (overNames !== undefined) {
    // The `.mcp.json`'s own words (no path: `boundFiles`), or with the names a launcher's configuration
    // file adds (`.npmrc`'s `node-options=--require ./x.js`).
    const who = overNames.path === "" ? "its servers" : `its servers and ${shown(overNames.path)}`
    return `${who} name over ${McpFiles.limits.names} paths of the project, more than the ${McpFiles.limits.names} trust can cover`
  }
  const refused = project.files.find((bound) => bound.state.startsWith(McpFiles.refusedState))
  if (refused !== undefined) return `its server ${JSON.stringify(refused.path)} ${refused.state.slice(McpFiles.refusedState.length)}`
  const overBudget = project.files.find((bound) => bound.state === McpFiles.overBudget)
  if (overBudget !== undefined) {
    return `the files its servers name hold more than the ${McpFiles.limits.totalBytes / 1024 / 1024} MiB trust reads (past it at ${shown(overBudget.path)})`
  }
  return undefined
}

/** What trust answers for a project over its limits ({@link overLimitsReason}). */
const overLimitsAdvice = "start them from a script it names"

/** The advice for `project` over its limits: a refused server's reason says its own (`McpFiles.refusals`). */
const adviceFor = (project: Project): string => project.files.some((bound) => bound.state.startsWith(McpFiles.refusedState)) ? "change that server's line" : overLimitsAdvice

/** Trust's refusal of a project over its limits, if it is. */
const overLimits = (project: Project): SettingsError | undefined => {
  const why = overLimitsReason(project)
  return why === undefined ? undefined : new SettingsError({ reason: "invalid", message: `${project.shown}: ${why}; ${adviceFor(project)}` })
}

/** Fails unless the project's `.mcp.json` of `cwd` and the files it names are as they were when `project` was read trusted. */
const stillTrusted = (cwd: string, project: Project): Effect.Effect<void, SettingsError> =>
  Effect.flatMap(
    readProject(cwd, [{ path: project.path, sha256: project.sha256, trustedAt: "" }]),
    (now) =>
      now?.trust === "trusted"
        ? Effect.void
        : Effect.fail(new SettingsError({
          reason: "invalid",
          message: `${ProjectSettings.escapeControls(project.shown)} or a file its servers run changed since the session started; review and trust it again with: ${ProjectSettings.trustCommand(cwd)}`
        }))
  )

/**
 * Whether a trusted `.mcp.json` (a `TrustStore` entry) is still as it was trusted, the files its
 * servers name included (for `trust --list`).
 */
export const entryStatus = Effect.fn("McpSettings.entryStatus")(function*(entry: TrustStore.Entry) {
  const project = yield* readProject(NodePath.dirname(entry.path), [entry])
  return project === undefined ? "missing" as const : project.trust === "trusted" ? "trusted" as const : "changed" as const
})

/**
 * Reads the project's `.mcp.json` of `cwd` with the user's trust entries, for `trust`. A launcher's
 * configuration that sends it to configuration or code elsewhere (`.npmrc`'s `userconfig=`,
 * `cache=`: `McpFiles.pointsOutState`) is refused here, naming the setting: trust would bind the
 * file, not what it sends the launcher to. At a session's start such a file only leaves the
 * `.mcp.json` untrusted (its state is in the hash trust never records), so a command that adds the
 * setting to a trusted project's `.npmrc` cannot stop later sessions from starting.
 */
export const inspect = Effect.fn("McpSettings.inspect")(function*(cwd: string, configDir: string) {
  const project = yield* readProject(cwd, yield* TrustStore.entries(configDir))
  const over = project === undefined ? undefined : overLimits(project)
  if (over !== undefined) return yield* over
  const elsewhere = project?.files.find((bound) => bound.state.startsWith(McpFiles.pointsOutState))
  if (project !== undefined && elsewhere !== undefined) {
    return yield* new SettingsError({
      reason: "invalid",
      message: `${project.shown}: ${ProjectSettings.escapeControls(elsewhere.path)} sets ${elsewhere.state.slice(McpFiles.pointsOutState.length)}=, ` +
        `which sends its launcher to configuration or code elsewhere, whose content trust cannot bind; start the servers from a script it names`
    })
  }
  return project
})

/**
 * The servers of a session in `cwd`: the project's `.mcp.json` only once trusted, then the user's
 * own file, then `options.servers`. Fails with one line naming the file when one is invalid.
 */
export const load = Effect.fn("McpSettings.load")(function*(options: LoadOptions) {
  const configDir = options.configDir ?? (yield* TrustStore.configDir)
  const notes: Array<string> = []
  const trusted = yield* TrustStore.entries(configDir).pipe(
    Effect.catchTag("SettingsError", (error) =>
      Effect.as(Effect.sync(() => notes.push(`${error.message}; no project's MCP servers are started`)), [] as ReadonlyArray<TrustStore.Entry>))
  )
  const user = yield* readUser(configDir)
  const project = yield* readProject(options.cwd, trusted, { onlyIfKnown: true }).pipe(ProjectSettings.skipUnreadable(notes))
  const names = project === undefined ? [] : Object.keys(project.file.mcpServers)
  if (project !== undefined && project.trust !== "trusted" && names.length > 0) {
    // Past trust's limits the `.mcp.json` need not have changed, and trusting it again is refused: said as it is.
    const over = overLimitsReason(project)
    notes.push(
      `${ProjectSettings.escapeControls(project.shown)} is not trusted${
        over !== undefined
          ? ` (${over})`
          : project.widened === true
          ? " (trust now also covers the files its servers run, which you have not reviewed)"
          : project.trust === "changed"
          ? " (it changed since you trusted it)"
          : ""
      }, so its MCP server${
        names.length === 1 ? "" : "s"
      } (${names.join(", ")}) ${names.length === 1 ? "was" : "were"} not started; ${
        over !== undefined ? adviceFor(project) : `review and trust it with: ${ProjectSettings.trustCommand(options.cwd)}`
      }`
    )
  }
  const projectServers = project?.trust === "trusted" ? project.file.mcpServers : undefined
  const servers = McpConfig.merge(projectServers, user?.mcpServers, options.servers)
  // Later sources win a name, and so does their folder: none for the project's and a client's (they start in cwd).
  const folders: Record<string, string> = {}
  const from = (named: McpConfig.Servers | undefined, folder: string | undefined) => {
    for (const name of Object.keys(named ?? {})) {
      if (folder === undefined) delete folders[name]
      else folders[name] = folder
    }
  }
  from(projectServers, undefined)
  from(user?.mcpServers, NodePath.resolve(configDir))
  from(options.servers, options.serversFolder === undefined ? undefined : NodePath.resolve(options.serversFolder))
  const recheck: Record<string, Effect.Effect<void, SettingsError>> = {}
  if (project !== undefined && projectServers !== undefined) {
    const still = stillTrusted(options.cwd, project)
    // The project's servers that no later source replaced.
    for (const name of Object.keys(projectServers)) if (servers[name] === projectServers[name]) recheck[name] = still
  }
  return { servers, project, notes, folders, recheck } satisfies Loaded
})

/**
 * Where servers a client names for a session (an ACP editor's, a `POST /sessions` body's) start: the
 * user's config folder, or their home when it does not exist — never the session's cwd, where a
 * launcher (`npx`, `python -m`, `uvx`) would run what the repository ships. An editor names the
 * same servers for every project it opens.
 */
export const clientFolder = Effect.fn("McpSettings.clientFolder")(function*(configDir?: string) {
  const dir = configDir ?? (yield* TrustStore.configDir)
  const isFolder = yield* Effect.promise(() => NodeFs.stat(dir).then((stats) => stats.isDirectory(), () => false))
  return isFolder ? dir : NodeOs.homedir()
})

/** What a project's `.mcp.json` starts once trusted, one line a server, for the user to read before trusting it. */
export const summary = (project: Project): ReadonlyArray<string> => {
  const entries = Object.entries(project.file.mcpServers)
  return [
    ProjectSettings.escapeControls(project.path),
    `sha256 ${project.sha256}`,
    ...(entries.length === 0
      ? ["It starts no MCP server."]
      : [
        "Once trusted, each session in this project starts or connects to (its tools still ask before they run: your rules for your own servers of the same names do not cover them):",
        ...entries.map(([name, server]) => `  ${ProjectSettings.escapeControls(McpConfig.describe(name, server))}`),
        ...pathSummary(entries, NodePath.dirname(project.path)),
        ...fetchedSummary(entries, project.files),
        ...filesSummary(project.files)
      ])
  ]
}

/**
 * A line for each server whose `env` sets a `PATH` naming the project's folders, by real path (or relative ones):
 * its program may be a file of the project found there (`McpFiles.pathCandidates`). Its value is
 * shown — the listing shows only which variables are set, since a value may be a token.
 */
const pathSummary = (entries: ReadonlyArray<readonly [string, McpConfig.Server]>, cwd: string): ReadonlyArray<string> =>
  entries.flatMap(([name, server]) => {
    const path = McpConfig.isStdio(server) ? server.env?.PATH : undefined
    if (path === undefined) return []
    const folders = path.split(NodePath.delimiter).filter((folder) => folder !== "")
    const relative = folders.filter((folder) => !NodePath.isAbsolute(folder))
    // By real path: a folder that is a link to the project is the project's (review 64a).
    const inside = folders.filter((folder) => {
      const real = NodePath.isAbsolute(folder) ? McpFiles.realPath(folder) : undefined
      return real !== undefined && Paths.isInside(NodePath, cwd, real)
    })
    if (relative.length === 0 && inside.length === 0) return []
    return [ProjectSettings.escapeControls(
      `  ${name}: its PATH is ${JSON.stringify(path)}` +
        (inside.length > 0 ? `, which names the project's ${inside.join(", ")}: a program there runs as this server (trust covers it as it is now)` : "") +
        (relative.length > 0 ? `; relative folders (${relative.join(", ")}) are not searched` : "")
    )]
  })

/** A line for each server a launcher fetches from a package registry at each start (`RegistryFetch`). */
const fetchedSummary = (entries: ReadonlyArray<readonly [string, McpConfig.Server]>, files: ReadonlyArray<McpFiles.Bound>): ReadonlyArray<string> =>
  entries.flatMap(([name, server]) => {
    if (!McpConfig.isStdio(server)) return []
    const fetched = RegistryFetch.fetchedBy(server.command, server.args ?? [], server.env)
    if (fetched === undefined) return []
    const program = server.command.split(/[\\/]/).at(-1)!
    const reads = new Set([...(RegistryFetch.projectConfig[program] ?? []), ...RegistryFetch.localCopies(fetched)])
    const present = files.filter((f) => f.state !== "absent" && reads.has(McpFiles.nameInProject(f.path))).map((f) => f.path)
    return RegistryFetch.describe(name, fetched, present).map(ProjectSettings.escapeControls)
  })

/** The lines saying which of the project's files trust covers too (`McpFiles`), and what it does not cover. */
const filesSummary = (files: ReadonlyArray<McpFiles.Bound>): ReadonlyArray<string> => {
  if (files.length === 0) return []
  const present = files.filter((f) => f.state !== "absent")
  const absent = files.length - present.length
  return [
    "Trust also covers the project's files these servers name (a change to one, or a file made where none is, makes it untrusted again):",
    ...present.slice(0, 20).map((f) => `  ${ProjectSettings.escapeControls(f.path)}${f.state === "folder" ? "/" : ""}`),
    ...(present.length > 20 ? [`  … and ${present.length - 20} more`] : []),
    ...(absent > 0 ? [`  (and ${absent} name${absent === 1 ? "" : "s"} where no file is now)`] : []),
    "Not covered: what those files load in turn (imports, the packages a launcher fetches or a project's `node_modules` holds beyond the one named), and a server's data (a named folder's other files, databases, logs, documents): trust that as you would run it yourself."
  ]
}
