/**
 * The sessions this user started, and a store that drives only those (CONTRACT.md §10).
 *
 * A log says what the user allowed in its session: the "always" answers are folded from it, and its
 * `session.created` names the directory the session's tools work in. But a log is only a file in a
 * data dir, and the CLI's default data dir is `.effect-agent/` in the current directory — which a
 * repository can ship. A log proves nothing about who wrote it.
 *
 * So each session a guarded store creates is recorded in the user's own config folder (never in a
 * project): `started-sessions/<sessionId>.json`, naming its `session.created` (time and cwd).
 * {@link layer} wraps a store so that it gives a session's writer lock — which every write takes
 * first — only for a recorded session, or one not stored yet (being created). Any other fails
 * `EventStoreFailure` with reason `untrusted` and changes nothing. Reading is never refused: a log
 * that is shown runs nothing. A session made from another (a fork, a subagent) is recorded only when
 * that one is the user's. {@link adopt} records a session the user has reviewed: one of theirs from
 * before sessions were recorded, or one they chose to take on.
 *
 * What a record proves: that this user's store created a session with that `session.created`. It
 * does not prove the rest of the log is as that store wrote it: a log of yours that you published
 * (its ids known) can be copied into a repository with answers appended.
 *
 * @since 0.12.0
 */
import * as NodePath from "node:path"
import * as FileSystem from "@effect/platform/FileSystem"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type { AgentEvent } from "../domain/AgentEvent.js"
import { EventStoreFailure } from "../domain/Errors.js"
import * as Session from "../domain/Session.js"
import { EventStore } from "../services/EventStore.js"
import * as PlainFiles from "./jsonl/PlainFiles.js"
import * as PlainRelease from "./PlainRelease.js"

/** A log's first event. */
export type SessionCreated = Extract<AgentEvent, { readonly type: "session.created" }>

/** The folder of the records, under the config folder. */
export const folderName = "started-sessions"

/** What is recorded of a session the user started: what its `session.created` says. */
export const Entry = Schema.Struct({
  version: Schema.Literal(1),
  sessionId: Schema.String,
  createdAt: Schema.String,
  cwd: Schema.String
})
/** What is recorded of a session the user started. */
export type Entry = typeof Entry.Type

const EntryJson = Schema.parseJson(Entry)

/** The session a log's `session.created` begins: what is recorded of it, and checked. */
export const sessionOf = (created: SessionCreated): Session.Session => ({
  sessionId: created.sessionId,
  cwd: created.payload.cwd,
  client: created.payload.client,
  createdAt: created.timestamp
})

/** The record of `session`. */
export const entryOf = (session: Session.Session): Entry => ({
  version: 1,
  sessionId: session.sessionId,
  createdAt: session.createdAt,
  cwd: session.cwd
})

/** Whether `entry` records `session` (a session or a listing's summary of it). */
export const matches = (entry: Entry, session: Session.Session): boolean =>
  entry.sessionId === session.sessionId && entry.createdAt === session.createdAt && entry.cwd === session.cwd

/** A session id as a file name: only a valid id (no separator, no `..`) is ever a file. */
const fileOf = (dir: string, sessionId: string): Option.Option<string> =>
  Session.isValidId(sessionId) ? Option.some(NodePath.join(dir, folderName, `${sessionId}.json`)) : Option.none()

/** Why a record could not be written, as a store failure (the config folder is not named: callers may show it). */
const unrecorded = (sessionId: string, reason: "permission_denied" | "disk_full" | "unavailable") =>
  new EventStoreFailure({
    reason,
    operation: "append",
    sessionId,
    detail: `could not record session ${sessionId} as started by this user in the config folder`
  })

/**
 * Records `created` as a session the user started, in `dir` (the config folder): the folder `0700`,
 * the file `0600`, written whole (a temporary file of a random name, created exclusively, renamed over it).
 */
export const record = (dir: string, session: Session.Session): Effect.Effect<void, EventStoreFailure, FileSystem.FileSystem> =>
  Effect.gen(function*() {
    const file = fileOf(dir, session.sessionId)
    if (Option.isNone(file)) return yield* unrecorded(session.sessionId, "unavailable")
    const fs = yield* FileSystem.FileSystem
    const folder = NodePath.dirname(file.value)
    const denied = (code: string | undefined) => code === "EACCES" || code === "EPERM" || code === "EROFS"
    yield* fs.makeDirectory(folder, { recursive: true, mode: 0o700 }).pipe(
      Effect.mapError((error) => error._tag === "SystemError" && error.reason === "PermissionDenied" ? "EACCES" : undefined),
      // Through a temporary file of a random name, created exclusively: never through a link planted
      // under a name known in advance (`<file>.<pid>.tmp` was, and was written through).
      Effect.zipRight(Effect.try({
        try: () => PlainFiles.replace(file.value, JSON.stringify(entryOf(session))),
        catch: (error) => (error as NodeJS.ErrnoException).code
      })),
      Effect.mapError((code) => unrecorded(session.sessionId, denied(code) ? "permission_denied" : "unavailable"))
    )
  })

/** The record of `sessionId` in `dir`, if there is one that can be read. */
export const recorded = (dir: string, sessionId: string): Effect.Effect<Option.Option<Entry>, never, FileSystem.FileSystem> =>
  Effect.gen(function*() {
    const file = fileOf(dir, sessionId)
    if (Option.isNone(file)) return Option.none<Entry>()
    const fs = yield* FileSystem.FileSystem
    const text = yield* fs.readFileString(file.value)
    return Option.some(yield* Schema.decode(EntryJson)(text))
  }).pipe(Effect.orElseSucceed(() => Option.none<Entry>()))

/** The first event of a stored session, if it is stored. */
export const createdOf = (store: EventStore.Service, sessionId: string): Effect.Effect<Option.Option<SessionCreated>, EventStoreFailure> =>
  Effect.map(Stream.runHead(store.read(sessionId)), Option.filter((event): event is SessionCreated => event.type === "session.created"))

/** Whether `session` (or a listing's summary of it) is a session the user started or adopted, by its record in `dir`. */
export const isStarted = (dir: string, session: Session.Session): Effect.Effect<boolean, never, FileSystem.FileSystem> =>
  Effect.map(recorded(dir, session.sessionId), Option.exists((entry) => matches(entry, session)))

/** How the refusal tells the user to adopt a session (the CLI names its command). */
export type AdoptHint = (sessionId: string) => string

const defaultHint: AdoptHint = () => "review it, then adopt it (StartedSessions.adopt)"

/** The refusal of a session the user did not start: nothing was changed. */
export const untrusted = (sessionId: string, hint: AdoptHint = defaultHint) =>
  new EventStoreFailure({
    reason: "untrusted",
    operation: "lock",
    sessionId,
    detail: `session ${sessionId} was not started by this user here (its log may have come with a repository), so it was left as it is; ${hint(sessionId)}`
  })

/**
 * {@link verify} on a stored session's first event, for a caller that has read it already: succeeds
 * when it is the `session.created` of a session the user started; fails `untrusted` otherwise.
 */
export const verifyFirst = (
  dir: string,
  sessionId: string,
  first: AgentEvent,
  hint?: AdoptHint
): Effect.Effect<void, EventStoreFailure, FileSystem.FileSystem> =>
  Effect.gen(function*() {
    if (first.type === "session.created" && (yield* isStarted(dir, sessionOf(first)))) return
    return yield* untrusted(sessionId, hint)
  })

/**
 * Succeeds when `sessionId` is not stored yet or is a session the user started; fails `untrusted`
 * otherwise (a log that does not begin with `session.created` included).
 */
export const verify = (
  dir: string,
  store: EventStore.Service,
  sessionId: string,
  hint?: AdoptHint
): Effect.Effect<void, EventStoreFailure, FileSystem.FileSystem> =>
  Effect.flatMap(Stream.runHead(store.read(sessionId)), (head) => Option.isNone(head) ? Effect.void : verifyFirst(dir, sessionId, head.value, hint))

/**
 * Records a stored session as the user's, once they have reviewed it: its `session.created`, or none
 * (nothing recorded) when the store holds no session of that id that begins with one.
 */
export const adopt = (
  dir: string,
  store: EventStore.Service,
  sessionId: string
): Effect.Effect<Option.Option<SessionCreated>, EventStoreFailure, FileSystem.FileSystem> =>
  Effect.gen(function*() {
    const created = yield* createdOf(store, sessionId)
    if (Option.isSome(created)) yield* record(dir, sessionOf(created.value))
    return created
  })

/** Options of {@link layer}. */
export interface Options {
  /** The user's config folder (the CLI's: `TrustStore.configDir`); records go in its `started-sessions/`. */
  readonly dir: string
  /** How a refusal tells the user to adopt the session. */
  readonly adoptHint?: AdoptHint
}

/**
 * The store in the context, guarded: it gives a session's writer lock only for a session the user
 * started (see the module's documentation), records every session it creates, and creates a session
 * from another (a fork, a subagent) only when that one is the user's.
 */
export const make = (inner: EventStore.Service, options: Options): Effect.Effect<EventStore.Service, never, FileSystem.FileSystem> =>
  Effect.map(Effect.context<FileSystem.FileSystem>(), (context) => {
    const { adoptHint, dir } = options
    const withFs = <A, E>(effect: Effect.Effect<A, E, FileSystem.FileSystem>) => Effect.provide(effect, context)
    /** Sessions whose writer lock this store gave (checked) and still holds: their appends need no check. */
    const held = new Map<string, number>()
    const hold = (sessionId: string) => held.set(sessionId, (held.get(sessionId) ?? 0) + 1)
    const letGo = (sessionId: string) => {
      const count = (held.get(sessionId) ?? 1) - 1
      if (count <= 0) held.delete(sessionId)
      else held.set(sessionId, count)
    }

    const checked = (sessionId: string) => held.has(sessionId) ? Effect.void : withFs(verify(dir, inner, sessionId, adoptHint))

    /** A new session's first event: the session it comes from must be the user's; then it is recorded. */
    const creating = (created: SessionCreated) =>
      Effect.gen(function*() {
        const from = created.payload.forkedFrom?.sessionId ?? created.payload.parent?.sessionId
        if (from !== undefined) yield* checked(from)
        // Not recorded (a read-only home, a full disk): the session still runs, held by this store;
        // only a later process refuses it, and adopting it then says why it cannot be recorded.
        yield* withFs(record(dir, sessionOf(created))).pipe(Effect.catchAll((failure) => Effect.logWarning(failure.message)))
      })

    /** What a batch needs before it is stored: a new session recorded, or a session the user started. */
    const before = (first: AgentEvent) => first.type === "session.created" ? creating(first) : checked(first.sessionId)

    return EventStore.of({
      ...inner,
      append: (event) => Effect.zipRight(before(event), inner.append(event)),
      appendAll: (events) => events.length === 0 ? inner.appendAll(events) : Effect.zipRight(before(events[0]!), inner.appendAll(events)),
      acquireWriter: (sessionId) =>
        Effect.zipRight(
          checked(sessionId),
          PlainRelease.acquireRelease(Effect.zipRight(inner.acquireWriter(sessionId), Effect.sync(() => hold(sessionId))), () =>
            Effect.sync(() => letGo(sessionId)))
        )
    })
  })

/**
 * Guards the `EventStore` of `store` (which may provide more, e.g. its blob store): `layer(options)`
 * piped onto a store's layer, e.g. `JsonlEventStore.layer(...).pipe(StartedSessions.layer({ dir }))`.
 */
export const layer = (options: Options) => <ROut, E, RIn>(store: Layer.Layer<ROut | EventStore, E, RIn>): Layer.Layer<ROut | EventStore, E, RIn | FileSystem.FileSystem> =>
  Layer.flatMap(store, (context) =>
    Layer.effectContext(Effect.map(make(Context.get(context, EventStore), options), (guarded) => Context.add(context, EventStore, guarded))))
