/**
 * Issue 19, item 1 through the Promise façade: `cancelTurn` right after `runTurn` has begun. The
 * iteration always ends (the turn cancelled, or whole when the cancel found nothing to stop), the log
 * is well formed, and the next turn runs.
 */
import { afterEach, describe, expect, it } from "vitest"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import { makeSessionEngine, type PromiseSessionEngine } from "../../src/index.js"
import * as FakeModelProvider from "../../src/layers/FakeModelProvider.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import * as IdGenerator from "../../src/services/IdGenerator.js"
import { expectWellFormedLog } from "../helpers.js"

let engines: Array<PromiseSessionEngine> = []
afterEach(async () => {
  await Promise.all(engines.map((e) => e.dispose()))
  engines = []
})

const drain = async (iterator: AsyncIterator<AgentEvent>, first: Promise<IteratorResult<AgentEvent>>) => {
  const events: Array<AgentEvent> = []
  for (let next = await first; next.done !== true; next = await iterator.next()) events.push(next.value)
  return events
}

/** Resolves after `ticks` turns of the microtask queue. */
const ticks = async (n: number) => {
  for (let i = 0; i < n; i++) await Promise.resolve()
}

describe("the Promise façade: cancel right after runTurn", () => {
  for (const wait of [0, 1, 2, 3, 5, 8]) {
    it(`cancel ${wait} microtask(s) after the iteration began: the iteration ends and the session goes on`, async () => {
      const engine = makeSessionEngine({
        store: MemoryEventStore.layer,
        model: FakeModelProvider.layer({ responses: [{ chunks: ["first"] }, { chunks: ["second"] }] }),
        ids: IdGenerator.layerSequential
      })
      engines.push(engine)
      const { sessionId } = await engine.createSession({ cwd: "/tmp", client: "test" })
      const iterator = engine.runTurn({ sessionId, userMessage: "hello" })[Symbol.asyncIterator]()
      const first = iterator.next()
      await ticks(wait)
      await engine.cancelTurn({ sessionId })
      const emitted = await drain(iterator, first)
      if (emitted.length > 0) expect(emitted.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: expect.stringMatching(/^(cancelled|final)$/) } })
      const next: Array<AgentEvent> = []
      for await (const event of engine.runTurn({ sessionId, userMessage: "again" })) next.push(event)
      expect(next.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
      const log: Array<AgentEvent> = []
      for await (const event of engine.replaySession({ sessionId })) log.push(event)
      expectWellFormedLog(log)
    })
  }
})
