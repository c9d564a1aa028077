/**
 * `chat --continue` and `chat --resume`: the way back into a session without copying its id, as in
 * Claude Code and Codex. `--continue` takes the most recently active session of the current
 * directory; `--resume` lists that directory's sessions, newest first, each with its title,
 * and asks which (on a terminal only: piped input is the chat's own).
 *
 * @since 0.3.0
 */
import * as Effect from "effect/Effect"
import { Plural, Session, SessionEngine, SessionTitle, StartedSessions, TrustStore } from "../index.js"
import { askLine } from "./Ask.js"
import { CliError } from "./CliError.js"
import { currentDirectory, readingEngineLayer } from "./Engine.js"
import type * as Flags from "./Flags.js"
import * as NodeServices from "./NodeServices.js"
import * as Render from "./Render.js"

/** How many sessions `--resume` offers. */
const offered = 20

/** A session's title on one line, cut to `width` and made safe for the terminal (the listing carries it: no log is read). */
const titleLine = (s: Session.SessionSummary, width: number) =>
  s.title === undefined ? "(no message yet)" : SessionTitle.cut(Render.terminalSafe(SessionTitle.plain(s.title)), width)

/**
 * The first `limit` sessions of `all` that this user started or adopted, in `all`'s order: one record
 * read per session looked at, and no more sessions looked at than it takes (`--continue` wants one).
 */
const mine = (all: ReadonlyArray<Session.SessionSummary>, limit: number) =>
  Effect.gen(function*() {
    const dir = yield* TrustStore.configDir
    const found: Array<Session.SessionSummary> = []
    for (const s of all) {
      if (found.length >= limit) break
      if (yield* StartedSessions.isStarted(dir, s)) found.push(s)
    }
    return found
  }).pipe(Effect.provide(NodeServices.layer))

/** The session `chat --continue` or `chat --resume` goes back into. */
export const pick = (storage: Flags.Storage, how: "continue" | "resume") =>
  Effect.gen(function*() {
    if (how === "resume" && (process.stdin.isTTY !== true || process.stderr.isTTY !== true)) {
      return yield* new CliError({
        reason: "invalid_arguments",
        message: "--resume asks which session on a terminal; without one, use --continue or --session <id>"
      })
    }
    const engine = yield* SessionEngine.SessionEngine
    const cwd = yield* currentDirectory
    // The listing comes most recently active first.
    const all = (yield* engine.listSessions).filter((s) => s.cwd === cwd)
    // Only the user's own: a log that came with the repository is neither offered nor taken (StartedSessions).
    const here = storage.store === "postgres" ? all : yield* mine(all, how === "continue" ? 1 : offered)
    if (here.length === 0) {
      const foreign = all.length
      return yield* new CliError({
        reason: "invalid_arguments",
        message: foreign === 0
          ? `no session in ${Render.terminalSafe(cwd)} to ${how} (start one with: effect-agent chat)`
          : `no session of yours in ${Render.terminalSafe(cwd)} to ${how}: ${foreign} stored here ${foreign === 1 ? "was" : "were"} not started by you ` +
            `(a log can come with a repository; \`effect-agent sessions\` lists them). Read one (effect-agent replay <id>), then adopt it if it is yours: effect-agent adopt <id>`
      })
    }
    if (how === "continue") return here[0]!.sessionId
    const choices = here.slice(0, offered)
    // A title has its own line, after "  1. ".
    const columns = process.stderr.columns !== undefined && process.stderr.columns > 0 ? process.stderr.columns : 80
    const width = Math.max(20, columns - 6)
    const lines = choices.map((s, i) =>
      `${String(i + 1).padStart(3)}. ${titleLine(s, width)}\n       ${s.sessionId}  ${Render.terminalSafe(s.lastActivityAt)}  ${Plural.count(s.turnCount, "turn")}`
    )
    process.stderr.write(`Sessions in ${Render.terminalSafe(cwd)}, most recent first:\n${lines.join("\n")}\n`)
    for (;;) {
      const answer = yield* askLine(`Resume which? [1-${choices.length}, Enter for 1, Ctrl+C to leave] `)
      if (answer === undefined) return yield* new CliError({ reason: "invalid_arguments", message: "no session chosen" })
      const index = answer.trim() === "" ? 1 : Number(answer.trim())
      const chosen = Number.isInteger(index) ? choices[index - 1] : undefined
      if (chosen !== undefined) return chosen.sessionId
      process.stderr.write(`  ${JSON.stringify(answer.trim())} is not a number from 1 to ${choices.length}\n`)
    }
  }).pipe(Effect.provide(readingEngineLayer(storage)))
