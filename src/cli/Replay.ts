/**
 * `effect-agent replay <id>` prints a session's transcript (or its events, `--json`);
 * `effect-agent export-script <id>` prints its model responses as a `--script` cassette. The
 * handlers; the commands are in commands/Replay.ts.
 *
 * @since 0.10.0
 */
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { Cassette, SessionEngine } from "../index.js"
import type { ExportScriptInput, ReplayInput } from "./commands/Replay.js"
import { readingEngineLayer } from "./Engine.js"
import * as Render from "./Render.js"
import { terminalSafeJson } from "./Terminal.js"

const output: Render.Output = {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text)
}

/** `replay`. */
export const replay = ({ json, sessionId, ...options }: ReplayInput) =>
  Effect.gen(function*() {
    const engine = yield* SessionEngine.SessionEngine
    const render = Render.make(output, { transcript: true })
    yield* engine.replaySession({ sessionId }).pipe(
      // Printed in the callback, a chunk at a time: an `Effect.sync` per event would hold each event
      // from old space until a major GC (V8 pretenures effect's shared constructor; bench/README.md).
      Stream.runForEachChunk((events) => {
        // With --json, one write per chunk (a log's 64 KiB read) rather than one per event.
        if (json) {
          let lines = ""
          for (const event of events) lines += JSON.stringify(event) + "\n"
          // DEL and C1 controls escaped too (JSON.stringify leaves them): the same values, nothing a terminal acts on.
          if (lines !== "") output.out(terminalSafeJson(lines))
        } else {
          for (const event of events) render.event(event)
        }
        return Effect.void
      })
    )
  }).pipe(Effect.provide(readingEngineLayer(options)))

/** `export-script`: the subagents' logs too, as a cassette of a session answers its subagents' requests as well. */
export const exportScript = ({ sessionId, ...options }: ExportScriptInput) =>
  Effect.gen(function*() {
    const engine = yield* SessionEngine.SessionEngine
    const read = (id: string) => Effect.map(Stream.runCollect(engine.replaySession({ sessionId: id })), Chunk.toReadonlyArray)
    output.out(terminalSafeJson(JSON.stringify(yield* Cassette.fromTree(yield* read(sessionId), read), null, 2)) + "\n")
  }).pipe(Effect.provide(readingEngineLayer(options)))
