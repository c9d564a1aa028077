/**
 * Whether a tool's input schema is one a model vendor takes. The SDK checks only `type: "object"`;
 * a schema with a property of `type: "any"`, a `$ref` to nothing or a `pattern` that is not a
 * regular expression went to the model as it came, and the vendor answered 400 to every request of
 * the session (Anthropic "input_schema: JSON schema is invalid", OpenAI "Invalid schema for
 * function") — one broken tool of one server ended every turn `invalid_request`.
 *
 * A schema is taken when Ajv (the SDK's own validator) compiles it as JSON Schema 2020-12 (what
 * Anthropic reads, MCP's default dialect) or as draft-07 (what most servers' generators write),
 * its `$schema` aside: checked against the draft's meta-schema, every `$ref` resolved, every
 * `pattern` compiled. Only what neither draft takes is refused, so a server's valid schema of either
 * is never left out. Compiling a server's schema is what the SDK's client already does with every
 * tool's output schema when it lists them; depth was bounded before (`McpConnection.maxJsonDepth`).
 *
 * @since 0.5.0
 * @internal
 */
import { Ajv } from "ajv"
import { Ajv2020 } from "ajv/dist/2020.js"
import * as FormatCharacters from "../../domain/FormatCharacters.js"

/** Unknown keywords and formats allowed (vendors ignore them); formats are not checked, data never validated here. */
const options = { strict: false, validateFormats: false, allErrors: false, addUsedSchema: false, code: { optimize: false } } as const

/** What is used of an Ajv instance of either draft. */
interface Draft {
  readonly compile: (schema: object) => unknown
  readonly removeSchema: () => unknown
}

let validators: ReadonlyArray<Draft> | undefined
// Built on first use: a session without MCP servers never compiles the meta-schemas.
const drafts = (): ReadonlyArray<Draft> => (validators ??= [new Ajv2020(options), new Ajv(options)])

/** The longest reason kept (Ajv's message quotes the schema's own text). */
const maxReasonChars = 200

/** Ajv's first line, cut, with control and format characters escaped: it names the server's own text. */
const reasonOf = (error: unknown): string => {
  const line = (error instanceof Error ? error.message : String(error)).split("\n")[0]!
  return FormatCharacters.escapeUnprintable(line.length <= maxReasonChars ? line : `${line.slice(0, maxReasonChars)}…`)
}

/** Why no vendor would take `schema` as a tool's input schema, or `undefined` when one draft takes it. */
export const problem = (schema: Readonly<Record<string, unknown>>): string | undefined => {
  const { $schema: _, ...rest } = schema
  let first: string | undefined
  for (const ajv of drafts()) {
    try {
      ajv.compile(rest)
      return undefined
    } catch (error) {
      first ??= reasonOf(error)
    } finally {
      // Nothing kept between tools: two servers' schemas may share an `$id`.
      ajv.removeSchema()
    }
  }
  return first
}
