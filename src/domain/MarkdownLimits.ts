/**
 * How much of a model's Markdown a UI may hand to a Markdown parser. The model writes the text — a
 * hostile one, or one a fetched page talked into it — and `marked`, which the CLI's chat and the
 * web viewer use, is far from linear on some of it: a paragraph of 16,000 `**a_` (64 KB) takes it
 * 39 s, 8,000 of them 9 s; and `> ` nested 2,000 deep on one line overflows its recursion (a
 * `RangeError`). In the viewer's tab that is the tab frozen, re-parsed on every frame while the
 * text streams, or the page's render broken.
 *
 * The cost is in the inline rules' emphasis delimiters (`*`, `_`, `~`) within one paragraph, and in
 * nested containers (quotes, list items) opened on one line. Capped as below, a paragraph parses in
 * about a millisecond whatever its delimiters; a text past a cap is shown as plain text instead.
 * Ordinary answers are far below them, and code blocks (whose delimiters the inline rules never
 * read) do not count.
 *
 * Pure and free of Effect: the viewer's page bundles it (`effect-agent/view`).
 *
 * @since 0.12.0
 */

/** The most emphasis delimiters (`*`, `_`, `~`) one paragraph of styled Markdown may hold. */
export const maxDelimiters = 256

/** The most containers (`>` quotes, list items) one line of styled Markdown may open. */
export const maxNesting = 32

/** The longest line the chat styles (characters); a longer one is printed as it is. */
export const longestLine = 4096

const delimiters = (line: string): number => {
  let count = 0
  for (let i = 0; i < line.length; i++) {
    const c = line.charCodeAt(i)
    // `*`, `_`, `~`
    if (c === 42 || c === 95 || c === 126) count++
  }
  return count
}

/** The containers a line opens at its start: each `>` and each list marker (`-`, `*`, `+`, `1.`, `1)`) before its text. */
const nesting = (line: string): number => {
  let count = 0
  let i = 0
  for (;;) {
    while (line[i] === " " || line[i] === "\t") i++
    const c = line[i]
    if (c === ">") {
      count++
      i++
    } else if ((c === "-" || c === "*" || c === "+") && (line[i + 1] === " " || line[i + 1] === "\t")) {
      count++
      i += 2
    } else {
      let digits = 0
      while (digits < 10 && line.charCodeAt(i + digits) >= 48 && line.charCodeAt(i + digits) <= 57) digits++
      if (digits === 0 || digits > 9 || (line[i + digits] !== "." && line[i + digits] !== ")")) return count
      count++
      i += digits + 1
    }
    if (count > maxNesting) return count
  }
}

/** A fence that opens or closes a code block: three or more backticks or tildes, indented less than four spaces. */
const fenceOf = (line: string): string | undefined => /^ {0,3}(`{3,}|~{3,})/.exec(line)?.[1]

/**
 * Whether one line, on its own, may be styled (the chat styles a line at a time, outside code
 * blocks): not longer than {@link longestLine}, at most {@link maxDelimiters} delimiters, at most
 * {@link maxNesting} containers.
 */
export const lineStyleable = (line: string): boolean =>
  line.length <= longestLine && delimiters(line) <= maxDelimiters && nesting(line) <= maxNesting

/**
 * Whether a whole text may be parsed as Markdown: no paragraph (a run of lines outside code blocks,
 * ended by a blank line) holds more than {@link maxDelimiters} delimiters, and no line opens more than
 * {@link maxNesting} containers. One pass over the text.
 */
export const styleable = (text: string): boolean => {
  let fence: string | undefined
  let paragraph = 0
  for (const line of text.split("\n")) {
    const mark = fenceOf(line)
    if (fence !== undefined) {
      // Inside a code block only its closing fence matters.
      if (mark !== undefined && mark[0] === fence[0] && mark.length >= fence.length && line.trim() === mark) fence = undefined
      continue
    }
    if (mark !== undefined) {
      fence = mark
      paragraph = 0
      continue
    }
    if (line.trim() === "") {
      paragraph = 0
      continue
    }
    if (nesting(line) > maxNesting) return false
    paragraph += delimiters(line)
    if (paragraph > maxDelimiters) return false
  }
  return true
}
