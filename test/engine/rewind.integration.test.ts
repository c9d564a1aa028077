/**
 * Rewind restores the workspace too: a turn (scripted model) that edits, writes and runs `sed -i`,
 * `mv` and `rm` through the real shell tool, rewound to before it, leaves the tree byte for byte as
 * it was (a hash of every file's path, mode and content) — on every store; the conversation goes on
 * from the point; a rewind can be rewound; and what a rewind must refuse (files changed outside the
 * agent, links, hostile paths) it refuses, changing nothing.
 */
import { createHash } from "node:crypto"
import * as NodeFs from "node:fs/promises"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import type * as Scope from "effect/Scope"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import * as SessionState from "../../src/domain/SessionState.js"
import * as Transcript from "../../src/domain/Transcript.js"
import * as SessionView from "../../src/domain/SessionView.js"
import * as SessionEngineModule from "../../src/engine/SessionEngine.js"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import * as FakeModelProvider from "../../src/layers/FakeModelProvider.js"
import * as JsonlEventStore from "../../src/layers/JsonlEventStore.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as PostgresEventStore from "../../src/layers/PostgresEventStore.js"
import * as SqliteEventStore from "../../src/layers/SqliteEventStore.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"
import * as PreImages from "../../src/layers/workspace/PreImages.js"
import type { EventStore } from "../../src/services/EventStore.js"
import * as IdGenerator from "../../src/services/IdGenerator.js"
import type { BlobStore } from "../../src/services/BlobStore.js"
import { collect, expectWellFormedLog } from "../helpers.js"
import { freshSchemaUrl } from "../postgres.js"

/** Every folder and file under `root` (links as their target text), with its mode and content hash: equal hashes, equal trees. */
export const treeHash = async (root: string): Promise<string> => {
  const lines: Array<string> = []
  const visit = async (dir: string, prefix: string) => {
    const entries = (await NodeFs.readdir(dir, { withFileTypes: true })).sort((a, b) => (a.name < b.name ? -1 : 1))
    for (const entry of entries) {
      const full = NodePath.join(dir, entry.name)
      const path = `${prefix}${entry.name}`
      if (entry.isDirectory()) {
        lines.push(`${path}/`)
        await visit(full, `${path}/`)
      }
      else if (entry.isSymbolicLink()) lines.push(`${path} -> ${await NodeFs.readlink(full)}`)
      else {
        const info = await NodeFs.stat(full)
        lines.push(`${path} ${(info.mode & 0o7777).toString(8)} ${createHash("sha256").update(await NodeFs.readFile(full)).digest("hex")}`)
      }
    }
  }
  await visit(root, "")
  return createHash("sha256").update(lines.join("\n")).digest("hex")
}

const makeWorkspace = Effect.acquireRelease(
  Effect.promise(async () => {
    const dir = await NodeFs.realpath(await NodeFs.mkdtemp(NodePath.join(NodeOs.tmpdir(), "effect-agent-rewind-")))
    await NodeFs.writeFile(NodePath.join(dir, "a.txt"), "one two one\n")
    await NodeFs.chmod(NodePath.join(dir, "a.txt"), 0o755)
    await NodeFs.writeFile(NodePath.join(dir, "b.txt"), "bee\n")
    await NodeFs.writeFile(NodePath.join(dir, "d.txt"), "dee\n")
    await NodeFs.writeFile(NodePath.join(dir, "e.txt"), "to be edited\n")
    await NodeFs.mkdir(NodePath.join(dir, "sub"))
    await NodeFs.writeFile(NodePath.join(dir, "sub", "keep.txt"), "kept\n")
    return dir
  }),
  (dir) => Effect.promise(() => NodeFs.rm(dir, { recursive: true, force: true }))
)

/** The turn that changes the workspace every way: an edit, a new file, an overwrite, then `sed -i`, `mv` and `rm` through the shell. */
const changingTurn = [
  { chunks: ["Editing."], toolCalls: [{ tool: "edit_file", args: { path: "e.txt", oldString: "edited", newString: "changed" } }] },
  { chunks: ["Writing."], toolCalls: [{ tool: "write_file", args: { path: "new/created.txt", content: "created\n" } }] },
  { chunks: ["Overwriting."], toolCalls: [{ tool: "write_file", args: { path: "b.txt", content: "bee bee\n" } }] },
  { chunks: ["sed."], toolCalls: [{ tool: "shell", args: { command: "sed -i s/one/uno/g a.txt" } }] },
  { chunks: ["mv."], toolCalls: [{ tool: "shell", args: { command: "mv b.txt c.txt" } }] },
  { chunks: ["rm."], toolCalls: [{ tool: "shell", args: { command: "rm d.txt" } }] },
  { chunks: ["Done."] }
]

const engineOn = <E, R>(store: Layer.Layer<EventStore | BlobStore, E, R>, responses: FakeModelProvider.Options["responses"], mode: PermissionPolicy.Mode) =>
  SessionEngineModule.layer().pipe(
    Layer.provideMerge(PreImages.layer()),
    Layer.provideMerge(WorkspaceTools.layer()),
    Layer.provideMerge(PermissionPolicy.layer({ mode })),
    Layer.provideMerge(store),
    Layer.provideMerge(FakeModelProvider.layer({ record: true, ...(responses === undefined ? {} : { responses }) })),
    Layer.provideMerge(IdGenerator.layerSequential),
    Layer.provideMerge(NodeContext.layer)
  )

type StoreLayer = Layer.Layer<EventStore | BlobStore, unknown, never>
const stores: ReadonlyArray<readonly [string, (dir: string) => Effect.Effect<StoreLayer>]> = [
  ["memory", () => Effect.succeed(MemoryEventStore.layer as StoreLayer)],
  ["JSONL", (dir) => Effect.succeed(JsonlEventStore.layer({ dataDir: NodePath.join(dir, "data") }).pipe(Layer.provide(NodeContext.layer)) as StoreLayer)],
  ["SQLite", (dir) => Effect.succeed(SqliteEventStore.layer({ filename: NodePath.join(dir, "store.db") }) as StoreLayer)],
  ["PostgreSQL", () => Effect.map(freshSchemaUrl("rewind"), (url) => PostgresEventStore.layer({ url: Redacted.make(url) }) as StoreLayer)]
]

const withStoreDir = Effect.acquireRelease(
  Effect.promise(() => NodeFs.mkdtemp(NodePath.join(NodeOs.tmpdir(), "effect-agent-rewind-store-"))),
  (dir) => Effect.promise(() => NodeFs.rm(dir, { recursive: true, force: true }))
)

const scenario = (
  makeStore: (dir: string) => Effect.Effect<StoreLayer>,
  responses: FakeModelProvider.Options["responses"],
  body: (workspace: string) => Effect.Effect<void, unknown, SessionEngine | FakeModelProvider.FakeModel | Scope.Scope>,
  mode: PermissionPolicy.Mode = "bypass"
): Effect.Effect<void, unknown, Scope.Scope> =>
  Effect.gen(function*() {
    const workspace = yield* makeWorkspace
    const store = yield* makeStore(yield* withStoreDir)
    yield* body(workspace).pipe(Effect.provide(engineOn(store, responses, mode)))
  })

for (const [name, makeStore] of stores) {
  describe(`rewind on ${name}`, () => {
    it.scoped("a turn that edits, writes and runs sed -i / mv / rm, rewound to before it, leaves the tree byte for byte as it was; the rewind can be rewound", () =>
      scenario(makeStore, [{ chunks: ["Hello."] }, ...changingTurn, { chunks: ["After the rewind."] }], (workspace) =>
        Effect.gen(function*() {
          const engine = yield* SessionEngine
          const session = yield* engine.createSession({ cwd: workspace, client: "test" })
          const { sessionId } = session
          yield* collect(engine.runTurn({ sessionId, userMessage: "hi" }))
          const point = (yield* engine.sessionState({ sessionId })).lastSequence
          const before = yield* Effect.promise(() => treeHash(workspace))

          const turn = yield* collect(engine.runTurn({ sessionId, userMessage: "change things" }))
          expect(turn.filter((e) => e.type === "tool.failed")).toEqual([])
          const changed = turn.filter((e): e is Extract<AgentEvent, { type: "workspace.changed" }> => e.type === "workspace.changed")
          // One record per call that changed files, each with the files it changed.
          expect(changed.map((e) => e.payload.changes.map((c) => c.path))).toEqual([
            ["e.txt"],
            ["new/created.txt"],
            ["b.txt"],
            ["a.txt"],
            ["b.txt", "c.txt"],
            ["d.txt"]
          ])
          const after = yield* Effect.promise(() => treeHash(workspace))
          expect(after).not.toBe(before)
          expect(yield* Effect.promise(() => NodeFs.readFile(NodePath.join(workspace, "a.txt"), "utf8"))).toBe("uno two uno\n")

          const rewound = yield* engine.rewindSession({ sessionId, toSequence: point })
          expect(rewound.toSequence).toBe(point)
          expect(rewound.forced).toEqual([])
          expect(rewound.incomplete).toEqual([])
          // The commands' files are named: their snapshots saw them change, whoever wrote them (kernel45); the file tools' are the agent's.
          expect(rewound.observed).toEqual(["b.txt", "a.txt", "c.txt", "d.txt"])
          expect(yield* Effect.promise(() => treeHash(workspace))).toBe(before)
          // The mode came back too (sed -i makes a new file).
          expect((yield* Effect.promise(() => NodeFs.stat(NodePath.join(workspace, "a.txt")))).mode & 0o777).toBe(0o755)

          // The conversation goes on from the point: the next request has no trace of the abandoned turn.
          yield* collect(engine.runTurn({ sessionId, userMessage: "again" }))
          const requests = yield* Effect.flatMap(FakeModelProvider.FakeModel, (fake) => fake.requests)
          const last = requests.at(-1)!
          expect(last.messages.map((m) => m.content)).toEqual(["hi", "Hello.", "again"])

          // The log keeps the abandoned branch, replays to the same state and transcript, and is well formed.
          const events = yield* collect(engine.replaySession({ sessionId }))
          expectWellFormedLog(events)
          expect(events.filter((e) => e.type === "user.message").map((e) => (e as Extract<AgentEvent, { type: "user.message" }>).payload.content)).toEqual(["hi", "change things", "again"])
          const replayed = Either.getOrThrow(SessionState.replay(events))!
          expect(replayed).toEqual(yield* engine.sessionState({ sessionId }))
          expect(Transcript.messages(Transcript.replay(events)).map((m) => m.content)).toEqual(["hi", "Hello.", "again", "After the rewind."])
          const view = SessionView.fold(events)
          expect(view.turns.map((t) => t.abandoned === true)).toEqual([false, true, false])

          // Rewinding the rewind (to the sequence before it) brings the files of the abandoned turn back.
          const rewindSequence = rewound.sequence
          const undone = yield* engine.rewindSession({ sessionId, toSequence: rewindSequence - 1 })
          expect(yield* Effect.promise(() => treeHash(workspace))).toBe(after)
          // What it overwrites is the first rewind's own writes: none seen by a snapshot.
          expect(undone.observed).toEqual([])
          const again = yield* collect(engine.replaySession({ sessionId }))
          expect(Transcript.messages(Transcript.replay(again)).map((m) => m.role === "tool" ? "tool" : m.content)).toEqual([
            "hi",
            "Hello.",
            "change things",
            "Editing.",
            "tool",
            "Writing.",
            "tool",
            "Overwriting.",
            "tool",
            "sed.",
            "tool",
            "mv.",
            "tool",
            "rm.",
            "tool",
            "Done."
          ])
          expect(SessionView.fold(again).turns.map((t) => t.abandoned === true)).toEqual([false, false, true])
        })), 120_000)
  })
}

const memoryStore = stores[0]![1]

/** Runs the changing turn after a first one; answers the point before it and the tree's hash there. */
const changeWorkspace = (workspace: string) =>
  Effect.gen(function*() {
    const engine = yield* SessionEngine
    const { sessionId } = yield* engine.createSession({ cwd: workspace, client: "test" })
    yield* collect(engine.runTurn({ sessionId, userMessage: "hi" }))
    const point = (yield* engine.sessionState({ sessionId })).lastSequence
    const before = yield* Effect.promise(() => treeHash(workspace))
    yield* collect(engine.runTurn({ sessionId, userMessage: "change things" }))
    return { engine, sessionId, point, before }
  })

describe("rewind: a file saved while a command ran (kernel45)", () => {
  it.scoped("is named observed in the result and the event, and a rewind of the rewind gives it back", () =>
    scenario(memoryStore, [
      { chunks: ["Hello."] },
      { chunks: ["Editing."], toolCalls: [{ tool: "edit_file", args: { path: "e.txt", oldString: "edited", newString: "changed" } }] },
      // Stands in for your editor saving notes.txt while a command runs: the snapshot sees the same change.
      { chunks: ["Testing."], toolCalls: [{ tool: "shell", args: { command: "cp d.txt notes.txt" } }] },
      { chunks: ["Done."] }
    ], (workspace) =>
      Effect.gen(function*() {
        const { engine, point, sessionId } = yield* changeWorkspace(workspace)
        const notes = NodePath.join(workspace, "notes.txt")
        expect(yield* Effect.promise(() => NodeFs.readFile(notes, "utf8"))).toBe("dee\n")

        const rewound = yield* engine.rewindSession({ sessionId, toSequence: point })
        expect({ changes: rewound.changes.map((c) => c.path), observed: rewound.observed }).toEqual({ changes: ["e.txt", "notes.txt"], observed: ["notes.txt"] })
        const events = yield* collect(engine.replaySession({ sessionId }))
        expect(events.at(-1)).toMatchObject({ type: "session.rewound", payload: { observed: ["notes.txt"] } })
        expect(yield* Effect.promise(() => NodeFs.access(notes).then(() => true, () => false))).toBe(false)

        yield* engine.rewindSession({ sessionId, toSequence: rewound.sequence - 1 })
        expect(yield* Effect.promise(() => NodeFs.readFile(notes, "utf8"))).toBe("dee\n")
      })))
})

describe("rewind refuses, changing nothing", () => {
  it.scoped("a file changed outside the agent since: refused naming it; with force, overwritten and named", () =>
    scenario(memoryStore, [{ chunks: ["Hello."] }, ...changingTurn], (workspace) =>
      Effect.gen(function*() {
        const { before, engine, point, sessionId } = yield* changeWorkspace(workspace)
        yield* Effect.promise(() => NodeFs.writeFile(NodePath.join(workspace, "c.txt"), "changed by the user\n"))
        const changedOutside = yield* Effect.promise(() => treeHash(workspace))
        const refused = yield* Effect.flip(engine.rewindSession({ sessionId, toSequence: point }))
        expect(refused._tag).toBe("RewindRefused")
        expect(refused._tag === "RewindRefused" && refused.reason).toBe("changed_outside")
        expect(refused._tag === "RewindRefused" && refused.files).toEqual(["c.txt"])
        expect(yield* Effect.promise(() => treeHash(workspace))).toBe(changedOutside)
        const events = yield* collect(engine.replaySession({ sessionId }))
        expect(events.some((e) => e.type === "session.rewound")).toBe(false)
        const forced = yield* engine.rewindSession({ sessionId, toSequence: point, force: true })
        expect(forced.forced).toEqual(["c.txt"])
        expect(yield* Effect.promise(() => treeHash(workspace))).toBe(before)
        // What the force overwrote is kept: rewinding the rewind brings the user's change back.
        yield* engine.rewindSession({ sessionId, toSequence: forced.sequence - 1 })
        expect(yield* Effect.promise(() => treeHash(workspace))).toBe(changedOutside)
      })), 60_000)

  it.scoped("a link planted in place of a file is never written through: refused; with force the link itself is replaced", () =>
    scenario(memoryStore, [{ chunks: ["Hello."] }, ...changingTurn], (workspace) =>
      Effect.gen(function*() {
        const outside = yield* Effect.acquireRelease(
          Effect.promise(() => NodeFs.mkdtemp(NodePath.join(NodeOs.tmpdir(), "effect-agent-outside-"))),
          (dir) => Effect.promise(() => NodeFs.rm(dir, { recursive: true, force: true }))
        )
        const secret = NodePath.join(outside, "secret.txt")
        yield* Effect.promise(() => NodeFs.writeFile(secret, "outside\n"))
        const { before, engine, point, sessionId } = yield* changeWorkspace(workspace)
        yield* Effect.promise(async () => {
          await NodeFs.rm(NodePath.join(workspace, "e.txt"))
          await NodeFs.symlink(secret, NodePath.join(workspace, "e.txt"))
        })
        const refused = yield* Effect.flip(engine.rewindSession({ sessionId, toSequence: point }))
        expect(refused._tag === "RewindRefused" && refused.files).toEqual(["e.txt"])
        yield* engine.rewindSession({ sessionId, toSequence: point, force: true })
        expect(yield* Effect.promise(() => NodeFs.readFile(secret, "utf8"))).toBe("outside\n")
        expect((yield* Effect.promise(() => NodeFs.lstat(NodePath.join(workspace, "e.txt")))).isFile()).toBe(true)
        expect(yield* Effect.promise(() => treeHash(workspace))).toBe(before)
      })), 60_000)

  it.scoped("a turn waiting for the user: TurnInProgress, nothing stored, no file touched", () =>
    scenario(memoryStore, [{ chunks: ["Hello."] }, { chunks: ["w"], toolCalls: [{ tool: "write_file", args: { path: "x.txt", content: "x" } }] }], (workspace) =>
      Effect.gen(function*() {
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd: workspace, client: "test" })
        yield* collect(engine.runTurn({ sessionId, userMessage: "hi" }))
        const point = (yield* engine.sessionState({ sessionId })).lastSequence
        // The write asks (default mode): the turn waits for the user, its stream still read.
        const asked = yield* Deferred.make<void>()
        yield* Effect.forkScoped(collect(engine.runTurn({ sessionId, userMessage: "write" }).pipe(
          Stream.tap((e) => e.type === "permission.resolved" && e.payload.decision === "ask" ? Deferred.succeed(asked, undefined) : Effect.void)
        )))
        yield* Deferred.await(asked)
        const before = yield* Effect.promise(() => treeHash(workspace))
        const busy = yield* Effect.flip(engine.rewindSession({ sessionId, toSequence: point }))
        expect(busy._tag).toBe("TurnInProgress")
        expect(yield* Effect.promise(() => treeHash(workspace))).toBe(before)
        expect((yield* collect(engine.replaySession({ sessionId }))).some((e) => e.type === "session.rewound")).toBe(false)
      }), "default"), 60_000)

  it.scoped("a point inside a turn, the end, or past it: typed errors, nothing stored", () =>
    scenario(memoryStore, [{ chunks: ["Hello."] }, ...changingTurn], (workspace) =>
      Effect.gen(function*() {
        const { engine, point, sessionId } = yield* changeWorkspace(workspace)
        const inside = yield* Effect.flip(engine.rewindSession({ sessionId, toSequence: point + 3 }))
        expect(inside._tag === "InvalidInput" && inside.field).toBe("toSequence")
        const last = (yield* engine.sessionState({ sessionId })).lastSequence
        const end = yield* Effect.flip(engine.rewindSession({ sessionId, toSequence: last }))
        expect(end._tag === "RewindRefused" && end.reason).toBe("nothing_to_rewind")
        const outOfRange = yield* Effect.flip(engine.rewindSession({ sessionId, toSequence: last + 5 }))
        expect(outOfRange._tag).toBe("InvalidInput")
        expect((yield* engine.sessionState({ sessionId })).lastSequence).toBe(last)
      })), 60_000)
})

describe("rewind from a hostile log", () => {
  it.scoped("a log edited to name a path outside cwd is refused unsafe_path, and nothing is written anywhere", () =>
    Effect.gen(function*() {
      const workspace = yield* makeWorkspace
      const storeDir = yield* withStoreDir
      const dataDir = NodePath.join(storeDir, "data")
      const store = JsonlEventStore.layer({ dataDir }).pipe(Layer.provide(NodeContext.layer)) as StoreLayer
      const responses = [{ chunks: ["Hello."] }, { chunks: ["Writing."], toolCalls: [{ tool: "write_file", args: { path: "notes.txt", content: "agent\n" } }] }, { chunks: ["Done."] }]
      const { point, sessionId } = yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd: workspace, client: "test" })
        yield* collect(engine.runTurn({ sessionId, userMessage: "hi" }))
        const point = (yield* engine.sessionState({ sessionId })).lastSequence
        yield* collect(engine.runTurn({ sessionId, userMessage: "write" }))
        return { point, sessionId }
      }).pipe(Effect.provide(engineOn(store, responses, "bypass")))
      // Someone with access to the data folder points the recorded change outside cwd.
      const log = NodePath.join(dataDir, "sessions", `${sessionId}.jsonl`)
      const text = yield* Effect.promise(() => NodeFs.readFile(log, "utf8"))
      expect(text).toContain(`"path":"notes.txt"`)
      const edited = text.split("\n").map((line) => line.includes(`"workspace.changed"`) ? line.replace(`"path":"notes.txt"`, `"path":"../escape.txt"`) : line).join("\n")
      expect(edited).not.toBe(text)
      yield* Effect.promise(() => NodeFs.writeFile(log, edited))
      const before = yield* Effect.promise(() => treeHash(workspace))
      const refused = yield* Effect.flip(Effect.flatMap(SessionEngine, (engine) => engine.rewindSession({ sessionId, toSequence: point })).pipe(
        Effect.provide(engineOn(store, [], "bypass"))
      ))
      expect(refused).toMatchObject({ _tag: "RewindRefused", reason: "unsafe_path", files: ["../escape.txt"] })
      expect(yield* Effect.promise(() => treeHash(workspace))).toBe(before)
      expect(yield* Effect.promise(() => NodeFs.access(NodePath.join(NodePath.dirname(workspace), "escape.txt")).then(() => true, () => false))).toBe(false)
    }), 60_000)
})

describe("rewind after a cancel", () => {
  it.scoped("a command cancelled while it ran has its changes recorded before the call closes, and a rewind undoes them", () =>
    scenario(memoryStore, [
      { chunks: ["Hello."] },
      { chunks: ["Slow."], toolCalls: [{ tool: "shell", args: { command: "sh -c 'echo changed > a.txt; rm d.txt; exec sleep 60'" } }] }
    ], (workspace) =>
      Effect.gen(function*() {
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd: workspace, client: "test" })
        yield* collect(engine.runTurn({ sessionId, userMessage: "hi" }))
        const point = (yield* engine.sessionState({ sessionId })).lastSequence
        const before = yield* Effect.promise(() => treeHash(workspace))
        const started = yield* Deferred.make<void>()
        const turn = yield* Effect.forkScoped(collect(engine.runTurn({ sessionId, userMessage: "slow" }).pipe(
          Stream.tap((e) => e.type === "tool.started" ? Deferred.succeed(started, undefined) : Effect.void)
        )))
        yield* Deferred.await(started)
        // The command has changed the files once d.txt is gone (it then sleeps).
        yield* Effect.promise(async () => {
          while (await NodeFs.access(NodePath.join(workspace, "d.txt")).then(() => true, () => false)) await new Promise((r) => setTimeout(r, 20))
        })
        yield* engine.cancelTurn({ sessionId })
        const events = yield* Fiber.join(turn)
        const types = events.map((e) => e.type)
        expect(types.slice(-3)).toEqual(["workspace.changed", "tool.failed", "turn.completed"])
        expect(events.find((e) => e.type === "workspace.changed")!.payload).toMatchObject({ changes: [{ path: "a.txt" }, { path: "d.txt" }] })
        yield* engine.rewindSession({ sessionId, toSequence: point })
        expect(yield* Effect.promise(() => treeHash(workspace))).toBe(before)
      })), 60_000)
})
