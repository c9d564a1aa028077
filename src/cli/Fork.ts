/**
 * `effect-agent fork <sessionId> [--at <sequence>]`: forks a session at a closed point (default the
 * session as it is now, but a turn or compaction still open) and prints the new session's id; continue it with `run --session <id>`.
 *
 * @since 0.3.0
 */
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { SessionEngine } from "../index.js"
import { CliError } from "./CliError.js"
import { storeOnlyEngineLayer } from "./Engine.js"
import type { Input } from "./commands/Fork.js"

/** `fork`. */
export const handler = ({ at, sessionId, ...storage }: Input) =>
  Effect.gen(function*() {
    const engine = yield* SessionEngine.SessionEngine
    const fork = yield* engine.forkSession({ sessionId, ...(Option.isSome(at) ? { atSequence: at.value } : {}) }).pipe(
      // The API's field is the user's --at: named by the flag they typed, as rewind names --to ("Invalid atSequence: …" read as a bug).
      Effect.mapError((error) =>
        error._tag === "InvalidInput" && error.field === "atSequence" && Option.isSome(at)
          ? new CliError({ reason: "invalid_arguments", message: `--at ${at.value}: ${error.detail}` })
          : error
      )
    )
    yield* Console.log(fork.sessionId)
  }).pipe(Effect.provide(storeOnlyEngineLayer(storage))) // Forking copies a log: no model is called.
