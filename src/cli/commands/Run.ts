/**
 * `run`, `approve` and `deny`: the command tree; the handlers are in ../Run.ts.
 *
 * @since 0.10.0
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Flags from "../Flags.js"
import * as Help from "../Help.js"
import * as Lazy from "../Lazy.js"
import * as ModelFlags from "../ModelFlags.js"

const load = () => import("../Run.js")

/** The flags of a command that drives turns (`run`, `approve`, `deny`, `chat`), after its own: `--mode` (described for the command) first. */
export const driving = (modeDescription: string) => ({
  mode: Flags.mode(modeDescription),
  ...Flags.rules,
  mcpConfig: Flags.mcpConfig,
  ...Flags.sandbox,
  ...Flags.instructions,
  ...Flags.web,
  ...Flags.subagents,
  ...ModelFlags.options,
  ...Flags.storage
})

const runDriving = driving(
  "Permissions: default (reads allowed, writes and commands ask), acceptEdits (edits allowed too), readOnly, bypass (everything allowed). Default: your settings' mode, else a trusted .effect-agent/settings.json's, else default (a project's file may narrow it; see effect-agent trust)"
)

export const runConfig = {
  message: Args.text({ name: "message" }).pipe(
    Args.withDescription("What to ask the agent; - reads the whole message from stdin (then every approval is answered no)")
  ),
  session: Options.text("session").pipe(Options.withPseudoName("id"), Options.optional, Options.withDescription("Continue this session instead of starting one")),
  image: Options.text("image").pipe(
    Options.withPseudoName("file"),
    Options.repeated,
    Options.withDescription("Send this image with the message (PNG, JPEG, GIF or WebP; at most 5 MiB and 8000 pixels a side each, 20 per message); repeatable")
  ),
  followUp: Options.boolean("follow-up").pipe(
    Options.withDescription("Queue the message as a follow-up (followup.queued): it runs after the follow-ups queued before it, at once when the session is idle; prints the turns up to its own")
  ),
  ...runDriving
}
export type RunInput = Command.Command.ParseConfig<typeof runConfig>

/** The `run` command. */
export const run = Command.make("run", runConfig, (input) => Lazy.handler(load, (m) => m.run(input))).pipe(Command.withDescription(
  Help.described(
    "Run one turn: stream the agent's answer to the terminal. Exit codes: 0 the turn ended final; 1 the command could not run (usage, settings, session, store); 3 the turn ended with an error; 130 cancelled",
    ["effect-agent run \"Explain src/index.ts\"", "effect-agent run --session <id> \"Now add a test\"", "effect-agent run \"What is wrong here?\" --image screenshot.png", "git diff | effect-agent run - --mode readOnly"]
  )
))

const call = {
  sessionId: Args.text({ name: "sessionId" }).pipe(Args.withDescription("The session whose turn waits (as pending lists it)")),
  toolCallId: Args.text({ name: "toolCallId" }).pipe(Args.withDescription("The call to answer (as pending lists it)"))
}

export const approveConfig = {
  ...call,
  always: Options.boolean("always").pipe(Options.withDescription("Allow later calls of the same tool too (for shell: the same program at the same risk)")),
  ...runDriving
}
export const denyConfig = { ...call, ...runDriving }
export type AnswerInput = Command.Command.ParseConfig<typeof approveConfig> | Command.Command.ParseConfig<typeof denyConfig>

/** `approve` and `deny`: store the answer, then continue the paused turn in this terminal. */
export const approve = Command.make("approve", approveConfig, (input) => Lazy.handler(load, (m) => m.answer("allow", input))).pipe(
  Command.withDescription(Help.described("Approve a call waiting for approval, then continue its turn", ["effect-agent approve <session-id> <tool-call-id> --always"]))
)
export const deny = Command.make("deny", denyConfig, (input) => Lazy.handler(load, (m) => m.answer("deny", input))).pipe(
  Command.withDescription(Help.described("Deny a call waiting for approval, then continue its turn", ["effect-agent deny <session-id> <tool-call-id>"]))
)
