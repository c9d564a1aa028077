/**
 * Long sessions without running thousands of turns: a real turn is run once through the engine (memory
 * store, scripted model) and its events are the template; a long log repeats that turn with fresh
 * ids, turn ids and sequences. Written straight to a JSONL file in the store's format (header line,
 * one event per line), or appended through a store's public `append`.
 */
import { closeSync, mkdirSync, openSync, writeFileSync, writeSync } from "node:fs"
import { join } from "node:path"
import { Chunk, Effect, Stream } from "effect"
import { type AgentEvent, JsonlEventStore, SessionEngine } from "../src/index.js"
import { createSession, deltaTexts, engineRuntime, runTurn, scripted, storeLayer } from "./engine.js"

export interface Template {
  readonly created: AgentEvent.AgentEvent
  readonly turn: ReadonlyArray<AgentEvent.AgentEvent>
}

/**
 * The events of one real turn of `deltas` text deltas, answering a user message of ~60 characters;
 * with `usage`, the model reports it (as real providers do), so the turn's `turn.completed` carries it.
 */
export const template = async (deltas: number, usage?: { readonly inputTokens: number; readonly outputTokens: number }): Promise<Template> => {
  const chunks = deltaTexts(deltas).map((text) => `${text} `)
  const rt = engineRuntime(storeLayer({ kind: "memory" }), scripted(chunks, 1, usage === undefined ? {} : { usage }))
  try {
    const sessionId = await createSession(rt)
    await runTurn(rt, sessionId, "please explain what this function does and why it is slow")
    const events = await rt.runPromise(Effect.flatMap(SessionEngine.SessionEngine, (engine) => Stream.runCollect(engine.replaySession({ sessionId }))))
    const [created, ...turn] = Chunk.toReadonlyArray(events)
    return { created: created!, turn }
  } finally {
    await rt.dispose()
  }
}

/**
 * The events of a session holding `turns` copies of the template's turn, in order. `shiftMs` moves
 * every timestamp (sessions made at different times, as real ones are, are not all last active at
 * the same millisecond).
 */
export function* sessionEvents(t: Template, sessionId: string, turns: number, shiftMs = 0): Generator<AgentEvent.AgentEvent> {
  const at = (timestamp: string) => (shiftMs === 0 ? timestamp : new Date(Date.parse(timestamp) + shiftMs).toISOString())
  yield { ...t.created, sessionId, timestamp: at(t.created.timestamp) }
  let sequence = 1
  for (let n = 1; n <= turns; n++) {
    const turnId = `turn_bench${n}`
    for (const event of t.turn) {
      sequence++
      yield { ...event, sessionId, turnId, sequence, id: `evt_bench${sequence}`, timestamp: at(event.timestamp) } as AgentEvent.AgentEvent
    }
  }
}

/** The header line of a JSONL log. */
export const header = JSON.stringify({ format: JsonlEventStore.formatName, version: JsonlEventStore.formatVersion })

/** Writes `<dataDir>/sessions/<sessionId>.jsonl` holding exactly the events of {@link sessionEvents}, in the store's format. */
export const writeSession = (t: Template, dataDir: string, sessionId: string, turns: number, shiftMs = 0) => {
  mkdirSync(join(dataDir, "sessions"), { recursive: true })
  const file = join(dataDir, "sessions", `${sessionId}.jsonl`)
  let text = header + "\n"
  for (const event of sessionEvents(t, sessionId, turns, shiftMs)) text += JSON.stringify(event) + "\n"
  writeFileSync(file, text)
  return file
}

/**
 * Writes `<dataDir>/sessions/<sessionId>.jsonl` holding whole turns until it reaches `bytes`; returns
 * the turns written and the file's path and size.
 */
export const writeLog = (t: Template, dataDir: string, sessionId: string, bytes: number) => {
  mkdirSync(join(dataDir, "sessions"), { recursive: true })
  const file = join(dataDir, "sessions", `${sessionId}.jsonl`)
  const fd = openSync(file, "w")
  let size = 0
  const put = (line: string) => {
    size += writeSync(fd, line)
  }
  put(header + "\n")
  put(JSON.stringify({ ...t.created, sessionId }) + "\n")
  let turns = 0
  let sequence = 1
  while (size < bytes) {
    turns++
    const turnId = `turn_bench${turns}`
    let block = ""
    for (const event of t.turn) {
      sequence++
      block += JSON.stringify({ ...event, sessionId, turnId, sequence, id: `evt_bench${sequence}` }) + "\n"
    }
    put(block)
  }
  closeSync(fd)
  return { file, turns, size }
}
