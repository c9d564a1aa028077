/**
 * What one heap snapshot holds more than another, per unit (a turn, a session): bytes and counts by
 * kind — closures by their source line, plain objects by their keys, Effect primitives by their op,
 * other nodes by type and constructor. For `bench/heap.ts`'s snapshots (not part of `npm run bench`):
 *
 *   node --max-old-space-size=8000 bench/heapdiff.mjs before.heapsnapshot held.heapsnapshot [per=1000] [rows=70]
 */
import fs from "node:fs"
const load = (f) => {
  const snap = JSON.parse(fs.readFileSync(f, "utf8"))
  const m = snap.snapshot.meta
  const nf = m.node_fields, nfl = nf.length, ef = m.edge_fields, efl = ef.length
  const types = m.node_types[0], etypes = m.edge_types[0]
  const S = snap.strings, N = snap.nodes, E = snap.edges, L = snap.locations
  const iType = nf.indexOf("type"), iName = nf.indexOf("name"), iSize = nf.indexOf("self_size"), iEc = nf.indexOf("edge_count")
  const eT = ef.indexOf("type"), eN = ef.indexOf("name_or_index"), eTo = ef.indexOf("to_node")
  const nn = N.length / nfl
  const firstEdge = new Uint32Array(nn + 1)
  for (let i = 0, e = 0; i < nn; i++) { firstEdge[i] = e; e += N[i * nfl + iEc] * efl }
  const edge = (i, name) => { for (let e = firstEdge[i]; e < firstEdge[i] + N[i*nfl+iEc]*efl; e += efl) if (S[E[e+eN]] === name) return E[e+eTo]/nfl; return -1 }
  const loc = new Map(); for (let k = 0; k < L.length; k += 4) loc.set(L[k] / nfl, [L[k+1], L[k+2], L[k+3]])
  const scr = new Map()
  const agg = new Map()
  for (let i = 0; i < nn; i++) {
    const t = types[N[i*nfl+iType]]; let name = S[N[i*nfl+iName]]; const size = N[i*nfl+iSize]
    let k
    if (t === "closure") {
      const l = loc.get(i); let sn = l ? scr.get(l[0]) : "?"
      if (l && sn === undefined) { const sh = edge(i, "shared"); sn = "?"; if (sh >= 0) { const sc = edge(sh, "script_or_debug_info"); if (sc >= 0) sn = S[N[sc*nfl+iName]].replace(/.*node_modules\/effect\/dist\/esm\//, "e/").replace(/.*turn-mem\//, "") } scr.set(l[0], sn) }
      k = "closure " + sn + ":" + (l ? l[1] + 1 : "?") + " " + name
    } else if (t === "object" && (name === "Object" || name === "EffectPrimitive")) {
      const keys = []
      for (let e = firstEdge[i]; e < firstEdge[i] + N[i*nfl+iEc]*efl; e += efl) if (etypes[E[e+eT]] === "property") keys.push(S[E[e+eN]])
      k = name + "{" + keys.filter(k => k !== "__proto__").slice(0, 8).join(",") + "}"
      if (name === "EffectPrimitive") { const op = edge(i, "_op"); k = "EP " + (op >= 0 ? S[N[op*nfl+iName]] : "?") }
    } else if (t === "string" || t === "concatenated string" || t === "sliced string") k = t
    else k = t + ":" + name.slice(0, 50)
    const x = agg.get(k) ?? { n: 0, s: 0 }; x.n++; x.s += size; agg.set(k, x)
  }
  return agg
}
const a = load(process.argv[2]), b = load(process.argv[3]), per = Number(process.argv[4] ?? 1000)
const rows = []
for (const [k, x] of b) { const y = a.get(k) ?? { n: 0, s: 0 }; rows.push([k, (x.n - y.n) / per, (x.s - y.s) / per]) }
rows.sort((p, q) => q[2] - p[2])
let tot = 0; for (const r of rows) tot += r[2]
console.log("total B/turn", tot.toFixed(0))
for (const r of rows.slice(0, Number(process.argv[5] ?? 70))) console.log(r[2].toFixed(0).padStart(7), r[1].toFixed(1).padStart(7), r[0].slice(0, 130))
