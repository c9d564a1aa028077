/**
 * Text that cannot name a file as written: the system cuts a path (and a program's argument) at a
 * NUL, and Node writes a lone surrogate — half of a UTF-16 pair — as U+FFFD, so the file opened is
 * another name than the one a permission check, a rule or a question saw. Every path a model, a
 * client or a log gives is refused with this reason before it is resolved or asked about. And the
 * names a file system holds, as a tool's result shows them (`shown`).
 *
 * @since 0.14.0
 * @internal
 */
import * as FormatCharacters from "./FormatCharacters.js"

const loneSurrogate = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

/** Whether `text` holds a lone surrogate, which UTF-8 cannot hold: Node writes it as U+FFFD. */
export const hasLoneSurrogate = (text: string): boolean => loneSurrogate.test(text)

/** Why `text` cannot name a file as written, or `undefined` when it can. */
export const unnamable = (text: string): string | undefined =>
  text.includes("\u0000")
    ? "it contains a NUL byte"
    : hasLoneSurrogate(text)
    ? "it contains a lone surrogate (half of a UTF-16 pair)"
    : undefined

/**
 * A file name or path as a tool's result shows it: as it is, or as a JSON string when it holds a
 * character that does not show as itself (`FormatCharacters`: controls, line and paragraph
 * separators, bidi and other format characters, …) or starts with a quote — escapes a model reads back as the
 * name, and a quoted name is always one. A name with a newline printed as lines of its own, so a
 * repository's file forged `list_dir` entries, `grep` matches and the notes after them.
 */
export const shown: (name: string) => string = FormatCharacters.shownOrQuoted

/**
 * A name as `grep`'s `path:line:text` shows it: as `shown`, and quoted too when it holds `:<digits>:` or ends in
 * `:<digits>`, so a file named `a.txt:1:token=x` (or `a.txt:1`) cannot pass for a match in `a.txt`.
 */
export const shownBeforeLine = (name: string): string => /:\d+(?::|$)/.test(name) ? FormatCharacters.jsonQuoted(name) : shown(name)
