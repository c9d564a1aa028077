/**
 * A cluster runner in a process of its own (row 14): joins the cluster on the given PostgreSQL,
 * then drives N sessions in sequence through its routed engine — each created, then one turn run
 * on its owner (this runner) to the end. After every tenth of them it takes a full GC and samples
 * the heap's data and the RSS. Prints one JSON line: `{ heap: number[], rss: number[], maxRss, ms }`.
 *
 *   node --expose-gc --import tsx bench/runner-child.ts <databaseUrl> <sessions> <maxIdleMs|infinite> <runnerPort>
 */
import { Duration, Effect, Layer, Redacted, Stream } from "effect"
import { getHeapSpaceStatistics } from "node:v8"
import { Engines, Runner } from "../src/cluster.js"
import { FakeModelProvider, IdGenerator, SessionEngine } from "../src/index.js"
import { PostgresEventStore } from "../src/postgres.js"

const [url, sessions, idle, port] = process.argv.slice(2) as [string, string, string, string]
const n = Number(sessions)

/** The heap's data after a full GC (code spaces left out, as row 9 does). */
const heap = () => {
  global.gc?.()
  global.gc?.()
  return getHeapSpaceStatistics().reduce((sum, space) => (space.space_name.startsWith("code_") ? sum : sum + space.space_used_size), 0)
}

const runner = Runner.layer({
  databaseUrl: Redacted.make(url),
  port: Number(port),
  shardsPerGroup: 12,
  maxIdleTime: idle === "infinite" ? Duration.infinity : Duration.millis(Number(idle))
}).pipe(
  Layer.provide(Engines.layer()),
  Layer.provide(PostgresEventStore.layer({ url: Redacted.make(url) })),
  // Echoes the user's message: a real turn (started, message, deltas, completed) with no script to run out.
  Layer.provide(FakeModelProvider.layer()),
  Layer.provide(IdGenerator.layer)
)

const program = Effect.gen(function*() {
  const engine = yield* SessionEngine.SessionEngine
  const samples = { heap: [heap()], rss: [process.memoryUsage().rss] }
  const started = performance.now()
  const every = Math.max(1, Math.floor(n / 10))
  for (let i = 1; i <= n; i++) {
    const { sessionId } = yield* engine.createSession({ cwd: "/bench", client: "test" })
    yield* Stream.runDrain(engine.runTurn({ sessionId, userMessage: `session ${i}` }))
    if (i % every === 0) {
      samples.heap.push(heap())
      samples.rss.push(process.memoryUsage().rss)
      // Progress on stderr: a child that dies (the unbounded one at full size) still says how far it got.
      process.stderr.write(`${JSON.stringify({ sessions: i, heap: samples.heap.at(-1), rss: samples.rss.at(-1) })}\n`)
    }
  }
  return { ...samples, maxRss: process.resourceUsage().maxRSS * 1024, ms: performance.now() - started }
}).pipe(Effect.provide(runner), Effect.scoped)

Effect.runPromise(program).then(
  (result) => {
    console.log(JSON.stringify(result))
    process.exit(0)
  },
  (error) => {
    console.error(error)
    process.exit(1)
  }
)
