/**
 * Benchmarks: each measures effect-agent against a baseline doing the same essential work by hand,
 * in the same process, and prints the ratio (ours / baseline). Run with `npm run bench`.
 * Numbers are for comparing changes on one machine, never assertions.
 */
import { appendFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as NodeContext from "@effect/platform-node/NodeContext"
import Database from "better-sqlite3"
import { Chunk, Context, Effect, Layer, Scope, Stream } from "effect"
import {
  type AgentEvent,
  FakeModelProvider,
  IdGenerator,
  JsonlEventStore,
  MemoryEventStore,
  SessionEngine
} from "../src/index.js"
import { SqliteEventStore } from "../src/sqlite.js"
import { EventStore } from "../src/services/EventStore.js"

const scratch = mkdtempSync(join(tmpdir(), "effect-agent-bench-"))
process.on("exit", () => rmSync(scratch, { recursive: true, force: true }))

const time = async (run: () => Promise<unknown> | unknown): Promise<number> => {
  await run() // warm up
  const start = performance.now()
  await run()
  return performance.now() - start
}

const rows: Array<{ name: string; ours: number; baseline: number; unit: string }> = []
const record = (name: string, ours: number, baseline: number, unit = "ms") => {
  rows.push({ name, ours, baseline, unit })
  console.log(`${name.padEnd(58)} ours ${ours.toFixed(1).padStart(9)} ${unit}  baseline ${baseline.toFixed(1).padStart(9)} ${unit}  ratio ${(ours / baseline).toFixed(2)}`)
}

const events = (sessionId: string, n: number): Array<AgentEvent.AgentEvent> => [
  { id: "e1", sessionId, sequence: 1, timestamp: "2026-01-01T00:00:00.000Z", type: "session.created", payload: { cwd: "/work", client: "test" } },
  ...Array.from({ length: n - 1 }, (_, i): AgentEvent.AgentEvent => ({
    id: `e${i + 2}`,
    sessionId,
    turnId: "turn_1",
    sequence: i + 2,
    timestamp: "2026-01-01T00:00:00.000Z",
    type: "model.delta",
    payload: { text: `token ${i} of a streamed answer` }
  }))
]

// Stores stay open for the whole run: their scope is never closed.
const storeScope = Effect.runSync(Scope.make())
const storeOf = <E>(layer: Layer.Layer<EventStore, E, NodeContext.NodeContext>) =>
  Effect.runPromise(Effect.map(Layer.buildWithScope(layer.pipe(Layer.provide(NodeContext.layer)), storeScope), Context.get(EventStore)).pipe(Effect.orDie))

const main = async () => {
  const n = 2000
  let run = 0

  // 1. Appending a streamed answer, event by event, to a JSONL log.
  const jsonl = await storeOf(JsonlEventStore.layer({ dataDir: join(scratch, "jsonl") }))
  const appendOurs = await time(() => {
    const id = `append_${run++}`
    return Effect.runPromise(Effect.forEach(events(id, n), (e) => jsonl.append(e), { discard: true }))
  })
  const appendBase = await time(() => {
    const file = join(scratch, `raw_${run++}.jsonl`)
    for (const e of events("raw", n)) appendFileSync(file, JSON.stringify(e) + "\n")
  })
  record(`JSONL: append ${n} events (baseline: appendFileSync)`, appendOurs, appendBase)

  // 2. Reading a log back (replay), validated against the schema.
  const replayId = `append_${run - 3}`
  const file = join(scratch, "jsonl", "sessions", `${replayId}.jsonl`)
  const readOurs = await time(() => Effect.runPromise(Stream.runCollect(jsonl.read(replayId))))
  const readBase = await time(() => readFileSync(file, "utf8").trim().split("\n").slice(1).map((l) => JSON.parse(l)))
  record(`JSONL: replay ${n} events (baseline: readFileSync + JSON.parse)`, readOurs, readBase)

  // 3. The same append in SQLite.
  const sqlite = await storeOf(SqliteEventStore.layer({ filename: join(scratch, "bench.sqlite") }))
  const sqliteOurs = await time(() => {
    const id = `sqlite_${run++}`
    return Effect.runPromise(Effect.forEach(events(id, n), (e) => sqlite.append(e), { discard: true }))
  })
  const db = new Database(join(scratch, "raw.sqlite"))
  db.pragma("journal_mode = WAL")
  db.exec("CREATE TABLE events (session_id TEXT, sequence INTEGER, body TEXT, PRIMARY KEY (session_id, sequence)) WITHOUT ROWID")
  const insert = db.prepare("INSERT INTO events VALUES (?, ?, ?)")
  const sqliteBase = await time(() => {
    const id = `raw_${run++}`
    for (const e of events(id, n)) insert.run(id, e.sequence, JSON.stringify(e))
  })
  record(`SQLite: append ${n} events (baseline: better-sqlite3 insert)`, sqliteOurs, sqliteBase)

  // 4. Whole turns through the engine (memory store, scripted model) against building the same events by hand.
  const turns = 200
  const deltas = 20
  const chunks = Array.from({ length: deltas }, (_, i) => `w${i} `)
  const engine = SessionEngine.layer.pipe(
    Layer.provide(MemoryEventStore.layer),
    Layer.provide(FakeModelProvider.layer({ responses: Array.from({ length: 2 * turns }, () => ({ chunks })) })),
    Layer.provide(IdGenerator.layerSequential)
  )
  const turnsOurs = await time(() =>
    Effect.runPromise(Effect.gen(function*() {
      const agent = yield* SessionEngine.SessionEngine
      const { sessionId } = yield* agent.createSession({ cwd: "/work", client: "test" })
      for (let t = 0; t < turns; t++) yield* Stream.runDrain(agent.runTurn({ sessionId, userMessage: `turn ${t}` }))
    }).pipe(Effect.provide(engine))))
  const turnsBase = await time(() => {
    const log: Array<unknown> = []
    let sequence = 1
    for (let t = 0; t < turns; t++) {
      const base = { sessionId: "s", turnId: `t${t}`, timestamp: new Date(0).toISOString() }
      log.push({ ...base, id: `e${++sequence}`, sequence, type: "turn.started", payload: { promptPreview: `turn ${t}` } })
      log.push({ ...base, id: `e${++sequence}`, sequence, type: "user.message", payload: { content: `turn ${t}` } })
      for (const text of chunks) log.push({ ...base, id: `e${++sequence}`, sequence, type: "model.delta", payload: { text } })
      log.push({ ...base, id: `e${++sequence}`, sequence, type: "turn.completed", payload: { stopReason: "final" } })
    }
    return log
  })
  record(`Engine: ${turns} turns of ${deltas} deltas, memory store (baseline: events by hand)`, turnsOurs, turnsBase)

  // 5. Memory held per loaded session (engine state and memory store) against the size of its log's text.
  const sessions = 200
  const measured = await Effect.runPromise(Effect.gen(function*() {
    const agent = yield* SessionEngine.SessionEngine
    if (global.gc) global.gc()
    const before = process.memoryUsage().heapUsed
    const ids: Array<string> = []
    for (let s = 0; s < sessions; s++) {
      const { sessionId } = yield* agent.createSession({ cwd: "/work", client: "test" })
      yield* Stream.runDrain(agent.runTurn({ sessionId, userMessage: "hello" }))
      ids.push(sessionId)
    }
    if (global.gc) global.gc()
    const grown = process.memoryUsage().heapUsed - before
    const logs = yield* Effect.forEach(ids, (sessionId) => Stream.runCollect(agent.replaySession({ sessionId })))
    const text = logs.map((c) => Chunk.toReadonlyArray(c).map((e) => JSON.stringify(e)).join("\n").length).reduce((a, b) => a + b, 0)
    return { grown, text }
  }).pipe(Effect.provide(SessionEngine.layer.pipe(
    Layer.provide(MemoryEventStore.layer),
    Layer.provide(FakeModelProvider.layer({ responses: Array.from({ length: sessions }, () => ({ chunks })) })),
    Layer.provide(IdGenerator.layerSequential)
  ))))
  record(`Memory: heap for ${sessions} live sessions (baseline: their logs' JSON text)`, measured.grown / 1024, measured.text / 1024, "KiB")
  if (!global.gc) console.log("(npm run bench runs with --expose-gc; without it the memory numbers include garbage)")
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
