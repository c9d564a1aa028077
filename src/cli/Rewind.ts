/**
 * `effect-agent rewind <sessionId> --to <sequence> [--force]`: brings a session back to a point
 * between turns — the conversation continues from there and the files of its cwd the agent changed
 * since are restored (`session.rewound`). Files changed outside the agent since it wrote them are
 * listed and nothing is changed; `--force` then overwrites them (what it overwrote is kept, so the
 * rewind itself can be rewound). Files a command's snapshot recorded (changed while a command ran, by
 * it or by anyone else) are named on stderr with how to get back what they held. Exit codes: 0 rewound; 1 refused (the list on stderr), a turn in
 * progress, a point inside a turn, or the session or store could not be used.
 *
 * @since 0.10.0
 */
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import { Plural, SessionEngine } from "../index.js"
import { CliError } from "./CliError.js"
import { storeOnlyEngineLayer } from "./Engine.js"
import type { Input } from "./commands/Rewind.js"
import * as ExitCode from "./ExitCode.js"
import * as Flags from "./Flags.js"
import * as Render from "./Render.js"

/** What a rewind did to a file: its change's `before` is what the rewind found, `after` what it left. */
const marks = (change: { readonly before?: unknown; readonly after?: unknown }) => change.after === undefined ? "removed " : change.before === undefined ? "restored" : "reverted"

/** `rewind`. */
export const handler = ({ force, sessionId, to, ...storage }: Input) =>
  Effect.gen(function*() {
    // A command printed to run next works as printed: on the store this one used (never its database URL).
    const again = Flags.storageFlags(storage)
    const rewindTo = (sequence: number, more = "") => Render.terminalSafe(`effect-agent rewind ${sessionId} --to ${sequence}${more}${again.flags}`)
    const engine = yield* SessionEngine.SessionEngine
    const rewound = yield* engine.rewindSession({ sessionId, toSequence: to, force }).pipe(
      Effect.tapErrorTag("RewindRefused", (refused) =>
        refused.reason === "changed_outside"
          ? Console.error(
            [
              "effect-agent rewind: these files were changed outside the agent since it last wrote them:",
              ...(refused.files ?? []).map((f) => `  ${Render.terminalSafe(f)}`),
              `nothing was changed; to overwrite them: ${rewindTo(to, " --force")}${again.after}`
            ].join("\n")
          )
          : Effect.void),
      // Said above in full: exit 1 without the same refusal again as one line.
      Effect.mapError((error) =>
        error._tag === "RewindRefused" && error.reason === "changed_outside"
          ? new ExitCode.AlreadyReported({ message: error.message })
          // The API's field is the user's --to: named by the flag they typed ("Invalid toSequence: …" read as a bug).
          : error._tag === "InvalidInput" && error.field === "toSequence"
          ? new CliError({ reason: "invalid_arguments", message: `--to ${to}: ${error.detail}` })
          : error
      )
    )
    yield* Console.log(`rewound ${sessionId} to #${rewound.toSequence} (session.rewound #${rewound.sequence}): ${Plural.count(rewound.changes.length, "file")} restored`)
    for (const change of rewound.changes) yield* Console.log(`  ${marks(change)} ${Render.terminalSafe(change.path)}`)
    for (const path of rewound.forced) yield* Console.error(`  overwritten (changed outside the agent): ${Render.terminalSafe(path)}`)
    // Past a cap the snapshot missed changes (not restored); beside another call it names the files it cannot attribute (restored).
    for (const why of rewound.incomplete) yield* Console.error(`  a snapshot was incomplete (what it missed is not restored): ${Render.terminalSafe(why)}`)
    // Whoever wrote these while the command ran is not known: a save of yours then was undone too; it is kept.
    for (const path of rewound.observed) yield* Console.error(`  changed while a command ran (by it, or by you or another program meanwhile): ${Render.terminalSafe(path)}`)
    if (rewound.observed.length > 0) {
      yield* Console.error(`  what they held is kept: ${rewindTo(rewound.sequence - 1)} brings it back${again.after}`)
    }
  }).pipe(Effect.provide(storeOnlyEngineLayer(storage))) // A rewind calls no model.
