/**
 * The invisible characters that change how text is shown rather than what it says: bidirectional
 * controls (an editor or terminal that applies the bidi algorithm shows `echo "x‮ ;y"` in another
 * order than it runs — Trojan Source), zero-width characters and the byte-order mark. One list, so
 * every place that shows a model's or a repository's text to a person hides or escapes the same ones.
 *
 * @since 0.12.0
 */

// U+061C, U+200B–U+200F, U+2028–U+202E, U+2060–U+2069, U+FEFF.
const formatClass = "\\u061c\\u200b-\\u200f\\u2028-\\u202e\\u2060-\\u2069\\ufeff"
// The C0 and C1 control characters.
const controlClass = "\\u0000-\\u001f\\u007f-\\u009f"

const format = new RegExp(`[${formatClass}]`, "g")
const unprintable = new RegExp(`[${controlClass}${formatClass}]`, "g")

const escaped = (c: string): string => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`

/** Text with its format characters written as `\u…` escapes, so what is there shows. */
export const escapeFormat = (text: string): string => text.replace(format, escaped)

/** Text with its control and format characters written as `\u…` escapes. */
export const escapeUnprintable = (text: string): string => text.replace(unprintable, escaped)

/** Whether text holds no control or format character. */
export const isPrintable = (text: string): boolean => text.search(unprintable) === -1

/**
 * Text with its control and format characters dropped — but the zero-width (non-)joiners, which
 * shape letters (Persian words, emoji sequences) and hide nothing.
 */
export const dropUnprintable = (text: string): string => text.replace(unprintable, (c) => (c === "\u200c" || c === "\u200d" ? c : ""))
