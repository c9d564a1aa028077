/**
 * `effect-agent/view`: what a UI shows of a session — its log folded into turns, tool calls and
 * notes, and the state a panel shows (`SessionView`, the web viewer's own fold). Types only at run
 * time beyond the fold itself: a browser page can bundle it without Effect, as the viewer does.
 *
 * @since 0.5.0
 */

/** What a UI shows of a session: the log folded into turns, calls and notes. */
export * as SessionView from "./domain/SessionView.js"
export * as Edit from "./domain/Edit.js"
/** The one-line texts of usage, cost and prompt-cache breaks, as the CLI and the viewer show them. */
export * as UsageText from "./domain/UsageText.js"
/** How much of a model's Markdown a UI may hand to a Markdown parser: past it, show the text plain. */
export * as MarkdownLimits from "./domain/MarkdownLimits.js"
/** The bidi controls and invisible characters a UI escapes before showing a call (Trojan Source), as the CLI, ACP and the viewer do. */
export * as FormatCharacters from "./domain/FormatCharacters.js"
