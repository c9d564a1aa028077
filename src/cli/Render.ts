/**
 * How the CLI shows events. During `run`, the answer streams to stdout and everything about the run
 * (the session, tool calls, decisions, results) goes to stderr, so `effect-agent run … > answer.txt`
 * captures just the answer. `replay` prints the whole transcript to stdout.
 *
 * @since 0.1.0
 */
import { absurd } from "effect/Function"
import { type AgentEvent, Edit, FormatCharacters, Json, Plural, Transcript, UsageText } from "../index.js"
import type { AskReason } from "./Policy.js"
import { terminalSafe } from "./Terminal.js"

export { terminalSafe }

/** Where rendered text goes. */
export interface Output {
  readonly out: (text: string) => void
  readonly err: (text: string) => void
}

/** What a tool call was, for one-line summaries. */
export interface CallInfo {
  readonly tool: string
  readonly args: Json.Json
  /** Real paths outside the working directory the call would touch (from `permission.requested`). */
  readonly outsidePaths?: ReadonlyArray<string> | undefined
}

const oneLine = (text: string, max = 100) => {
  const line = text.replace(/\s+/g, " ").trim()
  return line.length > max ? `${line.slice(0, max - 1)}…` : line
}

/** The question for a subagent's call waiting for the user (`subagent.asked`): labelled with the subagent's task and session; the call whole. */
export const subagentQuestion = (asked: AgentEvent.PayloadOf<"subagent.asked">, uncovered?: AskReason): string =>
  `  Subagent "${visible(oneLine(asked.description, 80))}" (${visible(asked.childSessionId)}) asks: allow ${describeCall({ tool: asked.tool, args: asked.args, outsidePaths: asked.outsidePaths }, true)}?${
    becauseOf(asked.tool, uncovered)
  }`

/**
 * The question asked before a call runs: the call whole, since the answer is about all of it — and,
 * when a rule of the user's seemed to cover it (`--allow 'shell:sed *'` and `sed -i …`), why it did
 * not and what to allow instead, so the user need not guess why their rule was passed over.
 */
export const approvalQuestion = (call: CallInfo, uncovered?: AskReason): string => `  Allow ${describeCall(call, true)}?${becauseOf(call.tool, uncovered)}`

/** Why the question is asked, after it: what the user's rule did not cover and what to allow instead. */
const becauseOf = (tool: string, uncovered: AskReason | undefined): string =>
  uncovered === undefined ? "" : ` (${wholeLine(uncovered.reason)}; ${suggestion(tool, uncovered.allowCommand)})`

/** Lines longer than this are not repeated as a suggested rule: the question shows them once already. */
const suggestedLength = 200

/** The flag that would allow the call, quoted for a POSIX shell — when the command line is one a flag can carry as it is. */
const suggestion = (tool: string, allowCommand: string | undefined): string =>
  allowCommand === undefined || allowCommand.length > suggestedLength || wholeLine(allowCommand) !== allowCommand
    ? "allow it with a rule that spells the command out, or answer here"
    : `allow it with --allow ${shellQuoted(`${tool}:${allowCommand}`)} or answer here`

const shellQuoted = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`

/**
 * Text safe for the terminal, with bidi and invisible format characters shown as escapes too (Trojan
 * Source): everything this renderer writes, the model's prose and an edit's diff as much as the question.
 */
const visible = (text: string) => terminalSafe(FormatCharacters.escapeFormat(text))
/** Text whole on one line: line breaks and tabs shown as escapes (not collapsed, not dropped), the rest as `visible`. */
const wholeLine = (text: string) => visible(text.replace(/[\r\n\t]/g, (c) => (c === "\n" ? "\\n" : c === "\t" ? "\\t" : "\\r")))

/** The workspace's tools, whose other arguments (a range, a time limit, an edit shown as a diff) the question may leave out. */
const summarized: ReadonlySet<string> = new Set(["shell", "read_file", "write_file", "edit_file", "list_dir", "grep"])

/**
 * A call in a few words: the command of `shell`, the path or pattern of the file tools, else its
 * arguments; cut to one short line for the notes of a run, or `whole` — for the question that
 * approves it, so that nothing past the cut (an upload at the end of a long `curl`) goes unseen.
 */
export const describeCall = ({ args, outsidePaths, tool }: CallInfo, whole = false): string => {
  const field = (name: string) => (Json.isObject(args) && typeof args[name] === "string" ? (args[name] as string) : undefined)
  // The question shows every argument of a tool whose other arguments it does not know (an MCP
  // server's `{command, host}` is more than its command).
  const summary = whole && !summarized.has(tool) ? undefined : field("command") ?? field("path") ?? field("pattern")
  // The question shows a path or a line as a tool's result shows a name: quoted when it holds a
  // character that does not show as itself, so no line break in it can write the question's text.
  const shown = (text: string, max: number) => (whole ? FormatCharacters.shownOrQuoted(text) : visible(oneLine(text, max)))
  // The arguments whole: a blank-looking letter escaped and a long run of spaces counted, as `shown` does.
  const json = (text: string) => (whole ? FormatCharacters.compactSpaces(wholeLine(FormatCharacters.escapeUnprintable(text))) : visible(oneLine(text, 80)))
  return `${visible(tool)}${summary === undefined ? (Json.isObject(args) && Object.keys(args).length === 0 ? "" : ` ${json(JSON.stringify(args))}`) : ` ${shown(summary, 80)}`}` + (outsidePaths === undefined || outsidePaths.length === 0 ? "" : ` (outside the working directory: ${outsidePaths.map((p) => shown(p, 200)).join(", ")})`)
}

/** A short view of a result: its first line, and how many more there are. */
const shortResult = (result: string) => {
  const lines = result.trimEnd().split("\n")
  const more = lines.length - 1
  return `${oneLine(lines[0] ?? "")}${more > 0 ? ` (+${Plural.count(more, "line")})` : ""}`
}

/** Lines of an edit shown under its call; the rest is counted. */
const diffLines = 12

/**
 * Characters of one such line shown; the rest is counted. A `write_file` of one 2 MB line was
 * printed whole under its call, two megabytes on the terminal.
 */
const diffLineChars = 400

/** A line of an edit cut to {@link diffLineChars}, saying how much is left out. */
export const shownDiffLine = (line: string): string =>
  line.length <= diffLineChars ? line : `${line.slice(0, diffLineChars)} … (${line.length - diffLineChars} more characters)`

/**
 * What an edit changes, as `-`/`+` lines: `edit_file` the replaced lines against their replacement
 * (the lines both share at the start and the end left out), `write_file` the content it writes.
 * Empty for other calls, or arguments that are not an edit's.
 */
export const editDiff = ({ args, tool }: CallInfo): ReadonlyArray<string> => {
  const edit = Edit.of(tool, args)
  if (edit === undefined) return []
  const lines = (text: string) => text.replace(/\n$/, "").split("\n")
  const next = lines(edit.newText)
  if (edit.oldText === null) return next.map((line) => `+ ${line}`)
  const old = lines(edit.oldText)
  let start = 0
  while (start < old.length && start < next.length && old[start] === next[start]) start++
  let end = 0
  while (end < old.length - start && end < next.length - start && old[old.length - 1 - end] === next[next.length - 1 - end]) end++
  return [...old.slice(start, old.length - end).map((line) => `- ${line}`), ...next.slice(start, next.length - end).map((line) => `+ ${line}`)]
}

const dim = (text: string) => `\u001b[2m${text}\u001b[22m`
const red = (text: string) => `\u001b[31m${text}\u001b[39m`
const green = (text: string) => `\u001b[32m${text}\u001b[39m`

/**
 * A renderer keeps a little state: whether stdout is mid-line, and the calls seen so far. `color`:
 * diff lines in red and green (for a terminal; off by default and when `NO_COLOR` is set).
 */
export const make = (output: Output, options: { readonly transcript: boolean; readonly color?: boolean }) => {
  let midLine = false
  const calls = new Map<string, CallInfo>()
  // The images the current turn brought (its message's, its tools'): a refused turn leaves them out from then on.
  let imagesTurn: string | undefined
  let turnImages = 0
  const countImages = (turnId: string, images: ReadonlyArray<unknown> | undefined) => {
    if (images === undefined || images.length === 0) return
    if (imagesTurn !== turnId) {
      imagesTurn = turnId
      turnImages = 0
    }
    turnImages += images.length
  }
  const out = (raw: string) => {
    const text = visible(raw)
    if (text === "") return
    output.out(text)
    midLine = !text.endsWith("\n")
  }
  const endLine = () => {
    if (midLine) out("\n")
  }
  /** A line about the run: on stderr during `run`, in the transcript for `replay`. */
  const note = (text: string) => {
    endLine()
    if (options.transcript) out(text + "\n")
    else output.err(visible(text) + "\n")
  }
  const callOf = (toolCallId: string) => calls.get(toolCallId) ?? { tool: toolCallId, args: {} }
  // The thinking block streaming, said once it ends: `run` gives a line of it on stderr, `replay` all of it.
  let thinking = ""
  const thought = () => {
    const text = thinking
    thinking = ""
    if (text.trim() === "") return
    if (options.transcript) return note(text.trimEnd().split("\n").map((line) => `  ✻ ${line}`).join("\n"))
    endLine()
    const line = visible(`  ✻ ${oneLine(text)}`)
    output.err(`${options.color === true ? dim(line) : line}\n`)
  }

  const event = (event: AgentEvent.AgentEvent) => {
    // Any other event ends the block streaming (its end, text, a call, the turn's end, a user's
    // message): a block cut before its \`model.thinking_block\` is said in its place, not glued to the next.
    if (thinking !== "" && event.type !== "model.thinking_delta") thought()
    switch (event.type) {
      case "user.message":
        countImages(event.turnId, event.payload.images)
        if (options.transcript) {
          out(`> ${event.payload.content}\n`)
          // The images by what they are; their bytes are in the store's blob area, never on a terminal.
          for (const image of event.payload.images ?? []) out(`> [image ${image.mediaType}, ${image.bytes} bytes, ${image.blob.slice(0, 12)}]\n`)
        }
        return
      case "turn.steered":
        endLine()
        if (options.transcript) out(`> ${event.payload.content}\n`)
        return
      case "model.delta":
        return out(event.payload.text)
      case "model.thinking_delta":
        thinking += event.payload.text
        return
      case "model.thinking_block":
        return
      case "permission.requested": {
        // The approval question names the real targets outside cwd, not just the name the model gave.
        const call = calls.get(event.payload.toolCallId)
        if (call !== undefined && event.payload.outsidePaths !== undefined) calls.set(event.payload.toolCallId, { ...call, outsidePaths: event.payload.outsidePaths })
        return
      }
      case "model.tool_call_requested": {
        calls.set(event.payload.toolCallId, { tool: event.payload.tool, args: event.payload.args })
        note(`  ⚙ ${describeCall(event.payload)}`)
        // An edit shows what it changes, so its approval is a decision about the change itself.
        const diff = options.transcript ? [] : editDiff(event.payload)
        for (const line of diff.slice(0, diffLines)) {
          const safe = `      ${visible(shownDiffLine(line))}`
          output.err(`${options.color === true ? (line.startsWith("-") ? red(safe) : green(safe)) : safe}\n`)
        }
        if (diff.length > diffLines) note(`      … ${Plural.count(diff.length - diffLines, "more line")}`)
        return
      }
      case "permission.resolved": {
        const { actor, decision, policy } = event.payload
        if (decision === "allow" && actor === "policy") return
        const who = actor === "user" ? "by you" : `by ${policy ?? "the policy"}`
        return note(`    ${decision === "ask" ? "needs your approval" : `${decision === "allow" ? "allowed" : "denied"} ${who}`}`)
      }
      case "tool.completed":
        countImages(event.turnId, event.payload.images)
        return note(`    ✓ ${shortResult(event.payload.result) || "(no output)"}`)
      case "tool.failed":
        return note(`    ✗ ${event.payload.errorCode}: ${oneLine(event.payload.message)}`)
      case "mcp.tools_listed": {
        const count = event.payload.tools.length
        return note(`  ⚙ MCP server ${event.payload.server}: ${Plural.count(count, "tool")} (${event.payload.hash.slice(0, 12)})`)
      }
      case "model.retry":
        return note(`  … ${event.payload.errorCode}; retrying in ${Math.round(event.payload.delayMs / 100) / 10}s (attempt ${event.payload.attempt})`)
      case "compaction.started":
        return note(`  ⟳ compacting the context (${event.payload.reason}, ~${event.payload.tokensBefore} tokens)`)
      case "session.compacted": {
        const { summary, tokensAfter, tokensBefore } = event.payload
        note(`  ⟳ context compacted: ~${tokensBefore} → ~${tokensAfter} tokens`)
        // The transcript shows what the model sees from now on in place of what came before.
        if (options.transcript) out(`[summary of the conversation so far]\n${summary}\n\n`)
        return
      }
      case "cache.break":
        return note(`  ⚠ ${UsageText.cacheBreakText(event.payload)}`)
      case "subagent.started": {
        const { childSessionId, cwd, description, mode, tools } = event.payload
        const narrowed = [
          ...(tools === undefined ? [] : [`tools ${tools.join(", ")}`]),
          ...(mode === "readOnly" ? ["read-only"] : [])
        ]
        return note(`    ↳ subagent ${childSessionId}: ${oneLine(description, 80)} (in ${oneLine(cwd, 200)}${narrowed.length === 0 ? "" : `; ${narrowed.join("; ")}`})`)
      }
      case "subagent.progress":
        return note(`    ↳ subagent ${event.payload.childSessionId}: ${UsageText.subagentText(event.payload)}`)
      case "subagent.asked":
        // The question itself is asked by whoever answers (see Approvals): here only what it is about.
        return note(`    ↳ subagent ${event.payload.childSessionId} (${oneLine(event.payload.description, 80)}) asks: ${describeCall(event.payload)} [${event.payload.risk}]`)
      case "subagent.completed":
        return note(`    ↳ ${UsageText.subagentEndText(event.payload)}`)
      case "session.rewound":
        return note(`[rewound to #${event.payload.toSequence}: ${Plural.count(event.payload.changes.length, "file")} restored]`)
      case "compaction.failed":
        return note(`  ⟳ compaction failed: ${event.payload.errorCode}; the context is unchanged`)
      case "turn.completed": {
        endLine()
        const { errorCode, stopReason } = event.payload
        if (stopReason === "cancelled") note("[turn cancelled]")
        if (stopReason === "error") note(`[turn ended with an error: ${errorCode ?? "unknown"}]`)
        const finish = UsageText.finishText(event.payload)
        if (finish !== undefined) note(`[${finish}]`)
        if (Transcript.refusedTurn(event) && imagesTurn === event.turnId && turnImages > 0) {
          const n = turnImages === 1 ? "its image is" : `its ${turnImages} images are`
          note(`[the provider refused the turn's request: ${n} left out of later requests; attach or read ${turnImages === 1 ? "it" : "them"} again to send ${turnImages === 1 ? "it" : "them"}]`)
        }
        // What the turn used and cost, when its model reported usage.
        const used = UsageText.turnText(event.payload)
        if (used !== undefined) note(`[${used}]`)
        if (options.transcript) out("\n")
        return
      }
      case "session.created":
      case "turn.started":
      case "context.built":
      case "model.usage":
      case "tool.started":
      case "tool.progress":
      case "followup.queued":
      case "followup.dropped":
      case "session.forked":
      case "session.titled":
      case "workspace.changed":
        // Not shown: the run's own framing, or session-level events other views show.
        return
    }
    // Every event type is said above: a new one does not compile until it is.
    return absurd<void>(event)
  }
  return { event, note, endLine, callOf }
}
