/**
 * `effect-agent watch <sessionId> [--json]`: prints a session live — its transcript so far, then
 * each turn as it runs, whichever process drives it (another process's writes are read from the
 * store) — until Ctrl+C. `--json`: the stored events, one JSON object per line.
 *
 * @since 0.3.0
 */
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { SessionEngine } from "../index.js"
import { readingEngineLayer } from "./Engine.js"
import type { Input } from "./commands/Watch.js"
import * as Render from "./Render.js"
import { terminalSafeJson } from "./Terminal.js"

const output: Render.Output = {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text)
}

/** `watch`. */
export const handler = ({ json, sessionId, ...storage }: Input) =>
  Effect.gen(function*() {
    const engine = yield* SessionEngine.SessionEngine
    const render = Render.make(output, { transcript: true })
    yield* engine.watchSession({ sessionId }).pipe(
      // Printed in the callback, a chunk at a time: an `Effect.sync` per event would hold each event
      // from old space until a major GC (V8 pretenures effect's shared constructor; bench/README.md).
      Stream.runForEachChunk((events) => {
        for (const event of events) json ? output.out(terminalSafeJson(JSON.stringify(event)) + "\n") : render.event(event)
        return Effect.void
      })
    )
  }).pipe(Effect.provide(readingEngineLayer(storage)))
