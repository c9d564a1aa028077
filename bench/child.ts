/**
 * A child process measuring one memory-bound operation from a clean start, so peak RSS
 * (`process.resourceUsage().maxRSS`) belongs to that operation alone. Prints one JSON line:
 * `{ rssStart, maxRss, ms, events }` (bytes, ms).
 *
 *   node --expose-gc --import tsx bench/child.ts replay <dataDir> <sessionId>
 *   node --expose-gc --import tsx bench/child.ts hydrate <dataDir> <sessionId>
 *   node --expose-gc --import tsx bench/child.ts readline <file>
 */
import { createReadStream } from "node:fs"
import { createInterface } from "node:readline"
import { Effect, Stream } from "effect"
import { type AgentEvent, SessionEngine } from "../src/index.js"
import { constantModel, engineRuntime, storeLayer } from "./engine.js"

const [mode, ...args] = process.argv.slice(2)

const main = async () => {
  const work: () => Promise<number> = mode === "replay" || mode === "hydrate"
    ? () => {
      const [dataDir, sessionId] = args as [string, string]
      // A context window no log here reaches, so the turn runs its model request instead of being refused.
      const rt = engineRuntime(storeLayer({ kind: "jsonl", dataDir }), constantModel(["ok"], Number.MAX_SAFE_INTEGER))
      return (mode === "replay"
        ? rt.runPromise(Effect.flatMap(SessionEngine.SessionEngine, (engine) =>
          // Counted by a fold: `Stream.runForEachChunk` (effect 3.22) keeps what it consumed reachable from
          // old space until a major GC, so a consumer written with it grows with the log whatever the store does.
          Stream.runFold(engine.replaySession({ sessionId }), 0, (n) => n + 1)))
        : rt.runPromise(Effect.flatMap(SessionEngine.SessionEngine, (engine) =>
          Effect.gen(function*() {
            let last: AgentEvent.AgentEvent | undefined
            let events = 0
            yield* Stream.runForEachChunk(engine.runTurn({ sessionId, userMessage: "hi" }), (chunk) =>
              Effect.sync(() => {
                events += chunk.length
                last = chunk.pipe((c) => [...c].at(-1))
              }))
            // A turn refused or failed would not have built the model request from the whole history.
            if (last?.type !== "turn.completed" || last.payload.stopReason !== "final") {
              return yield* Effect.die(new Error(`hydrating turn did not end final: ${JSON.stringify(last)}`))
            }
            return events
          })))).finally(() => rt.dispose())
    }
    : mode === "readline"
    ? async () => {
      let events = 0
      for await (const line of createInterface({ input: createReadStream(args[0]!), crlfDelay: Infinity })) {
        if (line !== "") JSON.parse(line)
        events++
      }
      return events
    }
    : () => Promise.reject(new Error(`unknown mode ${mode}`))
  global.gc?.()
  const rssStart = process.memoryUsage().rss
  const start = performance.now()
  const events = await work()
  const ms = performance.now() - start
  console.log(JSON.stringify({ rssStart, maxRss: process.resourceUsage().maxRSS * 1024, ms, events }))
}

main().then(() => process.exit(0), (error) => {
  console.error(error)
  process.exit(1)
})
