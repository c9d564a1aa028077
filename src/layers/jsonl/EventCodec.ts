/**
 * Events to and from log lines without running the Schema machinery for every event.
 *
 * A check compiled once from the `AgentEvent` schema's AST accepts a value only when the schema
 * would accept it *and* leave it as it is: valid, plain objects, no key the schema does not know,
 * keys in the schema's order. For such a value `JSON.stringify(value)` is byte for byte what
 * `AgentEvent.encodeJson` writes, and the parsed line is what `AgentEvent.decodeUnknown` returns,
 * so the line is encoded or decoded at the cost of `JSON.stringify` / `JSON.parse` plus a walk of
 * the value. Everything the check does not accept — an invalid event, an extra key, another key
 * order, a class instance, a line of an older log version — goes through the schema as before, so
 * the check can only make things faster, never accept what the schema refuses or change a byte.
 * The events the engine builds always take the fast path (its builders follow the schema's field
 * order); events from elsewhere are still validated, by the check or by the schema.
 *
 * @since 0.1.0
 * @internal
 */
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as AST from "effect/SchemaAST"
import * as AgentEvent from "../../domain/AgentEvent.js"
import * as LogFormat from "../../domain/LogFormat.js"

type Check = (value: unknown) => boolean

const never: Check = () => false

const isPlainObject = (value: unknown): value is Record<string, unknown> => {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false
  const proto = Object.getPrototypeOf(value)
  return proto === Object.prototype || proto === null
}

/**
 * How a struct checks one of its properties. The leaves most events are made of (strings, literals,
 * numbers with the bounds of effect's own `int`/`positive`/`nonNegative`) are checked inline in the
 * struct's loop; anything else calls its compiled check. A replay checks every key of every event
 * it reads (about seven a line, most of them strings): a closure call per key was a third of the
 * check's time.
 */
type Property =
  | { readonly _tag: "String" }
  | { readonly _tag: "Literal"; readonly literal: AST.LiteralValue }
  | { readonly _tag: "Number"; readonly bounds: NumberBounds }
  | { readonly _tag: "Other"; readonly check: Check }

/** A finite number, possibly an integer, possibly bounded below. */
interface NumberBounds {
  readonly integer: boolean
  readonly min: number
  readonly exclusive: boolean
}

const unbounded: NumberBounds = { integer: false, min: -Infinity, exclusive: false }

/**
 * A refinement effect's `Schema` made with one of its own number filters, as the numbers a predicate
 * of ours stands for: `int` (`Number.isSafeInteger`), `greaterThan(m)` (`> m`), `greaterThanOrEqualTo(m)`
 * (`>= m`), `finite` (every bound is finite), told by the schema id and the bound those filters annotate. `undefined` for any other
 * refinement, which keeps its own filter. (test/layers/jsonlCodec.test.ts holds that every
 * refinement of the event schema read this way agrees with its filter.)
 */
export const numberBounds = (ast: AST.AST): NumberBounds | undefined => {
  if (ast._tag === "NumberKeyword") return unbounded
  if (ast._tag !== "Refinement") return undefined
  const from = numberBounds(ast.from)
  if (from === undefined) return undefined
  const id = ast.annotations[AST.SchemaIdAnnotationId]
  const json = ast.annotations[AST.JSONSchemaAnnotationId] as Record<string, unknown> | undefined
  if (id === Schema.IntSchemaId) return { ...from, integer: true }
  // Bounds hold finite numbers only (`inBounds`): `finite` adds nothing to them.
  if (id === Schema.FiniteSchemaId) return from
  if (id === Schema.GreaterThanSchemaId && typeof json?.exclusiveMinimum === "number") {
    return json.exclusiveMinimum >= from.min ? { ...from, min: json.exclusiveMinimum, exclusive: true } : from
  }
  if (id === Schema.GreaterThanOrEqualToSchemaId && typeof json?.minimum === "number") {
    return json.minimum > from.min ? { ...from, min: json.minimum, exclusive: false } : from
  }
  return undefined
}

const inBounds = (value: unknown, bounds: NumberBounds): boolean =>
  typeof value === "number" && (bounds.integer ? Number.isSafeInteger(value) : Number.isFinite(value)) &&
  (bounds.exclusive ? value > bounds.min : value >= bounds.min)

const property = (ast: AST.AST): Property => {
  if (ast._tag === "StringKeyword") return { _tag: "String" }
  if (ast._tag === "Literal") return { _tag: "Literal", literal: ast.literal }
  const bounds = numberBounds(ast)
  return bounds !== undefined ? { _tag: "Number", bounds } : { _tag: "Other", check: compile(ast) }
}

const typeLiteral = (ast: AST.TypeLiteral): Check => {
  if (ast.indexSignatures.length > 0 || ast.propertySignatures.some((p) => typeof p.name !== "string")) return never
  const names = ast.propertySignatures.map((p) => p.name as string)
  const optional = ast.propertySignatures.map((p) => p.isOptional)
  const properties = ast.propertySignatures.map((p) => property(p.type))
  const n = names.length
  return (value) => {
    if (!isPlainObject(value)) return false
    // Keys in the schema's order, optional ones possibly absent, nothing else.
    let i = 0
    for (const key in value) {
      while (i < n && names[i] !== key) {
        if (!optional[i]) return false
        i++
      }
      if (i === n || !Object.hasOwn(value, key)) return false
      const v = value[key]
      const p = properties[i]!
      switch (p._tag) {
        case "String":
          if (typeof v !== "string") return false
          break
        case "Literal":
          if (v !== p.literal) return false
          break
        case "Number":
          if (!inBounds(v, p.bounds)) return false
          break
        case "Other":
          if (!p.check(v)) return false
      }
      i++
    }
    for (; i < n; i++) if (!optional[i]) return false
    return true
  }
}

/** The literal `type` of a struct member of a union, when it has one. */
const tagOf = (ast: AST.AST): string | undefined => {
  if (ast._tag !== "TypeLiteral") return undefined
  const type = ast.propertySignatures.find((p) => p.name === "type")
  return type !== undefined && !type.isOptional && type.type._tag === "Literal" && typeof type.type.literal === "string" ? type.type.literal : undefined
}

/** A schema of JSON scalars (strings, finite numbers, booleans, literals, undefined), refined or not. */
const isScalar = (ast: AST.AST): boolean => {
  switch (ast._tag) {
    case "StringKeyword":
    case "NumberKeyword":
    case "BooleanKeyword":
    case "UndefinedKeyword":
    case "Literal":
      return true
    case "Refinement":
      return isScalar(ast.from)
    default:
      return false
  }
}

const union = (ast: AST.Union): Check => {
  const { types } = ast
  if (types.every((t) => t._tag === "Literal")) {
    const literals = new Set(types.map((t) => (t as AST.Literal).literal))
    return (value) => literals.has(value as AST.LiteralValue)
  }
  // `Schema.optional(X)`: X or undefined.
  const defined = types.filter((t) => t._tag !== "UndefinedKeyword")
  if (defined.length === 1 && types.length === 2) {
    const check = compile(defined[0]!)
    return (value) => value === undefined || check(value)
  }
  // Values of the JSON scalars (`Schema.optional(Schema.NullOr(Schema.Number))`, flattened to one
  // union): each decodes and encodes to itself whichever member takes it, so any member's check will do.
  if (types.every(isScalar)) {
    const checks = types.map(compile)
    return (value) => checks.some((check) => check(value))
  }
  // Structs told apart by a literal `type`: only the member of that type could decode the value.
  const tags = types.map(tagOf)
  if (tags.every((t) => t !== undefined) && new Set(tags).size === tags.length) {
    const byTag = new Map(types.map((t, i) => [tags[i]!, compile(t)] as const))
    // The member's own check makes sure the value is a plain object.
    return (value) => {
      if (typeof value !== "object" || value === null) return false
      const check = byTag.get((value as { readonly type?: unknown }).type as string)
      return check !== undefined && check(value)
    }
  }
  return never
}

/** The check of a schema's AST; parts it does not know are `never` (left to the schema). */
const compile = (ast: AST.AST): Check => {
  switch (ast._tag) {
    case "StringKeyword":
      return (value) => typeof value === "string"
    case "NumberKeyword":
      // NaN and the infinities are numbers to the schema but not to JSON: left to the schema.
      return (value) => typeof value === "number" && Number.isFinite(value)
    case "BooleanKeyword":
      return (value) => typeof value === "boolean"
    case "UndefinedKeyword":
      return (value) => value === undefined
    case "Literal": {
      const literal = ast.literal
      return (value) => value === literal
    }
    case "Refinement": {
      const bounds = numberBounds(ast)
      if (bounds !== undefined) return (value) => inBounds(value, bounds)
      const from = compile(ast.from)
      const filter = ast.filter
      return (value) => from(value) && Option.isNone(filter(value, {}, ast))
    }
    case "TypeLiteral":
      return typeLiteral(ast)
    case "Union":
      return union(ast)
    case "TupleType": {
      if (ast.elements.length > 0 || ast.rest.length !== 1) return never
      const element = compile(ast.rest[0]!.type)
      return (value) => Array.isArray(value) && value.every(element)
    }
    case "Declaration": {
      // A declaration without type parameters (`Schema.declare(is)`, such as `Json`) passes its value through.
      if (ast.typeParameters.length > 0) return never
      return ParseResult.is(Schema.make(ast))
    }
    default:
      return never
  }
}

/** The check of any schema's AST, as the event check is compiled (for tests). */
export const checkOf = (ast: AST.AST): (value: unknown) => boolean => compile(ast)

// Compiled on the first event, not as the module loads: a listing that reads no log never needs it.
let canonical: Check | undefined

/** Whether the schema accepts `value` as an event and would encode or decode it to itself, key order included. */
export const isCanonical = (value: unknown): value is AgentEvent.AgentEvent => (canonical ??= compile(AgentEvent.AgentEvent.ast))(value)

/**
 * An event as its log line (no newline): `JSON.stringify` when the event is canonical, else the
 * schema's encoding. `undefined` for a value that is not a valid event.
 */
export const encodeLine = (event: AgentEvent.AgentEvent): string | undefined => {
  if (isCanonical(event)) return JSON.stringify(event)
  try {
    return AgentEvent.encodeJson(event)
  } catch {
    return undefined
  }
}

/**
 * Writes `text` as a JSON string at `at` and returns where it ends. Printable ASCII but `"` and `\\`
 * (what JSON leaves as it is, one byte a character) is copied code unit by code unit; a string with
 * anything else goes through `JSON.stringify` instead. `buffer` must have room for 6 bytes per code
 * unit, plus 2 (an escape such as `\\u001f` takes 6).
 */
const putString = (buffer: Buffer, at: number, text: string): number => {
  const start = at
  buffer[at++] = 0x22
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) return start + buffer.write(JSON.stringify(text), start, "utf8")
    buffer[at++] = c
  }
  buffer[at++] = 0x22
  return at
}

/** Copies `bytes` at `at` and returns where they end. */
const putBytes = (buffer: Buffer, at: number, bytes: Uint8Array): number => {
  buffer.set(bytes, at)
  return at + bytes.length
}

/** Writes a positive safe integer's decimal digits at `at` and returns where they end. */
const putInteger = (buffer: Buffer, at: number, n: number): number => {
  let digits = 1
  for (let rest = n; rest >= 10; rest = Math.floor(rest / 10)) digits++
  const end = at + digits
  for (let i = end - 1, rest = n; i >= at; i--, rest = Math.floor(rest / 10)) buffer[i] = 0x30 + (rest % 10)
  return end
}

const idKey = Buffer.from(`{"id":`, "utf8")
const lineEnd = Buffer.from("}}\n", "utf8")

/**
 * The lines of a batch of one turn's deltas as UTF-8 bytes, each line ending in a newline: byte for
 * byte what the schema writes for each (`JSON.stringify` of the event with its keys in the schema's
 * order), written straight into one buffer. Whatever object it is given, it writes only the fields
 * of a delta, each checked for its type first, so it needs no trust in who built the batch. The part of the line every delta of the batch shares (session, turn, timestamp, type)
 * is encoded once; the id, sequence and text of each are written byte by byte, a string with
 * characters JSON escapes through `JSON.stringify`. Nothing is allocated per line: a turn streams
 * thousands of deltas while its events are still young, and every string made here would be copied
 * by the scavenges that follow. (The loops are module functions taking the buffer as an argument, so
 * the compiler keeps it in a register.) A streamed response is most of what a log holds: this is
 * its hot path. `undefined` when the batch is not such a run — another event type, a text that is
 * not a string, another turn or timestamp, a line over `maxLineBytes` — and each event then goes
 * through {@link encodeLine}.
 */
export const encodeDeltaRun = (events: ReadonlyArray<AgentEvent.AgentEvent>, maxLineBytes: number): Uint8Array | undefined => {
  const first = events[0]
  // A run is of one type: text deltas, or thinking deltas (the same `{text}` payload).
  if (first === undefined || (first.type !== "model.delta" && first.type !== "model.thinking_delta")) return undefined
  const { sessionId, timestamp, turnId, type } = first
  if (typeof sessionId !== "string" || typeof timestamp !== "string" || typeof turnId !== "string") return undefined
  // The batch's shape first, in one cheap pass: a mixed batch (deltas, then a tool call) is encoded
  // line by line once, not here and then again.
  for (const event of events) {
    if (
      event.type !== type || typeof (event.payload as { readonly text?: unknown }).text !== "string" || typeof event.id !== "string" ||
      event.sessionId !== sessionId || event.turnId !== turnId || event.timestamp !== timestamp ||
      !Number.isSafeInteger(event.sequence) || event.sequence < 1
    ) return undefined
  }
  // The keys in the schema's order (the order the engine builds them in): id, sessionId, turnId,
  // sequence, timestamp, type, payload.
  const afterId = Buffer.from(`,"sessionId":${JSON.stringify(sessionId)},"turnId":${JSON.stringify(turnId)},"sequence":`, "utf8")
  const afterSequence = Buffer.from(`,"timestamp":${JSON.stringify(timestamp)},"type":"${type}","payload":{"text":`, "utf8")
  const fixed = idKey.length + afterId.length + 16 + afterSequence.length + lineEnd.length
  let buffer = Buffer.allocUnsafe(events.length * (fixed + 64))
  let at = 0
  for (const event of events) {
    const { id, payload: { text } } = event as AgentEvent.AgentEvent & { readonly type: "model.delta" | "model.thinking_delta" }
    const room = fixed + 6 * (id.length + text.length) + 4
    if (at + room > buffer.length) {
      const grown = Buffer.allocUnsafe(Math.max(buffer.length * 2, at + room))
      buffer.copy(grown, 0, 0, at)
      buffer = grown
    }
    const start = at
    at = putBytes(buffer, at, idKey)
    at = putString(buffer, at, id)
    at = putBytes(buffer, at, afterId)
    at = putInteger(buffer, at, event.sequence)
    at = putBytes(buffer, at, afterSequence)
    at = putString(buffer, at, text)
    at = putBytes(buffer, at, lineEnd)
    // A line the store could not read back is never written: the line-by-line path says which and why.
    if (at - start - 1 > maxLineBytes) return undefined
  }
  return buffer.subarray(0, at)
}

/**
 * A parsed line of a log of `version` as a current event: as it is when canonical (the fast path
 * of every line this library wrote), else migrated and decoded by the schema.
 */
export const fromParsed = (raw: unknown, version: number): Either.Either<AgentEvent.AgentEvent, string> => {
  if (version === LogFormat.currentVersion && isCanonical(raw)) return Either.right(raw)
  return Either.flatMap(
    LogFormat.migrate(version, raw),
    (migrated) => Either.mapLeft(AgentEvent.decodeUnknown(migrated), () => unknownType(migrated) ?? "not a valid event")
  )
}

const knownTypes: ReadonlySet<string> = new Set(AgentEvent.eventTypes)

/**
 * What a line whose `type` this version does not know says: most likely an event of a newer
 * effect-agent (which `repair` would drop, and every later event with it), not damage. Named only
 * when it looks like an event type (it is shown on a terminal).
 */
export const unknownTypePrefix = "not a valid event: its type"

const unknownType = (value: unknown): string | undefined => {
  const type = typeof value === "object" && value !== null ? (value as { readonly type?: unknown }).type : undefined
  return typeof type === "string" && /^[a-z][a-z0-9_.]{0,63}$/.test(type) && !knownTypes.has(type)
    ? `${unknownTypePrefix} ${type} is unknown to this version (written by a newer effect-agent?)`
    : undefined
}

/** Decodes an event line of a log of `version`. */
export const decodeLine = (text: string, version: number): Either.Either<AgentEvent.AgentEvent, string> => {
  let raw: unknown
  try {
    raw = JSON.parse(text)
  } catch {
    return Either.left("not a valid event")
  }
  return fromParsed(raw, version)
}
