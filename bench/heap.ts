/**
 * Row 21's memory, measured without timing: the heap each turn in flight and each finished session
 * holds. N sessions each start one turn whose model streams D deltas one per chunk and then waits;
 * once every turn has stored its deltas and waits, a full GC, and the heap over the start is divided
 * by N ("per turn in flight"); then the turns finish, a full GC, the same per session. Optional heap
 * snapshots (`HEAP_SNAPSHOT_BEFORE`, `HEAP_SNAPSHOT_HELD`, `HEAP_SNAPSHOT_AFTER`: file paths) for
 * `bench/heapdiff.mjs`. Not part of `npm run bench`:
 *
 *   node --expose-gc --import tsx bench/heap.ts [sessions=1000] [deltas=100] [whole] [jsonl]
 *
 * With `whole`, the model hands its response over without waiting, as row 21's does (the response is
 * read whole as it starts: `ModelProvider.runAhead`), and "in flight" is when every turn waits for the
 * event loop's turn before its response is seen to end: the heap is read as the last of them asks for it.
 * With `jsonl`, the sessions are stored in a JSONL data dir (a temporary folder, removed at the end)
 * rather than in memory: its writer lock, held for each session, is a lock file and a journal line.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { writeHeapSnapshot } from "node:v8"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import { ModelProvider, SessionEngine } from "../src/index.js"
import { deltaTexts } from "./both.js"
import { engineRuntime, storeLayer } from "./engine.js"

const [sessions = 1000, deltas = 100] = process.argv.slice(2, 4).map(Number)
const flags = process.argv.slice(4)
const whole = flags.includes("whole")
const dataDir = flags.includes("jsonl") ? mkdtempSync(join(tmpdir(), "bench-heap-")) : undefined
if (global.gc === undefined) throw new Error("run with node --expose-gc")
const gc = global.gc

// Made once and shared by every session's response, as in row 21's child.
const chunks = deltaTexts(deltas).map(ModelProvider.textDelta)
const gate = Effect.runSync(Deferred.make<void>())
let waiting = 0
let events = 0
const rt = engineRuntime(storeLayer(dataDir === undefined ? { kind: "memory" } : { kind: "jsonl", dataDir }), Layer.succeed(ModelProvider.ModelProvider, ModelProvider.ModelProvider.of({
  capabilities: { provider: "fake", model: "bench", maxContextTokens: 128_000 },
  stream: () =>
    whole ? Stream.concat(Stream.fromIterable(chunks).pipe(Stream.rechunk(1)), Stream.make(ModelProvider.finish("stop"))) : Stream.concat(
      Stream.fromIterable(chunks).pipe(Stream.rechunk(1)),
      Stream.concat(
        Stream.drain(Stream.fromEffect(Effect.zipRight(Effect.sync(() => waiting++), Deferred.await(gate)))),
        Stream.make(ModelProvider.finish("stop"))
      )
    )
})))

const heapMb = (snapshot?: string) => {
  gc()
  gc()
  if (snapshot !== undefined && snapshot !== "") writeHeapSnapshot(snapshot)
  return process.memoryUsage().heapUsed / 1048576
}
const settle = () => new Promise((resolve) => setTimeout(resolve, 20))

const before = heapMb(process.env.HEAP_SNAPSHOT_BEFORE)
// `whole`: the heap as the last turn asks for its wait (every other one waits already, none has gone on).
let atWait: number | undefined
if (whole) {
  const setImmediate0 = globalThis.setImmediate
  let asked = 0
  globalThis.setImmediate = ((f: (...args: Array<unknown>) => void, ...args: Array<unknown>) => {
    if (++asked === sessions) {
      atWait = heapMb(process.env.HEAP_SNAPSHOT_HELD)
      console.log(`every turn waits: its consumers have read ${events} events of the ${sessions * (deltas + 2)} stored by then`)
    }
    return setImmediate0(f, ...args)
  }) as typeof setImmediate
}
const all = rt.runPromise(Effect.flatMap(SessionEngine.SessionEngine, (engine) =>
  Effect.forEach(Array.from({ length: sessions }), () =>
    Effect.flatMap(engine.createSession({ cwd: "/bench", client: "test" }), ({ sessionId }) =>
      Stream.runForEachChunk(engine.runTurn({ sessionId, userMessage: "hi" }), (chunk) => {
        events += chunk.length
        return Effect.void
      })), { concurrency: "unbounded", discard: true })))
let held: number
if (whole) {
  await all
  if (atWait === undefined) throw new Error("the turns did not all wait at once")
  held = atWait
} else {
  // Every turn waits in its model's stream, and its consumer has read what it stored (start, message, deltas).
  while (waiting < sessions || events < sessions * (deltas + 2)) await settle()
  await settle()
  held = heapMb(process.env.HEAP_SNAPSHOT_HELD)
  Effect.runSync(Deferred.succeed(gate, undefined))
  await all
}
const after = heapMb(process.env.HEAP_SNAPSHOT_AFTER)
await rt.dispose()
if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true })
const kb = (mb: number) => `${(mb * 1024 / sessions).toFixed(1)} KB`
console.log(`${dataDir === undefined ? "memory" : "jsonl"}: ${sessions} sessions × ${deltas} deltas: heap ${before.toFixed(1)} MB at start; per turn in flight ${kb(held - before)}; per finished session ${kb(after - before)}`)
process.exit(0)
