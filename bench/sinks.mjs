/**
 * A reproduction, without effect-agent, of why row 4's 100 MB replay loses to readline: effect
 * 3.22's effectful sinks keep more young objects alive through a scavenge. The same stream of
 * JSON.parse'd objects (3,000 chunks of 300) is drained five ways; run with V8's GC trace to see the
 * share of the young generation that survives each scavenge, and the pauses:
 *
 *   node --trace-gc-nvp bench/sinks.mjs runForEachChunk 2>&1 | node bench/sinks.mjs --summary
 *
 * On node 20 / effect 3.22.4 (December 2026, 2 shared cores): a plain loop, Stream.runFold and a
 * Stream.toPull loop keep ~5% of the young generation per scavenge; Stream.runForEachChunk,
 * runForEach and mapChunksEffect + runDrain ~20%, with scavenge pauses 7–20× longer in all.
 */
import { Chunk, Effect, Option, Stream } from "effect"
import { createInterface } from "node:readline"

if (process.argv[2] === "--summary") {
  let scavenges = 0, survived = 0, pause = 0
  for await (const line of createInterface({ input: process.stdin })) {
    if (!line.includes("gc=s ")) {
      if (!line.includes("pause=") && line.trim() !== "") console.log(line)
      continue
    }
    scavenges++
    for (const field of line.split(/\s+/)) {
      const [key, value] = field.split("=")
      if (key === "new_space_survive_rate_" || key === "new_space_survive_rate") survived += parseFloat(value)
      if (key === "pause") pause += parseFloat(value)
    }
  }
  console.log(`scavenges ${scavenges}, mean survival ${(survived / scavenges).toFixed(1)}%, pauses ${pause.toFixed(0)} ms`)
  process.exit(0)
}

const chunks = 3000
const perChunk = 300
let touched = 0
const make = (k) => {
  const out = new Array(perChunk)
  for (let i = 0; i < perChunk; i++) out[i] = JSON.parse(`{"id":"evt_${k}_${i}","type":"model.delta","sequence":${k * perChunk + i},"payload":{"text":"hello ${i}"}}`)
  return out
}
const source = () => {
  let k = 0
  return Stream.repeatEffectChunkOption(Effect.suspend(() => k < chunks ? Effect.succeed(Chunk.unsafeFromArray(make(k++))) : Effect.fail(Option.none())))
}
const touch = (e) => {
  touched += e.sequence
}
const ways = {
  loop: async () => {
    for (let k = 0; k < chunks; k++) for (const e of make(k)) touch(e)
  },
  runFold: () => Effect.runPromise(Stream.runFold(source(), 0, (n, e) => (touch(e), n + 1))),
  toPull: () =>
    Effect.runPromise(Effect.scoped(Effect.flatMap(Stream.toPull(source()), (pull) => {
      const loop = Effect.matchEffect(pull, { onFailure: () => Effect.void, onSuccess: (c) => (Chunk.forEach(c, touch), loop) })
      return loop
    }))),
  runForEachChunk: () => Effect.runPromise(Stream.runForEachChunk(source(), (c) => Effect.sync(() => Chunk.forEach(c, touch)))),
  runForEachChunkPlain: () => Effect.runPromise(Stream.runForEachChunk(source(), (c) => (Chunk.forEach(c, touch), Effect.void))),
  runForEach: () => Effect.runPromise(Stream.runForEach(source(), (e) => Effect.sync(() => touch(e)))),
  mapChunksEffect: () => Effect.runPromise(Stream.runDrain(Stream.mapChunksEffect(source(), (c) => Effect.sync(() => (Chunk.forEach(c, touch), Chunk.empty())))))
}
const way = ways[process.argv[2] ?? "runForEachChunk"]
if (way === undefined) throw new Error(`one of: ${Object.keys(ways).join(", ")}`)
for (let r = 0; r < 3; r++) {
  const start = performance.now()
  await way()
  console.log(`${process.argv[2] ?? "runForEachChunk"} ${(performance.now() - start).toFixed(0)} ms`)
}
