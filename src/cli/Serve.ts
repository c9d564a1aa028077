/**
 * `effect-agent serve`: the HTTP + SSE API and the web session viewer (CONTRACT.md §7.1, §7.3) on
 * 127.0.0.1 (by default). The model, the store and the permissions come from the same flags and
 * environment as `run`: each session follows `--mode`, `--allow`, `--deny`, the user's own settings
 * and then the project settings of its own cwd as far as the user trusts them (`ProjectSettings`;
 * read again when one of their files changed, checked at each decision; settings that cannot be read
 * make every call of their sessions ask, but what `--deny` names). The commands' environment (`env`
 * of the settings) is the one of the directory `serve` starts in, which is also the cwd of new
 * sessions that name none, checked again before each command (`perCwd`).
 *
 * The token is `EFFECT_AGENT_TOKEN`, else a random one for this start; either way it is printed
 * once to stderr with a one-time URL that opens the viewer (it sets the viewer's cookie, a secret
 * derived from the token, and hands the page its key: see `Security`).
 *
 * With `--cluster` (and `--store postgres`) the process is a runner of a cluster on the database
 * (CONTRACT.md §9, src/cluster/, docs/scaling.md): each session is driven by the runner that owns
 * it, and this server sends what changes a session there; a runner with other shard settings
 * refuses to start. The store and the cluster share one connection pool when they share the
 * database. A connection to the runners' port must prove it knows the cluster secret (the cluster
 * database's, or `EFFECT_AGENT_CLUSTER_SECRET`); the runners' traffic is encrypted only with
 * `--runner-tls-cert`, `--runner-tls-key` and `--runner-tls-ca` (mutual TLS with a cluster CA,
 * `RunnerTlsFiles`). The port listens where other runners reach it (`--runner-host`) or at
 * `--runner-listen`, never on every interface without `--runner-listen-wildcard`.
 *
 * @since 0.2.0
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Config from "effect/Config"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Duration from "effect/Duration"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import * as NodeFs from "node:fs/promises"
import { isIP } from "node:net"
import * as NodePath from "node:path"
import { type BlobStore, type EventStore, IdGenerator, type McpConfig, PermissionEngine, PermissionPolicy, PreImages, ProjectSettings, PromptComposer, SessionEngine, TaskTool, TrustStore } from "../index.js"
import { CliError } from "./CliError.js"
import * as ExitCode from "./ExitCode.js"
import { toolsLayer } from "./Engine.js"
import * as FlagLayers from "./FlagLayers.js"
import * as Flags from "./Flags.js"
import * as McpServers from "./McpServers.js"
import * as Models from "./Models.js"
import type * as Policy from "./Policy.js"
import * as RunnerTlsFiles from "./RunnerTlsFiles.js"
import * as ServerRestores from "./ServerRestores.js"
import * as SessionMcpFile from "./SessionMcpFile.js"
import * as Settings from "./Settings.js"
import type { Input } from "./commands/Serve.js"

/**
 * The most sessions whose own MCP servers (those their `POST /sessions` named) run at once: past it
 * the least recently used session's stop, and start again before its next turn (`ServerRestores`).
 */
const keptSessionServers = 16

/**
 * The policy of each session from its cwd's settings (and the flags), as `run` decides for its one
 * session; ones that cannot be loaded make their sessions' calls ask, except a call the flags or
 * your own settings deny (a `--deny` is the operator's word, whatever a project file holds). A subagent's session, whose cwd
 * may be a folder inside its parent's, follows the settings of the top session of its tree
 * (`topSession`), as `run`'s one policy serves its subagents.
 *
 * Settings are kept per cwd and loaded again when a file they come from changed (`settingsStamp`),
 * checked at each decision. Before, they were loaded once per cwd for the server's life: a rule you
 * added to your own `settings.json`, or `effect-agent trust --revoke`, changed nothing in a running
 * `serve` (its sessions kept editing without asking), and every cwd a client named stayed in memory.
 * At most {@link keptCwds} are kept, the least recently loaded let go (loaded again when asked).
 *
 * The commands' environment (`env`) is the start folder's settings', checked the same way when a
 * `shell` call is inspected, again as its command starts, and before MCP servers start (`envNow`):
 * a revoke or an edit reaches the next command, not only the rules (review 44), and a command
 * approved after one runs without what it took away (leftovers 42). Settings of the start folder that cannot be
 * loaded add nothing to it.
 */
const perCwd = (
  serverCwd: string,
  server: { readonly loaded: ProjectSettings.Loaded; readonly stamp: string },
  flags: Parameters<typeof Settings.load>[1],
  configDir: string
) => {
  /** A cwd's settings as loaded; `readable: false` with only what still denies (the flags', your own file's). */
  type Kept = { readonly options: PermissionPolicy.Options; readonly readable: boolean; readonly env: Policy.Env; readonly userEnv: Policy.Env; readonly stamp: string }
  const known = new Map<string, Kept>([[serverCwd, { options: server.loaded.policy, readable: true, env: server.loaded.env, userEnv: server.loaded.userEnv, stamp: server.stamp }]])
  const keptOf = (cwd: string): Effect.Effect<Kept> =>
    Effect.flatMap(settingsStamp(configDir, cwd), (stamp) => {
      const kept = known.get(cwd)
      if (kept?.stamp === stamp) return Effect.succeed(kept)
      return Settings.load(cwd, flags, { prefix: "effect-agent serve:" }).pipe(
        Effect.map((loaded): Kept => ({ options: loaded.policy, readable: true, env: loaded.env, userEnv: loaded.userEnv, stamp })),
        Effect.tapError((error) => Console.error(`effect-agent serve: ${error.message}; calls in sessions of ${cwd} will ask`)),
        Effect.orElse(() => Effect.map(stillDenying, (options): Kept => ({ options, readable: false, env: {}, userEnv: {}, stamp }))),
        Effect.tap((next) =>
          Effect.sync(() => {
            known.delete(cwd)
            if (known.size >= keptCwds) known.delete(known.keys().next().value!)
            known.set(cwd, next)
          })
        ),
        Effect.provide(NodeContext.layer)
      )
    })
  const envNow: Effect.Effect<Policy.Env> = Effect.map(keptOf(serverCwd), (kept) => kept.env)
  /**
   * A session's MCP servers (`McpServers.StartOptions`): its trusted project's own get the env of the
   * session's cwd (your settings' and that project's), the rest your settings' alone. Before, every
   * session's project servers got the env of the folder `serve` started in: another project's values,
   * and not their own. A session cwd whose settings cannot be read adds nothing to yours.
   */
  const serversEnvFor = (cwd: string) =>
    Effect.zipWith(keptOf(serverCwd), keptOf(cwd), (server, session) => ({ env: session.readable ? session.env : server.userEnv, userEnv: server.userEnv }))
  // When a cwd's settings cannot be loaded (its project file is invalid, say), what still denies: the
  // flags, and your own file when it can be read. Its calls ask, but one of those denies is denied.
  const stillDenying = ProjectSettings.readUser(configDir).pipe(
    Effect.orElseSucceed(() => undefined),
    Effect.map((user): PermissionPolicy.Options => ({ mode: flags.mode ?? user?.mode ?? "default", rules: [...flags.rules, ...(user?.rules ?? [])] })),
    Effect.provide(NodeContext.layer)
  )
  const unreadable = (denying: PermissionPolicy.Options, request: PermissionEngine.PermissionRequest): PermissionEngine.PermissionDecision => {
    const denied = PermissionPolicy.decide(denying, request)
    return denied.decision === "deny"
      ? denied
      : { decision: "ask", policy: "settings/unreadable", reason: "the settings file of the session's cwd cannot be read" }
  }
  const cwdOf = (request: PermissionEngine.PermissionRequest) => request.topSession?.cwd ?? request.cwd
  return {
    envNow,
    serversEnvFor,
    layer: Layer.succeed(PermissionEngine.PermissionEngine, {
      decide: (request) =>
        Effect.gen(function*() {
          const cwd = cwdOf(request)
          const kept = yield* keptOf(cwd)
          return kept.readable ? PermissionPolicy.decide(kept.options, request) : unreadable(kept.options, request)
        }),
      // The grep tool's walk leaves out what the rules of the session's cwd fence, as `run`'s does. A
      // call's decision loads them first; a cwd whose rules are not known here (unreadable, or a call
      // approved before a restart) has every path left out: no rule of it is known not to fence.
      fence: (request) => {
        const kept = known.get(cwdOf(request))
        return kept?.readable !== true ? leaveOutAll : PermissionPolicy.fence(kept.options, request)
      }
    })
  }
}

/** The most cwds whose settings `serve` keeps loaded. */
const keptCwds = 256

/**
 * What the files a cwd's settings come from are now — the user's `settings.json`, the trust store,
 * the project's `.effect-agent/settings.json` — by inode, size and times (links followed): an edit,
 * a replacement or a removal of any changes it. Three `stat`s, no read.
 */
const settingsStamp = (configDir: string, cwd: string): Effect.Effect<string> =>
  Effect.promise(() =>
    Promise.all(
      [NodePath.join(configDir, ProjectSettings.userFileName), NodePath.join(configDir, TrustStore.fileName), NodePath.join(cwd, ProjectSettings.relativePath)].map((file) =>
        NodeFs.stat(file).then((info) => `${info.ino}:${info.size}:${info.mtimeMs}:${info.ctimeMs}`, () => "-")
      )
    ).then((stamps) => stamps.join(" "))
  )

const leaveOutAll = () => true

const isLoopback = (address: string) => address === "localhost" || address === "::1" || address.startsWith("127.")
const isUnspecified = (address: string) => address === "0.0.0.0" || address === "::" || address === "[::]" || address === ""

/**
 * Fault injection for tests (`EFFECT_AGENT_TEST_KILL_AFTER_STORED=FollowUp,ResolvePermission,Steer`):
 * the runner kills itself (SIGKILL, as a crash) once such a message is in the log and before it
 * answers, so a test sees the message delivered again to the next owner. Unset in any real use.
 */
const killAfterStored = (): ((message: string) => Effect.Effect<void>) | undefined => {
  const listed = process.env["EFFECT_AGENT_TEST_KILL_AFTER_STORED"]
  if (listed === undefined || listed === "") return undefined
  const messages = new Set(listed.split(","))
  return (message) =>
    messages.has(message)
      ? Effect.zipRight(
        Console.error(`effect-agent serve: test fault: killed after storing ${message}`),
        Effect.sync(() => process.kill(process.pid, "SIGKILL"))
      )
      : Effect.void
}

/**
 * The cluster secret an operator gives, `EFFECT_AGENT_CLUSTER_SECRET` (the same on every runner; at
 * least 16 characters, checked by the runner): else the runners share the cluster database's.
 */
const clusterSecretFromEnv = Config.option(Config.redacted("EFFECT_AGENT_CLUSTER_SECRET")).pipe(
  Effect.map(Option.getOrUndefined),
  Effect.mapError(() => new CliError({ reason: "invalid_arguments", message: "EFFECT_AGENT_CLUSTER_SECRET could not be read" }))
)

/** `--cluster`'s runner options, checked; the cluster's database is the store's unless given. */
const clusterOptions = (flags: {
  readonly clusterDatabaseUrl: Option.Option<Redacted.Redacted>
  readonly runnerHost: string
  readonly runnerListen: Option.Option<string>
  readonly runnerListenWildcard: boolean
  readonly runnerPort: number
  readonly runnerTlsCert: Option.Option<string>
  readonly runnerTlsKey: Option.Option<string>
  readonly runnerTlsCa: Option.Option<string>
  readonly sessionIdleTimeout: number
  readonly shardLockTtl: number
  readonly shardsPerGroup: number
  readonly store: string
  readonly databaseUrl?: Option.Option<Redacted.Redacted>
}) =>
  Effect.gen(function*() {
    const invalid = (message: string) => new CliError({ reason: "invalid_arguments", message })
    if (flags.store !== "postgres") return yield* invalid("--cluster needs --store postgres: every runner reads and writes the same sessions")
    // Other runners dial this address: a wildcard is where to listen, not where to be reached.
    if (isUnspecified(flags.runnerHost)) {
      return yield* invalid(`--runner-host ${flags.runnerHost} is not an address other runners can reach: give this machine's address on the runners' private network`)
    }
    const listen = Option.getOrUndefined(flags.runnerListen)
    const tls = yield* RunnerTlsFiles.load(flags)
    // Checked here, before the runner connects anywhere, by the runner's own check: a refusal names the flag.
    if (tls !== undefined) {
      yield* Effect.flatMap(loadCluster, (cluster) => cluster.RunnerTls.check(tls)).pipe(
        Effect.catchTag("InvalidTls", (error) => Effect.fail(RunnerTlsFiles.refusal(error)))
      )
    }
    // Rotated files (cert-manager, certbot) are read again on SIGHUP or when they change: the
    // runner's new connections, both ways, use them; no restart.
    const reloading = tls === undefined ? undefined : (yield* loadCluster).RunnerTls.reloadable(tls)
    if (reloading !== undefined) yield* Effect.forkScoped(RunnerTlsFiles.watch(flags, reloading.replace))
    // Every interface is a choice made on purpose, with a firewall: without TLS the runners' traffic
    // is readable there, and with it strangers still reach the handshakes.
    if (listen !== undefined && isUnspecified(listen) && !flags.runnerListenWildcard) {
      return yield* invalid(
        tls === undefined
          ? `--runner-listen ${listen} listens on every interface, and the runners' traffic is not encrypted (no TLS): give the address of the runners' private network, or add --runner-listen-wildcard if a firewall keeps the port to the runners (see docs/scaling.md)`
          : `--runner-listen ${listen} listens on every interface: give the address of the runners' network, or add --runner-listen-wildcard if a firewall keeps the port to the runners (see docs/scaling.md)`
      )
    }
    if (flags.runnerPort < 1 || flags.runnerPort > 65535) return yield* invalid(`--runner-port ${flags.runnerPort} is not a port (1-65535)`)
    if (flags.sessionIdleTimeout < 1) return yield* invalid(`--session-idle-timeout ${flags.sessionIdleTimeout} must be at least 1 (seconds)`)
    if (flags.shardsPerGroup < 1) return yield* invalid(`--shards-per-group ${flags.shardsPerGroup} must be at least 1`)
    if (flags.shardLockTtl < 1) return yield* invalid(`--shard-lock-ttl ${flags.shardLockTtl} must be at least 1 (seconds)`)
    const databaseUrl = Option.orElse(flags.clusterDatabaseUrl, () => flags.databaseUrl ?? Option.none())
    if (Option.isNone(databaseUrl)) return yield* invalid("--cluster needs --database-url (or EFFECT_AGENT_DATABASE_URL, or --cluster-database-url)")
    const lease = yield* FlagLayers.leaseTtl
    const clusterSecret = yield* clusterSecretFromEnv
    const fault = killAfterStored()
    return {
      databaseUrl: databaseUrl.value,
      // The store's database: the runner and the store share one pool of connections to it.
      sharedWithStore: Option.isNone(flags.clusterDatabaseUrl),
      lease,
      ...(listen === undefined ? {} : { listenHost: listen }),
      maxIdleTime: Duration.seconds(flags.sessionIdleTimeout),
      ...(fault === undefined ? {} : { afterStored: fault }),
      // A dead runner's writer leases outlive it by their ttl: its sessions' next owner waits that out.
      ...("writerLease" in lease ? { leaseWait: Duration.sum(lease.writerLease.ttl, Duration.seconds(10)) } : {}),
      host: flags.runnerHost,
      port: flags.runnerPort,
      ...(clusterSecret === undefined ? {} : { clusterSecret }),
      ...(reloading === undefined ? {} : { tls: reloading }),
      shardsPerGroup: flags.shardsPerGroup,
      shardLockTtl: Duration.seconds(flags.shardLockTtl),
      // Which runner drives which session, for operators (and tests): one line when a session arrives.
      onOwned: (sessionId: string) => Console.error(`effect-agent serve: session ${sessionId} is driven by this runner`)
    }
  })

/** Connections of the pool a runner shares with its store: the store's default and the cluster's few. */
const sharedPoolSize = 12

/** The cluster's code, loaded only by `serve --cluster`. */
const loadCluster = Effect.tryPromise({ try: () => import("../cluster.js"), catch: (error) => error }).pipe(
  // A missing optional package is the user's to install; any other failure to load is a defect.
  Effect.catchAll((error) =>
    (error as { readonly code?: unknown }).code === "ERR_MODULE_NOT_FOUND"
      ? Effect.fail(
        new CliError({
          reason: "missing_package",
          message:
            "--cluster needs the optional packages @effect/cluster, @effect/rpc, @effect/workflow and @effect/sql-pg: npm install @effect/cluster @effect/rpc @effect/workflow @effect/sql-pg"
        })
      )
      : Effect.die(error)
  )
)

/** `serve`. */
/**
 * Why the server could not listen, and what to do: @effect/platform's `ServeError` carries no message
 * of its own (the CLI printed "effect-agent: " alone), only node's error as its cause.
 */
const listenFailed = (host: string, port: number, cause: unknown): string => {
  const code = typeof cause === "object" && cause !== null ? (cause as { readonly code?: unknown }).code : undefined
  if (code === "EADDRINUSE") {
    return `port ${port} on ${host} is in use (another effect-agent serve?): stop that one, or pick another port with --port (--port 0 takes a free one)`
  }
  if (code === "EACCES") return `port ${port} on ${host} needs privileges to listen on: pick one above 1023 with --port`
  if (code === "EADDRNOTAVAIL") return `${host} is no address of this machine: give one of its own with --host`
  return `could not listen on ${host}:${port} (${cause instanceof Error ? cause.message : String(cause)})`
}

export const handler = ({ allow, allowedHost, cluster, clusterDatabaseUrl, deny, host, mode, noInstructions, port, runnerHost, runnerListen, runnerListenWildcard, runnerPort, runnerTlsCa, runnerTlsCert, runnerTlsKey, sessionIdleTimeout, shardLockTtl, shardsPerGroup, ...options }: Input) =>
  Effect.gen(function*() {
    if (port < 0 || port > 65535) return yield* new CliError({ reason: "invalid_arguments", message: `--port ${port} is not a port (0-65535)` })
    // A server's normal stop: exit 0 once the shutdown is done.
    yield* ExitCode.sigtermStopsCleanly
    const runner = cluster
      ? yield* clusterOptions({ clusterDatabaseUrl, runnerHost, runnerListen, runnerListenWildcard, runnerPort, runnerTlsCa, runnerTlsCert, runnerTlsKey, sessionIdleTimeout, shardLockTtl, shardsPerGroup, ...options })
      : undefined
    const cwd = process.cwd()
    const flags = { mode: Option.getOrUndefined(mode), rules: yield* Settings.parseFlags({ allow, deny }), dataDir: options.dataDir }
    // Stamped before it is read: an edit meanwhile loads it again at the first decision.
    const configDir = yield* TrustStore.configDir
    const stamp = yield* settingsStamp(configDir, cwd)
    const loaded = yield* Settings.load(cwd, flags).pipe(Effect.provide(NodeContext.layer))
    const permissions = perCwd(cwd, { loaded, stamp }, flags, configDir)
    // Which model answers is a line of the start banner, with the address and the token, not a
    // notice of its own printed before the server is up (docs/server.md).
    const { layer: model, model: answering } = yield* Models.chosen(options)
    const engineOptions = yield* Flags.limitedBy(Flags.engineOptions(loaded.user), options)
    // Loaded only here: the HTTP stack costs start-up time for every other command.
    const { EventLoop, Security, Server, ServerConfig } = yield* Effect.promise(() => import("../server.js"))
    const fromEnv = process.env["EFFECT_AGENT_TOKEN"]
    // A token the user chose is the server's only guard against guessing (the bearer header is not
    // rate limited): one weaker than `Security.minTokenBits` is refused.
    if (fromEnv !== undefined && fromEnv !== "" && Security.tokenBits(fromEnv) < Security.minTokenBits) {
      return yield* new CliError({
        reason: "invalid_arguments",
        message: `EFFECT_AGENT_TOKEN is too weak to guard the server (about ${Security.tokenBits(fromEnv)} bits, at least ${Security.minTokenBits}: e.g. 22 random letters and digits, or \`openssl rand -base64 32\`); leave it unset for a random token each start`
      })
    }
    const token = fromEnv !== undefined && fromEnv !== "" ? fromEnv : Security.randomToken()
    // `--host` given as a name (not an address) is a name clients use: allowed too.
    // A session's MCP servers (named in POST /sessions, the user's mcp.json, a trusted .mcp.json of
    // its cwd) run in this process: with --cluster another runner may drive the session, so there a body naming servers is refused.
    const mcp = McpServers.configurable({ maxSessionsWithServers: keptSessionServers })
    const tools = mcp.layer.pipe(Layer.provide(toolsLayer({ envNow: permissions.envNow, ...Flags.toolOptions(options) }, options)))
    const startFor = (session: { readonly sessionId: string; readonly cwd: string }, servers: McpConfig.Servers) =>
      Effect.flatMap(permissions.serversEnvFor(session.cwd), (env) => mcp.configureSession(session.sessionId, session.cwd, servers, { ...env, prefix: "effect-agent serve:" }))
    // Started before the session is created (a server that cannot start refuses it, nothing stored);
    // the servers a body named are kept outside the log (SessionMcpFile: the config folder, mode
    // 0600), so that after a restart the session's next turn starts them again.
    const sessionServers = (sessionCwd: string, servers: McpConfig.Servers) =>
      Effect.flatMap(permissions.serversEnvFor(sessionCwd), (env) => mcp.startForSession(sessionCwd, servers, { ...env, prefix: "effect-agent serve:" })).pipe(
        Effect.map((pending) => ({
          discard: pending.discard,
          bind: (sessionId: string) =>
            pending.bind(sessionId).pipe(
              Effect.zipRight(SessionMcpFile.save(loaded.configDir, sessionId, servers).pipe(
                Effect.catchAll((error) => Console.error(`effect-agent serve: session ${sessionId}'s MCP servers could not be kept (${error.message}); after a restart it starts without them`))
              )),
              Effect.provide(NodeContext.layer)
            )
        })),
        Effect.provide(NodeContext.layer)
      )
    // One restore per session at a time: a follow-up racing a turn waits for the turn's (ServerRestores).
    const restoreServers = ServerRestores.oncePerSession({
      has: mcp.hasSession,
      restore: (session) =>
        Effect.gen(function*() {
          // A session that named none has its cwd's shared servers, as a new one has.
          const kept = yield* SessionMcpFile.load(loaded.configDir, session.sessionId)
          yield* startFor(session, Option.getOrElse(kept, () => ({}))).pipe(
            Effect.zipRight(Option.isNone(kept) ? Effect.void : Console.error(`effect-agent serve: session ${session.sessionId}: its MCP servers (${Object.keys(kept.value).join(", ")}) started again`)),
            Effect.catchAll((error) => Console.error(`effect-agent serve: session ${session.sessionId}: its MCP servers did not start again: ${error.message}`))
          )
        }).pipe(Effect.provide(NodeContext.layer))
    })
    const config = ServerConfig.make({
      token,
      defaultCwd: cwd,
      allowedHosts: isIP(host) === 0 ? [...allowedHost, host] : allowedHost,
      sessionServers: runner === undefined ? sessionServers : undefined,
      restoreServers: runner === undefined ? restoreServers : undefined
    })
    const ports = <A, E, R, E2>(layer: Layer.Layer<A, E, R>, store: Layer.Layer<EventStore.EventStore | BlobStore.BlobStore, E2, NodeContext.NodeContext>) => layer.pipe(
      // Workspace checkpoints beside the store: a rewind restores the files tool calls changed.
      Layer.provide(PreImages.layer().pipe(Layer.provideMerge(store))),
      Layer.provide(model),
      Layer.provide(IdGenerator.layer),
      Layer.provide(options.subagents ? TaskTool.layer.pipe(Layer.provide(tools)) : tools),
      Layer.provide(permissions.layer),
      Layer.provide(PromptComposer.layer(Flags.composerOptions(noInstructions, loaded.user, loaded.configDir))),
      Layer.provide(NodeContext.layer)
    )
    // A runner routes each session's writes to the runner that owns it; alone, the engine is here.
    const { engine, turns } = runner === undefined
      ? { engine: ports(SessionEngine.layer(engineOptions), FlagLayers.storeLayer(options)), turns: undefined }
      : yield* Effect.gen(function*() {
        const { Engines, Runner } = yield* loadCluster
        // Built in the command's scope: the runner leaves the cluster when `serve` stops.
        if (!runner.sharedWithStore) {
          const built = Layer.succeedContext(yield* Layer.build(Runner.layer(runner).pipe(Layer.provide(ports(Engines.layer(engineOptions), FlagLayers.storeLayer(options))))))
          return { engine: built, turns: built }
        }
        // One pool of connections for the store and the cluster on the same database.
        const { PostgresEventStore } = yield* Effect.promise(() => import("../postgres.js"))
        const pool = Layer.succeedContext(yield* Layer.build(Runner.client({ ...runner, maxConnections: sharedPoolSize })))
        const store = PostgresEventStore.layerFromClient({ where: PostgresEventStore.describeUrl(runner.databaseUrl), ...runner.lease }).pipe(Layer.provide(pool))
        const built = Layer.succeedContext(yield* Layer.build(Runner.layerWithClient(runner).pipe(Layer.provide(ports(Engines.layer(engineOptions), store)), Layer.provide(pool))))
        return { engine: built, turns: built }
      })
    yield* Effect.gen(function*() {
      const url = yield* Server.url
      const lines = [
        `effect-agent serve: listening on ${url} (sessions in ${options.store === "postgres" ? "postgresql" : options.dataDir})`,
        `  model: ${answering}`,
        fromEnv !== undefined && fromEnv !== "" ? "  token: from EFFECT_AGENT_TOKEN" : `  token: ${token}`,
        `  viewer (this URL works once, within 10 minutes): ${url}/login?code=${yield* config.loginCodes.issueNow}`
      ]
      if (runner !== undefined) {
        const listening = runner.listenHost ?? runner.host
        const tls = "tls" in runner
        lines.push(
          `  cluster runner: ${runner.host}:${runner.port}${listening === runner.host ? "" : ` (listening on ${listening})`} (${runner.shardsPerGroup} shards per group; cluster secret from ${runner.clusterSecret === undefined ? "the cluster database" : "EFFECT_AGENT_CLUSTER_SECRET"}) ${tls ? "over TLS (mutual, certificates of the cluster CA)" : "without TLS"}`
        )
        if (!isLoopback(listening)) {
          lines.push(
            tls
              ? `  the runners' port ${listening}:${runner.port} is on the network; its traffic is encrypted (TLS) and only runners with a certificate of the cluster CA get past its handshake (docs/scaling.md)`
              : `  warning: the runners' port ${listening}:${runner.port} has no TLS: whoever reads the network reads the runners' traffic; keep it on a network only the runners share, or give it --runner-tls-cert, --runner-tls-key and --runner-tls-ca (docs/scaling.md)`
          )
        }
      }
      if (!isLoopback(host)) lines.push(`  warning: listening on ${host}: other machines can reach this server; anyone with the token drives the agent`)
      yield* Console.error(lines.join("\n"))
      return yield* Effect.never.pipe(
        // Said before the shutdown runs (running turns are cancelled and closed in the log, paused ones stay paused).
        Effect.onInterrupt(() => Console.error("effect-agent serve: shutting down (a second signal stops it at once)"))
      )
    }).pipe(
      Effect.provide(Server.serve(config, { host, port }, turns).pipe(Layer.provide(engine))),
      Effect.catchTag("ServeError", (error) => new CliError({ reason: "invalid_arguments", message: listenFailed(host, port, error.cause) })),
      // The server, its handlers and (without --cluster) the engine's turns: /healthz answers while a hundred clients are fed.
      EventLoop.sliced(EventLoop.defaultSliceMs, Server.servesHealth, Server.connectionsArriving, Server.connectionsAccepted)
    )
  }).pipe(Effect.scoped)
