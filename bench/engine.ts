/**
 * Building engines for the benchmarks from the public API: the session engine over the memory or
 * JSONL store, a scripted model, random ids (as the CLI uses), and a store wrapper that reports when
 * an event has been stored.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { Chunk, Effect, Layer, ManagedRuntime, Stream } from "effect"
import {
  type AgentEvent,
  EventStore,
  FakeModelProvider,
  IdGenerator,
  JsonlEventStore,
  MemoryEventStore,
  ModelProvider,
  PermissionPolicy,
  ProviderFailure,
  SessionEngine,
  WorkspaceTools
} from "../src/index.js"

const scratchDirs: Array<string> = []
/** A fresh temporary directory, removed when the process exits. */
export const scratch = (name: string): string => {
  const dir = mkdtempSync(join(tmpdir(), `effect-agent-bench-${name}-`))
  scratchDirs.push(dir)
  return dir
}
process.on("exit", () => {
  for (const dir of scratchDirs) rmSync(dir, { recursive: true, force: true })
})

export type StoreChoice = { readonly kind: "memory" } | { readonly kind: "jsonl"; readonly dataDir: string }

export const storeLayer = (store: StoreChoice): Layer.Layer<EventStore.EventStore> =>
  store.kind === "memory"
    ? MemoryEventStore.layer
    : JsonlEventStore.layer({ dataDir: store.dataDir }).pipe(Layer.provide(NodeContext.layer))

/** Wraps a store so `onStored` hears of every event once its append has succeeded. */
export const spiedStore = (
  inner: Layer.Layer<EventStore.EventStore>,
  onStored: (event: AgentEvent.AgentEvent) => void
): Layer.Layer<EventStore.EventStore> =>
  Layer.effect(
    EventStore.EventStore,
    Effect.map(EventStore.EventStore, (store) => ({
      ...store,
      append: (event: AgentEvent.AgentEvent) => Effect.tap(store.append(event), () => Effect.sync(() => onStored(event))),
      appendAll: (events: ReadonlyArray<AgentEvent.AgentEvent>) => Effect.tap(store.appendAll(events), () => Effect.sync(() => events.forEach(onStored)))
    }))
  ).pipe(Layer.provide(inner))

/**
 * A model that answers every request with the same chunks and records nothing (FakeModelProvider
 * keeps every request it receives, which would add its own growth to the sessions row).
 */
export const constantModel = (chunks: ReadonlyArray<string>, maxContextTokens = 128_000): Layer.Layer<ModelProvider.ModelProvider> =>
  Layer.succeed(ModelProvider.ModelProvider, ModelProvider.ModelProvider.of({
    capabilities: { provider: "fake", model: "bench", maxContextTokens },
    stream: () => Stream.fromIterable([...chunks.map(ModelProvider.textDelta), ModelProvider.finish("stop")])
  }))

export type EngineRuntime = ManagedRuntime.ManagedRuntime<SessionEngine.SessionEngine | EventStore.EventStore, never>

/** An engine (and its store) over a store layer and a model layer. */
export const engineRuntime = (
  store: Layer.Layer<EventStore.EventStore>,
  model: Layer.Layer<ModelProvider.ModelProvider>
): EngineRuntime => {
  const deps = Layer.mergeAll(store, model, IdGenerator.layer)
  return ManagedRuntime.make(Layer.merge(SessionEngine.layer().pipe(Layer.provide(deps)), store))
}

/** The scripted model streaming `chunks` for each of `turns` requests. */
export const scripted = (chunks: ReadonlyArray<string>, turns: number, extra: Partial<FakeModelProvider.ScriptedResponse> = {}, maxContextTokens?: number) =>
  FakeModelProvider.layer({
    responses: Array.from({ length: turns }, () => ({ chunks: [...chunks], ...extra })),
    ...(maxContextTokens === undefined ? {} : { maxContextTokens })
  })

/**
 * An engine with the workspace tools and the default policy over the memory store, its model
 * scripted: a warm-up answer, then `responses`; and a session in `cwd` whose first turn took the
 * warm-up. What bench/ops.ts and bench/wide.ts measure turns of.
 */
export const toolSession = async (
  cwd: string,
  responses: ReadonlyArray<FakeModelProvider.ScriptedResponse>,
  /** `onAppend`: called at each of the store's appends (a batch is one). */
  options: { readonly engine?: SessionEngine.Options; readonly maxContextTokens?: number; readonly onAppend?: () => void } = {}
) => {
  const onAppend = options.onAppend
  const rt = ManagedRuntime.make(SessionEngine.layer(options.engine).pipe(Layer.provide(Layer.mergeAll(
    onAppend === undefined ? MemoryEventStore.layer : Layer.provideMerge(spiedAppends(onAppend), MemoryEventStore.layer),
    FakeModelProvider.layer({ responses: [{ chunks: ["warm"] }, ...responses], ...(options.maxContextTokens === undefined ? {} : { maxContextTokens: options.maxContextTokens }) }),
    IdGenerator.layer,
    WorkspaceTools.layer().pipe(Layer.provide(NodeContext.layer)),
    PermissionPolicy.layer()
  ))))
  const engine = await rt.runPromise(SessionEngine.SessionEngine)
  const { sessionId } = await rt.runPromise(engine.createSession({ cwd, client: "test" }))
  await rt.runPromise(count(engine.runTurn({ sessionId, userMessage: "warm up" })))
  return { rt, engine, sessionId }
}

/**
 * The store of the context, counting its appends (a batch is one): provided over the store it wraps.
 * Counted as the append's effect is made, which the engine's commit does as it runs it: no Effect
 * operation is added to what `bench/ops.ts` counts.
 */
export const spiedAppends = (onAppend: () => void): Layer.Layer<EventStore.EventStore, never, EventStore.EventStore> =>
  Layer.effect(EventStore.EventStore, Effect.map(EventStore.EventStore, (store) => ({
    ...store,
    append: (event: AgentEvent.AgentEvent) => {
      onAppend()
      return store.append(event)
    },
    appendAll: (events: ReadonlyArray<AgentEvent.AgentEvent>) => {
      onAppend()
      return store.appendAll(events)
    }
  })))

export const createSession = (rt: EngineRuntime): Promise<string> =>
  rt.runPromise(Effect.flatMap(SessionEngine.SessionEngine, (engine) => engine.createSession({ cwd: "/bench", client: "test" }))).then((s) => s.sessionId)

import { fromSdk } from "../src/layers/providers/Support.js"
import { deltaTexts, touch } from "./both.js"

export { deltaTexts, touch, touchPi } from "./both.js"

/**
 * Drains a turn's stream, consuming its events one by one (`touch`), and counts them. Pulled a chunk
 * at a time, then each event of the chunk in turn: `Stream.runFold` recurses once per element of a
 * chunk, and a turn's stream can hand over a chunk of 10,000 events, which overflows the stack.
 *
 * The callback does its work and returns `Effect.void`, like a plain callback on pi's side. Not
 * `Effect.sync(() => …)`: that allocates an effect whose closure holds the chunk, at a constructor
 * site V8 soon pretenures (effect's `sync` is shared by every `Effect.sync` of the program), so each
 * dead effect sits in old space holding its chunk, and every event survives the scavenges until the
 * next mark-compact (`bench/sinks.mjs` reproduces it without effect-agent; see bench/README.md).
 */
export const count = <E, R>(stream: Stream.Stream<AgentEvent.AgentEvent, E, R>): Effect.Effect<number, E, R> =>
  Effect.suspend(() => {
    let n = 0
    return Stream.runForEachChunk(stream, (chunk) => {
      for (const event of chunk) {
        touch(event)
        n++
      }
      return Effect.void
    }).pipe(Effect.map(() => n))
  })

/**
 * Row 21's turn without the engine (`bench/child.ts effect-floor`, `bench/ops.ts floor`): what any
 * engine between a provider's `Stream` and its caller's `Stream` pays — the model's stream (row 21's)
 * read ahead by `ModelProvider.runAhead` and taken whole, and the caller's `Stream.runForEachChunk`
 * (`count`) over a turn's events in the three chunks a turn hands over. No session, no store, no
 * event made: a floor, not a contender.
 */
export const floorTurn = (deltas: number): { readonly model: Effect.Effect<number>; readonly consumer: Effect.Effect<number> } => {
  const chunks = deltaTexts(deltas).map(ModelProvider.textDelta)
  const event = (type: string, payload: object) => ({ type, payload }) as unknown as AgentEvent.AgentEvent
  const handed = [
    [event("turn.started", {}), event("user.message", { text: "hi" })],
    deltaTexts(deltas).map((text) => event("model.delta", { text })),
    [event("turn.completed", {})]
  ]
  return {
    model: Effect.orDie(Effect.scoped(Effect.flatMap(
      ModelProvider.runAhead(row21Response(chunks, process.env.ROW21_SOURCE), 4096),
      ({ arrived }) => Effect.as(arrived.takeAll, 0)
    ))),
    consumer: count(Stream.fromChunks(...handed.map((c) => Chunk.unsafeFromArray(c))))
  }
}

/**
 * Row 21's model response, one delta per chunk, from either source (`ROW21_SOURCE`):
 * - `standIn` (the row's): the shared chunks as an effect `Stream`, `rechunk(1)`, then the finish;
 * - `sdk`: what the SDK adapters hand the engine — an async iterator yielding one delta per `next()`
 *   (as an SDK yields one event per SSE message, and as pi-agent-core's faux provider yields one
 *   delta a microtask), read by the adapters' own `fromSdk`, which hands over what arrived by the
 *   event loop's next turn as one chunk;
 * - `paced`: the same through `fromSdk`, each delta after a Node timer of `ROW21_PACE_MS` (default 1)
 *   — a vendor pacing its SSE events, one per socket read (row 24's stream without the HTTP and the SDK).
 */
export const row21Response = (chunks: ReadonlyArray<ModelProvider.ModelChunk>, source: string | undefined): Stream.Stream<ModelProvider.ModelChunk, ProviderFailure> => {
  const finish = ModelProvider.finish("stop")
  if (source !== "sdk" && source !== "paced") return Stream.concat(Stream.fromIterable(chunks).pipe(Stream.rechunk(1)), Stream.make(finish))
  const paceMs = Number(process.env.ROW21_PACE_MS ?? 1)
  async function* events() {
    for (const chunk of chunks) {
      if (source === "paced") await new Promise((resolve) => setTimeout(resolve, paceMs))
      yield chunk
    }
    yield finish
  }
  return fromSdk({
    open: () => Promise.resolve(events()),
    toFailure: (error) => ProviderFailure.of("network", String(error)),
    idleTimeout: "60 seconds"
  })
}

/** Runs one turn to its end and returns how many events it streamed. */
export const runTurn = (rt: EngineRuntime, sessionId: string, userMessage = "hi"): Promise<number> =>
  rt.runPromise(Effect.flatMap(SessionEngine.SessionEngine, (engine) => count(engine.runTurn({ sessionId, userMessage }))))
