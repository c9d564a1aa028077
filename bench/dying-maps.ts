/**
 * Names the hidden classes (V8 maps) a full GC between two of row 1's turns throws away: a heap
 * snapshot in the middle of a turn (its objects alive), another after the turn, the engine's
 * disposal (with `fresh`, as row 1 makes an engine a turn) and a `gc()`; every map of the first that
 * the second no longer has is listed with the objects that had it (their constructor's name and
 * first properties). Optimized code embeds the maps it was specialised for and is thrown away when
 * one dies ("weak objects" under `--trace-deopt`): what `engine/KeptShapes.ts` keeps one object of.
 * A heap snapshot collects garbage first, so shapes whose objects are all gone by the middle of a
 * turn (effect's per-step objects) are not seen here: `--trace-deopt` names the code, this the maps.
 *
 *   node --expose-gc --max-old-space-size=4096 --import tsx bench/dying-maps.ts [deltas=2000] [fresh|same]
 */
import { readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { writeHeapSnapshot } from "node:v8"
import { Effect, Stream } from "effect"
import { SessionEngine } from "../src/index.js"
import { createSession, deltaTexts, engineRuntime, type EngineRuntime, storeLayer, touch } from "./engine.js"
import { perDeltaModel } from "./rows/turn.js"

const deltas = Number(process.argv[2] ?? 2000)
const fresh = process.argv[3] !== "same"
const chunks = deltaTexts(deltas)

/** A turn consumed as `count` does, `during` called once at its middle. */
const turn = (rt: EngineRuntime, sessionId: string, during?: () => void): Promise<number> =>
  rt.runPromise(Effect.flatMap(SessionEngine.SessionEngine, (engine) =>
    Effect.suspend(() => {
      let n = 0
      return Stream.runForEachChunk(engine.runTurn({ sessionId, userMessage: "hi" }), (chunk) => {
        for (const event of chunk) {
          touch(event)
          if (++n === deltas / 2) during?.()
        }
        return Effect.void
      }).pipe(Effect.map(() => n))
    })))

let shared: { rt: EngineRuntime; sessionId: string } | undefined
const round = async (during?: () => void): Promise<void> => {
  if (fresh || shared === undefined) {
    const rt = engineRuntime(storeLayer({ kind: "memory" }), perDeltaModel(chunks))
    shared = { rt, sessionId: await createSession(rt) }
  }
  await turn(shared.rt, shared.sessionId, during)
  if (fresh) await shared.rt.dispose()
}

interface Snapshot {
  readonly snapshot: { readonly meta: { readonly node_fields: Array<string>; readonly edge_fields: Array<string>; readonly node_types: [Array<string>]; readonly edge_types: [Array<string>] } }
  readonly nodes: Array<number>
  readonly edges: Array<number>
  readonly strings: Array<string>
}

const take = (name: string): Snapshot => {
  const file = writeHeapSnapshot(join(tmpdir(), `dying-maps-${process.pid}-${name}.heapsnapshot`))
  const parsed = JSON.parse(readFileSync(file, "utf8")) as Snapshot
  rmSync(file)
  return parsed
}

/** Every map's node id, and for each the objects that have it: name → how many, and the first one's properties. */
const mapsOf = (s: Snapshot) => {
  const { edge_fields, edge_types, node_fields, node_types } = s.snapshot.meta
  const nf = node_fields.length
  const ef = edge_fields.length
  const [typeAt, nameAt, idAt, edgeCountAt] = ["type", "name", "id", "edge_count"].map((f) => node_fields.indexOf(f))
  const [eTypeAt, eNameAt, eToAt] = ["type", "name_or_index", "to_node"].map((f) => edge_fields.indexOf(f))
  const nodeType = node_types[0]
  const edgeType = edge_types[0]
  const maps = new Set<number>()
  const users = new Map<number, Map<string, { count: number; props: string }>>()
  let edge = 0
  for (let n = 0; n < s.nodes.length; n += nf) {
    const edges = s.nodes[n + edgeCountAt!]!
    const name = s.strings[s.nodes[n + nameAt!]!]!
    const type = nodeType[s.nodes[n + typeAt!]!]
    if (name === "system / Map") maps.add(s.nodes[n + idAt!]!)
    let mapId: number | undefined
    const props: Array<string> = []
    for (let e = edge; e < edge + edges * ef; e += ef) {
      const kind = edgeType[s.edges[e + eTypeAt!]!]
      const to = s.edges[e + eToAt!]!
      const label = s.strings[s.edges[e + eNameAt!]!]
      if (kind === "internal" && label === "map") mapId = s.nodes[to + idAt!]!
      else if (kind === "property" && props.length < 8) props.push(label!)
    }
    edge += edges * ef
    if (mapId !== undefined && (type === "object" || type === "closure" || type === "array" || type === "hidden")) {
      const byName = users.get(mapId) ?? new Map()
      users.set(mapId, byName)
      const key = `${type} ${name}`
      const seen = byName.get(key)
      if (seen === undefined) byName.set(key, { count: 1, props: props.join(",") })
      else seen.count++
    }
  }
  return { maps, users }
}

for (let i = 0; i < 4; i++) {
  globalThis.gc?.()
  await round()
}
let middle: Snapshot | undefined
await round(() => {
  middle = take("middle")
})
globalThis.gc?.()
const after = take("after")
const before = mapsOf(middle!)
const kept = mapsOf(after).maps
const died = [...before.maps].filter((id) => !kept.has(id))
const lines = died.map((id) => {
  const byName = before.users.get(id)
  return byName === undefined
    ? "(no object of it in the snapshot)"
    : [...byName].map(([name, { count, props }]) => `${name} ×${count} {${props}}`).join("; ")
}).sort()
console.log(`${fresh ? "an engine a turn" : "one engine and session"}: ${before.maps.size} maps in the middle of a turn, ${died.length} gone after the turn and a gc()`)
const counted = new Map<string, number>()
for (const line of lines) counted.set(line, (counted.get(line) ?? 0) + 1)
for (const [line, n] of [...counted].sort((a, b) => b[1] - a[1])) console.log(`${n > 1 ? `${n} maps: ` : ""}${line}`)
