/**
 * `effect-agent acp`: the agent as an Agent Client Protocol server on stdin/stdout, for editors such
 * as Zed. The model and the store come from the same flags and environment as `run`, and so do the
 * permissions: `--mode`, `--allow`, `--deny` and the settings file of each session's cwd (read when
 * the session is opened). The editor can switch a session's mode (`session/set_mode`).
 *
 * @since 0.1.0
 */
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { IdGenerator, JsonlEventStore, PermissionPolicy, PromptComposer, SessionEngine, WorkspaceTools } from "../index.js"
import * as Models from "./Models.js"
import * as Policy from "./Policy.js"
import * as Settings from "./Settings.js"

const storage = {
  dataDir: Options.directory("data-dir").pipe(
    Options.withDefault(".effect-agent"),
    Options.withDescription("Where sessions are stored")
  ),
  store: Options.choice("store", ["jsonl", "sqlite"]).pipe(
    Options.withDefault("jsonl" as const),
    Options.withDescription("jsonl: a file per session (default); sqlite: one database, <data-dir>/effect-agent.sqlite")
  )
}

const mode = Options.choice("mode", PermissionPolicy.Mode.literals).pipe(
  Options.optional,
  Options.withDescription(
    "The permission mode sessions start in (default: the mode of the session's .effect-agent/settings.json, else default); the editor can switch it per session"
  )
)

/** `--allow` / `--deny`, as for `run`: before the rules of each session's settings file. */
const rules = {
  allow: Options.text("allow").pipe(Options.repeated, Options.withDescription("Allow calls without asking: tool or tool:pattern, repeatable (as for run)")),
  deny: Options.text("deny").pipe(Options.repeated, Options.withDescription("Deny calls: tool or tool:pattern, repeatable; a matching deny always wins"))
}

/** The store, as `run` chooses it; SQLite (a native module) is loaded only when chosen. */
const storeLayer = ({ dataDir, store }: { readonly dataDir: string; readonly store: "jsonl" | "sqlite" }) =>
  store === "sqlite"
    ? Layer.unwrapEffect(
      Effect.tryPromise({
        try: () => import("../sqlite.js"),
        catch: () => new Error("--store sqlite needs the optional packages @effect/sql and @effect/sql-sqlite-node: npm install @effect/sql @effect/sql-sqlite-node")
      }).pipe(Effect.map(({ SqliteEventStore }) => SqliteEventStore.layer({ filename: `${dataDir}/effect-agent.sqlite` })))
    )
    : JsonlEventStore.layer({ dataDir })

/**
 * While serving, stdout is the protocol channel: a client that closes it is a disconnect, handled
 * by the connection (the turn is cancelled and its log closed), not a reason to exit at once as
 * `replay | head` does.
 */
const keepRunningOnBrokenStdout = Effect.acquireRelease(
  Effect.sync(() => {
    const previous = process.stdout.listeners("error") as Array<(error: Error) => void>
    for (const listener of previous) process.stdout.off("error", listener)
    const ignore = () => {}
    process.stdout.on("error", ignore)
    return { previous, ignore }
  }),
  ({ ignore, previous }) =>
    Effect.sync(() => {
      process.stdout.off("error", ignore)
      for (const listener of previous) process.stdout.on("error", listener)
    })
)

/** The `acp` command. */
export const command = Command.make("acp", { mode, ...rules, ...Models.options, ...storage }, ({ allow, deny, mode, ...options }) =>
  Effect.gen(function*() {
    const flagRules = yield* Settings.parseFlags({ allow, deny })
    const model = yield* Models.layer(options)
    // Loaded only here: the ACP SDK costs start-up time for every other command.
    const { AcpAgent, AcpPermissions } = yield* Effect.promise(() => import("../acp.js"))
    const engine = SessionEngine.layer.pipe(
      Layer.provide(storeLayer(options)),
      Layer.provide(model),
      Layer.provide(IdGenerator.layer),
      Layer.provide(WorkspaceTools.layer()),
      Layer.provide(PromptComposer.layer()),
      Layer.provide(NodeContext.layer),
      // One table of session policies, read by the engine's permission decisions and written by
      // session/new, session/load and session/set_mode; decided as `run` decides (settings folder guarded).
      Layer.provideMerge(AcpPermissions.layer({ decide: Policy.decide }))
    )
    // Each session follows the settings file of its own cwd, with the flags first, as `run` does.
    const sessionPolicy = (cwd: string) =>
      Settings.load(cwd).pipe(
        Effect.map((file) => Settings.policyOptions(file, { mode: Option.getOrUndefined(mode), rules: flagRules })),
        Effect.provide(NodeContext.layer)
      )
    yield* keepRunningOnBrokenStdout
    yield* Effect.logDebug("effect-agent acp: serving on stdio")
    yield* AcpAgent.serve(AcpAgent.stdio(), { sessionPolicy }).pipe(Effect.provide(engine))
  }).pipe(Effect.scoped)).pipe(
    Command.withDescription("Serve the agent to an editor over the Agent Client Protocol (JSON-RPC on stdin/stdout)")
  )
