/**
 * Where a JSON text stops being JSON, as an editor points at it: `line:column`, what is wrong there,
 * and the line itself. `JSON.parse` says "at position 433" (a count of characters no one can find
 * in a file) or nothing at all ("Unexpected token '}', …"), and some of its messages quote the text
 * itself, control characters included. This scanner is only asked about a text `JSON.parse` has
 * refused: it walks it once, without recursion (a file can nest 200,000 deep), to the first fault.
 *
 * @since 0.14.0
 * @internal
 */

/** The first fault of a JSON text. */
export interface Fault {
  /** 1-based line and column (columns count characters, a tab as one). */
  readonly line: number
  readonly column: number
  /** What is wrong there, in words. */
  readonly problem: string
  /** The line, control characters escaped, cut to about 80 characters around the column. */
  readonly excerpt: string
}

const isSpace = (c: string) => c === " " || c === "\t" || c === "\n" || c === "\r"
const number = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y
const escapes = new Set(["\"", "\\", "/", "b", "f", "n", "r", "t"])

/** How a character is named in a problem: quoted and printable. */
const named = (c: string | undefined) => c === undefined ? "the end of the file" : `'${printable(c)}'`

/** Control characters (C0, DEL, C1) as visible escapes: a file's text never reaches a terminal raw. */
// eslint-disable-next-line no-control-regex
const printable = (text: string) => text.replace(/[\x00-\x1f\x7f-\x9f]/g, (c) => c === "\t" ? " " : `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`)

/** The offset of the first fault in `text`, and what it is; undefined for a valid JSON text. */
const firstFault = (text: string): { readonly at: number; readonly problem: string } | undefined => {
  const stack: Array<"{" | "["> = []
  // What may come next: a value (first: `]` may close an empty array), a key (first: `}` may close), or what follows a value.
  let state: "value" | "firstValue" | "key" | "firstKey" | "after" = "value"
  let i = 0
  const fault = (problem: string, at = i) => ({ at, problem })
  /** Scans the string at `i` (its opening quote); the fault, if it is not one. */
  const string = () => {
    const start = i
    for (i++; i < text.length; i++) {
      const c = text[i]!
      if (c === "\"") {
        i++
        return undefined
      }
      if (c === "\\") {
        const next = text[i + 1]
        if (next === "u") {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) return fault("a \\u escape needs four hex digits")
          i += 5
        } else if (next !== undefined && escapes.has(next)) {
          i++
        } else {
          return fault(`an unknown escape \\${next === undefined ? "" : printable(next)} in a string`)
        }
      } else if (c.charCodeAt(0) < 0x20) {
        return fault(c === "\n" ? "a line break inside a string (write \\n)" : "a control character inside a string")
      }
    }
    return fault("a string that is never closed", start)
  }
  for (;;) {
    while (i < text.length && isSpace(text[i]!)) i++
    const c = text[i]
    if (c === undefined) return state === "after" && stack.length === 0 ? undefined : fault("the file ends too early")
    if (state === "after") {
      const top = stack[stack.length - 1]
      if (top === undefined) return fault(`${named(c)} after the end of the JSON value`)
      if (c === ",") state = top === "{" ? "key" : "value"
      else if (c === (top === "{" ? "}" : "]")) stack.pop()
      else return fault(top === "{" ? `expected ',' or '}' after a property, found ${named(c)}` : `expected ',' or ']' after an element, found ${named(c)}`)
      i++
      continue
    }
    if (state === "key" || state === "firstKey") {
      if (c === "}") {
        if (state === "key") return fault("a comma before '}' (JSON allows no trailing comma)")
        stack.pop()
        state = "after"
        i++
        continue
      }
      if (c !== "\"") return fault(`expected a property name in double quotes, found ${named(c)}`)
      const bad = string()
      if (bad !== undefined) return bad
      while (i < text.length && isSpace(text[i]!)) i++
      if (text[i] !== ":") return fault(`expected ':' after a property name, found ${named(text[i])}`)
      i++
      state = "value"
      continue
    }
    // A value.
    if (c === "]" && stack[stack.length - 1] === "[") {
      if (state === "value") return fault("a comma before ']' (JSON allows no trailing comma)")
      stack.pop()
      state = "after"
      i++
      continue
    }
    if (c === "{" || c === "[") {
      stack.push(c)
      state = c === "{" ? "firstKey" : "firstValue"
      i++
      continue
    }
    state = "after"
    if (c === "\"") {
      const bad = string()
      if (bad !== undefined) return bad
      continue
    }
    const literal = ["true", "false", "null"].find((word) => text.startsWith(word, i))
    if (literal !== undefined) {
      i += literal.length
      continue
    }
    number.lastIndex = i
    if ((c === "-" || (c >= "0" && c <= "9")) && number.test(text)) {
      i = number.lastIndex
      continue
    }
    return fault(c === "'" ? "a string in single quotes (JSON takes double quotes)" : `expected a value, found ${named(c)}`)
  }
}

/** The first fault of a text `JSON.parse` refused, with its line, column and line; undefined if there is none. */
export const locate = (text: string): Fault | undefined => {
  const found = firstFault(text)
  if (found === undefined) return undefined
  const lineStart = text.lastIndexOf("\n", found.at - 1) + 1
  const lineEnd = text.indexOf("\n", found.at) < 0 ? text.length : text.indexOf("\n", found.at)
  const line = text.slice(0, lineStart).split("\n").length
  const whole = text.slice(lineStart, lineEnd).replace(/\r$/, "")
  const column = [...text.slice(lineStart, found.at)].length + 1
  // About 80 characters of the line, around the column.
  const chars = [...whole]
  const from = Math.max(0, Math.min(column - 41, chars.length - 80))
  const to = Math.min(chars.length, from + 80)
  const cut = printable(chars.slice(from, to).join("")).trim()
  const excerpt = `${from > 0 ? "…" : ""}${cut}${to < chars.length ? "…" : ""}`
  return { line, column, problem: found.problem, excerpt }
}

/** `JSON.parse(text)`, or the one-line error: `shown:line:column: not valid JSON: problem: excerpt`. */
export const parse = (text: string, shown: string): { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly message: string } => {
  try {
    return { ok: true, value: JSON.parse(text) }
  } catch (error) {
    const fault = locate(text)
    if (fault === undefined) return { ok: false, message: `${shown}: not valid JSON (${printable(error instanceof Error ? error.message : String(error)).slice(0, 200)})` }
    const excerpt = fault.excerpt === "" ? "" : `: ${fault.excerpt}`
    return { ok: false, message: `${shown}:${fault.line}:${fault.column}: not valid JSON: ${fault.problem}${excerpt}` }
  }
}
