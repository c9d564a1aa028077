/**
 * `effect-agent fork <sessionId> [--at <sequence>]`: forks a session at the end of a closed turn
 * (default the last one) and prints the new session's id; continue it with `run --session <id>`.
 *
 * @since 0.3.0
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { SessionEngine } from "../index.js"
import { storeOnlyEngineLayer } from "./Engine.js"
import * as Flags from "./Flags.js"
import * as Help from "./Help.js"

/** The `fork` command. */
export const command = Command.make(
  "fork",
  {
    sessionId: Args.text({ name: "sessionId" }).pipe(Args.withDescription("The session to fork")),
    at: Options.integer("at").pipe(
      Options.optional,
      Options.withDescription("The sequence to fork at: the end of a closed turn (default: the end of the last one)")
    ),
    ...Flags.storage
  },
  ({ at, sessionId, ...storage }) =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine.SessionEngine
      const fork = yield* engine.forkSession({ sessionId, ...(Option.isSome(at) ? { atSequence: at.value } : {}) })
      yield* Console.log(fork.sessionId)
    }).pipe(Effect.provide(storeOnlyEngineLayer(storage))) // Forking copies a log: no model is called.
).pipe(Command.withDescription(Help.described("Fork a session at the end of a closed turn (default the last); prints the new session's id", ["effect-agent fork <id>", "effect-agent run --session \"$(effect-agent fork <id>)\" \"Try it another way\""])))
