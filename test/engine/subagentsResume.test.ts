/**
 * A paused subagent survives a restart like any paused turn: the engine is rebuilt over the same
 * data (a copy of the logs as a killed process left them: no writer lock, no index), with scripted
 * models for parent and child. The parent's turn is still paused, waiting on its subagent; the
 * child's question is in the parent's `pendingApprovals`; answering it (on either session) and
 * resuming (either session) runs the child to its end, its answer becomes the `task` call's result
 * once, and the parent's turn goes on. Hostile: a restart between the child's end and the parent's
 * `subagent.completed`, a second restart, a cancel while waiting, a child cancelled on its own, a
 * child log gone, several children, a grandchild.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import * as NodeFs from "node:fs"
import { createRequire } from "node:module"
import * as NodePath from "node:path"
import type { AgentEvent, EventOfType } from "../../src/domain/AgentEvent.js"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import { AgentHooks } from "../../src/services/AgentHooks.js"
import type * as FakeModelProvider from "../../src/layers/FakeModelProvider.js"
import * as JsonlEventStore from "../../src/layers/JsonlEventStore.js"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as SqliteEventStore from "../../src/layers/SqliteEventStore.js"
import * as TaskTool from "../../src/layers/TaskTool.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"
import type { EventStore } from "../../src/services/EventStore.js"
import { collect, engineLayer, engineProcess, expectWellFormedLog, tempDir } from "../helpers.js"

type Store = "jsonl" | "sqlite"

interface SqliteDatabase {
  prepare(sql: string): { run(...params: ReadonlyArray<unknown>): unknown }
  close(): void
}
const Sqlite = createRequire(import.meta.url)("better-sqlite3") as new(filename: string) => SqliteDatabase

const storeOn = (store: Store, dataDir: string): Layer.Layer<EventStore, unknown> =>
  store === "jsonl"
    ? JsonlEventStore.layer({ dataDir }).pipe(Layer.provide(NodeContext.layer))
    : SqliteEventStore.layer({ filename: NodePath.join(dataDir, "sessions.db") }) as Layer.Layer<EventStore, unknown>

/** An engine with the task tool, the workspace tools and the default policy (writes ask). */
const engineOn = (store: Store, dataDir: string, model: FakeModelProvider.Options) =>
  engineLayer(storeOn(store, dataDir), model).pipe(
    Layer.provideMerge(TaskTool.layer.pipe(Layer.provide(WorkspaceTools.layer().pipe(Layer.provide(NodeContext.layer))))),
    Layer.provideMerge(PermissionPolicy.layer({})),
    Layer.provideMerge(NodeContext.layer)
  )

const process = engineProcess

/**
 * What a process killed now leaves: its logs as they are, without its writer locks (a dead process's
 * are taken over anyway) and without the JSONL index (rebuilt from the logs). A SQLite database is
 * copied whole, its leases dropped. `keep` cuts a session's log after that sequence.
 */
const crashCopy = (store: Store, from: string, to: string, keep: Record<string, number> = {}, drop: ReadonlyArray<string> = []) => {
  if (store === "sqlite") {
    NodeFs.mkdirSync(to, { recursive: true })
    // A consistent copy of the live database, then the dead process's leases dropped.
    const source = new Sqlite(NodePath.join(from, "sessions.db"))
    source.prepare("VACUUM INTO ?").run(NodePath.join(to, "sessions.db"))
    source.close()
    const copy = new Sqlite(NodePath.join(to, "sessions.db"))
    copy.prepare("DELETE FROM writer_leases").run()
    copy.close()
    return
  }
  NodeFs.mkdirSync(NodePath.join(to, "sessions"), { recursive: true })
  for (const name of NodeFs.readdirSync(NodePath.join(from, "sessions")).filter((f) => f.endsWith(".jsonl"))) {
    const sessionId = name.slice(0, -".jsonl".length)
    if (drop.includes(sessionId)) continue
    const lines = NodeFs.readFileSync(NodePath.join(from, "sessions", name), "utf8").split("\n").filter((l) => l !== "")
    const cut = keep[sessionId]
    // The first line is the file's header; each other line an event.
    const kept = cut === undefined ? lines : lines.filter((line, i) => i === 0 || (JSON.parse(line) as AgentEvent).sequence <= cut)
    NodeFs.writeFileSync(NodePath.join(to, "sessions", name), kept.join("\n") + "\n", { mode: 0o600 })
  }
}

const ofType = <T extends AgentEvent["type"]>(events: ReadonlyArray<AgentEvent>, type: T) =>
  events.filter((e): e is EventOfType<T> => e.type === type)

const logOf = (sessionId: string) => Effect.flatMap(SessionEngine, (engine) => collect(engine.replaySession({ sessionId })))

const task = (description: string, prompt: string, id: string) => ({ tool: "task", args: { description, prompt }, id })
const write = (path: string, id: string) => ({ tool: "write_file", args: { path, content: `${path}\n` }, id })

/** Runs a turn in the background until `until` of its events has been stored; returns the session. */
const runUntil = (message: string, cwd: string, until: (event: AgentEvent) => boolean) =>
  Effect.gen(function*() {
    const engine = yield* SessionEngine
    const { sessionId } = yield* engine.createSession({ cwd, client: "test" })
    const reached = yield* Deferred.make<AgentEvent>()
    yield* engine.runTurn({ sessionId, userMessage: message }).pipe(
      Stream.tap((event) => until(event) ? Deferred.succeed(reached, event) : Effect.void),
      Stream.runDrain,
      Effect.forkDaemon
    )
    return { sessionId, event: yield* Deferred.await(reached) }
  })

/** A fresh folder: the data dirs go in it, the sessions work in its `ws`. */
const workspace = Effect.map(tempDir, (dir) => {
  const root = NodeFs.realpathSync(dir)
  const cwd = NodePath.join(root, "ws")
  NodeFs.mkdirSync(cwd)
  return { root, cwd }
})

const isAsked = (event: AgentEvent): event is EventOfType<"subagent.asked"> => event.type === "subagent.asked"

/** The workspace, and a first process whose parent started a child that waits for approval of `w1`; then "killed". */
const pausedTree = (store: Store, extra: { readonly childResponses?: ReadonlyArray<FakeModelProvider.ScriptedResponse> } = {}) =>
  Effect.gen(function*() {
    const { cwd, root } = yield* workspace
    const first = yield* process(engineOn(store, NodePath.join(root, "one"), {
      responses: [{ toolCalls: [task("write the notes", "child: write", "t1")] }],
      subagents: { "child: write": extra.childResponses ?? [{ toolCalls: [write("notes.txt", "w1")] }] }
    }))
    const { event, sessionId } = yield* first.provide(runUntil("delegate", cwd, isAsked))
    const childSessionId = (event as EventOfType<"subagent.asked">).payload.childSessionId
    crashCopy(store, NodePath.join(root, "one"), NodePath.join(root, "two"))
    yield* first.stop
    return { root, cwd, sessionId, childSessionId, dataDir: NodePath.join(root, "two") }
  })

const turnEnds = (log: ReadonlyArray<AgentEvent>) => ofType(log, "turn.completed").map((e) => [e.payload.stopReason, e.payload.errorCode])

describe("a paused subagent after a restart", () => {
  for (const store of ["jsonl", "sqlite"] as const) {
    it.scoped(`(${store}) the parent stays paused on its subagent; the child's ask is the parent's to answer; resumed, the child's answer is the call's result and the parent ends`, () =>
      Effect.gen(function*() {
        const { cwd, dataDir, sessionId, childSessionId } = yield* pausedTree(store)
        const second = yield* process(engineOn(store, dataDir, {
          responses: [{ chunks: ["The notes are written."] }],
          subagents: { "child: write": [{ chunks: ["wrote notes.txt"] }] }
        }))
        yield* second.provide(Effect.gen(function*() {
          const engine = yield* SessionEngine
          // Paused, not repaired: the task call is still open, waiting on the child.
          const state = yield* engine.sessionState({ sessionId })
          expect(state.openTurn?.toolCalls.map((c) => [c.toolCallId, c.status, c.subagent?.childSessionId])).toEqual([["t1", "running", childSessionId]])
          const pending = yield* engine.pendingApprovals({ sessionId })
          expect(pending.map((c) => [c.toolCallId, c.tool, c.askedBy])).toEqual([["w1", "write_file", { sessionId: childSessionId, description: "write the notes" }]])
          const busy = yield* Effect.either(collect(engine.runTurn({ sessionId, userMessage: "something else" })))
          expect(Either.isLeft(busy) && busy.left._tag).toBe("TurnInProgress")
          // Nothing was repaired by looking: neither log moved.
          expect(turnEnds(yield* logOf(sessionId))).toEqual([])

          // Answered through the parent, resumed through the parent.
          yield* engine.resolvePermission({ sessionId, toolCallId: "w1", decision: "allow" })
          const resumed = yield* collect(engine.resumeTurn({ sessionId }))
          expect(ofType(resumed, "subagent.completed").map((e) => [e.payload.outcome, e.payload.childSessionId])).toEqual([["final", childSessionId]])
          expect(ofType(resumed, "tool.completed").map((e) => [e.payload.toolCallId, e.payload.result])).toEqual([["t1", "wrote notes.txt"]])
          expect(resumed.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
          expect(NodeFs.readFileSync(NodePath.join(cwd, "notes.txt"), "utf8")).toBe("notes.txt\n")

          const parent = yield* logOf(sessionId)
          const child = yield* logOf(childSessionId)
          expectWellFormedLog(parent)
          expectWellFormedLog(child)
          expect(turnEnds(parent)).toEqual([["final", undefined]])
          expect(turnEnds(child)).toEqual([["final", undefined]])
          // The answer is recorded once, in the child's log, and the call ran once, narrowed (no orphan denial).
          expect(ofType(child, "permission.resolved").map((e) => [e.payload.decision, e.payload.actor])).toEqual([["ask", "policy"], ["allow", "user"]])
          expect(ofType(child, "tool.completed").map((e) => e.payload.toolCallId)).toEqual(["w1"])
          expect(ofType(parent, "subagent.completed")).toHaveLength(1)
          expect(yield* engine.pendingApprovals({ sessionId })).toEqual([])
        }))
        yield* second.stop
      }).pipe(Effect.provide(NodeContext.layer)))
  }

  it.scoped("a clean stop after a subagent's end is stored but before its call's result: the call is not failed, the next process stores the result", () =>
    Effect.gen(function*() {
      const { cwd, root } = yield* workspace
      const dataDir = NodePath.join(root, "data")
      // Holds t2 between its subagent.completed and its tool.completed (the hook runs on the call's
      // output before the result is stored), so the stop lands exactly there, every run.
      const held = yield* Deferred.make<void>()
      const holding = Layer.succeed(AgentHooks, {
        afterToolResult: (call, output) =>
          call.tool === "task" && output.result === "looked" ? Effect.zipRight(Deferred.succeed(held, undefined), Effect.never) : Effect.succeed(output)
      })
      const first = yield* process(engineOn("jsonl", dataDir, {
        responses: [{ toolCalls: [task("write the notes", "child: write", "t1"), task("look", "child: look", "t2")] }],
        subagents: { "child: write": [{ toolCalls: [write("notes.txt", "w1")] }], "child: look": [{ chunks: ["looked"] }] }
      }).pipe(Layer.provideMerge(holding)))
      const { sessionId } = yield* first.provide(runUntil("delegate", cwd, isAsked))
      yield* Deferred.await(held)
      yield* first.stop
      const stopped = yield* Effect.provide(logOf(sessionId), engineOn("jsonl", dataDir, {}))
      expect(ofType(stopped, "subagent.completed").map((e) => e.payload.toolCallId)).toEqual(["t2"])
      // Its subagent ended and answered: the stop does not fail the call as cut short.
      expect(ofType(stopped, "tool.failed")).toEqual([])
      const second = yield* process(engineOn("jsonl", dataDir, { responses: [{ chunks: ["Done."] }], subagents: { "child: write": [{ chunks: ["wrote notes.txt"] }] } }))
      yield* second.provide(Effect.gen(function*() {
        const engine = yield* SessionEngine
        yield* engine.resolvePermission({ sessionId, toolCallId: "w1", decision: "allow" })
        yield* collect(engine.resumeTurn({ sessionId }))
        const parent = yield* logOf(sessionId)
        expect(Object.fromEntries(ofType(parent, "tool.completed").map((e) => [e.payload.toolCallId, e.payload.result]))).toEqual({ t2: "looked", t1: "wrote notes.txt" })
        expect(ofType(parent, "subagent.completed").map((e) => e.payload.toolCallId)).toEqual(["t2", "t1"])
        expect(turnEnds(parent)).toEqual([["final", undefined]])
        expectWellFormedLog(parent)
      }))
      yield* second.stop
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("a clean stop (the engine's scope closing) leaves the tree paused as well: nothing cancelled, and the next process completes it", () =>
    Effect.gen(function*() {
      const { cwd, root } = yield* workspace
      const dataDir = NodePath.join(root, "data")
      const first = yield* process(engineOn("jsonl", dataDir, {
        responses: [{ toolCalls: [task("write the notes", "child: write", "t1"), task("look", "child: look", "t2")] }],
        subagents: { "child: write": [{ toolCalls: [write("notes.txt", "w1")] }], "child: look": [{ chunks: ["looked"] }] }
      }))
      // Stopped once the child of t1 asks and t2 has its result: a stop while t2's child still runs
      // cancels it (a clean stop cancels what runs), which is not this test's case.
      let childSessionId = ""
      let looked = false
      const { sessionId } = yield* first.provide(runUntil("delegate", cwd, (event) => {
        if (isAsked(event)) childSessionId = event.payload.childSessionId
        if (event.type === "tool.completed" && event.payload.toolCallId === "t2") looked = true
        return childSessionId !== "" && looked
      }))
      yield* first.stop
      const second = yield* process(engineOn("jsonl", dataDir, {
        responses: [{ chunks: ["Done."] }],
        subagents: { "child: write": [{ chunks: ["wrote notes.txt"] }] }
      }))
      yield* second.provide(Effect.gen(function*() {
        const engine = yield* SessionEngine
        const stopped = yield* logOf(sessionId)
        // The stop closed nothing of the waiting call: no subagent.completed, no turn end, in either log.
        expect(ofType(stopped, "subagent.completed").map((e) => e.payload.toolCallId)).toEqual(["t2"])
        expect(turnEnds(stopped)).toEqual([])
        expect(turnEnds(yield* logOf(childSessionId))).toEqual([])
        expect((yield* engine.pendingApprovals({ sessionId })).map((c) => c.toolCallId)).toEqual(["w1"])
        yield* engine.resolvePermission({ sessionId, toolCallId: "w1", decision: "allow" })
        const resumed = yield* collect(engine.resumeTurn({ sessionId }))
        expect(ofType(resumed, "tool.completed").map((e) => [e.payload.toolCallId, e.payload.result])).toEqual([["t1", "wrote notes.txt"]])
        const parent = yield* logOf(sessionId)
        expect(Object.fromEntries(ofType(parent, "tool.completed").map((e) => [e.payload.toolCallId, e.payload.result]))).toEqual({ t2: "looked", t1: "wrote notes.txt" })
        expect(turnEnds(parent)).toEqual([["final", undefined]])
        expectWellFormedLog(parent)
        expectWellFormedLog(yield* logOf(childSessionId))
      }))
      yield* second.stop
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("answered and resumed on the child's own session: the parent (which waits on it) drives it, and ends", () =>
    Effect.gen(function*() {
      const { dataDir, sessionId, childSessionId } = yield* pausedTree("jsonl")
      const second = yield* process(engineOn("jsonl", dataDir, {
        responses: [{ chunks: ["Parent done."] }],
        subagents: { "child: write": [{ toolCalls: [write("more.txt", "w2")] }, { chunks: ["wrote both"] }] }
      }))
      yield* second.provide(Effect.gen(function*() {
        const engine = yield* SessionEngine
        yield* engine.resolvePermission({ sessionId: childSessionId, toolCallId: "w1", decision: "allow" })
        // The child's next write asks again: answered on the child's session as it comes.
        const resumed = yield* engine.resumeTurn({ sessionId: childSessionId }).pipe(
          Stream.tap((event) =>
            isAsked(event) ? engine.resolvePermission({ sessionId: event.payload.childSessionId, toolCallId: event.payload.childToolCallId, decision: "allow" }) : Effect.void
          ),
          collect
        )
        // The stream is the parent's turn, which resumed the child.
        expect(resumed.every((e) => e.sessionId === sessionId)).toBe(true)
        expect(ofType(resumed, "tool.completed").find((e) => e.payload.toolCallId === "t1")?.payload.result).toBe("wrote both")
        const child = yield* logOf(childSessionId)
        // The second write was decided under the child's narrowing again, never `subagent/orphaned`.
        expect(ofType(child, "permission.resolved").map((e) => e.payload.policy ?? e.payload.actor)).toEqual(["default/write", "user", "default/write", "user"])
        expect(turnEnds(yield* logOf(sessionId))).toEqual([["final", undefined]])
        expectWellFormedLog(child)
      }))
      yield* second.stop
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("a restart between the child's turn.completed and the parent's subagent.completed: the parent picks up the child's answer, once", () =>
    Effect.gen(function*() {
      const { cwd, root } = yield* workspace
      const one = NodePath.join(root, "one")
      const first = yield* process(engineOn("jsonl", one, {
        responses: [{ toolCalls: [task("look", "child: look", "t1")] }, { chunks: ["never sent"] }],
        subagents: { "child: look": [{ chunks: ["the answer is 42"] }] }
      }))
      const { event, sessionId } = yield* first.provide(runUntil("delegate", cwd, (e) => e.type === "turn.completed"))
      expect(event.sessionId).toBe(sessionId)
      const full = yield* first.provide(logOf(sessionId))
      const childSessionId = ofType(full, "subagent.started")[0]!.payload.childSessionId
      const before = ofType(full, "subagent.completed")[0]!.sequence - 1
      yield* first.stop
      for (const via of ["resume", "new turn"] as const) {
        const dataDir = NodePath.join(root, via.replace(" ", "-"))
        crashCopy("jsonl", one, dataDir, { [sessionId]: before })
        const childLog = NodeFs.readFileSync(NodePath.join(dataDir, "sessions", `${childSessionId}.jsonl`), "utf8")
        const second = yield* process(engineOn("jsonl", dataDir, { responses: [{ chunks: ["Got it."] }, { chunks: ["Next."] }] }))
        yield* second.provide(Effect.gen(function*() {
          const engine = yield* SessionEngine
          if (via === "resume") {
            // Nothing waits for the user, yet the turn is not a crash's: resumed, it takes the child's answer.
            expect(yield* engine.pendingApprovals({ sessionId })).toEqual([])
            const resumed = yield* collect(engine.resumeTurn({ sessionId }))
            expect(resumed.map((e) => e.type)).toEqual(["subagent.completed", "tool.completed", "model.delta", "turn.completed"])
            expect(ofType(resumed, "tool.completed")[0]!.payload.result).toBe("the answer is 42")
            expect(turnEnds(yield* logOf(sessionId))).toEqual([["final", undefined]])
          } else {
            // The next turn repairs the open one: the call ends with the child's answer, the turn `interrupted`.
            yield* collect(engine.runTurn({ sessionId, userMessage: "and now?" }))
            const log = yield* logOf(sessionId)
            expect(ofType(log, "tool.completed").map((e) => [e.payload.toolCallId, e.payload.result])).toEqual([["t1", "the answer is 42"]])
            expect(turnEnds(log)).toEqual([["error", "interrupted"], ["final", undefined]])
          }
          const log = yield* logOf(sessionId)
          expect(ofType(log, "subagent.completed")).toHaveLength(1)
          expectWellFormedLog(log)
          // The child's log is untouched: its turn had ended.
          expect(NodeFs.readFileSync(NodePath.join(dataDir, "sessions", `${childSessionId}.jsonl`), "utf8")).toBe(childLog)
        }))
        yield* second.stop
      }
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("a child a crash left working (not waiting): the parent is not paused; its next turn repairs both logs, the call ending as the child did", () =>
    Effect.gen(function*() {
      const { cwd, root } = yield* workspace
      const one = NodePath.join(root, "one")
      const first = yield* process(engineOn("jsonl", one, {
        responses: [{ toolCalls: [task("look", "child: look", "t1")] }, { chunks: ["never sent"] }],
        subagents: { "child: look": [{ chunks: ["never"] }] }
      }))
      const { sessionId } = yield* first.provide(runUntil("delegate", cwd, (e) => e.type === "turn.completed"))
      const full = yield* first.provide(logOf(sessionId))
      const childSessionId = ofType(full, "subagent.started")[0]!.payload.childSessionId
      const child = yield* first.provide(logOf(childSessionId))
      yield* first.stop
      // Killed while the child's model streamed: the child's log ends at its message, the parent's before the call's end.
      const two = NodePath.join(root, "two")
      crashCopy("jsonl", one, two, { [sessionId]: ofType(full, "subagent.completed")[0]!.sequence - 1, [childSessionId]: ofType(child, "user.message")[0]!.sequence })
      const second = yield* process(engineOn("jsonl", two, { responses: [{ chunks: ["Next."] }] }))
      yield* second.provide(Effect.gen(function*() {
        const engine = yield* SessionEngine
        expect(yield* engine.pendingApprovals({ sessionId })).toEqual([])
        yield* collect(engine.runTurn({ sessionId, userMessage: "and now?" }))
        const parent = yield* logOf(sessionId)
        const repaired = yield* logOf(childSessionId)
        expect(turnEnds(repaired)).toEqual([["error", "interrupted"]])
        expect(ofType(parent, "subagent.completed").map((e) => [e.payload.outcome, e.payload.errorCode])).toEqual([["error", "interrupted"]])
        expect(ofType(parent, "tool.failed").map((e) => [e.payload.toolCallId, e.payload.errorCode])).toEqual([["t1", "subagent_failed"]])
        expect(turnEnds(parent)).toEqual([["error", "interrupted"], ["final", undefined]])
        expectWellFormedLog(parent)
        expectWellFormedLog(repaired)
      }))
      yield* second.stop
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("a second restart: after the answer is stored, and again while the resumed child asks once more", () =>
    Effect.gen(function*() {
      const { cwd, root, sessionId, childSessionId, dataDir } = yield* pausedTree("jsonl")
      const childScript = { "child: write": [{ toolCalls: [write("second.txt", "w2")] }, { chunks: ["both written"] }] }
      // Process two stores the answer and is killed.
      const second = yield* process(engineOn("jsonl", dataDir, { responses: [], subagents: childScript }))
      yield* second.provide(Effect.flatMap(SessionEngine, (engine) => engine.resolvePermission({ sessionId, toolCallId: "w1", decision: "allow" })))
      const three = NodePath.join(root, "three")
      crashCopy("jsonl", dataDir, three)
      yield* second.stop
      // Process three resumes: the first write runs, the second asks; killed while it waits.
      const third = yield* process(engineOn("jsonl", three, { responses: [], subagents: childScript }))
      const asked = yield* third.provide(Effect.gen(function*() {
        const engine = yield* SessionEngine
        expect((yield* engine.pendingApprovals({ sessionId })).map((c) => c.toolCallId)).toEqual([])
        const reached = yield* Deferred.make<string>()
        yield* engine.resumeTurn({ sessionId }).pipe(
          Stream.tap((event) => isAsked(event) ? Deferred.succeed(reached, event.payload.childToolCallId) : Effect.void),
          Stream.runDrain,
          Effect.forkDaemon
        )
        return yield* Deferred.await(reached)
      }))
      expect(asked).toBe("w2")
      const four = NodePath.join(root, "four")
      crashCopy("jsonl", three, four)
      yield* third.stop
      const fourth = yield* process(engineOn("jsonl", four, { responses: [{ chunks: ["All done."] }], subagents: { "child: write": [{ chunks: ["both written"] }] } }))
      yield* fourth.provide(Effect.gen(function*() {
        const engine = yield* SessionEngine
        expect((yield* engine.pendingApprovals({ sessionId })).map((c) => [c.toolCallId, c.askedBy?.sessionId])).toEqual([["w2", childSessionId]])
        yield* engine.resolvePermission({ sessionId, toolCallId: "w2", decision: "allow" })
        const resumed = yield* collect(engine.resumeTurn({ sessionId }))
        expect(ofType(resumed, "tool.completed").map((e) => [e.payload.toolCallId, e.payload.result])).toEqual([["t1", "both written"]])
        const parent = yield* logOf(sessionId)
        const child = yield* logOf(childSessionId)
        expectWellFormedLog(parent)
        expectWellFormedLog(child)
        expect(turnEnds(parent)).toEqual([["final", undefined]])
        expect(turnEnds(child)).toEqual([["final", undefined]])
        // Each write ran once, each answer stored once.
        expect(ofType(child, "tool.completed").map((e) => e.payload.toolCallId)).toEqual(["w1", "w2"])
        expect(ofType(child, "permission.resolved").filter((e) => e.payload.actor === "user")).toHaveLength(2)
        expect(ofType(parent, "subagent.completed")).toHaveLength(1)
        expect(NodeFs.readdirSync(cwd).sort()).toEqual(["notes.txt", "second.txt"])
      }))
      yield* fourth.stop
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("cancelling the waiting parent cascades: the child's turn is closed cancelled in its log, then the parent's call and turn", () =>
    Effect.gen(function*() {
      const { dataDir, sessionId, childSessionId } = yield* pausedTree("jsonl")
      const second = yield* process(engineOn("jsonl", dataDir, {}))
      yield* second.provide(Effect.gen(function*() {
        const engine = yield* SessionEngine
        yield* engine.cancelTurn({ sessionId })
        const parent = yield* logOf(sessionId)
        const child = yield* logOf(childSessionId)
        expect(turnEnds(child)).toEqual([["cancelled", undefined]])
        expect(parent.slice(-3).map((e) => [e.type, (e.payload as { outcome?: string; errorCode?: string }).outcome ?? (e.payload as { errorCode?: string }).errorCode])).toEqual([
          ["subagent.completed", "cancelled"],
          ["tool.failed", "cancelled"],
          ["turn.completed", undefined]
        ])
        expect(turnEnds(parent)).toEqual([["cancelled", undefined]])
        expectWellFormedLog(parent)
        expectWellFormedLog(child)
        expect(yield* engine.pendingApprovals({ sessionId })).toEqual([])
      }))
      yield* second.stop
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("the child cancelled on its own session, or its log gone: the parent's call ends with that as its error, the turn goes on", () =>
    Effect.gen(function*() {
      const { root, dataDir, sessionId, childSessionId } = yield* pausedTree("jsonl")
      // The same crash, with the child's log deleted since.
      const gone = NodePath.join(root, "gone")
      crashCopy("jsonl", dataDir, gone, {}, [childSessionId])
      const second = yield* process(engineOn("jsonl", dataDir, { responses: [{ chunks: ["The helper was stopped."] }] }))
      yield* second.provide(Effect.gen(function*() {
        const engine = yield* SessionEngine
        yield* engine.cancelTurn({ sessionId: childSessionId })
        const resumed = yield* collect(engine.resumeTurn({ sessionId }))
        expect(ofType(resumed, "subagent.completed").map((e) => e.payload.outcome)).toEqual(["cancelled"])
        expect(ofType(resumed, "tool.failed").map((e) => [e.payload.toolCallId, e.payload.errorCode])).toEqual([["t1", "subagent_failed"]])
        expect(turnEnds(yield* logOf(sessionId))).toEqual([["final", undefined]])
      }))
      yield* second.stop

      const third = yield* process(engineOn("jsonl", gone, { responses: [{ chunks: ["The helper is gone."] }] }))
      yield* third.provide(Effect.gen(function*() {
        const engine = yield* SessionEngine
        expect(yield* engine.pendingApprovals({ sessionId })).toEqual([])
        const resumed = yield* collect(engine.resumeTurn({ sessionId }))
        expect(ofType(resumed, "tool.failed").map((e) => [e.payload.toolCallId, e.payload.errorCode])).toEqual([["t1", "subagent_lost"]])
        expect(ofType(resumed, "subagent.completed").map((e) => [e.payload.outcome, e.payload.errorCode])).toEqual([["error", "subagent_lost"]])
        const log = yield* logOf(sessionId)
        expect(turnEnds(log)).toEqual([["final", undefined]])
        expectWellFormedLog(log)
        // No path of the data dir in what the model and the log are told.
        expect(JSON.stringify(ofType(log, "tool.failed"))).not.toContain(gone)
      }))
      yield* third.stop
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("several children paused at once, and a grandchild two deep: all listed on the top session, answered there, the tree completes", () =>
    Effect.gen(function*() {
      const { cwd, root } = yield* workspace
      const one = NodePath.join(root, "one")
      const first = yield* process(engineOn("jsonl", one, {
        responses: [{ toolCalls: [task("first", "child: a", "ta"), task("middle", "child: b", "tb")] }],
        subagents: {
          "child: a": [{ toolCalls: [write("a.txt", "wa")] }],
          "child: b": [{ toolCalls: [task("deep", "grandchild: c", "tc")] }],
          "grandchild: c": [{ toolCalls: [write("c.txt", "wc")] }]
        }
      }))
      const asks = new Set<string>()
      const { sessionId } = yield* first.provide(runUntil("delegate twice", cwd, (e) => {
        if (isAsked(e)) asks.add(e.payload.childToolCallId)
        return asks.size === 2
      }))
      const two = NodePath.join(root, "two")
      crashCopy("jsonl", one, two)
      yield* first.stop
      const second = yield* process(engineOn("jsonl", two, {
        responses: [{ chunks: ["Both done."] }],
        subagents: { "child: a": [{ chunks: ["a written"] }], "child: b": [{ chunks: ["b: c written"] }], "grandchild: c": [{ chunks: ["c written"] }] }
      }))
      yield* second.provide(Effect.gen(function*() {
        const engine = yield* SessionEngine
        const pending = yield* engine.pendingApprovals({ sessionId })
        expect(pending.map((c) => [c.toolCallId, c.askedBy?.description]).sort()).toEqual([["wa", "first"], ["wc", "deep"]])
        for (const call of pending) yield* engine.resolvePermission({ sessionId, toolCallId: call.toolCallId, decision: "allow" })
        const resumed = yield* collect(engine.resumeTurn({ sessionId }))
        expect(Object.fromEntries(ofType(resumed, "tool.completed").map((e) => [e.payload.toolCallId, e.payload.result]))).toEqual({ ta: "a written", tb: "b: c written" })
        expect(resumed.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
        expect(NodeFs.readdirSync(cwd).sort()).toEqual(["a.txt", "c.txt"])
        const sessions = yield* engine.listSessions
        expect(sessions).toHaveLength(4)
        for (const s of sessions) {
          const log = yield* logOf(s.sessionId)
          expectWellFormedLog(log)
          expect(turnEnds(log)).toEqual([["final", undefined]])
        }
      }))
      yield* second.stop
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("two siblings asking under the same call id: answered on the parent is refused as ambiguous (nothing answered), on each child's session it is theirs", () =>
    Effect.gen(function*() {
      const { cwd, root } = yield* workspace
      const first = yield* process(engineOn("jsonl", NodePath.join(root, "one"), {
        responses: [{ toolCalls: [task("first", "child: a", "ta"), task("second", "child: b", "tb")] }, { chunks: ["Both done."] }],
        // A provider without call ids of its own (OpenAI-compatible servers: `call_<index>`) gives each child the same one.
        subagents: { "child: a": [{ toolCalls: [write("a.txt", "call_0")] }, { chunks: ["a written"] }], "child: b": [{ toolCalls: [write("b.txt", "call_0")] }, { chunks: ["b written"] }] }
      }))
      yield* first.provide(Effect.gen(function*() {
        const engine = yield* SessionEngine
        const asked: Array<string> = []
        const { sessionId } = yield* runUntil("delegate twice", cwd, (e) => isAsked(e) && asked.push(e.payload.childSessionId) === 2)
        // Until December 2026 the first child found took the parent's answer, whichever the user meant.
        const ambiguous = yield* Effect.either(engine.resolvePermission({ sessionId, toolCallId: "call_0", decision: "allow" }))
        expect(Either.isLeft(ambiguous) && ambiguous.left).toMatchObject({ _tag: "InvalidInput", field: "toolCallId" })
        expect(Either.isLeft(ambiguous) && (ambiguous.left as { detail: string }).detail).toContain(asked.sort().join(", "))
        expect((yield* engine.pendingApprovals({ sessionId })).map((c) => c.askedBy?.sessionId).sort()).toEqual(asked)
        for (const child of asked) yield* engine.resolvePermission({ sessionId: child, toolCallId: "call_0", decision: "allow" })
        const ended = yield* collect(engine.watchSession({ sessionId }).pipe(Stream.takeUntil((e) => e.type === "turn.completed")))
        expect(Object.fromEntries(ofType(ended, "tool.completed").map((e) => [e.payload.toolCallId, e.payload.result]))).toEqual({ ta: "a written", tb: "b written" })
        expect(NodeFs.readdirSync(cwd).sort()).toEqual(["a.txt", "b.txt"])
      }))
      yield* first.stop
    }).pipe(Effect.provide(NodeContext.layer)))
})
