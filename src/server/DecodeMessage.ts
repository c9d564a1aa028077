/**
 * The one-line message of a 400 for a request the API could not decode. The platform's
 * `HttpApiDecodeError` carries the schema's tree formatting — the route's whole body type written
 * out over several lines before the one fact that matters ("cwdd" is unexpected) — and that was what
 * a client got. Here each issue (the platform's `ArrayFormatter` issues, which the error carries too)
 * is said with its place: an unknown key by name with the keys allowed there, anything else as
 * `<where>: <what>`. The schema's type expressions are never written out.
 *
 * @since 0.6.0
 */

/** An issue as the platform's `HttpApiDecodeError` carries it (`ParseResult.ArrayFormatterIssue`). */
export interface Issue {
  readonly _tag: string
  readonly path: ReadonlyArray<PropertyKey>
  readonly message: string
}

/** A message never grows past this: an issue quotes the value it met, which the client sent and may be large. */
const maxLength = 400

const identifier = /^[A-Za-z_$][A-Za-z0-9_$]*$/

/** Where an issue is: `budget.maxTokens`, `images[0].data`, `mcpServers["a b"]`; the body itself at the root. */
export const whereOf = (path: ReadonlyArray<PropertyKey>): string =>
  path.length === 0
    ? "the body"
    : path.map((key, i) =>
      typeof key === "number"
        ? `[${key}]`
        : typeof key === "string" && identifier.test(key)
        ? (i === 0 ? key : `.${key}`)
        : `[${JSON.stringify(String(key))}]`
    ).join("")

/** A schema's type written out (`{ readonly cwd?: … }`, `ReadonlyArray<…>`) said in words instead. */
const plainly = (message: string): string => {
  const expected = /^Expected (.*), actual (.*)$/s.exec(message)
  if (expected === null) return message
  const [, type, actual] = expected as unknown as [string, string, string]
  const kind = type.startsWith("{") ? "a JSON object" : type.startsWith("ReadonlyArray<") ? "an array" : undefined
  return kind === undefined ? message : `Expected ${kind}, actual ${actual}`
}

/** One issue in words. */
const said = (issue: Issue): string => {
  const key = issue.path.at(-1)
  if (issue._tag === "Unexpected" && key !== undefined) {
    const allowed = /expected: (.*)$/s.exec(issue.message)?.[1]?.split(" | ").join(", ")
    const parent = issue.path.slice(0, -1)
    const place = parent.length === 0 ? "" : ` in ${whereOf(parent)}`
    return `Unknown key ${JSON.stringify(String(key))}${place}${allowed === undefined ? "" : `; allowed keys: ${allowed}`}`
  }
  if (issue._tag === "Missing" && key !== undefined) {
    const parent = issue.path.slice(0, -1)
    return `Missing key ${JSON.stringify(String(key))}${parent.length === 0 ? "" : ` in ${whereOf(parent)}`}`
  }
  return `${whereOf(issue.path)}: ${plainly(issue.message)}`
}

/**
 * The message for `issues`. An optional field's or an optional body's other branch (`Expected
 * undefined`, `Expected null`) is left out when another issue says what was wrong.
 */
export const messageOf = (issues: ReadonlyArray<Issue>): string => {
  const telling = issues.filter((issue) => !/^Expected (undefined|null), actual /.test(issue.message))
  const lines = [...new Set((telling.length === 0 ? issues : telling).map(said))]
  const message = lines.length === 0 ? "The request does not match the route" : lines.join("; ")
  return message.length <= maxLength ? message : `${message.slice(0, maxLength - 1)}…`
}

/** The message of a decode error as it reached the server (`{issues, message}`), when it has issues. */
export const fromError = (error: { readonly issues?: unknown }): string | undefined =>
  Array.isArray(error.issues) && error.issues.length > 0 &&
    error.issues.every((issue: unknown) =>
      typeof issue === "object" && issue !== null && typeof (issue as Issue)._tag === "string" &&
      Array.isArray((issue as Issue).path) && typeof (issue as Issue).message === "string"
    )
    ? messageOf(error.issues as ReadonlyArray<Issue>)
    : undefined
