/**
 * The store the shared flags choose (`--store`, `--data-dir`, `--database-url`). Loaded by the
 * commands' handlers, not by the command tree (see Lazy.ts); each store's code only when chosen — the
 * SQL stores', and the JSONL store's and the writers' guard (DataDirStores.ts) too.
 *
 * @since 0.10.0
 */
import type * as Duration from "effect/Duration"
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import { EventStore, SessionNotFound, type StartedSessions } from "../index.js"
import { CliError } from "./CliError.js"
import * as ConfigProblem from "./ConfigProblem.js"
import type { Storage } from "./Flags.js"
import { withoutFetchSniff } from "./PgLoad.js"

/**
 * The SQL stores' writer lease ttl, `EFFECT_AGENT_WRITER_LEASE_TTL` (e.g. `10 seconds`; default 30 s):
 * how long a session driven from a machine that died stays busy for the others.
 */
export const leaseTtl = Config.option(Config.duration("EFFECT_AGENT_WRITER_LEASE_TTL")).pipe(
  Effect.map(Option.match({ onNone: () => ({}), onSome: (ttl: Duration.Duration) => ({ writerLease: { ttl } }) })),
  Effect.mapError(ConfigProblem.toCliError)
)

/** SQLite is an optional peer (a native module): loaded only when chosen, with one clear line when it is missing. */
const sqliteLayer = (filename: string, readOnly: boolean) =>
  Layer.unwrapEffect(
    Effect.tryPromise({
      try: () => import("../sqlite.js"),
      catch: () =>
        new CliError({
          reason: "missing_package",
          message: "--store sqlite needs the optional packages @effect/sql and @effect/sql-sqlite-node: npm install @effect/sql @effect/sql-sqlite-node"
        })
    }).pipe(Effect.flatMap(({ SqliteEventStore }) => Effect.map(leaseTtl, (lease) => SqliteEventStore.layer({ filename, readOnly, ...lease }))))
  )

/** PostgreSQL is an optional peer too: loaded only when chosen. The URL is never printed. */
const postgresLayer = (url: Option.Option<Redacted.Redacted>, readOnly: boolean) =>
  Layer.unwrapEffect(Effect.gen(function*() {
    if (Option.isNone(url)) {
      return yield* new CliError({ reason: "invalid_arguments", message: "--store postgres needs --database-url or EFFECT_AGENT_DATABASE_URL" })
    }
    const { PostgresEventStore } = yield* Effect.tryPromise({
      try: () => withoutFetchSniff(() => import("../postgres.js")),
      catch: () =>
        new CliError({
          reason: "missing_package",
          message: "--store postgres needs the optional packages @effect/sql and @effect/sql-pg: npm install @effect/sql @effect/sql-pg"
        })
    })
    return PostgresEventStore.layer({ url: url.value, readOnly, ...(yield* leaseTtl) })
  }))

/** The JSONL store and the writers' guard, loaded when a data dir's store is chosen (see DataDirStores.ts). */
const dataDirStores = Effect.promise(() => import("./DataDirStores.js"))

/** How the CLI tells the user to adopt a session it refuses. */
export const adoptHint: StartedSessions.AdoptHint = (sessionId) =>
  `if it is yours, or once you have read it (effect-agent replay ${sessionId}), adopt it: effect-agent adopt ${sessionId}`

/**
 * The store the options chose. `readOnly`: for the commands that only read (`sessions`, `replay`,
 * `pending`, `watch`, `export-script`), which then work on a data dir this user cannot write.
 *
 * A data dir's store for writing (JSONL, SQLite) is guarded by `StartedSessions`: it drives only the
 * sessions this user started or adopted, since a data dir — by default `.effect-agent/` of the current
 * directory — may have come with a repository. A PostgreSQL database is the user's own configuration,
 * shared by their runners on other machines: it is not guarded.
 */
export const storeLayer = ({ dataDir, databaseUrl, store }: Storage, { readOnly = false }: { readonly readOnly?: boolean } = {}) =>
  store === "postgres"
    ? postgresLayer(databaseUrl ?? Option.none(), readOnly)
    : guarded(
      store === "sqlite"
        ? sqliteLayer(`${dataDir}/effect-agent.sqlite`, readOnly)
        : Layer.unwrapEffect(Effect.map(dataDirStores, (stores) => stores.jsonl(dataDir, readOnly))),
      dataDir,
      readOnly
    )

// A data dir written to keeps its logs out of git (see DataDirIgnore).
const guarded = <ROut, E, RIn>(store: Layer.Layer<ROut | EventStore.EventStore, E, RIn>, dataDir: string, readOnly: boolean) =>
  readOnly ? store : Layer.unwrapEffect(Effect.flatMap(dataDirStores, (stores) => stores.writable(store, dataDir, adoptHint)))

/**
 * Fails with `SessionNotFound` when no session `sessionId` is stored, as the engine would — but
 * before the command chooses its model, so the refusal is its only line (not after the echo model's
 * note). Otherwise its first event.
 */
const requireStored = (sessionId: string) =>
  Effect.flatMap(EventStore.EventStore, (store) => Stream.runHead(store.read(sessionId))).pipe(
    Effect.flatMap((head) => Option.isNone(head) ? Effect.fail(new SessionNotFound({ sessionId })) : Effect.succeed(head.value))
  )

/** {@link requireStored} on the options' store, opened read-only for it (`compact`). */
export const requireExisting = (storage: Storage, sessionId: string) =>
  requireStored(sessionId).pipe(Effect.asVoid, Effect.provide(storeLayer(storage, { readOnly: true })))

/**
 * Fails, before anything starts, when the session is not stored, or is stored but is not one this
 * user started or adopted (the guarded store would refuse its first write): `chat --session` says so
 * before its first prompt, not after the first message. The store is opened read-only for it.
 */
export const requireStarted = (storage: Storage, sessionId: string) =>
  Effect.gen(function*() {
    const first = yield* requireStored(sessionId)
    if (storage.store === "postgres") return
    // The first event read once: StartedSessions.verify would read it again.
    yield* Effect.flatMap(dataDirStores, (stores) => stores.verifyStarted(sessionId, first, adoptHint)).pipe(Effect.catchIf(
      (failure) => failure.reason === "untrusted",
      () =>
        new CliError({
          reason: "invalid_arguments",
          message: `session ${sessionId} was not started by you here (its log may have come with a repository). ` +
            `If it is yours, or once you have read it (effect-agent replay ${sessionId}), adopt it: effect-agent adopt ${sessionId}`
        })
    ))
  }).pipe(Effect.provide(storeLayer(storage, { readOnly: true })))
