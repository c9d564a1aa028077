/**
 * A session's title: what lists show of it. Derived from its first user message until the user
 * names it (`session.titled`). Both are plain, one-line text: a model or a user who writes terminal
 * escapes, control characters or a megabyte of text into a message gets a short, inert title.
 * Imports only `FormatCharacters` (which imports nothing): the viewer's page bundles it (through `SessionView`).
 *
 * @since 0.4.0
 */
import * as FormatCharacters from "./FormatCharacters.js"

/** The longest derived title, in characters (code points), its ellipsis included. */
export const derivedLength = 60

/** The longest title a user may give (`session.titled`), in characters (code points). */
export const maxLength = 200

/** How much of a message is looked at: a title is a few words, never a scan of a 1 MB message. */
const scanned = 4096

// Escape sequences are dropped whole (CSI `ESC [ … final`, OSC `ESC ] … BEL|ESC \`, two-byte `ESC x`),
// so no `[31m` is left behind; then any other C0/C1 control, and the bidirectional and invisible
// format characters that reorder or hide what a terminal or a page shows (`FormatCharacters`; tab
// and line feed are whitespace, collapsed before).
// eslint-disable-next-line no-control-regex
const escapes = /\x1b\[[0-?]*[ -/]*[@-~]?|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x9b[0-?]*[ -/]*[@-~]?|\x1b[@-_]?/g
/** Unpaired UTF-16 surrogates (left by a cut): not text, and some terminals draw them as garbage. */
const loneSurrogates = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g

/**
 * Text as one plain line: escape sequences and control characters dropped, whitespace collapsed, trimmed.
 * Whitespace becomes a space before the controls go (a `\r` or form feed separates words), and runs
 * of spaces are collapsed after, so a control between two spaces leaves one space, not two.
 */
export const plain = (text: string): string =>
  FormatCharacters.dropUnprintable(text.replace(escapes, "").replace(/\s+/g, " ")).replace(loneSurrogates, "").replace(/ {2,}/g, " ").trim()

/** `text` cut to at most `max` characters: at a word boundary when there is one late enough, with an ellipsis. */
export const cut = (text: string, max: number): string => {
  const chars = Array.from(text)
  if (chars.length <= max) return text
  const head = chars.slice(0, max - 1).join("")
  // The head ends on a whole word when a space follows it; otherwise the word it cuts is dropped —
  // unless that throws most of the title away (a boundary in its first half): a long word is cut.
  const space = chars[max - 1] === " " ? head.length : head.lastIndexOf(" ")
  const kept = space >= head.length / 2 ? head.slice(0, space) : head
  return `${kept.trimEnd()}…`
}

/**
 * The title a first message gives its session: its first line that has text on it, made plain and
 * cut to {@link derivedLength}. A message of images only is named by them; an empty one gives none.
 */
export const fromMessage = (content: string, imageCount = 0): string | undefined => {
  const head = content.slice(0, scanned)
  const line = head.split(/\r?\n|\r/).map(plain).find((l) => l !== "") ?? ""
  if (line !== "") return cut(line, derivedLength)
  if (imageCount === 1) return "Image"
  if (imageCount > 1) return `${imageCount} images`
  return undefined
}

/**
 * A title the user gives, as it is stored: made plain. `invalid` says why when it is empty once
 * made plain or longer than {@link maxLength} characters.
 */
export const normalize = (title: string): { readonly title: string } | { readonly invalid: string } => {
  const tooLong = { invalid: `must be at most ${maxLength} characters` }
  // Checked before the text is scanned: a megabyte of title is refused at once.
  if (title.length > maxLength * 8) return tooLong
  const clean = plain(title)
  if (clean === "") return { invalid: "must not be empty" }
  return Array.from(clean).length > maxLength ? tooLong : { title: clean }
}

/**
 * A title as a stored `session.titled` names it, read as {@link normalize} would have stored it:
 * plain, cut to {@link maxLength}. A log another process wrote, or one that came with a repository,
 * is not held to `normalize` (bidi overrides, escapes, 300 KB); a title this program stored comes
 * back unchanged. Only its first `maxLength * 8` code units are looked at, as `normalize` does.
 */
export const stored = (title: string): string =>
  isStoredAlready(title) ? title : cut(plain(title.slice(0, maxLength * 8)), maxLength)

/**
 * Whether `title` is what {@link stored} would make of it, tested without copying it: every title
 * this program stored is, and listings ask it of each title (`plain` and `cut` cost ~10 µs a title).
 */
const isStoredAlready = (title: string): boolean => title.length <= maxLength && !notPlain.test(title)

/**
 * What `plain` may change, in one pass: a control, format or separator character (the categories
 * `FormatCharacters` drops, so no list can fall behind it: a list here missed the soft hyphen, U+206A–F
 * and the tag characters), a lone surrogate, whitespace other than a space, a leading, trailing or
 * doubled space. The joiners `plain` keeps take the long way too (rare, and still right).
 */
const notPlain = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]|[^\S ]|^ | $| {2}/u

/** Whether a session matches a search: every word of `query` is in its title or its id, ignoring case. */
export const matches = (query: string, session: { readonly sessionId: string; readonly title?: string | undefined }): boolean => {
  const words = query.toLowerCase().split(/\s+/).filter((w) => w !== "")
  const haystack = `${session.title ?? ""} ${session.sessionId}`.toLowerCase()
  return words.every((w) => haystack.includes(w))
}
