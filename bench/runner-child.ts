/**
 * A cluster runner in a process of its own (row 14): joins the cluster on the given PostgreSQL,
 * then drives N sessions in sequence through its routed engine — each created, then one turn run
 * on its owner (this runner) to the end. After every tenth of them it takes a full GC and samples
 * the heap's data and the RSS. Prints one JSON line: `{ heap: number[], rss: number[], maxRss, ms }`.
 *
 * With a finite idle time each sample is taken once the runner has let every idle session go (the
 * cluster's gauge of live session entities reads 0). `@effect/cluster` looks for idle entities every
 * 5 s at the most often (its reaper: `max(min(30 s, maxIdleTime), 5 s)`), so a runner letting
 * sessions go after 1 s still holds those of the last 1–6 s, ≈ 92 KB each: sampled at once, the
 * heap measured how many sessions ran in the last seconds (a faster machine, more of them: samples
 * of 57 or 92 MB in one run), not whether sessions are released.
 *
 *   node --expose-gc --import tsx bench/runner-child.ts <databaseUrl> <sessions> <maxIdleMs|infinite> <runnerPort>
 */
import * as ClusterMetrics from "@effect/cluster/ClusterMetrics"
import { Duration, Effect, Layer, Metric, Redacted, Schedule, Stream } from "effect"
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

/** The session entities the runner holds. */
const liveSessions = Metric.value(ClusterMetrics.entities.pipe(Metric.tagged("type", "effect-agent/Session")))

/** Waits until the runner holds no session (a runner that never lets one go: not waited for); fails after a minute. */
const released = idle === "infinite" ? Effect.void : liveSessions.pipe(
  Effect.filterOrFail((gauge) => gauge.value === 0n, (gauge) => `the runner still holds ${gauge.value} sessions`),
  Effect.retry({ schedule: Schedule.spaced("100 millis"), times: 600 }),
  Effect.orDie,
  Effect.asVoid
)

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
      yield* released
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
