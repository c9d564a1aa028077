import { describe, expect, it } from "vitest"
import * as FakeModelProvider from "../../src/layers/FakeModelProvider.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import { EngineDisposed, makeSessionEngine } from "../../src/index.js"
import * as IdGenerator from "../../src/services/IdGenerator.js"

// After dispose() every method rejects the same way: one exported, tagged EngineDisposed (review58a).
describe("the Promise façade after dispose()", () => {
  it("rejects every call and iteration with EngineDisposed", async () => {
    const engine = makeSessionEngine({ store: MemoryEventStore.layer, model: FakeModelProvider.layer(), ids: IdGenerator.layerSequential })
    const { sessionId } = await engine.createSession({ cwd: "/tmp", client: "test" })
    await engine.dispose()
    const drain = async (events: AsyncIterable<unknown>) => {
      for await (const _ of events) { /* nothing: it rejects first */ }
    }
    const calls: Array<[string, () => Promise<unknown>]> = [
      ["listSessions", () => engine.listSessions()],
      ["sessionState", () => engine.sessionState({ sessionId })],
      ["createSession", () => engine.createSession({ cwd: "/tmp", client: "test" })],
      ["runTurn", () => drain(engine.runTurn({ sessionId, userMessage: "hi" }))],
      ["replaySession", () => drain(engine.replaySession({ sessionId }))],
      ["watchSession", () => drain(engine.watchSession({ sessionId }))]
    ]
    for (const [name, call] of calls) {
      const error = await call().then(() => undefined, (e: unknown) => e)
      expect(error, name).toBeInstanceOf(EngineDisposed)
      expect((error as EngineDisposed)._tag, name).toBe("EngineDisposed")
    }
    // dispose() again and cancelTurn (documented never to reject) resolve: nothing runs.
    await engine.dispose()
    await engine.cancelTurn({ sessionId })
  })
})
