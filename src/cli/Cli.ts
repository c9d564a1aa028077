/**
 * The `effect-agent` command line, on the public API only: `run` a turn, `replay` a session, list
 * `sessions`, and answer turns left waiting for approval (`pending`, `approve`, `deny`).
 *
 * @since 0.1.0
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Chunk from "effect/Chunk"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { type AgentEvent, Cassette, SessionEngine, type SessionBusy } from "../index.js"
import * as Acp from "./Acp.js"
import { readingEngineLayer, withDrivingEngine } from "./Engine.js"
import * as Approvals from "./Approvals.js"
import * as Chat from "./Chat.js"
import * as Compact from "./Compact.js"
import * as FollowUp from "./FollowUp.js"
import * as Fork from "./Fork.js"
import * as Rewind from "./Rewind.js"
import * as Watch from "./Watch.js"
import * as Repair from "./Repair.js"
import * as Serve from "./Serve.js"
import * as Sessions from "./Sessions.js"
import * as ExitCode from "./ExitCode.js"
import { CliError } from "./CliError.js"
import * as Flags from "./Flags.js"
import * as Help from "./Help.js"
import * as ImageFiles from "./ImageFiles.js"
import * as Models from "./Models.js"
import * as Render from "./Render.js"
import * as Stdin from "./Stdin.js"
import * as Trust from "./Trust.js"
import * as Mcp from "./Mcp.js"

const output: Render.Output = {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text)
}

const mode = Flags.mode(
  "Permissions: default (reads allowed, writes and commands ask), acceptEdits (edits allowed too), readOnly, bypass (everything allowed). Default: your settings' mode, else a trusted .effect-agent/settings.json's, else default (a project's file may narrow it; see effect-agent trust)"
)

/**
 * Streams a turn to the terminal, asking the user whenever the policy asks — or, when stdin carried
 * the message (`run -`), answering no. Fails with the turn's outcome when it did not end `final`,
 * so the exit code tells (see ExitCode.ts).
 */
const streamTurn = <E>(
  engine: SessionEngine.SessionEngine.Service,
  sessionId: string,
  stream: Stream.Stream<AgentEvent.AgentEvent, E>,
  answers: "stdin" | "no" = "stdin"
) =>
  Effect.gen(function*() {
    const render = Render.make(output, { transcript: false, color: !Help.isPlain(process.stderr) })
    const prompt = yield* Approvals.make
    let first = true
    let completion: AgentEvent.PayloadOf<"turn.completed"> | undefined
    yield* stream.pipe(
      Stream.runForEach((event) =>
        Effect.gen(function*() {
          if (first) render.note(`session ${sessionId}`)
          first = false
          render.event(event)
          if (event.type === "turn.completed") completion = event.payload
          // A subagent's ask is answered here too, on the subagent's session (whose log records it).
          const ask = event.type === "permission.resolved" && event.payload.decision === "ask"
            ? { sessionId, toolCallId: event.payload.toolCallId, question: `  Allow ${Render.describeCall(render.callOf(event.payload.toolCallId))}?` }
            : event.type === "subagent.asked"
            ? { sessionId: event.payload.childSessionId, toolCallId: event.payload.childToolCallId, question: Render.subagentQuestion(event.payload) }
            : undefined
          if (ask !== undefined) {
            render.endLine()
            const { question, toolCallId } = ask
            const answer = answers === "no"
              ? yield* Effect.as(Effect.sync(() => output.err(`${question} no (the message came from stdin, so nobody can answer)\n`)), {
                decision: "deny" as const,
                remember: false
              })
              : yield* prompt.ask(question)
            yield* engine.resolvePermission({ sessionId: ask.sessionId, toolCallId, ...answer })
          }
        })
      ),
      // Ctrl+C interrupts the stream; the engine stores turn.completed {cancelled} before this runs.
      Effect.onInterrupt(() => Effect.sync(() => render.note("[turn cancelled]")))
    )
    if (completion?.stopReason === "error") return yield* new ExitCode.TurnEndedWithError({ errorCode: completion.errorCode ?? "unknown" })
    if (completion?.stopReason === "cancelled") return yield* new ExitCode.TurnCancelled()
  }).pipe(Effect.scoped)

const run = Command.make(
  "run",
  {
    message: Args.text({ name: "message" }).pipe(
      Args.withDescription("What to ask the agent; - reads the whole message from stdin (then every approval is answered no)")
    ),
    session: Options.text("session").pipe(Options.optional, Options.withDescription("Continue this session instead of starting one")),
    image: Options.text("image").pipe(
      Options.repeated,
      Options.withDescription("Send this image with the message (PNG, JPEG, GIF or WebP; at most 5 MiB each, 20 per message); repeatable")
    ),
    followUp: Options.boolean("follow-up").pipe(
      Options.withDescription("Queue the message as a follow-up (followup.queued): it runs after the follow-ups queued before it, at once when the session is idle; prints the turns up to its own")
    ),
    mode,
    ...Flags.rules,
    mcpConfig: Flags.mcpConfig,
    ...Flags.sandbox,
    ...Flags.instructions,
    ...Flags.web,
    ...Flags.subagents,
    ...Models.options,
    ...Flags.storage
  },
  ({ allow, deny, followUp, image, mcpConfig, message, mode, session, ...options }) =>
    Effect.gen(function*() {
      if (followUp && image.length > 0) {
        return yield* new CliError({ reason: "invalid_arguments", message: "--image goes with a new turn, not with --follow-up (a queued follow-up carries text only)" })
      }
      // Read and checked before the engine starts: a refused image stores nothing.
      const images = yield* ImageFiles.readAll(image)
      const fromStdin = message === "-"
      const userMessage = fromStdin ? yield* Stdin.readMessage : message
      yield* withDrivingEngine(options, { mode, allow, deny, mcpConfig }, Option.getOrUndefined(session), (engine, cwd) =>
        Effect.gen(function*() {
          const sessionId = Option.isSome(session)
            ? session.value
            : (yield* engine.createSession({ cwd, client: "cli" })).sessionId
          const turn = followUp ? FollowUp.stream(engine, sessionId, userMessage) : engine.runTurn({ sessionId, userMessage, ...(images.length === 0 ? {} : { images }) })
          yield* streamTurn(engine, sessionId, turn, fromStdin ? "no" : "stdin")
        })).pipe(
          // One process at a time writes a session's log, so a second terminal cannot queue into it:
          // say so, and where the message can be queued instead.
          Effect.catchTag("SessionBusy", (busy): Effect.Effect<never, SessionBusy | CliError> =>
            followUp ? Effect.fail(new CliError({ reason: "invalid_arguments", message: FollowUp.busyMessage(busy.message) })) : Effect.fail(busy))
        )
    })
).pipe(Command.withDescription(
  Help.described(
    "Run one turn: stream the agent's answer to the terminal. Exit codes: 0 the turn ended final; 1 the command could not run (usage, settings, session, store); 3 the turn ended with an error; 130 cancelled",
    ["effect-agent run \"Explain src/index.ts\"", "effect-agent run --session <id> \"Now add a test\"", "effect-agent run \"What is wrong here?\" --image screenshot.png", "git diff | effect-agent run - --mode readOnly"]
  )
))

const replay = Command.make(
  "replay",
  {
    sessionId: Args.text({ name: "sessionId" }),
    json: Options.boolean("json").pipe(Options.withDescription("Print the stored events, one JSON object per line")),
    ...Flags.storage
  },
  ({ json, sessionId, ...options }) =>
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
            if (lines !== "") output.out(lines)
          } else {
            for (const event of events) render.event(event)
          }
          return Effect.void
        })
      )
    }).pipe(Effect.provide(readingEngineLayer(options)))
).pipe(Command.withDescription(Help.described("Print a session's transcript (or, with --json, its events)", ["effect-agent replay <id>", "effect-agent replay <id> --json | jq -c 'select(.type == \"tool.completed\")'"])))

const exportScript = Command.make(
  "export-script",
  { sessionId: Args.text({ name: "sessionId" }), ...Flags.storage },
  ({ sessionId, ...options }) =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine.SessionEngine
      const read = (id: string) => Effect.map(Stream.runCollect(engine.replaySession({ sessionId: id })), Chunk.toReadonlyArray)
      // The subagents' logs too: a cassette of a session answers its subagents' requests as well.
      output.out(JSON.stringify(yield* Cassette.fromTree(yield* read(sessionId), read), null, 2) + "\n")
    }).pipe(Effect.provide(readingEngineLayer(options)))
).pipe(Command.withDescription(Help.described(
    "Print a session's model responses as a --script file: replay it as a deterministic test (a cassette)",
    ["effect-agent export-script <id> > cassette.json && effect-agent run --script cassette.json \"same request\""]
  )))

const pending = Command.make(
  "pending",
  { sessionId: Args.text({ name: "sessionId" }).pipe(Args.optional), ...Flags.storage },
  ({ sessionId, ...options }) =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine.SessionEngine
      const listing = Option.isSome(sessionId) ? undefined : yield* engine.sessionListing
      if (listing !== undefined) yield* Sessions.warnDamaged(listing.damaged)
      // Every store's listing says which sessions wait (`awaitingApproval`): only theirs are read.
      const ids = Option.isSome(sessionId)
        ? [sessionId.value]
        : listing!.sessions.filter((s) => s.awaitingApproval !== undefined).map((s) => s.sessionId)
      let found = 0
      for (const id of ids) {
        for (const call of yield* engine.pendingApprovals({ sessionId: id })) {
          found++
          yield* Console.log(`${id}  ${call.toolCallId}  ${Render.describeCall(call)}${call.risk === undefined ? "" : `  (${call.risk})`}`)
        }
      }
      if (found === 0) yield* Console.error("No tool calls are waiting for approval.")
    }).pipe(Effect.provide(readingEngineLayer(options)))
).pipe(Command.withDescription(Help.described("List tool calls waiting for approval (answer them with approve or deny)", ["effect-agent pending"])))

/** `approve` and `deny`: store the answer, then continue the paused turn in this terminal. */
const answer = (decision: "allow" | "deny") =>
  Command.make(
    decision === "allow" ? "approve" : "deny",
    {
      sessionId: Args.text({ name: "sessionId" }),
      toolCallId: Args.text({ name: "toolCallId" }),
      ...(decision === "allow"
        ? { always: Options.boolean("always").pipe(Options.withDescription("Allow later calls of the same tool too (for shell: the same program at the same risk)")) }
        : {}),
      mode,
      ...Flags.rules,
      mcpConfig: Flags.mcpConfig,
      ...Flags.sandbox,
      ...Flags.instructions,
    ...Flags.web,
      ...Flags.subagents,
      ...Models.options,
      ...Flags.storage
    },
    ({ allow, deny, mcpConfig, mode, sessionId, toolCallId, ...options }) =>
      withDrivingEngine(options, { mode, allow, deny, mcpConfig }, sessionId, (engine) =>
        Effect.gen(function*() {
          const remember = "always" in options && options.always === true
          yield* engine.resolvePermission({ sessionId, toolCallId, decision, remember })
          yield* streamTurn(engine, sessionId, engine.resumeTurn({ sessionId }))
        }))
  ).pipe(Command.withDescription(Help.described(
    `${decision === "allow" ? "Approve" : "Deny"} a call waiting for approval, then continue its turn`,
    [`effect-agent ${decision === "allow" ? "approve <session-id> <tool-call-id> --always" : "deny <session-id> <tool-call-id>"}`]
  )))

/** The root command. */
export const command = Command.make("effect-agent").pipe(
  Command.withDescription(Help.described("An Effect-TS runtime for coding agents", ["effect-agent run \"Hello, agent\"", "effect-agent <command> --help"])),
  Command.withSubcommands([run, Chat.command, replay, exportScript, Fork.command, Rewind.command, Compact.command, Watch.command, Sessions.command, pending, answer("allow"), answer("deny"), Trust.command, Mcp.command, Acp.command, Serve.command, Repair.command])
)

const runCommand = Command.run(command, { name: "effect-agent", version: "0.1.0" })

/**
 * `run -` with options after the `-`: @effect/cli reads the lone `-` as the start of a flag and then
 * refuses the options that follow, so the `-` is moved to the end, after `--`.
 */
const messageFromStdinLast = (argv: ReadonlyArray<string>): ReadonlyArray<string> => {
  const at = argv.indexOf("-", 3)
  if (argv[2] !== "run" || at < 0 || argv.includes("--")) return argv
  return [...argv.slice(0, at), ...argv.slice(at + 1), "--", "-"]
}

/** Runs the CLI on `argv` (as `process.argv`). */
export const main = (argv: ReadonlyArray<string>) => Help.shaped(runCommand(messageFromStdinLast(argv)))
