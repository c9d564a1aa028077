/**
 * The options several commands share — where sessions are stored, the permission mode and the
 * `--allow` / `--deny` rules. Definitions only, loaded by the command tree (and `--help`): the
 * layers they choose (the store, the tools) are in FlagLayers.ts, loaded by the handlers.
 *
 * @since 0.1.0
 */
import * as HelpDoc from "@effect/cli/HelpDoc"
import * as Options from "@effect/cli/Options"
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import { lstatSync } from "node:fs"
import * as path from "node:path"
import type { PermissionPolicy, ProjectSettings, PromptComposer, SessionEngine, WorkspaceTools } from "../index.js"
import { CliError } from "./CliError.js"
import * as Help from "./Help.js"

/** The data dir when none is given: a folder of the current directory, which a cloned repository can ship. */
const defaultDataDir = ".effect-agent"

/** The SQLite store's database and the files SQLite opens beside it (a hot `-journal` is read before anything else). */
const sqliteFiles = ["effect-agent.sqlite", "effect-agent.sqlite-wal", "effect-agent.sqlite-shm", "effect-agent.sqlite-journal"]

/** What `file` is, by `lstat` (undefined when it is missing or cannot be looked at). */
const kindOf = (file: string): "link" | "file" | "folder" | "other" | undefined => {
  try {
    const stat = lstatSync(file)
    return stat.isSymbolicLink() ? "link" : stat.isFile() ? "file" : stat.isDirectory() ? "folder" : "other"
  } catch {
    return undefined
  }
}

/**
 * Why a data dir is refused, or undefined. The store makes its own files and folders itself, never
 * as links nor as special files, so a repository's shipped data dir is the one place they come from:
 * - a link would send the store's writes where it points: a shipped `.effect-agent` that is one (to
 *   another project's data dir, a folder of yours), or a data dir whose own `sessions/`, `blobs/` or
 *   database file is one (a data dir you name that is a link yourself is yours, and followed);
 * - a database file, or one SQLite opens beside it, that is a named pipe, a socket or a device: SQLite
 *   opens them blocking, on the main thread — a clone's `effect-agent.sqlite` (or `-journal`) that was
 *   a named pipe held `sessions --store sqlite` in `open(2)` for good, Ctrl+C and SIGTERM included;
 * - a data dir, `sessions/` or `blobs/` that is there but is no folder (a file, a named pipe): every
 *   run failed on it with the store's `ENOTDIR` error, which said nothing of why nor what to do.
 */
export const refusedDataDir = (dataDir: string): string | undefined => {
  const linked = (file: string) => `${file} is a link: the store would write where it points`
  const dataDirKind = kindOf(dataDir)
  if (dataDir === defaultDataDir && dataDirKind === "link") return linked(dataDir)
  const notFolder = (file: string) => `${file} is not a folder: the store keeps its sessions there`
  if (dataDirKind === "file" || dataDirKind === "other") return notFolder(dataDir)
  for (const own of ["sessions", "blobs", ...sqliteFiles]) {
    const file = path.join(dataDir, own)
    const kind = kindOf(file)
    if (kind === "link") return linked(file)
    if (sqliteFiles.includes(own) ? kind === "other" || kind === "folder" : kind === "file" || kind === "other") {
      return sqliteFiles.includes(own) ? `${file} is not a regular file: the store would wait on it for good` : notFolder(file)
    }
  }
  return undefined
}

/** `--data-dir`, `--store` and `--database-url`. */
export const storage = {
  dataDir: Options.directory("data-dir").pipe(
    Options.withDefault(defaultDataDir),
    Options.mapTryCatch((dataDir) => {
      const refused = refusedDataDir(dataDir)
      if (refused !== undefined) throw new Error(refused)
      return dataDir
    }, (error) =>
      HelpDoc.p(
        `${(error as Error).message}. A data dir that came with a repository can be anyone's; remove it, or name the folder you mean with --data-dir`
      )),
    Options.withDescription("Where sessions are stored")
  ),
  store: Help.choice("store", ["jsonl", "sqlite", "postgres"]).pipe(
    Options.withDefault("jsonl" as const),
    Options.withDescription(
      "jsonl: a file per session (default); sqlite: one database, <data-dir>/effect-agent.sqlite; postgres: a PostgreSQL database (--database-url)"
    )
  ),
  // Redacted: never printed. The environment keeps it off the process list.
  databaseUrl: Options.redacted("database-url").pipe(
    // @effect/cli would show the value as "redacted", as if that were the word to type.
    Options.withPseudoName("url"),
    Options.withFallbackConfig(Config.redacted("EFFECT_AGENT_DATABASE_URL")),
    Options.optional,
    Options.withDescription("With --store postgres: the database, postgres://user:password@host:5432/db (or EFFECT_AGENT_DATABASE_URL)")
  )
}

/** Where sessions are stored. */
export interface Storage {
  readonly dataDir: string
  readonly store: "jsonl" | "sqlite" | "postgres"
  readonly databaseUrl?: Option.Option<Redacted.Redacted>
}

/**
 * The storage flags of a command printed for the user to run again on the same store (`rewind`'s
 * "brings it back"), as a POSIX shell reads them: `flags` to put after the command — `--data-dir`
 * unless it is the default, `--store` unless it is `jsonl` — and `after`, what to say after the
 * command. A database URL holds a password and is never printed: `after` asks for the same one.
 */
export const storageFlags = ({ dataDir, store }: Storage): { readonly flags: string; readonly after: string } => ({
  flags: `${dataDir === defaultDataDir ? "" : ` --data-dir ${shellWord(dataDir)}`}${store === "jsonl" ? "" : ` --store ${store}`}`,
  after: store === "postgres" ? " (with the same --database-url or EFFECT_AGENT_DATABASE_URL)" : ""
})

/** A word as a POSIX shell reads it back: as it is when it is plain, else in single quotes. */
const shellWord = (word: string): string => /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`

/** Where the options' sessions are, for messages: the data dir or database file, never a database URL. */
export const storeName = ({ dataDir, store }: Storage): string =>
  store === "postgres" ? "the PostgreSQL database" : store === "sqlite" ? `${dataDir}/effect-agent.sqlite` : dataDir

/**
 * `--network`: commands in the sandbox may use the network. A flag only the user types: a project's
 * settings file cannot turn it on.
 */
export const sandbox = {
  network: Options.boolean("network").pipe(
    Options.withDescription("Let shell commands use the network (by default, in the Linux sandbox, they have loopback only)")
  )
}

/**
 * `--no-instructions`: the prompt leaves out the project's `AGENTS.md` / `CLAUDE.md` files and the
 * user's own `<config dir>/AGENTS.md` (as `"instructions": false` in the user's settings does).
 */
export const instructions = {
  noInstructions: Options.boolean("no-instructions").pipe(
    Options.withDescription("Leave the project's AGENTS.md / CLAUDE.md and your own AGENTS.md (in the config folder) out of the prompt")
  )
}

/** The user's own instructions file, in the config folder. */
export const userInstructionsFile = "AGENTS.md"

/** The prompt composer of a command: the instructions files unless the flag or the user's settings turn them off. */
export const composerOptions = (
  noInstructions: boolean,
  user: ProjectSettings.UserFile | undefined,
  configDir: string
): PromptComposer.Options =>
  noInstructions || user?.instructions === false
    ? { projectInstructions: false }
    : { projectInstructions: { userFile: path.join(configDir, userInstructionsFile) } }

/** The engine's options from the user's own settings: what turns cost (`prices`, over the built-in table). */
export const engineOptions = (user: ProjectSettings.UserFile | undefined): SessionEngine.Options =>
  user?.prices === undefined ? {} : { prices: user.prices }

/**
 * `--allow-private-network`: `web_fetch` may connect to private, loopback and link-local addresses
 * (a local dev server, the intranet). A flag only the user types.
 */
export const web = {
  allowPrivateNetwork: Options.boolean("allow-private-network").pipe(
    Options.withDescription("Let web_fetch reach private, loopback and link-local addresses (by default it reaches public addresses only)")
  )
}

/** What the tools of a command take from its flags: the network switch, and the data folder kept from commands. */
export const toolOptions = (options: { readonly network: boolean; readonly dataDir: string }): WorkspaceTools.Options => ({
  network: options.network,
  hiddenPaths: [path.resolve(options.dataDir)]
})

/**
 * Every permission mode, in the order `--help` lists them: `PermissionPolicy.Mode`'s literals, written
 * out so that the command tree loads without the library (as a `Record`, the type checker holds
 * them to the type: none missing, none extra).
 */
const modes: Record<PermissionPolicy.Mode, null> = { default: null, acceptEdits: null, readOnly: null, bypass: null }

/** `--mode`; without it, the mode of the user's settings, else of a trusted `.effect-agent/settings.json`, else `default` (see `ProjectSettings`). */
export const mode = (description: string) => Help.choice("mode", Object.keys(modes) as Array<PermissionPolicy.Mode>).pipe(Options.optional, Options.withDescription(description))

/** `--mcp-config <file>`: MCP servers for this run (they win over the user's mcp.json and a trusted .mcp.json; see `McpSettings`). */
export const mcpConfig = Help.existingFile("mcp-config").pipe(
  Options.optional,
  Options.withDescription(
    "MCP servers for this run: a JSON file {\"mcpServers\": {\"<name>\": {\"command\", \"args\", \"env\"} | {\"url\", \"headers\"}}}; their tools are mcp__<name>__<tool> and ask before they run"
  )
)

/** `--allow` / `--deny` rules, before the rules of the user's and the project's settings (see Settings.ts). */
export const rules = {
  allow: Options.text("allow").pipe(
    Options.repeated,
    Options.withDescription(
      "Allow calls without asking: tool or tool:pattern, repeatable. shell:<command glob> (e.g. 'shell:npm test'), <file tool>:<path glob> (e.g. 'edit_file:src/**'), or a tool name (e.g. grep)"
    )
  ),
  deny: Options.text("deny").pipe(
    Options.repeated,
    Options.withDescription("Deny calls, same syntax as --allow (e.g. 'shell:git push*'); a matching deny always wins")
  )
}

/** `serve --cluster` and the runner's flags (see src/cluster/Runner.ts). */
export const cluster = {
  cluster: Options.boolean("cluster").pipe(
    Options.withDescription("Run as a runner of a cluster on PostgreSQL (needs --store postgres): sessions are shared out among the runners")
  ),
  runnerHost: Options.text("runner-host").pipe(
    Options.withDefault("127.0.0.1"),
    Options.withDescription("With --cluster: the address other runners reach this one at, and listen on (default 127.0.0.1: this machine only)")
  ),
  runnerListen: Options.text("runner-listen").pipe(
    Options.optional,
    Options.withDescription(
      "With --cluster: the address the runners' port listens on (default: --runner-host). The port checks the cluster secret, and has TLS only with --runner-tls-*: a wildcard (0.0.0.0, ::) needs --runner-listen-wildcard"
    )
  ),
  runnerListenWildcard: Options.boolean("runner-listen-wildcard").pipe(
    Options.withDescription("With --cluster: allow --runner-listen on every interface (0.0.0.0, ::), when a firewall keeps the port to the runners")
  ),
  sessionIdleTimeout: Help.number("session-idle-timeout", "integer").pipe(
    Options.withDefault(300),
    Options.withDescription("With --cluster: seconds an idle session stays loaded on its runner (default 300); a working session stays")
  ),
  runnerPort: Help.number("runner-port", "integer").pipe(
    Options.withDefault(34431),
    Options.withDescription("With --cluster: the port of the runners' traffic (default 34431)")
  ),
  shardsPerGroup: Help.number("shards-per-group", "integer").pipe(
    Options.withDefault(300),
    Options.withDescription("With --cluster: how many shards sessions are spread over; the same on every runner (default 300)")
  ),
  shardLockTtl: Help.number("shard-lock-ttl", "integer").pipe(
    Options.withDefault(35),
    Options.withDescription("With --cluster: seconds a dead runner's sessions wait before another runner takes them (default 35)")
  ),
  runnerTlsCert: Options.text("runner-tls-cert").pipe(
    Options.optional,
    Options.withDescription(
      "With --cluster: this runner's TLS certificate (PEM) for the runners' port, naming its --runner-host (IP or DNS SAN). With --runner-tls-key and --runner-tls-ca: mutual TLS between runners (all three or none)"
    )
  ),
  runnerTlsKey: Options.text("runner-tls-key").pipe(
    Options.optional,
    Options.withDescription("With --cluster: the private key (PEM) of --runner-tls-cert; the file must not be readable by every user")
  ),
  runnerTlsCa: Options.text("runner-tls-ca").pipe(
    Options.optional,
    Options.withDescription("With --cluster: the cluster CA's certificate (PEM): the runners' certificates are checked against it only")
  ),
  clusterDatabaseUrl: Options.redacted("cluster-database-url").pipe(
    Options.withPseudoName("url"),
    Options.optional,
    Options.withDescription("With --cluster: the database of shard locks and runners (default: the store's --database-url)")
  )
}

/** The subagent flags: the `task` tool, and one budget for a turn and the subagents it starts. */
export const subagents = {
  subagents: Options.boolean("subagents").pipe(
    Options.withDescription("Offer the task tool: the model may start subagents (child sessions with their own logs, in this directory or one inside it, with these tools or fewer, never wider permissions; nested at most 2 deep)")
  ),
  maxCost: Help.number("max-cost", "float").pipe(
    Options.optional,
    Options.withDescription("Stop a turn and its subagents once they have cost more than this many US dollars (turn.completed errorCode budget_exceeded)")
  ),
  maxTokens: Help.number("max-tokens", "integer").pipe(
    Options.optional,
    Options.withDescription("Stop a turn and its subagents once they have used more than this many tokens, input (with cache reads and writes) plus output")
  ),
  maxSteps: Help.number("max-steps", "integer").pipe(
    Options.optional,
    Options.withDescription("Stop a turn and its subagents once they have made this many model requests together (turn.completed errorCode budget_exceeded)")
  ),
  maxSubagents: Help.number("max-subagents", "integer").pipe(
    Options.optional,
    Options.withDescription("How many subagents one turn may start in all, at any depth; past it a task call fails subagents_exceeded (default 100)")
  )
}

/** What the subagent flags hold. */
export interface Subagents {
  readonly subagents?: boolean | undefined
  readonly maxCost?: Option.Option<number> | undefined
  readonly maxTokens?: Option.Option<number> | undefined
  readonly maxSteps?: Option.Option<number> | undefined
  readonly maxSubagents?: Option.Option<number> | undefined
}

/** The limit flags, by their name on the command line. */
const limits = { maxCost: "--max-cost", maxTokens: "--max-tokens", maxSteps: "--max-steps", maxSubagents: "--max-subagents" } as const

/**
 * The engine's options with the tree limits of the flags: `budget` (`--max-cost`, `--max-tokens`,
 * `--max-steps`) and `maxSubagents`; a limit that is not positive is refused, naming its flag.
 */
export const limitedBy = (options: SessionEngine.Options, flags: Subagents): Effect.Effect<SessionEngine.Options, CliError> => {
  const given: { -readonly [K in keyof typeof limits]?: number } = {}
  for (const key of Object.keys(limits) as Array<keyof typeof limits>) {
    const value = flags[key] === undefined ? undefined : Option.getOrUndefined(flags[key])
    if (value === undefined) continue
    if (!(value > 0)) return Effect.fail(new CliError({ reason: "invalid_arguments", message: `${limits[key]} takes a positive number, not ${value}` }))
    given[key] = value
  }
  const { maxSubagents, ...budget } = given
  return Effect.succeed({
    ...options,
    ...(Object.keys(budget).length === 0 ? {} : { budget }),
    ...(maxSubagents === undefined ? {} : { maxSubagents })
  })
}
