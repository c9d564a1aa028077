/**
 * `effect-agent watch <sessionId> [--json]`: prints a session live — its transcript so far, then
 * each turn as it runs, whichever process drives it (another process's writes are read from the
 * store) — until Ctrl+C. `--json`: the stored events, one JSON object per line.
 *
 * @since 0.3.0
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { SessionEngine } from "../index.js"
import { readingEngineLayer } from "./Engine.js"
import * as Flags from "./Flags.js"
import * as Render from "./Render.js"
import * as Help from "./Help.js"

const output: Render.Output = {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text)
}

/** The `watch` command. */
export const command = Command.make(
  "watch",
  {
    sessionId: Args.text({ name: "sessionId" }).pipe(Args.withDescription("The session to watch")),
    json: Options.boolean("json").pipe(Options.withDescription("Print the stored events, one JSON object per line")),
    ...Flags.storage
  },
  ({ json, sessionId, ...storage }) =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine.SessionEngine
      const render = Render.make(output, { transcript: true })
      yield* engine.watchSession({ sessionId }).pipe(
        // Printed in the callback, a chunk at a time: an `Effect.sync` per event would hold each event
        // from old space until a major GC (V8 pretenures effect's shared constructor; bench/README.md).
        Stream.runForEachChunk((events) => {
          for (const event of events) json ? output.out(JSON.stringify(event) + "\n") : render.event(event)
          return Effect.void
        })
      )
    }).pipe(Effect.provide(readingEngineLayer(storage)))
).pipe(Command.withDescription(Help.described("Print a session live, whichever process drives it, until Ctrl+C (--json: its events, one per line)", ["effect-agent watch <id>", "effect-agent watch <id> --json"])))
