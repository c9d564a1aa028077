/**
 * `StartedSessions`: a guarded store drives only the sessions its user started or adopted. Each
 * "process" is an engine of its own on the same JSONL data dir; the user's config folder is a
 * temporary folder; a planted log is one another user's engine (another config folder) wrote there.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as FileSystem from "@effect/platform/FileSystem"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { join } from "node:path"
import type { EventStoreFailure } from "../../src/domain/Errors.js"
import * as Engine from "../../src/engine/SessionEngine.js"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import * as FakeModelProvider from "../../src/layers/FakeModelProvider.js"
import * as JsonlEventStore from "../../src/layers/JsonlEventStore.js"
import * as StartedSessions from "../../src/layers/StartedSessions.js"
import { EventStore } from "../../src/services/EventStore.js"
import * as IdGenerator from "../../src/services/IdGenerator.js"
import { collect, tempDir } from "../helpers.js"

const model = { responses: Array.from({ length: 6 }, (_, i) => ({ chunks: [`answer ${i + 1}`] })) }

/** An engine on the JSONL store in `dataDir`, guarded by the config folder `configDir` (unguarded without one). */
const engineOn = (dataDir: string, configDir: string | undefined, responses: FakeModelProvider.Options = model) => {
  const store = JsonlEventStore.layer({ dataDir })
  return Engine.layer().pipe(
    Layer.provideMerge(configDir === undefined ? store : store.pipe(StartedSessions.layer({ dir: configDir }))),
    Layer.provideMerge(FakeModelProvider.layer(responses)),
    Layer.provideMerge(IdGenerator.layer),
    Layer.provideMerge(NodeContext.layer)
  )
}

const turn = (sessionId: string, userMessage = "hi") => Effect.flatMap(SessionEngine, (engine) => collect(engine.runTurn({ sessionId, userMessage })))
const logOf = (sessionId: string) => Effect.flatMap(SessionEngine, (engine) => collect(engine.replaySession({ sessionId })))
const created = (cwd = "/work") => Effect.flatMap(SessionEngine, (engine) => engine.createSession({ cwd, client: "test" }))

/** The failure of `effect`, which must fail with a store failure. */
const storeFailure = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.map(Effect.flip(effect), (error) => {
    expect((error as { readonly _tag: string })._tag).toBe("EventStoreFailure")
    return error as unknown as EventStoreFailure
  })

const folders = Effect.gen(function*() {
  const root = yield* tempDir
  return { dataDir: join(root, "data"), mine: join(root, "config"), theirs: join(root, "attacker-config") }
})

describe("StartedSessions", () => {
  it.scoped("a session this user started is recorded in the config folder and driven again by a later process", () =>
    Effect.gen(function*() {
      const { dataDir, mine } = yield* folders
      const session = yield* Effect.provide(Effect.tap(created(), (s) => turn(s.sessionId)), engineOn(dataDir, mine))
      const fs = yield* FileSystem.FileSystem
      const file = join(mine, StartedSessions.folderName, `${session.sessionId}.json`)
      expect(JSON.parse(yield* fs.readFileString(file))).toEqual({ version: 1, sessionId: session.sessionId, createdAt: session.createdAt, cwd: "/work" })
      expect((yield* fs.stat(file)).mode & 0o777).toBe(0o600)
      expect((yield* fs.stat(join(mine, StartedSessions.folderName))).mode & 0o777).toBe(0o700)
      // A later process (a new engine and store) drives it.
      const second = yield* Effect.provide(turn(session.sessionId, "again"), engineOn(dataDir, mine))
      expect(second.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("a log this user did not start is read but not driven: every write is refused `untrusted` and nothing is stored, until adopted", () =>
    Effect.gen(function*() {
      const { dataDir, mine, theirs } = yield* folders
      // Another user's store (a repository's author) wrote the log into the data dir.
      const planted = yield* Effect.provide(Effect.tap(created(), (s) => turn(s.sessionId)), engineOn(dataDir, theirs))
      const before = yield* Effect.provide(logOf(planted.sessionId), engineOn(dataDir, undefined))
      const refusals = yield* Effect.provide(
        Effect.gen(function*() {
          const engine = yield* SessionEngine
          // Reading is fine.
          expect(yield* logOf(planted.sessionId)).toEqual(before)
          expect((yield* engine.sessionState({ sessionId: planted.sessionId })).turnCount).toBe(1)
          return [
            yield* storeFailure(turn(planted.sessionId)),
            yield* storeFailure(engine.followUp({ sessionId: planted.sessionId, message: "later" })),
            yield* storeFailure(engine.renameSession({ sessionId: planted.sessionId, title: "mine now" })),
            yield* storeFailure(engine.forkSession({ sessionId: planted.sessionId }))
          ]
        }),
        engineOn(dataDir, mine)
      )
      for (const refusal of refusals) {
        expect(refusal.reason).toBe("untrusted")
        expect(refusal.message).toContain(`session ${planted.sessionId} was not started by this user here`)
        // Plain words, not the store's "Event store lock failed [untrusted]: …"; the typed error keeps its tag and fields.
        expect(refusal.message.startsWith(`session ${planted.sessionId} was not started`)).toBe(true)
        expect(refusal).toMatchObject({ _tag: "EventStoreFailure", reason: "untrusted", operation: "lock", sessionId: planted.sessionId })
      }
      // Nothing was stored: the planted log is as it was, and the refused fork left no session.
      const after = yield* Effect.provide(
        Effect.gen(function*() {
          const engine = yield* SessionEngine
          return { log: yield* logOf(planted.sessionId), sessions: (yield* engine.listSessions).map((s) => s.sessionId) }
        }),
        engineOn(dataDir, undefined)
      )
      expect(after.log).toEqual(before)
      expect(after.sessions).toEqual([planted.sessionId])
      // Adopted (after the user read it), it is driven.
      const adopted = yield* Effect.provide(Effect.flatMap(EventStore, (store) => StartedSessions.adopt(mine, store, planted.sessionId)), JsonlEventStore.layer({ dataDir }).pipe(Layer.provideMerge(NodeContext.layer)))
      expect(Option.map(adopted, (e) => e.sessionId)).toEqual(Option.some(planted.sessionId))
      const driven = yield* Effect.provide(turn(planted.sessionId, "mine now"), engineOn(dataDir, mine))
      expect(driven.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("a record names the log's session.created: a log of the same id with another cwd or time is not the user's", () =>
    Effect.gen(function*() {
      const { dataDir, mine } = yield* folders
      const session = yield* Effect.provide(created("/work"), engineOn(dataDir, mine))
      const fs = yield* FileSystem.FileSystem
      const log = join(dataDir, "sessions", `${session.sessionId}.jsonl`)
      const text = yield* fs.readFileString(log)
      // The log rewritten to name another cwd (an index rebuilt from it): the record does not match.
      yield* fs.writeFileString(log, text.replace("\"cwd\":\"/work\"", "\"cwd\":\"/elsewhere\""))
      yield* fs.remove(join(dataDir, "sessions", "index.json"), { force: true })
      yield* fs.remove(join(dataDir, "sessions", "index.journal"), { force: true })
      const refusal = yield* Effect.provide(storeFailure(turn(session.sessionId)), engineOn(dataDir, mine))
      expect(refusal.reason).toBe("untrusted")
      expect(
        StartedSessions.matches(StartedSessions.entryOf(session), { ...session, createdAt: "2020-01-01T00:00:00.000Z" })
      ).toBe(false)
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("a fork of the user's session and a subagent of it are the user's too", () =>
    Effect.gen(function*() {
      const { dataDir, mine } = yield* folders
      const fork = yield* Effect.provide(
        Effect.gen(function*() {
          const engine = yield* SessionEngine
          const source = yield* created()
          yield* turn(source.sessionId)
          return yield* engine.forkSession({ sessionId: source.sessionId })
        }),
        engineOn(dataDir, mine)
      )
      expect(yield* StartedSessions.isStarted(mine, fork)).toBe(true)
      const driven = yield* Effect.provide(turn(fork.sessionId, "in the fork"), engineOn(dataDir, mine))
      expect(driven.at(-1)).toMatchObject({ type: "turn.completed" })
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("a session not recorded (the config folder cannot be written) still runs in the process that made it, and is refused in the next", () =>
    Effect.gen(function*() {
      const { dataDir, mine } = yield* folders
      const fs = yield* FileSystem.FileSystem
      // A file where the config folder should be: nothing can be recorded under it.
      yield* fs.writeFileString(mine, "not a folder")
      const session = yield* Effect.provide(Effect.tap(created(), (s) => Effect.zipRight(turn(s.sessionId), turn(s.sessionId, "two"))), engineOn(dataDir, mine))
      const refusal = yield* Effect.provide(storeFailure(turn(session.sessionId, "three")), engineOn(dataDir, mine))
      expect(refusal.reason).toBe("untrusted")
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("an id that is not a session id is never a file in the config folder", () =>
    Effect.gen(function*() {
      const { mine } = yield* folders
      const failure = yield* Effect.flip(StartedSessions.record(mine, { sessionId: "../../escape", cwd: "/work", client: "test", createdAt: "2026-01-01T00:00:00.000Z" }))
      expect(failure.reason).toBe("unavailable")
      expect(yield* StartedSessions.recorded(mine, "../../escape")).toEqual(Option.none())
      const fs = yield* FileSystem.FileSystem
      expect(yield* fs.exists(mine)).toBe(false)
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("a session made from another (a subagent's, a fork's) is stored only when that one is the user's", () =>
    Effect.gen(function*() {
      const { dataDir, mine, theirs } = yield* folders
      const createdEvent = (sessionId: string, parent?: string): StartedSessions.SessionCreated => ({
        id: `evt_${sessionId}`,
        sessionId,
        sequence: 1,
        timestamp: "2026-12-02T00:00:00.000Z",
        type: "session.created",
        payload: { cwd: "/work", client: "test", ...(parent === undefined ? {} : { parent: { sessionId: parent, toolCallId: "call_1", depth: 1 } }) }
      })
      const guarded = (dir: string) => JsonlEventStore.layer({ dataDir }).pipe(StartedSessions.layer({ dir }), Layer.provideMerge(NodeContext.layer))
      const append = (event: StartedSessions.SessionCreated) => Effect.flatMap(EventStore, (store) => store.append(event))
      // The user's parent, and a parent another user's store wrote.
      yield* Effect.provide(append(createdEvent("sess_parent")), guarded(mine))
      yield* Effect.provide(append(createdEvent("sess_planted")), guarded(theirs))
      yield* Effect.provide(append(createdEvent("sess_child", "sess_parent")), guarded(mine))
      const refused = yield* Effect.provide(Effect.flip(append(createdEvent("sess_orphan", "sess_planted"))), guarded(mine))
      expect(refused.reason).toBe("untrusted")
      const stored = yield* Effect.provide(
        Effect.flatMap(EventStore, (store) => store.list),
        JsonlEventStore.layer({ dataDir }).pipe(Layer.provideMerge(NodeContext.layer))
      )
      expect(stored.map((s) => s.sessionId).sort()).toEqual(["sess_child", "sess_parent", "sess_planted"])
      expect(Option.isSome(yield* StartedSessions.recorded(mine, "sess_child"))).toBe(true)
      expect(Option.isNone(yield* StartedSessions.recorded(mine, "sess_orphan"))).toBe(true)
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("a first event past the JSONL reader's 64 KiB chunk (a cwd an embedder passed, 100 KB) is read whole: listed, driven again, pending read, adopted", () =>
    Effect.gen(function*() {
      // Leftovers 41: `verify` and `isStored` read a log's first event with the store's reader, in 64 KiB
      // chunks; a line longer than a chunk is carried over to the next, up to the store's line cap (16 MiB).
      // The engine writes `session.created` first, and it holds only the cwd, the client and where a fork or
      // subagent comes from — never the system prompt or a message — so only a cwd this long makes it large.
      const { dataDir, mine, theirs } = yield* folders
      const cwd = `/work/${"a".repeat(100_000)}`
      const session = yield* Effect.provide(Effect.tap(created(cwd), (s) => turn(s.sessionId)), engineOn(dataDir, mine))
      const later = yield* Effect.provide(
        Effect.gen(function*() {
          const engine = yield* SessionEngine
          const listed = (yield* engine.listSessions).find((summary) => summary.sessionId === session.sessionId)
          const pending = yield* engine.pendingApprovals({ sessionId: session.sessionId })
          const events = yield* turn(session.sessionId, "again")
          return { listed, pending, events }
        }),
        engineOn(dataDir, mine)
      )
      expect(later.listed?.cwd).toBe(cwd)
      expect(later.pending).toEqual([])
      expect(later.events.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
      // Another user's config folder adopts it by the same read.
      const adopted = yield* StartedSessions.adopt(theirs, yield* Effect.provide(EventStore, JsonlEventStore.layer({ dataDir })), session.sessionId)
      expect(Option.map(adopted, (first) => first.payload.cwd)).toEqual(Option.some(cwd))
    }).pipe(Effect.provide(NodeContext.layer)))
})
