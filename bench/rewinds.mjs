/**
 * A log of many rewinds folded three ways — `Transcript.replay`, the engine's `LiveTranscript` (what
 * hydrating a session does) and the viewer's `SessionView` fold (what the page does) — by a build's
 * `dist`, so that two builds can be compared (docs/benchmarks.md, "Rewinds"):
 *
 *   node bench/rewinds.mjs <dist> <turns>
 *
 * The log: `turns` turns, each but every fourth followed by a rewind back to the end of the last
 * turn kept (a user retrying). Prints milliseconds per fold; nothing is asserted.
 */
import { resolve } from "node:path"
import { pathToFileURL } from "node:url"

const [distArg = "dist", turnsArg = "1000"] = process.argv.slice(2)
const dist = pathToFileURL(resolve(distArg)).href
const Transcript = await import(`${dist}/domain/Transcript.js`)
const { LiveTranscript } = await import(`${dist}/engine/LiveTranscript.js`)
const SessionView = await import(`${dist}/domain/SessionView.js`)

const events = []
const base = (type) => ({ id: `evt_${events.length + 1}`, sessionId: "sess_1", sequence: events.length + 1, timestamp: "1970-01-01T00:00:00.000Z", type })
events.push({ ...base("session.created"), payload: { cwd: "/tmp", client: "bench" } })
const turn = (n) => {
  const turnId = `turn_${n}`
  events.push({ ...base("turn.started"), turnId, payload: { promptPreview: `t${n}` } })
  events.push({ ...base("user.message"), turnId, payload: { content: `t${n}` } })
  events.push({ ...base("model.delta"), turnId, payload: { text: `re t${n}` } })
  events.push({ ...base("turn.completed"), turnId, payload: { stopReason: "final" } })
  return events.length
}
let kept = 1
for (let i = 0; i < Number(turnsArg); i++) {
  const end = turn(i)
  if (i % 4 === 3) kept = end
  else events.push({ ...base("session.rewound"), payload: { toSequence: kept, changes: [] } })
}
const time = (f) => {
  const t0 = performance.now()
  f()
  return Math.round(performance.now() - t0)
}
const replay = time(() => Transcript.replay(events))
const live = time(() => LiveTranscript.of(events).snapshot())
const view = time(() => SessionView.fold(events))
console.log(JSON.stringify({ dist: distArg, turns: Number(turnsArg), events: events.length, replay, live, view }))
