/**
 * The invisible characters that change how text is shown rather than what it says: bidirectional
 * controls (an editor or terminal that applies the bidi algorithm shows `echo "x‮ ;y"` in another
 * order than it runs — Trojan Source), zero-width characters and the byte-order mark. One list, so
 * every place that shows a model's or a repository's text to a person hides or escapes the same ones.
 *
 * @since 0.12.0
 */

/** The characters' class, for building patterns: U+061C, U+200B–U+200F, U+2028–U+202E, U+2060–U+2069, U+FEFF. */
export const characterClass = "\\u061c\\u200b-\\u200f\\u2028-\\u202e\\u2060-\\u2069\\ufeff"

/** The C0 and C1 control characters' class. */
export const controlClass = "\\u0000-\\u001f\\u007f-\\u009f"

/** Every format character, globally. */
export const formatCharacters = new RegExp(`[${characterClass}]`, "g")

/** A character written as its `\uXXXX` escape. */
export const escaped = (c: string): string => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`

/** Text with its format characters written as `\u…` escapes, so what is there shows. */
export const escapeFormat = (text: string): string => text.replace(formatCharacters, escaped)
