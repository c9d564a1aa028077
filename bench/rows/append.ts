/**
 * Row 3: the JSONL store's append of one event, N times to a new session (holding its writer lock, as
 * the engine does; taking the lock is counted), against a bare
 * `fs.writeSync` of the same line to an open fd (JSON.stringify included on both sides). Time per
 * event; the ratio is how many times slower the store is.
 */
import { closeSync, openSync, writeSync } from "node:fs"
import { join } from "node:path"
import { Effect, ManagedRuntime } from "effect"
import { type AgentEvent, EventStore } from "../../src/index.js"
import { config } from "../config.js"
import { scratch, storeLayer } from "../engine.js"
import { format, interleave, median, ratioRow, ratios, type Row } from "../measure.js"

/** A session's log: `session.created`, then streamed deltas of one turn. */
export const deltaEvents = (sessionId: string, n: number): Array<AgentEvent.AgentEvent> => [
  { id: "evt_1", sessionId, sequence: 1, timestamp: "2026-01-01T00:00:00.000Z", type: "session.created", payload: { cwd: "/bench", client: "test" } },
  ...Array.from({ length: n - 1 }, (_, i): AgentEvent.AgentEvent => ({
    id: `evt_${i + 2}`,
    sessionId,
    turnId: "turn_1",
    sequence: i + 2,
    timestamp: "2026-01-01T00:00:00.000Z",
    type: "model.delta",
    payload: { text: `token ${i} ` }
  }))
]

export const run = async (): Promise<Array<Row>> => {
  const n = config.appendEvents
  const dir = scratch("append")
  const rt = ManagedRuntime.make(storeLayer({ kind: "jsonl", dataDir: join(dir, "store") }))
  const store = await rt.runPromise(EventStore.EventStore)
  let session = 0
  const ours = async () => {
    const sessionId = `sess_append${session++}`
    const events = deltaEvents(sessionId, n)
    const start = performance.now()
    // As the engine does: the session's writer lock first, then the appends, one at a time.
    await Effect.runPromise(Effect.scoped(Effect.zipRight(
      store.acquireWriter(sessionId),
      Effect.forEach(events, (event) => store.append(event), { discard: true })
    )))
    return (performance.now() - start) / n
  }
  const bare = async () => {
    const events = deltaEvents(`sess_bare${session++}`, n)
    const start = performance.now()
    const fd = openSync(join(dir, `bare_${session}.jsonl`), "a")
    for (const event of events) writeSync(fd, JSON.stringify(event) + "\n")
    closeSync(fd)
    return (performance.now() - start) / n
  }
  const [o, b] = await interleave(config.appendReps, [ours, bare])
  await rt.dispose()
  const us = (xs: ReadonlyArray<number>) => `${format(median(xs) * 1000, "")} µs/event`
  return [
    ratioRow(3, `JSONL append of one event (${n.toLocaleString("en")} in a row) vs a bare \`writeSync\` of the same line`, ratios(o!, b!), {
      text: "≤ 3× slower",
      met: (m) => m <= 3
    }, `store ${us(o!)}, writeSync ${us(b!)}`)
  ]
}
