/**
 * review61c through the Promise façade: what runs when `dispose()` is called, abort and `return()`
 * of a queued turn, and the smaller promises of the façade (cancelTurn, an aborted compaction, a
 * turn iterated twice, a signal shared by many calls).
 */
import { getEventListeners } from "node:events"
import { mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import { afterEach, describe, expect, it } from "vitest"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import { EngineDisposed, makeSessionEngine, type PromiseSessionEngine } from "../../src/index.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import * as IdGenerator from "../../src/services/IdGenerator.js"
import * as ModelProvider from "../../src/services/ModelProvider.js"

let engines: Array<PromiseSessionEngine> = []
afterEach(async () => {
  await Promise.all(engines.map((e) => e.dispose()))
  engines = []
})

/**
 * A model that answers at once while `gate.open`, and otherwise never answers: `gate.called`
 * resolves when such a call has begun.
 */
const gatedModel = () => {
  let called: () => void = () => undefined
  const gate = {
    open: true,
    called: Promise.resolve(),
    close() {
      gate.open = false
      gate.called = new Promise<void>((resolve) => (called = resolve))
    }
  }
  const layer = Layer.succeed(ModelProvider.ModelProvider, {
    capabilities: { provider: "fake", model: "gated", maxContextTokens: 128000 },
    stream: () =>
      Stream.suspend(() => {
        if (gate.open) return Stream.make(ModelProvider.textDelta("answer ".repeat(50)), ModelProvider.finish("stop"))
        called()
        return Stream.fromEffect(Effect.never)
      })
  } as unknown as ModelProvider.ModelProvider["Type"])
  return { gate, layer }
}

const make = (options: Parameters<typeof makeSessionEngine>[0]) => {
  const engine = makeSessionEngine(options)
  engines.push(engine)
  return engine
}
const memory = (model: Layer.Layer<ModelProvider.ModelProvider>) => ({ store: MemoryEventStore.layer, model, ids: IdGenerator.layerSequential })
const drain = async (events: AsyncIterable<AgentEvent>) => {
  const out: Array<AgentEvent> = []
  for await (const event of events) out.push(event)
  return out
}
const outcome = <A>(p: Promise<A>) => p.then((value) => ({ value }), (error: unknown) => ({ error }))

describe("the Promise façade: what runs at dispose()", () => {
  it("a watchSession iteration waiting for events ends with EngineDisposed", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "mend61embed-"))
    const engine = make({ dataDir })
    const { sessionId } = await engine.createSession({ cwd: "/tmp", client: "test" })
    const it = engine.watchSession({ sessionId })[Symbol.asyncIterator]()
    expect((await it.next()).value?.type).toBe("session.created")
    const waiting = outcome(it.next())
    await engine.dispose()
    expect((await waiting as { error: unknown }).error).toBeInstanceOf(EngineDisposed)
  })

  it("a compaction in flight is stopped before dispose() resolves, and stores nothing after", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "mend61embed-"))
    const { gate, layer } = gatedModel()
    const engine = make({ dataDir, model: layer })
    const { sessionId } = await engine.createSession({ cwd: "/tmp", client: "test" })
    await drain(engine.runTurn({ sessionId, userMessage: "history ".repeat(200) }))
    gate.close()
    const compaction = outcome(engine.compactSession({ sessionId, keepRecentTokens: 0 }))
    await gate.called
    await engine.dispose()
    const logged = readFileSync(join(dataDir, "sessions", `${sessionId}.jsonl`), "utf8")
    expect((await compaction as { error: unknown }).error).toBeInstanceOf(EngineDisposed)
    // Nothing was written once dispose() had resolved (the lock was released then).
    expect(readFileSync(join(dataDir, "sessions", `${sessionId}.jsonl`), "utf8")).toBe(logged)
  })

  it("calls made in the same tick as dispose() are stopped (EngineDisposed) or stored before it resolves", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "mend61embed-"))
    const engine = make({ dataDir })
    const { sessionId } = await engine.createSession({ cwd: "/tmp", client: "test" })
    const order: Array<string> = []
    const settled = <A>(name: string, p: Promise<A>) => outcome(p).then((result) => (order.push(name), result))
    const created = settled("created", engine.createSession({ cwd: "/tmp", client: "test" }))
    const queued = settled("queued", engine.followUp({ sessionId, message: "later" }))
    const renamed = settled("renamed", engine.renameSession({ sessionId, title: "late" }))
    await engine.dispose()
    order.push("disposed")
    const log = (id: string) => readFileSync(join(dataDir, "sessions", `${id}.jsonl`), "utf8")
    const stored = log(sessionId)
    const results = { created: await created, queued: await queued, renamed: await renamed }
    // Each had ended when dispose() resolved: nothing of theirs is written once the lock is released.
    expect(order.indexOf("disposed")).toBe(3)
    for (const result of Object.values(results)) {
      if ("error" in result) expect(result.error).toBeInstanceOf(EngineDisposed)
    }
    if ("value" in results.created) expect(log(results.created.value.sessionId)).toContain("session.created")
    if ("value" in results.queued) expect(stored).toContain("followup.queued")
    if ("value" in results.renamed) expect(stored).toContain("session.titled")
  })

  it("it.next() then dispose() in the same tick: the iteration throws EngineDisposed", async () => {
    const engine = make(memory(gatedModel().layer))
    const { sessionId } = await engine.createSession({ cwd: "/tmp", client: "test" })
    const it = engine.runTurn({ sessionId, userMessage: "hi" })[Symbol.asyncIterator]()
    const first = it.next()
    await engine.dispose()
    const rest = async () => {
      for (let next = await first; next.done !== true; next = await it.next()) { /* events before the stop */ }
    }
    await expect(rest()).rejects.toBeInstanceOf(EngineDisposed)
  })
})

/** Lets the event loop turn until `done()` holds. */
const until = async (done: () => boolean) => {
  while (!done()) await new Promise((resolve) => setImmediate(resolve))
}

describe("the Promise façade: a turn queued behind another", () => {
  // A follow-up left queued by an engine that stopped runs first when the next runTurn drives the
  // session: that turn waits behind it (the model never answers the follow-up).
  const queuedTurn = async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "mend61embed-"))
    const before = gatedModel()
    before.gate.close()
    const stopped = makeSessionEngine({ dataDir, model: before.layer })
    const { sessionId } = await stopped.createSession({ cwd: "/tmp", client: "test" })
    const running = stopped.runTurn({ sessionId, userMessage: "first" })[Symbol.asyncIterator]()
    expect((await running.next()).value?.type).toBe("turn.started")
    await stopped.followUp({ sessionId, message: "left over" })
    await stopped.dispose()
    const { gate, layer } = gatedModel()
    gate.close()
    const engine = make({ dataDir, model: layer })
    return { engine, sessionId, followUpRuns: gate.called }
  }
  it("aborting its signal before it started ends its iteration at once", async () => {
    const { engine, sessionId, followUpRuns } = await queuedTurn()
    const controller = new AbortController()
    const queued = drain(engine.runTurn({ sessionId, userMessage: "mine", signal: controller.signal }))
    await followUpRuns
    await until(() => getEventListeners(controller.signal, "abort").length > 0)
    controller.abort()
    expect((await queued).map((e) => e.type)).toEqual([])
    // It did not wait for the follow-up's turn, which never ends by itself.
  })

  it("return() while its next() waits ends it at once, and that next() answers done", async () => {
    const { engine, sessionId, followUpRuns } = await queuedTurn()
    const it = engine.runTurn({ sessionId, userMessage: "mine" })[Symbol.asyncIterator]()
    const waiting = it.next()
    await followUpRuns
    expect(await it.return!()).toEqual({ done: true, value: undefined })
    expect(await waiting).toEqual({ done: true, value: undefined })
  })
})

describe("the Promise façade's smaller promises", () => {
  it("cancelTurn resolves even when the engine's layer fails to build", async () => {
    const engine = make({ layer: Layer.fail("no engine") })
    await expect(engine.cancelTurn({ sessionId: "s" })).resolves.toBeUndefined()
  })

  it("an aborted compactSession rejects with the signal's reason", async () => {
    const { gate, layer } = gatedModel()
    const engine = make(memory(layer))
    const { sessionId } = await engine.createSession({ cwd: "/tmp", client: "test" })
    await drain(engine.runTurn({ sessionId, userMessage: "history ".repeat(200) }))
    gate.close()
    const controller = new AbortController()
    const compaction = outcome(engine.compactSession({ sessionId, keepRecentTokens: 0, signal: controller.signal }))
    await gate.called
    controller.abort()
    const { error } = await compaction as { error: unknown }
    expect(error).toBe(controller.signal.reason)
    expect((error as Error).name).toBe("AbortError")
  })

  it("a runTurn iterable runs one turn: iterated again, it throws", async () => {
    const engine = make(memory(gatedModel().layer))
    const { sessionId } = await engine.createSession({ cwd: "/tmp", client: "test" })
    const turn = engine.runTurn({ sessionId, userMessage: "once" })
    await drain(turn)
    await expect(drain(turn)).rejects.toThrow(/iterated already/)
    const started = (await drain(engine.replaySession({ sessionId }))).filter((e) => e.type === "turn.started")
    expect(started).toHaveLength(1)
  })

  it("many calls sharing one signal add one listener to it", async () => {
    const engine = make(memory(gatedModel().layer))
    const { sessionId } = await engine.createSession({ cwd: "/tmp", client: "test" })
    const controller = new AbortController()
    const watches = Array.from({ length: 12 }, () => engine.watchSession({ sessionId, signal: controller.signal })[Symbol.asyncIterator]())
    for (const it of watches) expect((await it.next()).value?.type).toBe("session.created")
    expect(getEventListeners(controller.signal, "abort").length).toBe(1)
    controller.abort()
    for (const it of watches) expect(await it.next()).toEqual({ done: true, value: undefined })
  })
})
