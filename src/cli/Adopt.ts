/**
 * `effect-agent adopt <sessionId>... | --all [--yes]`: takes on sessions this user did not start
 * here (see `StartedSessions`): the CLI drives only sessions it recorded as started by this user, so
 * that a log shipped in a repository's `.effect-agent/` never hands a session its "always" answers
 * or its cwd. A session of yours from before sessions were recorded, or one you chose to take on,
 * is adopted here: the command shows what each session allowed (its remembered answers, its cwd,
 * what waits in it, the files a rewind of it could restore) and asks — on a terminal only: without
 * one, nothing is adopted unless `--yes` says so.
 *
 * @since 0.12.0
 */
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { Plural, Session, SessionEngine, type SessionState, StartedSessions, TrustStore } from "../index.js"
import { askOnTerminal, isYes } from "./Ask.js"
import { CliError } from "./CliError.js"
import { readingEngineLayer } from "./Engine.js"
import type { Input } from "./commands/Adopt.js"
import * as NodeServices from "./NodeServices.js"
import { terminalSafe } from "./Terminal.js"

/**
 * The paths a rewind of a session could write or remove in its cwd, once each, in the order its log
 * names them: those of the changes after its last compaction (no rewind goes back past one). A
 * rewind takes them, and the contents it writes, from the log's `workspace.changed` events and its
 * blobs — which a log that came with a repository can make say anything — and asks only about files
 * changed since the log's last change of them: so they are shown before the log is trusted.
 */
const restorable = (engine: SessionEngine.SessionEngine["Type"], sessionId: string) =>
  Effect.suspend(() => {
    let paths = new Set<string>()
    return engine.replaySession({ sessionId }).pipe(
      Stream.runForEachChunk((events) =>
        Effect.sync(() => {
          for (const event of events) {
            if (event.type === "session.compacted") paths = new Set()
            else if (event.type === "workspace.changed" || event.type === "session.rewound") for (const change of event.payload.changes) paths.add(change.path)
          }
        })
      ),
      Effect.map(() => [...paths])
    )
  })

/** What a session would bring with it, one fact per line, every value escaped for the terminal. */
const summary = (state: SessionState.SessionState, restores: ReadonlyArray<string>): ReadonlyArray<string> => {
  const waiting = state.openTurn?.toolCalls.filter((call) => call.status === "awaiting_approval").length ?? 0
  const origin = state.parent === undefined ? "" : `, a subagent of ${terminalSafe(state.parent.sessionId)}`
  return [
    `session ${terminalSafe(state.sessionId)}`,
    `  cwd       ${terminalSafe(state.cwd)}  (its tools work here)`,
    `  created   ${terminalSafe(state.createdAt)} by ${state.client}${origin}`,
    ...(state.title === undefined ? [] : [`  title     ${terminalSafe(state.title)}`]),
    `  turns     ${state.turnCount}`,
    ...(state.remembered.length === 0
      ? ["  always    (no remembered answers)"]
      : state.remembered.map((r) => `  always    ${r.decision} ${terminalSafe(r.scope)}`)),
    ...(waiting === 0 ? [] : [`  waiting   ${Plural.count(waiting, "call")} for your approval`]),
    ...(state.followUps.length === 0 ? [] : [`  queued    ${Plural.count(state.followUps.length, "follow-up message")}, to run as turns`]),
    ...(restores.length === 0
      ? ["  rewind    (no files: a rewind of it restores none)"]
      : [
        `  rewind    ${Plural.count(restores.length, "file")} in its cwd a rewind of it may write or remove, as its log says (asking only about files changed since):`,
        ...restores.map((path) => `              ${terminalSafe(path)}`)
      ])
  ]
}

/** How many sessions `adopt --all` names one by one; past it, their count. */
const fewSessions = 5

const invalid = (message: string) => new CliError({ reason: "invalid_arguments", message })

/** `adopt`. */
export const handler = ({ all, sessionIds, verbose, yes, ...storage }: Input) =>
  Effect.gen(function*() {
    if (storage.store === "postgres") return yield* invalid("sessions in PostgreSQL are not checked for who started them: there is nothing to adopt")
    if (all === (sessionIds.length > 0)) return yield* invalid("name the sessions to adopt, or give --all")
    const dir = yield* TrustStore.configDir
    const engine = yield* SessionEngine.SessionEngine
    const named = all ? (yield* engine.listSessions).map((s) => s.sessionId) : sessionIds
    const states = yield* Effect.forEach(named, (sessionId) =>
      engine.sessionState({ sessionId }).pipe(
        Effect.catchTag("SessionNotFound", () => Effect.fail(invalid(`no session ${terminalSafe(sessionId)} in the store`)))
      ))
    const started = yield* Effect.forEach(states, (state) => StartedSessions.isStarted(dir, Session.fromState(state)))
    const pending = states.filter((_, i) => !started[i])
    const yours = states.filter((_, i) => started[i])
    // `--all` in a data dir of hundreds of sessions: their counts, each session only when few (or --verbose).
    const each = (count: number) => !all || verbose || count <= fewSessions
    if (each(yours.length)) for (const state of yours) yield* Console.error(`effect-agent: ${terminalSafe(state.sessionId)} is yours already`)
    else yield* Console.error(`effect-agent: ${Plural.count(yours.length, "session is", "sessions are")} yours already (--verbose lists them)`)
    if (pending.length === 0) return
    const restores = yield* Effect.forEach(pending, (state) =>
      restorable(engine, state.sessionId).pipe(
        Effect.catchTag("SessionNotFound", () => Effect.fail(invalid(`no session ${terminalSafe(state.sessionId)} in the store`)))
      ))
    yield* Console.log(pending.map((state, i) => summary(state, restores[i]!).join("\n")).join("\n\n"))
    if (!yes) {
      if (process.stdin.isTTY !== true) {
        return yield* invalid(`stdin is not a terminal, so nothing was adopted; once you have read the above: effect-agent adopt ${all ? "--all" : sessionIds.join(" ")} --yes`)
      }
      const answer = yield* askOnTerminal(
        `Adopt ${pending.length === 1 ? "this session" : `these ${pending.length} sessions`}? Their "always" answers then apply when you continue them. [y/N]: `
      )
      if (!isYes(answer)) return yield* invalid("nothing was adopted")
    }
    for (const state of pending) {
      yield* StartedSessions.record(dir, Session.fromState(state))
      if (each(pending.length)) yield* Console.error(`effect-agent: adopted ${terminalSafe(state.sessionId)}`)
    }
    if (!each(pending.length)) yield* Console.error(`effect-agent: adopted ${Plural.count(pending.length, "session")}`)
  }).pipe(Effect.provide(readingEngineLayer(storage)), Effect.provide(NodeServices.layer))
