import { mkdtempSync, realpathSync, rmSync, symlinkSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import * as FakeModelProvider from "../../src/layers/FakeModelProvider.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"
import { makeSessionEngine, type PromiseSessionEngine } from "../../src/index.js"
import * as IdGenerator from "../../src/services/IdGenerator.js"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { writeFileSync } from "node:fs"
import { expectWellFormedLog, testTools } from "../helpers.js"

// The façade runs on the live clock; the scripted model's own delay paces it, the test never sleeps.
const slow = { responses: [{ chunks: Array.from({ length: 50 }, (_, i) => `${i} `), delay: 20 }] }

let engines: Array<PromiseSessionEngine> = []
const make = (model: FakeModelProvider.Options = {}) => {
  const engine = makeSessionEngine({ store: MemoryEventStore.layer, model: FakeModelProvider.layer(model), ids: IdGenerator.layerSequential })
  engines.push(engine)
  return engine
}
afterEach(async () => {
  await Promise.all(engines.map((e) => e.dispose()))
  engines = []
})

const replay = async (engine: PromiseSessionEngine, sessionId: string) => {
  const events: Array<AgentEvent> = []
  for await (const event of engine.replaySession({ sessionId })) events.push(event)
  return events
}

describe("makeSessionEngine", () => {
  it("runs a turn as an async iterable and replays it", async () => {
    const engine = make({ responses: [{ chunks: ["hi", " there"] }] })
    const session = await engine.createSession({ cwd: "/tmp", client: "test" })
    const events: Array<AgentEvent> = []
    for await (const event of engine.runTurn({ sessionId: session.sessionId, userMessage: "hello" })) events.push(event)
    expect(events.map((e) => e.type)).toEqual(["turn.started", "user.message", "model.delta", "model.delta", "turn.completed"])
    expect((await replay(engine, session.sessionId)).slice(1)).toEqual(events)
    expect((await engine.listSessions()).map((s) => s.sessionId)).toEqual([session.sessionId])
  })

  it("createSession takes an absolute, existing directory and stores its real path", async () => {
    const engine = make()
    const root = mkdtempSync(join(tmpdir(), "effect-agent-promise-"))
    try {
      writeFileSync(join(root, "a-file"), "x")
      for (const [cwd, detail] of [["proj", /absolute/], [join(root, "nope"), /does not exist/], [join(root, "a-file"), /not a directory/]] as const) {
        const error = await engine.createSession({ cwd, client: "test" }).then(() => undefined, (e: unknown) => e)
        expect(error, cwd).toMatchObject({ _tag: "InvalidInput", field: "cwd" })
        expect((error as { detail: string }).detail, cwd).toMatch(detail)
      }
      expect(await engine.listSessions()).toEqual([])
      symlinkSync(tmpdir(), join(root, "link"))
      expect((await engine.createSession({ cwd: join(root, "link", "."), client: "test" })).cwd).toBe(realpathSync(tmpdir()))
    } finally {
      rmSync(root, { recursive: true, force: true })
    }
  })

  it("breaking out of for await cancels the turn; the log ends cancelled", async () => {
    const engine = make(slow)
    const { sessionId } = await engine.createSession({ cwd: "/tmp", client: "test" })
    for await (const event of engine.runTurn({ sessionId, userMessage: "count" })) {
      if (event.type === "model.delta") break
    }
    const log = await replay(engine, sessionId)
    expect(log.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "cancelled" } })
    expect(log.filter((e) => e.type === "model.delta").length).toBeLessThan(50)
    expectWellFormedLog(log)
  })

  it("aborting the signal cancels the turn and the iteration ends with turn.completed cancelled", async () => {
    const engine = make(slow)
    const { sessionId } = await engine.createSession({ cwd: "/tmp", client: "test" })
    const controller = new AbortController()
    const events: Array<AgentEvent> = []
    for await (const event of engine.runTurn({ sessionId, userMessage: "count", signal: controller.signal })) {
      events.push(event)
      if (event.type === "model.delta") controller.abort()
    }
    expect(events.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "cancelled" } })
    expect(events.filter((e) => e.type === "model.delta").length).toBeLessThan(50)
    expect((await replay(engine, sessionId)).slice(1)).toEqual(events)
  })

  it("an already aborted signal rejects and stores nothing", async () => {
    const engine = make()
    const { sessionId } = await engine.createSession({ cwd: "/tmp", client: "test" })
    const controller = new AbortController()
    controller.abort(new Error("stopped before start"))
    const iterate = async () => {
      for await (const _ of engine.runTurn({ sessionId, userMessage: "x", signal: controller.signal })) { /* nothing */ }
    }
    await expect(iterate()).rejects.toThrow("stopped before start")
    expect(await replay(engine, sessionId)).toHaveLength(1)
  })

  it("cancelTurn from outside ends the iteration with the cancellation", async () => {
    const engine = make(slow)
    const { sessionId } = await engine.createSession({ cwd: "/tmp", client: "test" })
    const events: Array<AgentEvent> = []
    for await (const event of engine.runTurn({ sessionId, userMessage: "count" })) {
      events.push(event)
      if (event.type === "model.delta") void engine.cancelTurn({ sessionId })
    }
    expect(events.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "cancelled" } })
  })

  it("steer, followUp, dropFollowUps and forkSession as promises", async () => {
    const engine = make({ responses: [{ chunks: ["one"] }, { chunks: ["two"] }, { chunks: ["three"] }] })
    const { sessionId } = await engine.createSession({ cwd: "/tmp", client: "test" })
    await expect(engine.steer({ sessionId, message: "x" })).rejects.toMatchObject({ _tag: "NoTurnInProgress", sessionId })
    const events: Array<AgentEvent> = []
    for await (const event of engine.runTurn({ sessionId, userMessage: "hello" })) events.push(event)
    // Idle: the follow-up runs at once; watch until its turn has completed.
    const { queueId } = await engine.followUp({ sessionId, message: "again" })
    const controller = new AbortController()
    const watched: Array<AgentEvent> = []
    for await (const event of engine.watchSession({ sessionId, signal: controller.signal })) {
      watched.push(event)
      if (event.type === "turn.completed" && watched.filter((e) => e.type === "turn.completed").length === 2) controller.abort()
    }
    expect(watched.find((e) => e.type === "turn.started" && e.payload.queueId === queueId)).toBeDefined()
    expect(await engine.dropFollowUps({ sessionId })).toEqual({ queueIds: [] })
    const fork = await engine.forkSession({ sessionId })
    const forked = await replay(engine, fork.sessionId)
    expectWellFormedLog(forked)
    expect(forked.at(-1)!.type).toBe("session.forked")
    await expect(engine.forkSession({ sessionId, atSequence: 2 })).rejects.toMatchObject({ _tag: "InvalidInput", field: "atSequence" })
  })

  it("typed errors reject with their tag", async () => {
    const engine = make()
    const iterate = async () => {
      for await (const _ of engine.runTurn({ sessionId: "sess_nope", userMessage: "x" })) { /* nothing */ }
    }
    await expect(iterate()).rejects.toMatchObject({ _tag: "SessionNotFound", sessionId: "sess_nope" })
  })

  it("dispose cancels a running turn and its log, read by a new engine, records it", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "effect-agent-promise-"))
    try {
      const engine = makeSessionEngine({ dataDir, model: FakeModelProvider.layer(slow) })
      const { sessionId } = await engine.createSession({ cwd: "/tmp", client: "test" })
      const iterator = engine.runTurn({ sessionId, userMessage: "count" })[Symbol.asyncIterator]()
      expect((await iterator.next()).value).toMatchObject({ type: "turn.started" })
      await engine.dispose()
      const later = makeSessionEngine({ dataDir })
      engines.push(later)
      const log = await replay(later, sessionId)
      expect(log.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "cancelled" } })
      expectWellFormedLog(log)
    } finally {
      rmSync(dataDir, { recursive: true, force: true })
    }
  })
})

describe("makeSessionEngine with tools", () => {
  it("pauses on ask and continues with resolvePermission", async () => {
    const engine = makeSessionEngine({
      store: MemoryEventStore.layer,
      ids: IdGenerator.layerSequential,
      model: FakeModelProvider.layer({ responses: [{ toolCalls: [{ tool: "note", args: { text: "hi" } }] }, { chunks: ["noted"] }] }),
      services: testTools({ note: { risk: "write", run: () => Effect.succeed({ result: "saved" }) } })
    })
    engines.push(engine)
    const { sessionId } = await engine.createSession({ cwd: "/tmp", client: "web" })
    const events: Array<AgentEvent> = []
    for await (const event of engine.runTurn({ sessionId, userMessage: "note it" })) {
      events.push(event)
      if (event.type === "permission.resolved" && event.payload.decision === "ask") {
        expect((await engine.pendingApprovals({ sessionId })).map((c) => c.toolCallId)).toEqual([event.payload.toolCallId])
        await engine.resolvePermission({ sessionId, toolCallId: event.payload.toolCallId, decision: "allow" })
      }
    }
    expect(events.find((e) => e.type === "tool.completed")?.payload).toEqual({ toolCallId: "call_1", result: "saved" })
    expect(events.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
    await expect(engine.resolvePermission({ sessionId, toolCallId: "call_1", decision: "allow" })).rejects.toMatchObject({ _tag: "ApprovalNotPending" })
  })

  it("takes WorkspaceTools.layer() as services without the platform provided by hand", async () => {
    const cwd = mkdtempSync(join(tmpdir(), "effect-agent-facade-tools-"))
    writeFileSync(join(cwd, "notes.txt"), "remember the milk\n")
    try {
      const engine = makeSessionEngine({
        store: MemoryEventStore.layer,
        ids: IdGenerator.layerSequential,
        model: FakeModelProvider.layer({ responses: [{ toolCalls: [{ tool: "read_file", args: { path: "notes.txt" } }] }, { chunks: ["done"] }] }),
        services: Layer.mergeAll(WorkspaceTools.layer(), PermissionPolicy.layer())
      })
      engines.push(engine)
      const { sessionId } = await engine.createSession({ cwd, client: "test" })
      const events: Array<AgentEvent> = []
      for await (const event of engine.runTurn({ sessionId, userMessage: "read my notes" })) events.push(event)
      expect(events.find((e) => e.type === "tool.completed")?.payload).toMatchObject({ result: "remember the milk\n" })
      expect(events.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
    } finally {
      rmSync(cwd, { recursive: true, force: true })
    }
  })

  it("watchSession streams stored then live events across turns; aborting the signal ends it", async () => {
    const engine = make({ responses: [{ chunks: ["a"] }, { chunks: ["b"] }] })
    const { sessionId } = await engine.createSession({ cwd: "/tmp", client: "test" })
    for await (const _ of engine.runTurn({ sessionId, userMessage: "one" })) void _
    const controller = new AbortController()
    const seen: Array<AgentEvent> = []
    const watching = (async () => {
      for await (const event of engine.watchSession({ sessionId, signal: controller.signal })) {
        seen.push(event)
        // The first turn is stored: start the second one from inside the watch.
        if (event.type === "turn.completed" && event.sequence === 5) {
          void (async () => {
            for await (const _ of engine.runTurn({ sessionId, userMessage: "two" })) void _
          })()
        }
        if (event.type === "turn.completed" && event.sequence > 5) controller.abort()
      }
    })()
    await watching
    expect(seen.map((e) => e.sequence)).toEqual((await replay(engine, sessionId)).map((e) => e.sequence))
    expect(seen.filter((e) => e.type === "turn.completed")).toHaveLength(2)
  })
})
