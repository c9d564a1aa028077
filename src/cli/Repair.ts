/**
 * `effect-agent repair <sessionId>`: rewrites a JSONL log that no reader accepts — duplicate
 * sequences left by two processes writing one session at once, a corrupt line — keeping the first
 * writer's events and closing a turn they leave open as interrupted. The original is kept as
 * `<file>.bak`. A valid log is left as it is.
 *
 * @since 0.1.0
 */
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import { IdGenerator, JsonlEventStore, Plural } from "../index.js"
import * as NodeServices from "./NodeServices.js"
import type { Input } from "./commands/Repair.js"
import { terminalSafe } from "./Terminal.js"

/** At most this many dropped lines are listed one by one. */
const shown = 20

/** `repair`. */
export const handler = ({ dataDir, sessionId, store }: Input) =>
  Effect.gen(function*() {
    if (store === "sqlite") {
      // A session read fails naming a missing row (`gap in sequence`): no rewrite mends that here.
      return yield* Console.log(
        `Nothing to repair: the SQLite store keeps each sequence once by its key. A session with a stored event missing ("gap in sequence") cannot be repaired: restore the row from a backup, or fork the session at a turn before the gap.`
      )
    }
    const report = yield* JsonlEventStore.repair({ dataDir, sessionId })
    if (!report.repaired) return yield* Console.log(`Nothing to repair: the log of ${sessionId} is valid (${Plural.count(report.kept, "event")}).`)
    // A dropped line's reason names the ids the log holds (a repository's data dir can say any string).
    for (const d of report.dropped.slice(0, shown)) {
      yield* Console.error(`  dropped line ${d.line}${d.sequence === undefined ? "" : ` (sequence ${d.sequence})`}: ${terminalSafe(d.reason)}`)
    }
    if (report.dropped.length > shown) yield* Console.error(`  … and ${Plural.count(report.dropped.length - shown, "more line")}`)
    yield* Console.log(
      `Repaired ${sessionId}: kept ${Plural.count(report.kept, "event")}, dropped ${Plural.count(report.dropped.length, "line")}` +
        (report.closedTurnId === undefined ? "" : `, closed turn ${terminalSafe(report.closedTurnId)} as interrupted`) +
        `. The original is kept as ${report.backup}.`
    )
  }).pipe(Effect.provide(IdGenerator.layer), Effect.provide(NodeServices.layer))
