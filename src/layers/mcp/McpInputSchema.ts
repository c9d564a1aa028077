/**
 * Whether a tool's input schema is one a model vendor takes. The SDK checks only `type: "object"`;
 * a schema with a property of `type: "any"` or a `$ref` to nothing went to the model as it came,
 * and the vendor answered 400 to every request of the session (Anthropic "input_schema: JSON schema
 * is invalid", OpenAI "Invalid schema for function") — one broken tool of one server ended every
 * turn `invalid_request`.
 *
 * A schema is taken when it is valid against the meta-schema of JSON Schema 2020-12 (what Anthropic
 * reads, MCP's default dialect) or of draft-07 (what most servers' generators write), its `$schema`
 * aside, and each of its `$ref`s within the document (`#/…`, `#name`), outside data keywords, leads somewhere. Only what
 * neither draft takes is refused, so a server's valid schema of either is never left out.
 *
 * Checked with Ajv (the SDK's own validator) validating the schema as data against the meta-schemas,
 * compiled once: not by compiling each schema, which generates code for it — 1,000 ordinary tools
 * took 5.5–6.1 s of the agent's one thread, and one 0.87 MB schema 13–18 s (load 20, 2 cores), which
 * no time limit interrupts; validated, 0.20–0.24 s each (and 0.2–0.36 s once to compile the
 * meta-schemas). References that leave the document are not followed (nothing is fetched)
 * and are not refused.
 *
 * @since 0.5.0
 * @internal
 */
import { Ajv } from "ajv"
import { Ajv2020 } from "ajv/dist/2020.js"
import * as FormatCharacters from "../../domain/FormatCharacters.js"

/** What is used of an Ajv instance of either draft. */
interface Draft {
  readonly validateSchema: (schema: object) => boolean | Promise<unknown>
  readonly errorsText: (errors?: ReadonlyArray<unknown> | null) => string
  readonly errors?: ReadonlyArray<unknown> | null | undefined
}

/** Unknown keywords and formats allowed (vendors ignore them); formats not checked. */
const options = { strict: false, validateFormats: false, allErrors: false } as const

let validators: ReadonlyArray<Draft> | undefined
// Built on first use: a session without MCP servers never compiles the meta-schemas.
const drafts = (): ReadonlyArray<Draft> => (validators ??= [new Ajv2020(options), new Ajv(options)] as unknown as ReadonlyArray<Draft>)

/** The longest reason kept (it quotes the schema's own text). */
const maxReasonChars = 200

/** One line, cut, with control and format characters escaped: it quotes the server's own text. */
const shown = (reason: string): string => {
  const line = reason.split("\n")[0]!
  return FormatCharacters.escapeUnprintable(line.length <= maxReasonChars ? line : `${line.slice(0, maxReasonChars)}…`)
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value)

/**
 * Keywords whose value is data, not a schema: a `$ref`, `$id` or `$anchor` there is a value (a tool
 * taking an OpenAPI fragment shows `examples: [{ $ref: "#/components/schemas/Pet" }]`). `example` is
 * OpenAPI's.
 */
const dataKeywords: ReadonlySet<string> = new Set(["default", "examples", "example", "enum", "const"])
/** Keywords whose value maps names (chosen by the server: `default`, `enum`, …) to schemas. */
const namedSchemaKeywords: ReadonlySet<string> = new Set(["properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"])

/**
 * Every schema object of `schema`, the root first (depth was bounded before: `McpConnection.maxJsonDepth`).
 * Data keywords are not entered; unknown keywords are, as schemas (so a reference there is still checked).
 */
const schemasOf = (schema: unknown): ReadonlyArray<Record<string, unknown>> => {
  const found: Array<Record<string, unknown>> = []
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(walk)
    if (!isObject(node)) return
    found.push(node)
    for (const [keyword, value] of Object.entries(node)) {
      if (dataKeywords.has(keyword)) continue
      if (namedSchemaKeywords.has(keyword) && isObject(value)) Object.values(value).forEach(walk)
      else walk(value)
    }
  }
  walk(schema)
  return found
}

/**
 * Whether a schema says it is draft-04 (or draft-03): only there is `id` an identifier. From
 * draft-06 on it is `$id`, and `id` a keyword nobody reads — no vendor that reads 2020-12 or
 * draft-07 finds an anchor or a base in it, so a schema that does not say draft-04 is read so too.
 */
const isDraft04 = (root: Readonly<Record<string, unknown>>): boolean =>
  typeof root.$schema === "string" && /json-schema\.org\/draft-0[34]\/schema/.test(root.$schema)

/** A schema's `$id`, or in a draft-04 document its `id` (the same keyword before draft-06), when a string. */
const idOf = (node: Readonly<Record<string, unknown>>, draft04: boolean): string | undefined =>
  typeof node.$id === "string" ? node.$id : draft04 && typeof node.id === "string" ? node.id : undefined

/** The value a JSON pointer (`/$defs/a`, escapes `~0` `~1` and `%XX` decoded) leads to from `root`, or `undefined`. */
const pointed = (root: unknown, pointer: string): unknown => {
  let node = root
  for (const written of pointer.split("/").slice(1)) {
    let token: string
    try {
      token = decodeURIComponent(written).replaceAll("~1", "/").replaceAll("~0", "~")
    } catch {
      return undefined
    }
    if (Array.isArray(node) && /^(0|[1-9]\d*)$/.test(token)) node = node[Number(token)]
    else if (isObject(node) && Object.hasOwn(node, token)) node = node[token]
    else return undefined
  }
  return node
}

/**
 * The first `$ref` within the document that leads nowhere, or `undefined`. A schema with an `$id`
 * (or, in a draft-04 document, `id`) other than an anchor below its root is not looked at: there a
 * reference resolves against that subschema, not the root.
 */
const brokenRef = (schema: Readonly<Record<string, unknown>>): string | undefined => {
  const schemas = schemasOf(schema)
  const draft04 = isDraft04(schema)
  const ids = schemas.map((node) => idOf(node, draft04))
  if (ids.some((id, index) => index > 0 && id?.startsWith("#") === false)) return undefined
  const anchors = new Set(schemas.flatMap((node, index) => [node.$anchor, node.$dynamicAnchor, ids[index]?.startsWith("#") ? ids[index]!.slice(1) : undefined]))
  for (const node of schemas) {
    const ref = node.$ref
    if (typeof ref !== "string" || !ref.startsWith("#")) continue
    const fragment = ref.slice(1)
    const found = fragment === "" || (fragment.startsWith("/") ? pointed(schema, fragment) !== undefined : anchors.has(fragment))
    if (!found) return ref
  }
  return undefined
}

/** Draft-04's exclusive bounds: a boolean that makes the `minimum` or `maximum` beside it exclusive. */
const exclusiveBounds = [["exclusiveMinimum", "minimum"], ["exclusiveMaximum", "maximum"]] as const

/**
 * `schema` with draft-04's boolean `exclusiveMinimum`/`exclusiveMaximum` written as the numbers of
 * draft-06 on (`minimum: 0, exclusiveMinimum: true` is `exclusiveMinimum: 0`; a `false` is dropped,
 * as is a `true` with no bound beside it, which bounds nothing). zod-to-json-schema writes the
 * boolean form for every target but `jsonSchema7` (a zod `.positive()`), so real servers send it,
 * even under a 2020-12 `$schema`; Anthropic and Mistral refuse the whole request for it (400
 * "JSON schema is invalid", "True is not of type 'number'"). The same constraint in the form every
 * vendor takes, rather than the tool left out. What data keywords hold is not touched; a schema
 * with no such bound is returned as it came (the same object).
 */
export const withNumericBounds = <S>(schema: S): S => {
  const rewrite = (node: unknown): unknown => {
    if (Array.isArray(node)) {
      const items = node.map(rewrite)
      return items.some((item, index) => item !== node[index]) ? items : node
    }
    if (!isObject(node)) return node
    let copy: Record<string, unknown> | undefined
    const set = (keyword: string, value: unknown) => {
      copy ??= { ...node }
      if (value === undefined) delete copy[keyword]
      else copy[keyword] = value
    }
    for (const [keyword, value] of Object.entries(node)) {
      if (dataKeywords.has(keyword)) continue
      if (namedSchemaKeywords.has(keyword) && isObject(value)) {
        const named = Object.entries(value).map(([name, schema]) => [name, rewrite(schema)] as const)
        if (named.some(([name, schema]) => schema !== value[name])) set(keyword, Object.fromEntries(named))
      } else {
        const rewritten = rewrite(value)
        if (rewritten !== value) set(keyword, rewritten)
      }
    }
    for (const [exclusive, inclusive] of exclusiveBounds) {
      const flag = node[exclusive]
      const bound = node[inclusive]
      if (typeof flag !== "boolean") continue
      const exclusiveBound = flag && typeof bound === "number"
      set(exclusive, exclusiveBound ? bound : undefined)
      if (exclusiveBound) set(inclusive, undefined)
    }
    return copy ?? node
  }
  return rewrite(schema) as S
}

/** Why no vendor would take `schema` as a tool's input schema, or `undefined` when it would. */
export const problem = (schema: Readonly<Record<string, unknown>>): string | undefined => {
  const { $schema: _, ...rest } = schema
  let invalid: string | undefined
  for (const ajv of drafts()) {
    if (ajv.validateSchema(rest) === true) {
      invalid = undefined
      break
    }
    invalid ??= `schema is invalid: ${ajv.errorsText(ajv.errors)}`
  }
  if (invalid !== undefined) return shown(invalid)
  const ref = brokenRef(schema)
  return ref === undefined ? undefined : shown(`its $ref ${JSON.stringify(ref)} leads nowhere in the schema`)
}
