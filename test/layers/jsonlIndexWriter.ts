/**
 * A second process writing a JSONL data dir, for jsonlIndex.integration.test.ts:
 * `jsonlIndexWriter.ts <dataDir> <sessions> <turns>`. Creates sessions `w0…`, half of them driven
 * under their writer lock (as an engine does) and half appended without it (as the port allows).
 * Each turn asks for one call's approval, answers it and completes. It prints `ready` after each
 * session's first turn (the locks still held) and waits for a line on stdin; then it writes the
 * other turns, lets the locks go and prints `done`.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Effect from "effect/Effect"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import * as JsonlEventStore from "../../src/layers/JsonlEventStore.js"

const [dataDir, sessions, turns] = process.argv.slice(2) as [string, string, string]

const nextLine = Effect.async<void>((resume) => {
  process.stdin.once("data", () => resume(Effect.void))
})

const event = (sessionId: string, sequence: number, type: string, payload: object, turnId?: string) =>
  ({ id: `${sessionId}-${sequence}`, sessionId, sequence, timestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, sequence)).toISOString(), type, payload, ...(turnId === undefined ? {} : { turnId }) }) as AgentEvent

/** One turn's events from `sequence`: started, a call asked then allowed, completed. */
const turn = (sessionId: string, sequence: number, n: number): ReadonlyArray<AgentEvent> => [
  event(sessionId, sequence, "turn.started", { promptPreview: `turn ${n}` }, `turn_${n}`),
  event(sessionId, sequence + 1, "permission.resolved", { toolCallId: `call_${n}`, decision: "ask", actor: "policy" }, `turn_${n}`),
  event(sessionId, sequence + 2, "permission.resolved", { toolCallId: `call_${n}`, decision: "allow", actor: "user" }, `turn_${n}`),
  event(sessionId, sequence + 3, "turn.completed", { stopReason: "cancelled" }, `turn_${n}`)
]

const program = Effect.scoped(Effect.gen(function*() {
  const store = yield* JsonlEventStore.make({ dataDir })
  const ids = Array.from({ length: Number(sessions) }, (_, i) => `w${i}`)
  yield* Effect.scoped(Effect.gen(function*() {
    for (const [i, id] of ids.entries()) {
      if (i % 2 === 0) yield* store.acquireWriter(id)
      yield* store.append(event(id, 1, "session.created", { cwd: `/work/${id}`, client: "test" }))
      for (const e of turn(id, 2, 1)) yield* store.append(e)
    }
    process.stdout.write("ready\n")
    yield* nextLine
    for (let n = 2; n <= Number(turns); n++) {
      for (const id of ids) yield* store.appendAll(turn(id, 2 + (n - 1) * 4, n))
    }
    // The last turn of each session is left waiting for its call.
    for (const id of ids) yield* store.append(event(id, 2 + Number(turns) * 4, "permission.resolved", { toolCallId: "call_last", decision: "ask", actor: "policy" }, `turn_${turns}`))
  }))
  process.stdout.write("done\n")
}))

Effect.runPromise(program.pipe(Effect.provide(NodeContext.layer))).then(
  () => process.exit(0),
  (error) => {
    console.error(error)
    process.exit(1)
  }
)
