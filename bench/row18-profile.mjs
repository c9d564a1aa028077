/**
 * A look by function at a profile `bench/row18-longtasks.mjs` wrote (`ROW18_PROFILE=1
 * ROW18_PROFILE_OUT=<file>`): `node bench/row18-profile.mjs <profile> <long.json> [phase=0] [top=40]`
 * prints, for the samples of one phase (0: the watchers connecting, from the first connection; 1:
 * the turn), each function's self and inclusive samples (a function counted once a sample however
 * deep it recurs), busiest inclusive first, and the samples by kind as the preload counts them.
 */
import { readFileSync } from "node:fs"

const [profileFile, longFile, phaseArg = "0", topArg = "40"] = process.argv.slice(2)
const profile = JSON.parse(readFileSync(profileFile, "utf8"))
const phase = JSON.parse(readFileSync(longFile, "utf8"))[Number(phaseArg)]
const byId = new Map(profile.nodes.map((node) => [node.id, node]))
const parent = new Map()
for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id)
const nameOf = (id) => {
  const frame = byId.get(id).callFrame
  return `${frame.functionName || "(anonymous)"} ${frame.url.split("/").at(-1)}:${frame.lineNumber}:${frame.columnNumber}`
}
const self = new Map()
const inclusive = new Map()
let t = profile.startTime
let total = 0
for (let i = 0; i < profile.samples.length; i++) {
  t += profile.timeDeltas[i]
  if (t < phase.fromUs || t > phase.toUs) continue
  total++
  const id = profile.samples[i]
  self.set(nameOf(id), (self.get(nameOf(id)) ?? 0) + 1)
  const seen = new Set()
  for (let at = id; at !== undefined; at = parent.get(at)) {
    const name = nameOf(at)
    if (seen.has(name)) continue
    seen.add(name)
    inclusive.set(name, (inclusive.get(name) ?? 0) + 1)
  }
}
console.log(`phase ${phaseArg}: ${total} samples, ${Math.round((phase.toUs - phase.fromUs) / 1000)} ms wall`)
for (const [name, n] of [...inclusive].sort((a, b) => b[1] - a[1]).slice(0, Number(topArg))) {
  console.log(`${String(n).padStart(6)} ${String(self.get(name) ?? 0).padStart(6)}  ${name}`)
}
