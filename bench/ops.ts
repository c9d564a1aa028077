/**
 * Counts the Effect operations (every op of every fiber, by a supervisor with op supervision) and the
 * fibers a warm engine spends on a trivial turn, and per `read_file` step of a turn of N steps — the
 * fixed structure of a turn, which a CPU profile spreads over the runtime's functions — and the file
 * system requests (trips to the libuv threadpool) of each. Deterministic,
 * unlike times on a shared machine; not a test.
 *
 *   node --import tsx bench/ops.ts
 *   node --import tsx bench/ops.ts concurrent [sessions=1000] [deltas=100]   (row 21's whole run)
 *   node --import tsx bench/ops.ts fibers [deltas=100]   (one of row 21's turns, fiber by fiber)
 *   node --import tsx bench/ops.ts floor [deltas=100]    (the same without the engine: `bench/child.ts effect-floor`)
 *   node --import tsx bench/ops.ts steps [steps=20]      (a `read_file` step's ops by kind; `OPS_KINDS=sites` by function;
 *                                                          its appends and synchronous file system calls)
 *   node --import tsx bench/ops.ts perDelta [deltas=1000] (row 1's turn: ops a delta, one per chunk, and the store's appends)
 *   node --import tsx bench/ops.ts paced [deltas=500]     (row 24's stream without HTTP: `fromSdk`, a delta every
 *                                                          `ROW21_PACE_MS` ms; ops a delta and appends — timer-paced, so not exact)
 *   node --import tsx bench/ops.ts sdk [deltas=500]       (row 24's turn: the Anthropic SDK on the paced vendor of `bench/vendor-server.ts`
 *                                                          in this process, a delta every `ROW21_PACE_MS` ms; ops a delta, appends,
 *                                                          the provider stream's chunks (each a wake-up of the engine's reader), ops by fiber)
 */
import { createHook } from "node:async_hooks"
import NodeFsModule, { mkdirSync, writeFileSync } from "node:fs"
import { syncBuiltinESMExports } from "node:module"
import { join } from "node:path"
import { Effect, type Fiber, Layer, ManagedRuntime, RuntimeFlags, RuntimeFlagsPatch, Stream, Supervisor } from "effect"
import { FakeModelProvider, IdGenerator, MemoryEventStore, ModelProvider, SessionEngine } from "../src/index.js"
import { count, deltaTexts, floorTurn, row21Response, scratch, spiedAppends, toolSession } from "./engine.js"
import { startVendorServer } from "./vendor-server.js"

class Counter extends Supervisor.AbstractSupervisor<void> {
  ops = 0
  fibers = 0
  /** Suspensions that wait (see `PerFiber.onSuspend`). */
  waits = 0
  readonly value = Effect.void
  override onStart() {
    this.fibers++
  }
  override onEffect() {
    this.ops++
  }
  override onSuspend(fiber: Fiber.RuntimeFiber<unknown, unknown>) {
    if ((fiber as unknown as { _queue: Array<unknown> })._queue.length === 0 && fiber.unsafePoll() === null) this.waits++
  }
}

/**
 * Counts each fiber's ops and suspensions apart, and names it by where it was started: the first
 * frame of the project's own code (or the bench's) on the stack that started it.
 */
class PerFiber extends Supervisor.AbstractSupervisor<void> {
  readonly fibers = new Map<number, { readonly label: string; readonly parent: number | undefined; ops: number; suspensions: number }>()
  readonly value = Effect.void
  override onStart(_context: unknown, _effect: unknown, parent: { _tag: string; value?: Fiber.RuntimeFiber<unknown, unknown> }, fiber: Fiber.RuntimeFiber<unknown, unknown>) {
    const frames = (new Error().stack ?? "").split("\n").slice(2)
    const ours = (f: string) => /\/(src|bench)\//.test(f) && !f.includes("node_modules") && !f.includes("bench/ops.ts")
    const own = frames.find(ours) ?? "?"
    const where = own.replace(/^\s*at\s*/, "").replace(/\(.*\/(src|bench)\//, "($1/")
    this.fibers.set(fiber.id().id, { label: where, parent: parent._tag === "Some" ? parent.value!.id().id : undefined, ops: 0, suspensions: 0 })
  }
  /** With OPS_TRACE set, each suspension and resumption in order, with the fiber's last op before it. */
  readonly trace: Array<string> | undefined = process.env.OPS_TRACE ? [] : undefined
  private readonly last = new Map<number, string>()
  /** With OPS_KINDS set, each fiber's ops by kind (`_op`). */
  readonly kinds = new Map<number, Map<string, number>>()
  override onEffect(fiber: Fiber.RuntimeFiber<unknown, unknown>, effect: unknown) {
    this.of(fiber).ops++
    if (process.env.OPS_KINDS) {
      const id = fiber.id().id
      let k = this.kinds.get(id)
      if (k === undefined) this.kinds.set(id, k = new Map())
      const e = effect as { _op?: string; effect_instruction_i0?: unknown; effect_instruction_i1?: unknown; commit?: unknown }
      let op = e._op ?? "?"
      if (process.env.OPS_KINDS === "sites" && (op === "UpdateRuntimeFlags" || op === "WithRuntime" || op === "Commit" || op === "Sync")) {
        const f = op === "UpdateRuntimeFlags" ? e.effect_instruction_i1 : op === "Commit" ? e.commit : e.effect_instruction_i0
        op += " " + String(f).replace(/\s+/g, " ").slice(0, 90)
      } else if (process.env.OPS_KINDS === "callers") {
        // The caller's function each op runs: a continuation's (`flatMap`, `map`, a match), a mask's
        // body, a generator's — the site in the project's code, where `sites` names effect's own.
        const e2 = effect as { effect_instruction_i2?: unknown }
        const f = op === "OnSuccess" || op === "OnFailure" ? e.effect_instruction_i1
          : op === "OnSuccessAndFailure" ? e2.effect_instruction_i2
          : op === "UpdateRuntimeFlags" ? e.effect_instruction_i1
          : op === "Commit" || op === "Sync" || op === "WithRuntime" || op === "Async" ? (e.effect_instruction_i0 ?? e.commit)
          : undefined
        if (f !== undefined) op += " " + String(f).replace(/\s+/g, " ").slice(0, 110)
      }
      k.set(op, (k.get(op) ?? 0) + 1)
    }
    if (this.trace !== undefined) {
      const e = effect as { _op?: string; effect_instruction_i0?: { name?: string } }
      this.last.set(fiber.id().id, `${e._op}${typeof e.effect_instruction_i0 === "function" ? " " + String(e.effect_instruction_i0).replace(/\s+/g, " ").slice(0, 160) : ""}`)
    }
  }
  override onSuspend(fiber: Fiber.RuntimeFiber<unknown, unknown>) {
    // An async op resumed in its own registration (a free semaphore's take) leaves its resumption in the
    // fiber's queue, run on this stack: not a wait. Nor is the fiber's end.
    const queued = (fiber as unknown as { _queue: Array<unknown> })._queue.length > 0
    if (queued || fiber.unsafePoll() !== null) return
    this.of(fiber).suspensions++
    if (this.trace !== undefined) {
      const stack = ((fiber as unknown as { _stack: Array<{ _op: string; effect_instruction_i1?: unknown; effect_instruction_i2?: unknown }> })._stack ?? [])
      const frames = stack.slice(process.env.OPS_TRACE === "all" ? 0 : -12).reverse().filter((f) => f._op !== "RevertFlags" && !String(f.effect_instruction_i1).startsWith("cause1 =>")).map((f) => `      ${f._op}: ${String(f.effect_instruction_i1 ?? f.effect_instruction_i2 ?? "").replace(/\s+/g, " ").slice(0, 110)}`)
      this.trace.push(`#${fiber.id().id} suspends after ${this.last.get(fiber.id().id)}\n${frames.join("\n")}`)
    }
  }
  override onResume(fiber: Fiber.RuntimeFiber<unknown, unknown>) {
    this.trace?.push(`#${fiber.id().id} resumes`)
  }
  /** A fiber started before the supervisor was (the caller's own) is counted under its id alone. */
  private of(fiber: Fiber.RuntimeFiber<unknown, unknown>) {
    const id = fiber.id().id
    let f = this.fibers.get(id)
    if (f === undefined) this.fibers.set(id, f = { label: "the caller's fiber", parent: undefined, ops: 0, suspensions: 0 })
    return f
  }
}

/**
 * Requests to the libuv threadpool (file system calls: each one a trip to a pool thread and back,
 * which on a busy machine waits for both threads to be scheduled) made while `run` runs.
 */
const fsRequests = async (run: () => Promise<void>): Promise<number> => {
  let requests = 0
  const hook = createHook({
    init: (_id, type) => {
      if (type === "FSREQPROMISE" || type === "FSREQCALLBACK" || type === "STATWATCHER") requests++
    }
  }).enable()
  try {
    await run()
  } finally {
    hook.disable()
  }
  return requests
}

/** Runs `effect` counting its ops and fibers (and those of every fiber it forks), and its file system requests. */
const counted = async <A, E>(rt: ManagedRuntime.ManagedRuntime<SessionEngine.SessionEngine, never>, effect: Effect.Effect<A, E, SessionEngine.SessionEngine>) => {
  const counter = new Counter()
  const fs = await fsRequests(() => rt.runPromise(Effect.withRuntimeFlagsPatch(Effect.supervised(effect, counter), RuntimeFlagsPatch.enable(RuntimeFlags.OpSupervision))).then(() => undefined))
  return { ops: counter.ops, fibers: counter.fibers, waits: counter.waits, fs }
}

const measure = async (label: string, units: number, responses: ReadonlyArray<FakeModelProvider.ScriptedResponse>, cwd: string, turns: number) => {
  const { engine, rt, sessionId } = await toolSession(cwd, responses)
  try {
    const turn = count(engine.runTurn({ sessionId, userMessage: "go" }))
    const counter = await counted(rt, Effect.repeatN(turn, turns - 1))
    console.log(`${label}: ${(counter.ops / units).toFixed(0)} Effect ops, ${(counter.fibers / units).toFixed(2)} fibers, ${(counter.fs / units).toFixed(1)} file system requests`)
  } finally {
    await rt.dispose()
  }
}

/**
 * Row 21's parts: what a session costs before its turn (`createSession`), a turn whose model hands
 * over one delta per chunk (the ops each delta adds: a turn of 101 deltas against one of 1), and a
 * turn of a session the engine's cache had let go (more than `maxLiveSessions` created since), which
 * is loaded again from the store with its writer lock: what most of row 21's 1,000 sessions pay, as
 * they are all created before their turns start.
 */
const concurrentParts = async () => {
  let deltas = 1
  // A cache of 256 sessions, so that 300 sessions created after one let it go (the default holds 1,024).
  const rt = ManagedRuntime.make(SessionEngine.layer({ maxLiveSessions: 256 }).pipe(Layer.provide(Layer.mergeAll(
    MemoryEventStore.layer,
    Layer.succeed(ModelProvider.ModelProvider, ModelProvider.ModelProvider.of({
      capabilities: { provider: "fake", model: "bench", maxContextTokens: 128_000 },
      stream: () => Stream.concat(Stream.fromIterable(deltaTexts(deltas).map(ModelProvider.textDelta)).pipe(Stream.rechunk(1)), Stream.make(ModelProvider.finish("stop")))
    })),
    IdGenerator.layer
  ))))
  try {
    const engine = await rt.runPromise(SessionEngine.SessionEngine)
    const create = engine.createSession({ cwd: "/bench", client: "test" })
    const turn = (sessionId: string) => count(engine.runTurn({ sessionId, userMessage: "hi" }))
    for (let i = 0; i < 5; i++) await rt.runPromise(Effect.flatMap(create, ({ sessionId }) => turn(sessionId)))
    const created = await counted(rt, create)
    const { sessionId } = await rt.runPromise(create)
    const one = await counted(rt, turn(sessionId))
    deltas = 101
    const many = await counted(rt, turn(sessionId))
    deltas = 1
    // Enough sessions created after it for the cache (256 here) to let it go.
    await rt.runPromise(Effect.repeatN(create, 300))
    const reloaded = await counted(rt, turn(sessionId))
    console.log(`createSession: ${created.ops} Effect ops`)
    console.log(`a turn of one delta: ${one.ops} Effect ops, ${one.fibers} fibers; each delta more, one per chunk: ${((many.ops - one.ops) / 100).toFixed(1)} Effect ops`)
    console.log(`the same turn of a session the cache had let go (loaded again): ${reloaded.ops} Effect ops, ${reloaded.fibers} fibers`)
  } finally {
    await rt.dispose()
  }
}

/** An engine as row 21's child builds it: the memory store, a model handing over D deltas one per chunk, the default cache. */
const rowRuntime = (deltas: number) => {
  const chunks = deltaTexts(deltas).map(ModelProvider.textDelta)
  return ManagedRuntime.make(SessionEngine.layer().pipe(Layer.provide(Layer.mergeAll(
    MemoryEventStore.layer,
    Layer.succeed(ModelProvider.ModelProvider, ModelProvider.ModelProvider.of({
      capabilities: { provider: "fake", model: "bench", maxContextTokens: 128_000 },
      stream: () => Stream.concat(Stream.fromIterable(chunks).pipe(Stream.rechunk(1)), Stream.make(ModelProvider.finish("stop")))
    })),
    IdGenerator.layer
  ))))
}

/**
 * Row 21's whole run, counted: N sessions created at once, each one turn of D deltas handed over one
 * per chunk (as `bench/child.ts concurrent` runs them), with the engine's default cache. Slow (every op
 * of the run is counted): only with `concurrent` on the command line.
 */
const concurrentRun = async (sessions: number, deltas: number) => {
  const rt = rowRuntime(deltas)
  try {
    const run = Effect.flatMap(SessionEngine.SessionEngine, (engine) =>
      Effect.forEach(Array.from({ length: sessions }), () =>
        Effect.flatMap(engine.createSession({ cwd: "/bench", client: "test" }), ({ sessionId }) => count(engine.runTurn({ sessionId, userMessage: "hi" }))), { concurrency: "unbounded" }))
    const whole = await counted(rt, run)
    console.log(`row 21's whole run (${sessions} sessions × ${deltas} deltas): ${(whole.ops / 1e6).toFixed(2)} M Effect ops, ${whole.fibers} fibers, ${(whole.waits / sessions).toFixed(1)} waits a session`)
  } finally {
    await rt.dispose()
  }
}

/**
 * One of row 21's turns (a held session, D deltas one per chunk, read by the bench's `count`), fiber
 * by fiber: each fiber's ops and suspensions and where it was started.
 */
const turnFibers = async (deltas: number) => {
  const rt = rowRuntime(deltas)
  try {
    const engine = await rt.runPromise(SessionEngine.SessionEngine)
    const turn = (sessionId: string) => count(engine.runTurn({ sessionId, userMessage: "hi" }))
    for (let i = 0; i < 5; i++) await rt.runPromise(Effect.flatMap(engine.createSession({ cwd: "/bench", client: "test" }), ({ sessionId }) => turn(sessionId)))
    const { sessionId } = await rt.runPromise(engine.createSession({ cwd: "/bench", client: "test" }))
    const perFiber = new PerFiber()
    await rt.runPromise(Effect.withRuntimeFlagsPatch(Effect.supervised(turn(sessionId), perFiber), RuntimeFlagsPatch.enable(RuntimeFlags.OpSupervision)))
    let ops = 0
    let suspensions = 0
    for (const [id, f] of perFiber.fibers) {
      ops += f.ops
      suspensions += f.suspensions
      console.log(`fiber #${id}${f.parent === undefined ? "" : ` (of #${f.parent})`}: ${f.ops} ops, ${f.suspensions} suspensions — started at ${f.label}`)
    }
    if (perFiber.trace !== undefined) console.log(perFiber.trace.join("\n"))
    for (const [id, kinds] of perFiber.kinds) console.log(`#${id}: ${[...kinds].sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k} ${n}`).join(", ")}`)
    console.log(`a turn of ${deltas} deltas, one per chunk: ${ops} Effect ops, ${suspensions} suspensions, ${perFiber.fibers.size} fibers (the caller's own fiber counted with its ops)`)
  } finally {
    await rt.dispose()
  }
}

/**
 * Row 21's turn without the engine, fiber by fiber, as `bench/child.ts effect-floor` runs it: the
 * model's stream read ahead (`ModelProvider.runAhead`) and taken whole, then the caller's
 * `Stream.runForEachChunk` (`count`) over the turn's events in its three hand-overs — the Effect
 * operations an engine between a provider's `Stream` and its caller's `Stream` cannot do without.
 */
const floorFibers = async (deltas: number) => {
  const { consumer, model } = floorTurn(deltas)
  const turn = Effect.zipRight(model, consumer)
  for (let i = 0; i < 5; i++) await Effect.runPromise(turn)
  const perFiber = new PerFiber()
  await Effect.runPromise(Effect.withRuntimeFlagsPatch(Effect.supervised(turn, perFiber), RuntimeFlagsPatch.enable(RuntimeFlags.OpSupervision)))
  let ops = 0
  for (const [id, f] of perFiber.fibers) {
    ops += f.ops
    console.log(`fiber #${id}${f.parent === undefined ? "" : ` (of #${f.parent})`}: ${f.ops} ops, ${f.suspensions} suspensions — started at ${f.label}`)
  }
  console.log(`row 21's turn of ${deltas} deltas without the engine (the model read ahead, the caller's Stream.runForEachChunk): ${ops} Effect ops, ${perFiber.fibers.size} fibers`)
}

/**
 * A `read_file` step's ops by kind (and, with `OPS_KINDS=sites`, by the function a `Sync`, `Commit`,
 * `WithRuntime` or `UpdateRuntimeFlags` runs), summed over every fiber of a turn of N steps and
 * divided by N: where a step's Effect operations go.
 */
const stepKinds = async (steps: number) => {
  process.env.OPS_KINDS ??= "kinds"
  const cwd = join(scratch("ops-steps"), "work")
  mkdirSync(cwd, { recursive: true })
  writeFileSync(join(cwd, "a.txt"), "x".repeat(4095) + "\n")
  const turn = () => [...Array.from({ length: steps }, () => ({ toolCalls: [{ tool: "read_file", args: { path: "a.txt" } }] })), { chunks: ["done"] }]
  let appends = 0
  const { engine, rt, sessionId } = await toolSession(cwd, [...turn(), ...turn(), ...turn()], { engine: { maxSteps: steps + 1 }, onAppend: () => appends++ })
  try {
    await rt.runPromise(count(engine.runTurn({ sessionId, userMessage: "go" })))
    // The store's appends (commits) and the synchronous file system calls of a turn, a step's share.
    appends = 0
    const calls = await syncFsCalls(() => rt.runPromise(count(engine.runTurn({ sessionId, userMessage: "go" }))).then(() => undefined))
    console.log(`appends a step: ${(appends / steps).toFixed(2)}; synchronous file system calls a step: ${[...calls].map(([k, n]) => `${k} ${(n / steps).toFixed(2)}`).join(", ")}`)
    const perFiber = new PerFiber()
    await rt.runPromise(Effect.withRuntimeFlagsPatch(Effect.supervised(count(engine.runTurn({ sessionId, userMessage: "go" })), perFiber), RuntimeFlagsPatch.enable(RuntimeFlags.OpSupervision)))
    const all = new Map<string, number>()
    for (const kinds of perFiber.kinds.values()) for (const [k, n] of kinds) all.set(k, (all.get(k) ?? 0) + n)
    let ops = 0
    for (const f of perFiber.fibers.values()) ops += f.ops
    for (const [k, n] of [...all].sort((a, b) => b[1] - a[1])) if (n / steps >= 0.5) console.log(`${(n / steps).toFixed(1).padStart(6)}  ${k}`)
    console.log(`a turn of ${steps} read_file steps: ${(ops / steps).toFixed(0)} Effect ops a step, ${perFiber.fibers.size} fibers`)
  } finally {
    await rt.dispose()
  }
}

/**
 * One turn of D deltas from `row21Response(source)` (row 1's `standIn`, or `paced`), on a warm engine
 * over the memory store: Effect ops a delta (a turn of D against one of 1) and the store's appends
 * (the commits) of the D-delta turn.
 */
const perDelta = async (
  source: string | undefined,
  deltas: number,
  // Another provider (the SDK's), told how many deltas the next response has.
  provider?: (deltas: () => number) => Layer.Layer<ModelProvider.ModelProvider>
) => {
  let n = 1
  let appends = 0
  // The chunks the provider's stream hands the engine's reader, a wake-up of the reader each.
  let chunks = 0
  const model = provider?.(() => n) ?? Layer.succeed(ModelProvider.ModelProvider, ModelProvider.ModelProvider.of({
    capabilities: { provider: "fake", model: "bench", maxContextTokens: 128_000 },
    stream: () => row21Response(deltaTexts(n).map(ModelProvider.textDelta), source)
  }))
  const chunked = Layer.effect(ModelProvider.ModelProvider, Effect.map(ModelProvider.ModelProvider, (p) => ({
    ...p,
    stream: (request: ModelProvider.ModelRequest) =>
      Stream.mapChunks(p.stream(request), (chunk) => {
        chunks++
        return chunk
      })
  }))).pipe(Layer.provide(model))
  // `COMMIT_WINDOW_MS`: the engine's commit window (default: the engine's).
  const window = process.env.COMMIT_WINDOW_MS
  const rt = ManagedRuntime.make(SessionEngine.layer(window === undefined ? {} : { commitWindow: Number(window) }).pipe(Layer.provide(Layer.mergeAll(
    Layer.provideMerge(spiedAppends(() => appends++), MemoryEventStore.layer),
    chunked,
    IdGenerator.layer
  ))))
  try {
    const engine = await rt.runPromise(SessionEngine.SessionEngine)
    const turn = (sessionId: string) => count(engine.runTurn({ sessionId, userMessage: "hi" }))
    for (let i = 0; i < 5; i++) await rt.runPromise(Effect.flatMap(engine.createSession({ cwd: "/bench", client: "test" }), ({ sessionId }) => turn(sessionId)))
    const { sessionId } = await rt.runPromise(engine.createSession({ cwd: "/bench", client: "test" }))
    const one = await counted(rt, turn(sessionId))
    n = deltas
    appends = 0
    chunks = 0
    const many = await counted(rt, turn(sessionId))
    console.log(`${source ?? "standIn"}: a turn of ${deltas} deltas, one per chunk: ${many.ops} Effect ops, ${many.fibers} fibers, ${appends} appends, ${chunks} provider chunks; each delta more: ${((many.ops - one.ops) / (deltas - 1)).toFixed(1)} Effect ops`)
    if (provider !== undefined) {
      // The same turn again, its ops by fiber: the engine's (the turn, its consumer) against the provider stream's reader.
      const perFiber = new PerFiber()
      await rt.runPromise(Effect.withRuntimeFlagsPatch(Effect.supervised(turn(sessionId), perFiber), RuntimeFlagsPatch.enable(RuntimeFlags.OpSupervision)))
      for (const [id, f] of perFiber.fibers) {
        if (f.ops >= deltas / 10) console.log(`  fiber #${id}: ${(f.ops / deltas).toFixed(1)} ops a delta, ${(f.suspensions / deltas).toFixed(2)} suspensions a delta — started at ${f.label}`)
      }
    }
  } finally {
    await rt.dispose()
  }
}

/**
 * The synchronous file system calls (`openSync`, `closeSync`, `lstatSync`, `fstatSync`, `readlinkSync`,
 * `readSync`) made while `run` runs, by name: the workspace tools' checked walks and reads, which
 * `fsRequests` (the threadpool's) does not see. Counted by wrapping `node:fs` and updating the named
 * imports (`syncBuiltinESMExports`).
 */
const syncFsCalls = async (run: () => Promise<void>): Promise<Map<string, number>> => {
  const names = ["openSync", "closeSync", "lstatSync", "fstatSync", "readlinkSync", "readSync"] as const
  const calls = new Map<string, number>(names.map((n) => [n, 0]))
  const fs = NodeFsModule as unknown as Record<string, (...args: Array<unknown>) => unknown>
  const originals = names.map((n) => fs[n]!)
  names.forEach((n, i) => {
    fs[n] = (...args) => {
      calls.set(n, calls.get(n)! + 1)
      return originals[i]!(...args)
    }
  })
  syncBuiltinESMExports()
  try {
    await run()
  } finally {
    names.forEach((n, i) => fs[n] = originals[i]!)
    syncBuiltinESMExports()
  }
  return calls
}

/** Row 24's turn counted: {@link perDelta} through the Anthropic SDK on paced vendors in this process (one of 1 delta, one of D). */
const sdkPaced = async (deltas: number) => {
  const { make } = await import("../src/layers/AnthropicModelProvider.js")
  const Redacted = await import("effect/Redacted")
  const paceMs = Number(process.env.ROW21_PACE_MS ?? 1)
  const vendors = await Promise.all([startVendorServer({ deltas: 1, paceMs }), startVendorServer({ deltas, paceMs })])
  try {
    await perDelta("sdk", deltas, (n) =>
      Layer.effect(ModelProvider.ModelProvider, Effect.map(
        Effect.all(vendors.map(({ url }) => make({ apiKey: Redacted.make("bench"), baseURL: url, model: "bench" }))),
        ([one, many]) => ModelProvider.ModelProvider.of({ capabilities: one!.capabilities, stream: (request) => (n() === 1 ? one! : many!).stream(request) })
      )))
  } finally {
    for (const { server } of vendors) {
      server.closeAllConnections()
      server.close()
    }
  }
}


const main = async () => {
  if (process.argv[2] === "perDelta") return perDelta(undefined, Number(process.argv[3] ?? 1000))
  if (process.argv[2] === "paced") return perDelta("paced", Number(process.argv[3] ?? 500))
  if (process.argv[2] === "sdk") return sdkPaced(Number(process.argv[3] ?? 500))
  if (process.argv[2] === "steps") return stepKinds(Number(process.argv[3] ?? 20))
  if (process.argv[2] === "fibers") return turnFibers(Number(process.argv[3] ?? 100))
  if (process.argv[2] === "floor") return floorFibers(Number(process.argv[3] ?? 100))
  if (process.argv[2] === "concurrent") return concurrentRun(Number(process.argv[3] ?? 1000), Number(process.argv[4] ?? 100))
  const cwd = join(scratch("ops"), "work")
  mkdirSync(cwd, { recursive: true })
  writeFileSync(join(cwd, "a.txt"), "x".repeat(4095) + "\n")
  const turns = 20
  await measure("a trivial turn", turns, Array.from({ length: turns }, () => ({ chunks: ["Hi."] })), cwd, turns)
  const steps = 20
  await measure("a read_file step", steps, [
    ...Array.from({ length: steps }, () => ({ toolCalls: [{ tool: "read_file", args: { path: "a.txt" } }] })),
    { chunks: ["done"] }
  ], cwd, 1)
  await concurrentParts()
}

main().then(() => process.exit(0), (error) => {
  console.error(error)
  process.exit(1)
})
