/**
 * A child process measuring one memory-bound operation from a clean start, so peak RSS
 * (`process.resourceUsage().maxRSS`) belongs to that operation alone. Prints one JSON line:
 * `{ rssStart, maxRss, ms, events }` (bytes, ms). The bench runs it compiled (`bench/children.ts`);
 * by hand, through tsx:
 *
 *   node --expose-gc --import tsx bench/child.ts replay <dataDir> <sessionId>
 *   node --expose-gc --import tsx bench/child.ts hydrate <dataDir> <sessionId>
 *   node --expose-gc --import tsx bench/child.ts readline <file>
 *   node --expose-gc --import tsx bench/child.ts fork <dataDir> <sessionId>                  (row 22)
 *   node --expose-gc --import tsx bench/child.ts rewind <dataDir> <sessionId> <toSequence>   (row 23)
 *   node --expose-gc --import tsx bench/child.ts concurrent <sessions> <deltas>      (row 21: effect-agent)
 *   node --expose-gc --import tsx bench/child.ts pi-concurrent <sessions> <deltas>   (row 21: pi-agent-core)
 *   node --expose-gc --import tsx bench/child.ts effect-floor <sessions> <deltas>    (row 21 without the engine: see below)
 * Row 21's modes take `ROW21_SOURCE=sdk` to read each response through the SDK adapters' path (`row21Response`).
 */
import { createReadStream } from "node:fs"
import { createInterface } from "node:readline"
import type { AgentEvent } from "../src/index.js"
import { deltaTexts, touchPi } from "./both.js"

const [mode, ...args] = process.argv.slice(2)

/** effect-agent and its bench helpers, loaded only by the modes that measure it. */
const ours = async () => ({ ...(await import("effect")), ...(await import("../src/index.js")), ...(await import("./engine.js")) })

const main = async () => {
  // Each side loads only its own modules (pi-ai alone brings every provider SDK), before the RSS at
  // start is read: a process's peak is its own contender's.
  const { constantModel, count, Effect, engineRuntime, floorTurn, Layer, ModelProvider, row21Response, SessionEngine, storeLayer, Stream } = mode === "pi-concurrent" || mode === "readline"
    ? {} as Awaited<ReturnType<typeof ours>>
    : await ours()
  const { Agent, fauxAssistantMessage, registerFauxProvider } = mode === "pi-concurrent"
    ? { ...(await import("@mariozechner/pi-agent-core")), ...(await import("@mariozechner/pi-ai")) }
    : {} as typeof import("@mariozechner/pi-agent-core") & typeof import("@mariozechner/pi-ai")
  const work: () => Promise<number> = mode === "replay" || mode === "hydrate"
    ? () => {
      const [dataDir, sessionId] = args as [string, string]
      // A context window no log here reaches, so the turn runs its model request instead of being refused.
      const rt = engineRuntime(storeLayer({ kind: "jsonl", dataDir }), constantModel(["ok"], Number.MAX_SAFE_INTEGER))
      return (mode === "replay"
        ? rt.runPromise(Effect.flatMap(SessionEngine.SessionEngine, (engine) =>
          // Counted by a fold: a `Stream.runForEachChunk` callback returning `Effect.sync(() => …)` keeps what
          // it consumed reachable from old space until a major GC (a pretenured effect holding each chunk:
          // bench/README.md), so a consumer written so grows with the log whatever the store does.
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
    : mode === "fork" || mode === "rewind"
    ? () => {
      const [dataDir, sessionId, toSequence] = args as [string, string, string]
      const rt = engineRuntime(storeLayer({ kind: "jsonl", dataDir }), constantModel(["ok"]))
      return rt.runPromise(Effect.flatMap(SessionEngine.SessionEngine, (engine) =>
        mode === "fork"
          // The fork's last sequence: its copy of the source and its session.forked.
          ? Effect.flatMap(engine.forkSession({ sessionId }), (fork) => Effect.map(engine.sessionState({ sessionId: fork.sessionId }), (state) => state.lastSequence))
          : Effect.map(engine.rewindSession({ sessionId, toSequence: Number(toSequence) }), (rewound) => rewound.sequence))).finally(() => rt.dispose())
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
    : mode === "concurrent"
    ? async () => {
      // N sessions at once, each one turn of D deltas handed over one per chunk, as an SDK stream hands them.
      const [sessions, deltas] = args.map(Number) as [number, number]
      // The deltas are made once and shared by every session's response, as pi's faux provider is
      // handed the same text for each: per session the model allocates only its stream.
      const chunks = deltaTexts(deltas).map(ModelProvider.textDelta)
      const rt = engineRuntime(storeLayer({ kind: "memory" }), Layer.succeed(ModelProvider.ModelProvider, ModelProvider.ModelProvider.of({
        capabilities: { provider: "fake", model: "bench", maxContextTokens: 128_000 },
        stream: () => row21Response(chunks, process.env.ROW21_SOURCE)
      })))
      try {
        const counts = await rt.runPromise(Effect.flatMap(SessionEngine.SessionEngine, (engine) =>
          Effect.forEach(Array.from({ length: sessions }), () =>
            Effect.flatMap(engine.createSession({ cwd: "/bench", client: "test" }), ({ sessionId }) => count(engine.runTurn({ sessionId, userMessage: "hi" }))), { concurrency: "unbounded" })))
        return counts.reduce((a, b) => a + b, 0)
      } finally {
        await rt.dispose()
      }
    }
    : mode === "effect-floor"
    ? async () => {
      // Row 21 without the engine (`floorTurn`): the model's stream read ahead and the caller's
      // `Stream.runForEachChunk`, a floor, not a contender. FLOOR_PART=model or consumer measures one end alone.
      const [sessions, deltas] = args.map(Number) as [number, number]
      const { consumer, model } = floorTurn(deltas)
      const part = process.env.FLOOR_PART
      const turn = part === "model" ? model : part === "consumer" ? consumer : Effect.zipRight(model, consumer)
      const counts = await Effect.runPromise(Effect.forEach(Array.from({ length: sessions }), () => turn, { concurrency: "unbounded" }))
      return counts.reduce((a, b) => a + b, 0)
    }
    : mode === "pi-concurrent"
    ? async () => {
      const [sessions, deltas] = args.map(Number) as [number, number]
      const text = deltaTexts(deltas).join("")
      const faux = registerFauxProvider({ tokenSize: { min: 1, max: 1 } })
      try {
        faux.setResponses(Array.from({ length: sessions }, () => fauxAssistantMessage(text)))
        let events = 0
        await Promise.all(Array.from({ length: sessions }, async () => {
          const agent = new Agent({ initialState: { model: faux.getModel(), systemPrompt: "" } })
          agent.subscribe((event) => {
            events++
            touchPi(event)
          })
          await agent.prompt("hi")
          if (agent.state.errorMessage !== undefined) throw new Error(`pi-agent-core turn failed: ${agent.state.errorMessage}`)
        }))
        return events
      } finally {
        faux.unregister()
      }
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
