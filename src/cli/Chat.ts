/**
 * `effect-agent chat [--session <id>]`: an interactive session. Each line is a message: at an idle
 * prompt it starts a turn (the session is created with the first one); while a turn runs it steers
 * that turn (`turn.steered`); a line starting with `>>` is queued as a follow-up instead
 * (`followup.queued`), to run as its own turn once the session is idle. While an approval question
 * is open the next line is its answer (y / n / a). Ctrl+C cancels the running turn, and at the idle
 * prompt exits; end of input (Ctrl+D, or the end of piped input) waits for the running turn and the
 * queued follow-ups, then exits 0. `/image <path>` attaches an image to the next message that starts a
 * turn (checked at once; a steer or a follow-up carries text only, so the images wait for a turn).
 *
 * Everything shown comes from one watcher of the session (`watchSession`), so the turns of
 * follow-ups, which have no stream of their own, show like the others. As in `run`, the answer goes
 * to stdout and the rest (the session, calls, decisions, questions, the prompt) to stderr.
 *
 * @since 0.3.0
 */
import * as readline from "node:readline"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { type AgentEvent, type EventStoreFailure, Image, type InvalidInput, PermissionPolicy, Plural, type SessionBusy, SessionEngine, type SessionNotFound, Tokens } from "../index.js"
import * as Approvals from "./Approvals.js"
import * as Argv from "./Argv.js"
import { withDrivingEngine } from "./Engine.js"
import { type Input as ChatInput, followUpPrefix } from "./commands/Chat.js"
import * as ImageFiles from "./ImageFiles.js"
import * as Markdown from "./Markdown.js"
import type * as Policy from "./Policy.js"
import * as Render from "./Render.js"
import * as Help from "./Help.js"
import { CliError } from "./CliError.js"
import * as Resume from "./Resume.js"

export { followUpPrefix }

/**
 * The command a line names when it looks like one (`/word`, alone or before arguments) — so a typo
 * such as `/exti` is reported instead of being sent to the model. A path (`/etc/hosts is odd`) is a
 * message: its first word has another slash.
 */
export const slashCommand = (line: string): string | undefined => /^\/[A-Za-z][\w-]*(?=\s|$)/.exec(line)?.[0]

/** The idle prompt (on a terminal only). */
const idlePrompt = "› "

const help = [
  "Type a message and press Enter: it starts a turn.",
  "While a turn runs, a line steers it (the model reads it at its next step).",
  `${followUpPrefix} <message>  queue the message as a follow-up: its own turn, once the session is idle`,
  "/image <path>  attach an image (PNG, JPEG, GIF, WebP) to your next message that starts a turn; /image alone drops the attached ones",
  "/cancel  cancel the running turn (so does Ctrl+C)",
  "/drop    drop the queued follow-ups that have not started",
  "/exit    wait for the running turn and the queued follow-ups, then leave (so does Ctrl+D)",
  "/help    this text",
  "//…      send a message that starts with /",
  "Ctrl+C at the idle prompt leaves at once."
].join("\n")

const output: Render.Output = {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text)
}

/** What the user did: a line, Ctrl+C on the terminal, or the end of input. */
export type Input = { readonly _tag: "Line"; readonly text: string } | { readonly _tag: "Interrupt" } | { readonly _tag: "End" }

/** What the chat reads from and asks on (stdin and the screen; a test passes a scripted one). */
export interface Terminal {
  readonly take: Effect.Effect<Input>
  /** Shows a question or the idle prompt: on a terminal, readline's prompt; otherwise only questions, on stderr. */
  readonly prompt: (text: string, kind: "question" | "idle") => void
  /** After an answer read from a pipe, which is not echoed, so the question's line ends. */
  readonly answered: () => void
  readonly interactive: boolean
  /**
   * Writes output (the answer to stdout, the rest to stderr). On a terminal the line being typed is
   * taken off the screen first and drawn again, with its prompt, under what was written — so the
   * answer streaming and a half-typed steer never mix on one line.
   */
  readonly write: (stream: "out" | "err", text: string) => void
}

/**
 * Lines from stdin, through readline. On a terminal readline owns the keyboard (raw mode): it edits
 * the line, echoes it to stderr, and turns Ctrl+C into an `Interrupt` instead of a signal.
 */
const terminal: Effect.Effect<Terminal, never, Scope.Scope> = Effect.gen(function*() {
  const interactive = process.stdin.isTTY === true && process.stderr.isTTY === true
  const inputs = yield* Queue.unbounded<Input>()
  const reader = readline.createInterface({
    input: process.stdin,
    ...(interactive ? { output: process.stderr, terminal: true, prompt: idlePrompt } : { terminal: false })
  })
  reader.on("line", (text) => Queue.unsafeOffer(inputs, { _tag: "Line", text }))
  reader.on("SIGINT", () => Queue.unsafeOffer(inputs, { _tag: "Interrupt" }))
  let closed = false
  reader.on("close", () => {
    closed = true
    Queue.unsafeOffer(inputs, { _tag: "End" })
  })
  // Closing readline leaves raw mode and stops reading, so nothing keeps the process alive.
  yield* Effect.addFinalizer(() => Effect.sync(() => reader.close()))
  return {
    take: Queue.take(inputs),
    interactive,
    prompt: (text, kind) => {
      if (interactive) {
        reader.setPrompt(text)
        reader.prompt()
      } else if (kind === "question") output.err(text)
    },
    answered: () => {
      if (!interactive) output.err("\n")
      // Drawn again under later output: the question answered is not.
      else reader.setPrompt(idlePrompt)
    },
    write: (stream, text) => {
      if (!interactive || closed) return void (stream === "out" ? output.out(text) : output.err(text))
      // From the start of the prompt (the typed line may wrap over several rows) to the end of the screen.
      const { rows } = reader.getCursorPos()
      readline.moveCursor(process.stderr, 0, -rows)
      readline.cursorTo(process.stderr, 0)
      readline.clearScreenDown(process.stderr)
      if (stream === "out") output.out(text)
      else output.err(text)
      // The prompt and the half-typed line, cursor where it was, under the output.
      if (text.endsWith("\n")) reader.prompt(true)
    }
  }
})

/** A call waiting for the user's answer. */
interface Ask {
  readonly turnId: string
  readonly toolCallId: string
  readonly question: string
  /** The subagent's session a question of a subagent is answered on (`subagent.asked`); none for the session's own. */
  readonly childSessionId?: string
}

/** A line about session-level events the `run` renderer does not show. */
const sessionNote = (event: AgentEvent.AgentEvent): string | undefined => {
  switch (event.type) {
    case "turn.started": {
      return event.payload.queueId === undefined ? undefined : `[follow-up: ${event.payload.promptPreview}]`
    }
    default:
      return undefined
  }
}

/** The chat loop on an engine whose policy is configured, reading from `input` (stdin unless a test scripts it). */
export const chat = (
  engine: SessionEngine.SessionEngine.Service,
  options: {
    readonly sessionId: string | undefined
    readonly cwd: string
    /** The model's window: a message it could never hold is refused before anything is stored (a session included). */
    readonly maxContextTokens?: number | undefined
  },
  input: Effect.Effect<Terminal, never, Scope.Scope> = terminal,
  policy?: Policy.Questions
) =>
  Effect.gen(function*() {
    const term = yield* input
    // The answer as Markdown on a terminal that takes styles (not when piped, nor with NO_COLOR).
    const markdown = Help.isPlain(process.stdout) ? undefined : Markdown.make(yield* Effect.promise(Markdown.loadLexer))
    // Line by line on a terminal: a line is shown once complete, so the prompt can be drawn under it.
    const answerLines = markdown === undefined && !term.interactive ? undefined : Markdown.lineBuffer(markdown?.line ?? ((line) => line))
    const screen: Render.Output = {
      out: (text) => {
        const lines = answerLines === undefined ? text : answerLines(text)
        if (lines !== "") term.write("out", lines)
      },
      err: (text) => term.write("err", text)
    }
    const render = Render.make(screen, { transcript: false, color: !Help.isPlain(process.stderr) })
    const note = (text: string) => render.note(text)
    // A watcher that fails (the store) ends the chat with its error.
    const watchFailed = yield* Deferred.make<never, EventStoreFailure | SessionNotFound | SessionBusy | InvalidInput>()

    let sessionId = options.sessionId
    /** Turns started by this process whose streams are still being drained. */
    let runs = 0
    /** The last sequence the watcher has shown, and the last one the turns started here stored: until it is shown, the chat is not idle. */
    let shown = 0
    let stored = 0
    /** The turn the watcher saw start and not yet complete. */
    let openTurn: string | undefined
    /** Follow-ups queued and not yet started nor dropped; `settled` holds those that were, whichever was seen first. */
    const queued = new Set<string>()
    const settled = new Set<string>()
    const asks: Array<Ask> = []
    let ended = false
    let idleWaiters: Array<() => void> = []

    const running = () => runs > 0 || openTurn !== undefined || shown < stored
    const busy = () => running() || [...queued].some((id) => !settled.has(id))
    const changed = () => {
      if (busy()) return
      for (const wake of idleWaiters.splice(0)) wake()
      if (!ended && asks.length === 0) term.prompt(idlePrompt, "idle")
    }
    const waitIdle = Effect.async<void>((resume) => {
      if (!busy()) return resume(Effect.void)
      const wake = () => resume(Effect.void)
      idleWaiters.push(wake)
      return Effect.sync(() => {
        idleWaiters = idleWaiters.filter((w) => w !== wake)
      })
    })
    const askNext = () => {
      const next = asks[0]
      if (next !== undefined) term.prompt(`${next.question} ${Approvals.choices}`, "question")
    }
    const answer = (ask: Ask, reply: Approvals.Answer) =>
      engine.resolvePermission({ sessionId: ask.childSessionId ?? sessionId!, toolCallId: ask.toolCallId, ...reply }).pipe(
        // The turn ended (cancelled) before the answer: nothing to do.
        Effect.catchTag("ApprovalNotPending", () => Effect.void)
      )

    const onEvent = (event: AgentEvent.AgentEvent) =>
      Effect.gen(function*() {
        shown = event.sequence
        const extra = sessionNote(event)
        if (extra !== undefined) note(extra)
        if (event.type === "turn.started") markdown?.reset()
        render.event(event)
        if (event.type === "turn.started") openTurn = event.turnId
        if (event.type === "turn.started" && event.payload.queueId !== undefined) settled.add(event.payload.queueId)
        if (event.type === "followup.queued") queued.add(event.payload.queueId)
        if (event.type === "followup.dropped") for (const id of event.payload.queueIds) settled.add(id)
        const asked: Ask | undefined = event.type === "permission.resolved" && event.payload.decision === "ask"
          ? { turnId: event.turnId, toolCallId: event.payload.toolCallId, question: Render.approvalQuestion(render.callOf(event.payload.toolCallId), policy?.takeAskReason(event.sessionId, event.payload.toolCallId)) }
          : event.type === "subagent.asked"
          ? { turnId: event.turnId, toolCallId: event.payload.childToolCallId, childSessionId: event.payload.childSessionId, question: Render.subagentQuestion(event.payload, policy && PermissionPolicy.subagentAskReason(policy.takeAsk, event.sessionId, event.payload)) }
          : undefined
        if (asked !== undefined) {
          render.endLine()
          const ask = asked
          // Already asked (a resumed turn's question, asked before its events came).
          if (asks.some((a) => a.toolCallId === ask.toolCallId)) return
          if (ended) {
            screen.err(`${ask.question} no (the input has ended, so nobody can answer)\n`)
            yield* answer(ask, Approvals.parse(undefined))
          } else {
            asks.push(ask)
            if (asks.length === 1) askNext()
          }
        }
        if (event.type === "turn.completed") {
          if (openTurn === event.turnId) openTurn = undefined
          // The questions of a turn that ended (cancelled) have no answer to wait for.
          const open = asks.filter((a) => a.turnId !== event.turnId)
          asks.splice(0, asks.length, ...open)
        }
        if (event.type === "turn.completed" || shown === stored) changed()
      })

    const watch = (id: string, fromSequence: number) =>
      engine.watchSession({ sessionId: id, fromSequence }).pipe(
        Stream.runForEach(onEvent),
        Effect.catchAll((error) => Deferred.fail(watchFailed, error)),
        Effect.forkScoped
      )

    /** The session, created with the first message when chat was started without `--session`. */
    const session = Effect.gen(function*() {
      if (sessionId !== undefined) return sessionId
      const created = yield* engine.createSession({ cwd: options.cwd, client: "cli" })
      sessionId = created.sessionId
      note(`session ${sessionId} (continue it later with: effect-agent chat --session ${sessionId})`)
      yield* watch(sessionId, 2)
      return sessionId
    })

    const queueFollowUp = (message: string, why?: string) =>
      Effect.gen(function*() {
        const { queueId } = yield* engine.followUp({ sessionId: yield* session, message })
        queued.add(queueId)
        note(`[${why === undefined ? "" : `${why}: `}queued as follow-up ${queueId}]`)
      })

    /**
     * Drains a turn's stream in the background (the watcher shows it); returns what completes once
     * the turn has started (or failed to). `userMessage`: the message that started it, queued as a
     * follow-up if another turn got there first.
     */
    const drive = <E extends { readonly _tag: string; readonly message: string }>(
      turn: Stream.Stream<AgentEvent.AgentEvent, E>,
      userMessage?: string
    ) =>
      Effect.gen(function*() {
        const started = yield* Deferred.make<void>()
        runs++
        yield* turn.pipe(
          Stream.tap((event) =>
            Effect.sync(() => {
              stored = Math.max(stored, event.sequence)
            }).pipe(Effect.zipRight(Deferred.succeed(started, undefined)))
          ),
          Stream.runDrain,
          // A follow-up's turn started first: this message waits its turn, nothing is lost.
          Effect.catchAll((error) =>
            error._tag === "TurnInProgress" && userMessage !== undefined
              ? queueFollowUp(userMessage, "a turn is running") : Effect.sync(() => note(`effect-agent: ${error.message}`))
          ),
          Effect.ensuring(Effect.sync(() => {
            runs--
            changed()
          })),
          Effect.ensuring(Deferred.succeed(started, undefined)),
          Effect.forkScoped
        )
        return started
      })

    /** Images attached with `/image`, waiting for the next message that starts a turn. */
    const attached: Array<Image.ImageInput> = []

    /** Starts a turn (with the attached images), and returns once it has started, so a next line can steer it. */
    const startTurn = (userMessage: string) =>
      Effect.flatMap(session, (id) => {
        const images = attached.splice(0)
        const turn = engine.runTurn({ sessionId: id, userMessage, ...(images.length === 0 ? {} : { images }) }).pipe(
          // Another turn got there first: the message is queued as a follow-up, which carries text only; the images wait for the next turn.
          Stream.tapError((error) => Effect.sync(() => error._tag === "TurnInProgress" && attached.unshift(...images)))
        )
        return drive(turn, userMessage)
      }).pipe(Effect.flatMap(Deferred.await))

    /** `/image <path>`: reads and checks the file now, so a bad one is said at once. */
    const attach = (path: string) =>
      path === ""
        ? Effect.sync(() => note(`[dropped ${attached.splice(0).length} attached image(s)]`))
        : ImageFiles.read(path, options.cwd).pipe(
          Effect.flatMap((image) =>
            Effect.sync(() => {
              if (attached.length >= Image.maxImagesPerMessage) return note(`[a message may carry ${Image.maxImagesPerMessage} images: ${path} not attached]`)
              attached.push(image)
              note(`[${path} attached to your next message (${Plural.count(attached.length, "image")})]`)
            })
          ),
          Effect.catchTag("CliError", (error) => Effect.sync(() => note(`effect-agent: ${error.message}`)))
        )

    /**
     * A turn left open in the log by a process that stopped while a call waited for the user: its
     * questions are asked here, then it goes on (`resumeTurn`), before anything else runs.
     */
    const resumePaused = (id: string) =>
      Effect.gen(function*() {
        const waiting = yield* engine.pendingApprovals({ sessionId: id })
        // A turn left open while running, not waiting: the next turn closes it (interrupted).
        if (waiting.length === 0) return
        // A question another live process asked is answered there: an answer here could not be stored.
        const holder = yield* SessionEngine.drivenElsewhere(engine, id)
        if (holder !== undefined) {
          return note(`[this session's last turn waits for an answer in another process: it is driven by ${holder}, and the question was asked there — answer it in that process]`)
        }
        const state = yield* engine.sessionState({ sessionId: id })
        const turnId = state.openTurn?.turnId ?? ""
        // Why the policy asked, as the question said it then (see `PermissionPolicy.reasonAgain`).
        const again = policy?.again
        const reasons = yield* Effect.forEach(waiting, (call) => again === undefined ? Effect.succeed(undefined) : PermissionPolicy.reasonAgain(again, state, call))
        note("[this session's last turn was left waiting for your approval: it goes on here]")
        // A subagent's call (its parent waits on it) is asked labelled with it, and answered on its session.
        for (const [i, call] of waiting.entries()) {
          asks.push(call.askedBy === undefined
            ? { turnId, toolCallId: call.toolCallId, question: Render.approvalQuestion(call, reasons[i]) }
            : {
              turnId,
              toolCallId: call.toolCallId,
              childSessionId: call.askedBy.sessionId,
              question: Render.subagentQuestion({
                toolCallId: "",
                childSessionId: call.askedBy.sessionId,
                description: call.askedBy.description,
                childToolCallId: call.toolCallId,
                tool: call.tool,
                args: call.args,
                risk: call.risk ?? "write",
                outsidePaths: call.outsidePaths
              })
            })
        }
        askNext()
        // Not awaited: the resumed turn says nothing until its questions are answered, by the next lines.
        yield* drive(engine.resumeTurn({ sessionId: id }))
      })

    /**
     * The turn the user acts on is the one on screen: named, a steer or Ctrl+C arriving as it ends
     * is refused / does nothing instead of landing on the next turn (a queued follow-up's). None
     * named before the watcher shows a turn the chat started: whatever turn runs.
     */
    const onScreen = () => (openTurn === undefined ? {} : { turnId: openTurn })

    const steer = (message: string) =>
      engine.steer({ sessionId: sessionId!, message, ...onScreen() }).pipe(
        Effect.zipRight(Effect.sync(() => note("[steering the running turn]"))),
        // The turn has already decided how it ends: the message becomes the next turn instead.
        Effect.catchTag("NoTurnInProgress", () => queueFollowUp(message, "the turn was ending"))
      )

    const cancel = Effect.gen(function*() {
      if (!running() && asks.length === 0) return note("[no turn is running]")
      yield* engine.cancelTurn({ sessionId: sessionId!, ...onScreen() })
    })

    /** End of input: open questions are answered no (as in `run`), the work in progress finishes. */
    const finish = Effect.gen(function*() {
      ended = true
      for (const ask of asks.splice(0)) {
        screen.err("no (the input has ended)\n")
        yield* answer(ask, Approvals.parse(undefined))
      }
      if (busy()) note("[waiting for the running turn and the queued follow-ups; Ctrl+C cancels the turn]")
      // Meanwhile (after /exit, on a terminal) Ctrl+C still cancels the running turn, or leaves when none runs.
      for (;;) {
        const input = yield* Effect.raceFirst(Effect.as(waitIdle, undefined), term.take)
        if (input === undefined) return
        if (input._tag === "Line" && input.text.trim() !== "") note("[leaving: that line was not sent]")
        if (input._tag !== "Interrupt") continue
        if (!running()) return
        yield* cancel
      }
    })

    /** Handles one input; `true` when the chat is over. */
    const handle = (input: Input) =>
      Effect.gen(function*() {
        if (input._tag === "End") return yield* Effect.as(finish, true)
        if (input._tag === "Interrupt") {
          if (!running() && asks.length === 0) return true
          yield* cancel
          return false
        }
        const text = input.text.trim()
        const ask = asks[0]
        if (ask !== undefined) {
          asks.shift()
          term.answered()
          yield* answer(ask, Approvals.parse(text))
          askNext()
          return false
        }
        switch (text) {
          case "":
            if (!running()) term.prompt(idlePrompt, "idle")
            return false
          case "/help":
            note(help)
            // The help text scrolled the prompt away: show it again (a running turn has none).
            if (!running()) term.prompt(idlePrompt, "idle")
            return false
          case "/cancel":
            yield* cancel
            return false
          case "/exit":
            return yield* Effect.as(finish, true)
          case "/drop": {
            const { queueIds } = sessionId === undefined ? { queueIds: [] } : yield* engine.dropFollowUps({ sessionId })
            for (const id of queueIds) settled.add(id)
            note(`[dropped ${Plural.count(queueIds.length, "queued follow-up")}]`)
            changed()
            return false
          }
        }
        if (text === "/image" || text.startsWith("/image ")) {
          yield* attach(text.slice("/image".length).trim())
          return false
        }
        const command = slashCommand(text)
        if (command !== undefined) {
          const guess = Argv.nearest(command, ["/help", "/cancel", "/exit", "/drop", "/image"])
          note(`effect-agent: unknown command ${command} (${guess === undefined ? "" : `did you mean ${guess}? `}/help lists the commands; start a message with // to send it as /…)`)
          if (!running()) term.prompt(idlePrompt, "idle")
          return false
        }
        // A message the model's window could never hold: said, and nothing sent nor stored (the session as it was, or none made).
        const over = options.maxContextTokens === undefined ? undefined : Tokens.overWindow(text, options.maxContextTokens)
        if (over !== undefined) {
          note(`effect-agent: the message ${over}`)
          if (!running()) term.prompt(idlePrompt, "idle")
          return false
        }
        if (text.startsWith(followUpPrefix)) {
          const message = text.slice(followUpPrefix.length).trim()
          if (message === "") note(`[usage: ${followUpPrefix} <message>]`)
          else yield* queueFollowUp(message)
          return false
        }
        // The message as typed (only surrounding whitespace trimmed; a leading "//" sends a "/").
        const message = text.startsWith("//") ? text.slice(1) : text
        if (running()) {
          if (attached.length > 0) note("[a steer carries text only: the attached images wait for the next turn]")
          yield* steer(message)
        } else yield* startTurn(message)
        return false
      })

    if (sessionId !== undefined) {
      const state = yield* engine.sessionState({ sessionId })
      note(`session ${sessionId}`)
      yield* watch(sessionId, state.lastSequence + 1)
      if (state.openTurn !== undefined) yield* resumePaused(sessionId)
    }
    if (term.interactive) note(`${help}\n`)
    changed()
    let over = false
    while (!over) {
      const input = yield* Effect.raceFirst(term.take, Deferred.await(watchFailed))
      over = yield* handle(input).pipe(
        // A bad message (empty, too long …) or a session busy elsewhere: say so and go on.
        Effect.catchTags({
          InvalidInput: (error) => Effect.as(Effect.sync(() => note(`effect-agent: ${error.message}`)), false),
          SessionBusy: (error) => Effect.as(Effect.sync(() => note(`effect-agent: ${error.message}`)), false)
        })
      )
    }
  }).pipe(Effect.scoped)

/** `chat`. */
export const handler = ({ allow, continue: continueLast, deny, mcpConfig, mode, resume, session, ...options }: ChatInput) =>
  Effect.gen(function*() {
    if ([Option.isSome(session), continueLast, resume].filter(Boolean).length > 1) {
      return yield* new CliError({ reason: "invalid_arguments", message: "--session, --continue and --resume each choose the session: give one" })
    }
    const sessionId = continueLast || resume ? yield* Resume.pick(options, continueLast ? "continue" : "resume") : Option.getOrUndefined(session)
    return yield* withDrivingEngine(options, { mode, allow, deny, mcpConfig }, sessionId, (engine, cwd, policy, model) =>
      chat(engine, { sessionId, cwd, maxContextTokens: model.maxContextTokens }, terminal, policy))
  })
