/**
 * Text made safe for the terminal. Its own module so that the program's start (Main.ts) reaches it
 * without the renderer and the library it imports.
 *
 * @since 0.10.0
 */

/**
 * Text made safe for a terminal: control characters other than newline and tab, DEL and the C1
 * controls become visible escapes (`\x1b`), and carriage returns are dropped, so neither the
 * model's text nor a tool's output can move the cursor, clear the screen, retitle the window or
 * overwrite a line already shown (a `\r` would hide what came before it on the line).
 */
export const terminalSafe = (text: string): string =>
  // Most text has nothing to change (a listing's 10,000 cwds and titles): one test, no copies.
  !unsafe.test(text) ? text : text.replace(/\r/g, "").replace(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`)

// eslint-disable-next-line no-control-regex
const unsafe = /[\r\x00-\x08\x0b-\x1f\x7f-\x9f]/

/**
 * JSON text safe for a terminal: `JSON.stringify` escapes the C0 controls (ESC included) but leaves
 * DEL and the C1 controls (U+0080–U+009F) as they are, and a terminal that takes C1 controls from
 * UTF-8 reads U+009B as CSI and U+009D as OSC — `replay --json` of a log that came with a repository
 * could clear the screen or retitle the window. They only occur inside strings, so writing them as
 * `\u00XX` escapes is the same JSON value.
 */
export const terminalSafeJson = (json: string): string =>
  !c1.test(json) ? json : json.replace(c1All, (c) => `\\u00${c.charCodeAt(0).toString(16)}`)

// eslint-disable-next-line no-control-regex
const c1 = /[\x7f-\x9f]/
// eslint-disable-next-line no-control-regex
const c1All = /[\x7f-\x9f]/g
