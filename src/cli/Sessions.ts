/**
 * `effect-agent sessions [--cwd <dir>] [--search <text>]`: the stored sessions, most recently
 * active first, one line each with its title; `effect-agent sessions rename <id> <title>` names one
 * (`session.titled`).
 *
 * @since 0.1.0
 */
import { realpathSync } from "node:fs"
import { resolve } from "node:path"
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { type EventStore, Session, SessionEngine, UsageText } from "../index.js"
import { readingEngineLayer, storeOnlyEngineLayer } from "./Engine.js"
import * as Flags from "./Flags.js"
import * as Help from "./Help.js"
import * as Render from "./Render.js"

/** One line per session whose log cannot be read; the others are listed all the same. */
export const warnDamaged = (damaged: EventStore.Listing["damaged"]) =>
  Effect.forEach(damaged, (d) => Console.error(`effect-agent: session ${d.sessionId} cannot be read: ${d.failure.message}`), { discard: true })

/** A directory as sessions store it: absolute, links resolved when it still exists (a removed one is kept as given). */
const storedDirectory = (dir: string): string => {
  const absolute = resolve(dir)
  try {
    return realpathSync(absolute)
  } catch {
    return absolute
  }
}

/**
 * A session's line: id, last activity, turns, client, cwd, what it used and cost (when its turns
 * reported usage), then its title — each made safe for the terminal.
 */
const line = (s: Session.SessionSummary): string => {
  const totals = UsageText.totalsText(s)
  return `${s.sessionId}  ${s.lastActivityAt}  ${s.turnCount} turn${s.turnCount === 1 ? "" : "s"}  ${s.client}  ${Render.terminalSafe(s.cwd)}` +
    (totals === undefined ? "" : `  ${Render.terminalSafe(totals)}`) +
    (s.title === undefined ? "" : `  ${Render.terminalSafe(s.title)}`)
}

const rename = Command.make(
  "rename",
  {
    sessionId: Args.text({ name: "sessionId" }).pipe(Args.withDescription("The session to name")),
    title: Args.text({ name: "title" }).pipe(Args.withDescription("Its title: one line, 1 to 200 characters (control characters are dropped)")),
    ...Flags.storage
  },
  ({ sessionId, title, ...storage }) =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine.SessionEngine
      const renamed = yield* engine.renameSession({ sessionId, title })
      yield* Console.log(`${sessionId}  ${Render.terminalSafe(renamed.title)}`)
    }).pipe(Effect.provide(storeOnlyEngineLayer(storage))) // Naming a session stores one event: no model is called.
).pipe(Command.withDescription(Help.described(
  "Name a session (stored as session.titled; its first message named it until then). Fails while another process drives the session",
  ["effect-agent sessions rename <id> \"Parser refactor\""]
)))

/** The `sessions` command, with `rename`. */
export const command = Command.make(
  "sessions",
  {
    cwd: Options.text("cwd").pipe(Options.optional, Options.withDescription("Only the sessions of this directory or a directory under it")),
    search: Options.text("search").pipe(Options.optional, Options.withDescription("Only the sessions whose title or id holds every word of this text (any case)")),
    ...Flags.storage
  },
  ({ cwd, search, ...options }) =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine.SessionEngine
      const { damaged, sessions: summaries } = yield* engine.sessionListing
      yield* warnDamaged(damaged)
      if (summaries.length === 0 && damaged.length === 0) return yield* Console.error(`No sessions in ${Flags.storeName(options)}.`)
      const shown = Session.filterSummaries(summaries, {
        cwd: Option.getOrUndefined(Option.map(cwd, storedDirectory)),
        search: Option.getOrUndefined(search)
      })
      if (shown.length === 0) {
        if (summaries.length > 0) yield* Console.error("No session matches.")
        return
      }
      // One write for the whole list: 10,000 sessions are 10,000 lines, not 10,000 writes.
      yield* Console.log(shown.map(line).join("\n"))
    }).pipe(Effect.provide(readingEngineLayer(options)))
).pipe(
  Command.withDescription(Help.described("List stored sessions, most recently active first, each with its title", [
    "effect-agent sessions",
    "effect-agent sessions --cwd . --search parser",
    "effect-agent sessions --store sqlite"
  ])),
  Command.withSubcommands([rename])
)
