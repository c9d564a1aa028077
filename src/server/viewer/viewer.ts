/**
 * The viewer's fold, as its page (`page.js`) bundles it: `SessionView`, through the package's
 * `effect-agent/view` entry, which carries nothing of Effect. The page and the tests that check the
 * fold import it from here.
 *
 * @since 0.5.0
 */
import { Edit, FormatCharacters, MarkdownLimits, SessionView, UsageText } from "../../view.js"

/** See `RenderCache`: what the page makes of each text, kept while it shows the text. */
export * as RenderCache from "./RenderCache.js"

/**
 * A call's text as the page shows it: bidi controls and invisible characters written as `\u…`
 * escapes (`FormatCharacters`), so a command, a path or an edit waiting for approval reads in the
 * order it runs (Trojan Source), as the CLI and ACP show it.
 */
export const visible = (text: string): string => FormatCharacters.escapeFormat(text)

/**
 * The model's prose and code blocks as the page shows them: its bidi controls and invisible
 * characters escaped as a call's are (`visible`) — a command the model suggests in its answer read
 * in another order than it runs — but the zero-width (non-)joiners, which shape letters and emoji
 * sequences and hide nothing.
 */
export const visibleProse = (text: string): string =>
  text.split(/([\u200c\u200d])/).map((part, i) => i % 2 === 1 ? part : visible(part)).join("")

/**
 * A call's path, command or pattern beside its name (`path: …`), as the CLI's question and ACP's
 * title show it: quoted when it holds a character that does not show as itself. In the call's
 * box, which keeps line breaks, a path holding one showed lines of its own (`command: …`).
 */
export const shownField = (text: string): string => FormatCharacters.shownOrQuoted(text)

/** See `Edit`: what an edit call does to its file. */
export { Edit }

/** See `MarkdownLimits`: whether a text may be parsed as Markdown, or is shown plain. */
export const { styleable: markdownStyleable } = MarkdownLimits

/** See `UsageText`: the turn's and the session's usage and cost lines. */
export const { finishText, totalsText, turnText } = UsageText

/** See `SessionView`. */
export type View = SessionView.View
/** See `SessionView`. */
export type ViewCall = SessionView.ViewCall
/** See `SessionView`. */
export type ViewItem = SessionView.ViewItem
/** See `SessionView`. */
export type ViewTurn = SessionView.ViewTurn

/** See `SessionView`. */
export const { empty, fold, openCalls, pendingApprovals, phase, step } = SessionView
