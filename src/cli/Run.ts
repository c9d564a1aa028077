/**
 * `effect-agent run <message>` runs one turn, streaming it to the terminal; `approve` and `deny`
 * answer a call waiting for approval and continue its turn. The handlers; the commands are in
 * commands/Run.ts.
 *
 * @since 0.10.0
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { type AgentEvent, PermissionPolicy, type SessionBusy, type SessionEngine, Tokens } from "../index.js"
import * as Approvals from "./Approvals.js"
import { CliError } from "./CliError.js"
import type { AnswerInput, RunInput } from "./commands/Run.js"
import { withDrivingEngine } from "./Engine.js"
import * as ExitCode from "./ExitCode.js"
import * as FollowUp from "./FollowUp.js"
import * as Help from "./Help.js"
import * as ImageFiles from "./ImageFiles.js"
import type * as Policy from "./Policy.js"
import * as Render from "./Render.js"
import * as Stdin from "./Stdin.js"

const output: Render.Output = {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text)
}

/**
 * Streams a turn to the terminal, asking the user whenever the policy asks — or, when stdin carried
 * the message (`run -`), answering no. Fails with the turn's outcome when it did not end `final`,
 * so the exit code tells (see ExitCode.ts).
 */
const streamTurn = <E>(
  engine: SessionEngine.SessionEngine.Service,
  sessionId: string,
  stream: Stream.Stream<AgentEvent.AgentEvent, E>,
  answers: "stdin" | "no" = "stdin",
  policy?: Policy.Questions
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
            ? { sessionId, toolCallId: event.payload.toolCallId, question: Render.approvalQuestion(render.callOf(event.payload.toolCallId), policy?.takeAskReason(sessionId, event.payload.toolCallId)) }
            : event.type === "subagent.asked"
            ? { sessionId: event.payload.childSessionId, toolCallId: event.payload.childToolCallId, question: Render.subagentQuestion(event.payload, policy && PermissionPolicy.subagentAskReason(policy.takeAsk, sessionId, event.payload)) }
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

/** `run`. */
export const run = ({ allow, deny, followUp, image, mcpConfig, message, mode, session, ...options }: RunInput) =>
  Effect.gen(function*() {
    if (followUp && image.length > 0) {
      return yield* new CliError({ reason: "invalid_arguments", message: "--image goes with a new turn, not with --follow-up (a queued follow-up carries text only)" })
    }
    // Read and checked before the engine starts: a refused image stores nothing.
    const images = yield* ImageFiles.readAll(image)
    const fromStdin = message === "-"
    const userMessage = fromStdin ? yield* Stdin.readMessage : message
    // Refused before the engine starts: the engine refuses it too ("Invalid userMessage"), but only
    // after a new session was stored, so each empty message left a session of 0 turns in the list.
    if (userMessage.trim() === "" && (followUp || images.length === 0)) {
      return yield* new CliError({
        reason: "invalid_arguments",
        message: fromStdin ? "the message on stdin is empty" : "the message is empty: give it as the argument, or - to read it from stdin"
      })
    }
    yield* withDrivingEngine(options, { mode, allow, deny, mcpConfig }, Option.getOrUndefined(session), (engine, cwd, policy, model) =>
      Effect.gen(function*() {
        // One the model's window could never hold is refused before a session is made (the engine would refuse it after).
        const over = Tokens.overWindow(userMessage, model.maxContextTokens)
        if (over !== undefined) return yield* new CliError({ reason: "invalid_arguments", message: `the message ${over}` })
        const sessionId = Option.isSome(session)
          ? session.value
          : (yield* engine.createSession({ cwd, client: "cli" })).sessionId
        const turn = followUp ? FollowUp.stream(engine, sessionId, userMessage) : engine.runTurn({ sessionId, userMessage, ...(images.length === 0 ? {} : { images }) })
        yield* streamTurn(engine, sessionId, turn, fromStdin ? "no" : "stdin", policy)
      })).pipe(
        // One process at a time writes a session's log, so a second terminal cannot queue into it:
        // say so, and where the message can be queued instead.
        Effect.catchTag("SessionBusy", (busy): Effect.Effect<never, SessionBusy | CliError> =>
          followUp ? Effect.fail(new CliError({ reason: "invalid_arguments", message: FollowUp.busyMessage(busy.message) })) : Effect.fail(busy))
      )
  })

/** `approve` and `deny`: store the answer, then continue the paused turn in this terminal. */
export const answer = (decision: "allow" | "deny", { allow, deny, mcpConfig, mode, sessionId, toolCallId, ...options }: AnswerInput) =>
  withDrivingEngine(options, { mode, allow, deny, mcpConfig }, sessionId, (engine, _cwd, policy) =>
    Effect.gen(function*() {
      const remember = "always" in options && options.always === true
      yield* engine.resolvePermission({ sessionId, toolCallId, decision, remember })
      yield* streamTurn(engine, sessionId, engine.resumeTurn({ sessionId }), "stdin", policy)
    }))
