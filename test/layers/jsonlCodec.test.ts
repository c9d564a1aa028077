/**
 * The JSONL store's fast codec (EventCodec) against the schema it stands in for: the same bytes
 * written, the same events read, the same lines refused — for generated events, the same events
 * with their keys reordered or an extra key, and mangled lines. And a log holding a mangled line
 * fails reading at that line.
 */
import { mkdirSync, writeFileSync } from "node:fs"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Arbitrary from "effect/Arbitrary"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as FastCheck from "effect/FastCheck"
import * as Schema from "effect/Schema"
import type * as SchemaAST from "effect/SchemaAST"
import * as AgentEvent from "../../src/domain/AgentEvent.js"
import * as EventCodec from "../../src/layers/jsonl/EventCodec.js"
import * as JsonlEventStore from "../../src/layers/JsonlEventStore.js"
import * as Package from "../../src/index.js"
import { collect, tempDir } from "../helpers.js"

const anyEvent = Arbitrary.make(AgentEvent.AgentEvent)

/** What the schema makes of a line. */
const bySchema = (line: string) =>
  Either.flatMap(Either.try(() => JSON.parse(line) as unknown), (raw) => AgentEvent.decodeUnknown(raw))

/** The same event with the keys of its structs (at every level) in another order; free JSON (`args`) is data, kept as it is. */
const reorder = (value: unknown, seed: number): unknown => {
  if (Array.isArray(value)) return value.map((v) => reorder(v, seed))
  if (typeof value !== "object" || value === null) return value
  const entries = Object.entries(value)
  const rotated = entries.length === 0 ? entries : [...entries.slice(seed % entries.length), ...entries.slice(0, seed % entries.length)]
  // JSON values (a call's args, a listed tool's input schema) are kept as they are, key order included.
  return Object.fromEntries(rotated.map(([k, v]) => [k, k === "args" || k === "inputSchema" ? v : reorder(v, seed)]))
}

/** Ways to damage a line. */
const mangle = (line: string, at: number, what: number): string => {
  const i = at % Math.max(1, line.length)
  const raw = JSON.parse(line) as Record<string, unknown>
  switch (what % 6) {
    case 0:
      return line.slice(0, i) + line.slice(i + 1)
    case 1:
      return line.slice(0, i) + "\"" + line.slice(i)
    case 2: {
      const keys = Object.keys(raw)
      const key = keys[i % keys.length]!
      return JSON.stringify({ ...raw, [key]: [1, "x", null, -1, 1.5, {}][at % 6] })
    }
    case 3:
      return JSON.stringify({ ...raw, type: AgentEvent.eventTypes[at % AgentEvent.eventTypes.length] })
    case 4: {
      const payload = raw.payload as Record<string, unknown>
      const keys = Object.keys(payload)
      if (keys.length === 0) return JSON.stringify({ ...raw, payload: 1 })
      const { [keys[i % keys.length]!]: _, ...rest } = payload
      return JSON.stringify({ ...raw, payload: rest })
    }
    default:
      return JSON.stringify({ ...raw, sequence: [0, -3, 2.5, "7"][at % 4] })
  }
}

describe("the JSONL codec agrees with the schema", () => {
  it("property: a valid event is written byte for byte as the schema writes it, and read back as the schema reads it", () =>
    FastCheck.assert(
      FastCheck.property(anyEvent, FastCheck.nat(), (event, seed) => {
        const line = AgentEvent.encodeJson(event)
        expect(EventCodec.encodeLine(event)).toBe(line)
        // Keys in another order, or a key the schema does not know: still the schema's bytes.
        expect(EventCodec.encodeLine(reorder(event, seed) as AgentEvent.AgentEvent)).toBe(line)
        expect(EventCodec.encodeLine({ ...event, extra: seed } as unknown as AgentEvent.AgentEvent)).toBe(line)
        const decoded = EventCodec.decodeLine(line, 1)
        expect(decoded).toEqual(bySchema(line))
        // The lines this library writes take the fast path.
        expect(EventCodec.isCanonical(JSON.parse(line))).toBe(true)
        const reordered = JSON.stringify(reorder(JSON.parse(line), seed))
        expect(EventCodec.decodeLine(reordered, 1)).toEqual(bySchema(reordered))
      }),
      { numRuns: 400 }
    ))

  it("property: a mangled line is refused exactly when the schema refuses it, and otherwise read as the schema reads it", () =>
    FastCheck.assert(
      FastCheck.property(anyEvent, FastCheck.nat(), FastCheck.nat(), (event, at, what) => {
        const line = mangle(AgentEvent.encodeJson(event), at, what)
        const fast = EventCodec.decodeLine(line, 1)
        const slow = bySchema(line)
        expect(Either.isLeft(fast)).toBe(Either.isLeft(slow))
        if (Either.isRight(fast) && Either.isRight(slow)) expect(fast.right).toEqual(slow.right)
      }),
      { numRuns: 600 }
    ))

  it("a turn's cost (a number or null, beside usage) takes the fast path; a negative or non-number cost does not", () => {
    const completed = (payload: Record<string, unknown>) =>
      ({ id: "evt_1", sessionId: "s", turnId: "t", sequence: 1, timestamp: "1970-01-01T00:00:00.000Z", type: "turn.completed", payload }) as unknown
    const usage = { inputTokens: 1, outputTokens: 2 }
    expect(EventCodec.isCanonical(completed({ stopReason: "final", usage, cost: 0.5 }))).toBe(true)
    expect(EventCodec.isCanonical(completed({ stopReason: "final", usage, cost: null, costUnknown: "m" }))).toBe(true)
    expect(EventCodec.isCanonical(completed({ stopReason: "final", usage, cost: -1 }))).toBe(false)
    expect(EventCodec.isCanonical(completed({ stopReason: "final", usage, cost: "0.5" }))).toBe(false)
  })

  it("every number refinement of the event schema read as bounds agrees with its own filter, and none is left unread", () => {
    // Every refinement in the event schema's AST, however deep.
    const refinements: Array<SchemaAST.Refinement> = []
    const seen = new Set<SchemaAST.AST>()
    const walk = (ast: SchemaAST.AST): void => {
      if (seen.has(ast)) return
      seen.add(ast)
      switch (ast._tag) {
        case "Refinement":
          refinements.push(ast)
          return walk(ast.from)
        case "TypeLiteral":
          return ast.propertySignatures.forEach((p) => walk(p.type))
        case "Union":
          return ast.types.forEach(walk)
        case "TupleType":
          return [...ast.elements.map((e) => e.type), ...ast.rest.map((r) => r.type)].forEach(walk)
        case "Suspend":
          return walk(ast.f())
        case "Transformation":
          walk(ast.from)
          return walk(ast.to)
      }
    }
    walk(AgentEvent.AgentEvent.ast)
    expect(refinements.length).toBeGreaterThan(0)
    const base = (ast: SchemaAST.AST): SchemaAST.AST => (ast._tag === "Refinement" ? base(ast.from) : ast)
    const values = [
      0, -0, 1, -1, 2, 0.5, -0.5, 1.5, 42, Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER + 1, -Number.MAX_SAFE_INTEGER, 2 ** 60, Number.MIN_VALUE,
      "1", "", "a".repeat(64), "0123456789abcdef".repeat(4), "0123456789ABCDEF".repeat(4), null, undefined, true
    ]
    for (const refinement of refinements) {
      // Refined numbers (counts, sequences, attempts) are read as bounds, checked inline.
      if (base(refinement)._tag === "NumberKeyword") expect(EventCodec.numberBounds(refinement)).toBeDefined()
      const bySchema = Schema.is(Schema.make(refinement))
      const check = EventCodec.checkOf(refinement)
      for (const value of values) expect([String(refinement), value, check(value)]).toEqual([String(refinement), value, bySchema(value)])
      // The schema takes NaN and the infinities as numbers; JSON has none, and the fast check leaves them to the schema.
      for (const value of [NaN, Infinity, -Infinity]) expect(check(value)).toBe(false)
    }
  })

  it("a refinement the check does not know keeps its own filter", () => {
    const even = Schema.Number.pipe(Schema.filter((n) => n % 2 === 0))
    expect(EventCodec.numberBounds(even.ast)).toBeUndefined()
    const check = EventCodec.checkOf(even.ast)
    expect([check(2), check(3), check("2")]).toEqual([true, false, false])
    // Effect's own bounds, told by their schema id, chained in any order.
    const chained = Schema.Number.pipe(Schema.greaterThanOrEqualTo(3), Schema.int(), Schema.greaterThan(5))
    const bounds = EventCodec.checkOf(chained.ast)
    expect([4, 5, 6, 6.5, 7].map(bounds)).toEqual([4, 5, 6, 6.5, 7].map(Schema.is(chained)))
  })

  it("an invalid event is never written: encodeLine refuses what the schema refuses", () => {
    const event = { ...AgentEvent.SessionCreated.make({ id: "e", sessionId: "s", sequence: 1, timestamp: "t", type: "session.created", payload: { cwd: "/", client: "test" } }) }
    expect(EventCodec.encodeLine({ ...event, sequence: 0 } as AgentEvent.AgentEvent)).toBeUndefined()
    expect(EventCodec.encodeLine({ ...event, payload: { cwd: "/", client: "nobody" } } as unknown as AgentEvent.AgentEvent)).toBeUndefined()
    expect(EventCodec.encodeLine({ ...event, type: "no.such" } as unknown as AgentEvent.AgentEvent)).toBeUndefined()
  })

  it("a delta is written as the schema writes it, and only while its text is a string", () => {
    const delta = { id: "evt_1", sessionId: "sess_1", turnId: "turn_1", sequence: 3, timestamp: "t", type: "model.delta", payload: { text: "h\"i\u0000" } } as const
    expect(EventCodec.encodeLine(delta)).toBe(AgentEvent.encodeJson(delta))
    // A provider handing over something else than text: refused.
    expect(EventCodec.encodeLine({ ...delta, payload: { text: 42 } } as unknown as AgentEvent.AgentEvent)).toBeUndefined()
  })

  it("a batch of deltas the engine built: sequences of any length of digits, and texts longer than the buffer first made, as JSON.stringify writes them", () => {
    const sequences = [9, 10, 99, 100, 1_000, 12_345_678_901_234, Number.MAX_SAFE_INTEGER]
    const texts = ["", "plain", "\u0001".repeat(5_000), "é".repeat(3_000), "\ud800 lone", "a\"b\\c", "x".repeat(20_000)]
    const deltas = sequences.map((sequence, i) => ({ id: `evt_${i}`, sessionId: "sess_1", turnId: "turn_1", sequence, timestamp: "t", type: "model.delta" as const, payload: { text: texts[i]! } }))
    const bytes = EventCodec.encodeDeltaRun(deltas, 1 << 20)
    expect(Buffer.from(bytes!).toString("utf8")).toBe(deltas.map((d) => JSON.stringify(d) + "\n").join(""))
  })

  it("the engine's mark is not part of the package, and a run with a malformed envelope is never written as bytes", () => {
    // A batch marked by anyone could skip the schema check: the mark is internal, not exported.
    expect(Object.keys(Package.EventStore)).not.toContain("markBuilt")
    expect(JSON.stringify(Object.keys(Package)).includes("BuiltBatches")).toBe(false)
    const delta = { id: "evt_1", sessionId: "sess_1", turnId: "turn_1", sequence: 2, timestamp: "t", type: "model.delta" as const, payload: { text: "x" } }
    const { turnId: _turnId, ...noTurn } = delta
    expect(EventCodec.encodeDeltaRun([noTurn as unknown as AgentEvent.AgentEvent], 1 << 20)).toBeUndefined()
    expect(EventCodec.encodeDeltaRun([{ ...delta, timestamp: 1 } as unknown as AgentEvent.AgentEvent], 1 << 20)).toBeUndefined()
  })

  it("property: a batch of text or thinking deltas the engine built is encoded to the bytes of JSON.stringify of each, or left to encodeLine", () =>
    FastCheck.assert(
      FastCheck.property(
        FastCheck.array(FastCheck.oneof(FastCheck.string(), FastCheck.fullUnicodeString(), FastCheck.string({ unit: "binary" })), { minLength: 1, maxLength: 20 }),
        FastCheck.oneof(FastCheck.constant("evt_01JDX8ABCDEF"), FastCheck.string({ minLength: 1 })),
        FastCheck.constantFrom("model.delta" as const, "model.thinking_delta" as const),
        (texts, id, type) => {
          const deltas = texts.map((text, i) => ({ id: `${id}${i}`, sessionId: "sess_1", turnId: "turn_\"1", sequence: i + 2, timestamp: "t", type, payload: { text } }))
          const bytes = EventCodec.encodeDeltaRun(deltas, 1 << 20)
          expect(Buffer.from(bytes!).toString("utf8")).toBe(deltas.map((d) => JSON.stringify(d) + "\n").join(""))
          // Exactly what the schema writes for each.
          expect(Buffer.from(bytes!).toString("utf8")).toBe(deltas.map((d) => AgentEvent.encodeJson(d) + "\n").join(""))
          // Not a run of one turn's deltas, or a line too long: left to the line-by-line path.
          expect(EventCodec.encodeDeltaRun([...deltas, { ...deltas[0]!, turnId: "turn_2" }], 1 << 20)).toBeUndefined()
          expect(EventCodec.encodeDeltaRun([...deltas, { ...deltas[0]!, type: "user.message", payload: { content: "x" } } as AgentEvent.AgentEvent], 1 << 20)).toBeUndefined()
          expect(EventCodec.encodeDeltaRun(deltas, 40)).toBeUndefined()
          // A run is of one type: text and thinking deltas mixed go line by line.
          const other = type === "model.delta" ? "model.thinking_delta" : "model.delta"
          expect(EventCodec.encodeDeltaRun([...deltas, { ...deltas[0]!, type: other }], 1 << 20)).toBeUndefined()
        }
      ),
      { numRuns: 300 }
    ))

  it.scoped("property: a log with a line the schema refuses fails reading at that line, in both recovery modes", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      mkdirSync(`${dataDir}/sessions`, { recursive: true })
      const strict = yield* JsonlEventStore.make({ dataDir, recovery: "strict" })
      const skip = yield* JsonlEventStore.make({ dataDir })
      let n = 0
      yield* Effect.promise(() =>
        FastCheck.assert(
          FastCheck.asyncProperty(FastCheck.array(anyEvent, { minLength: 2, maxLength: 6 }), FastCheck.nat(), FastCheck.nat(), async (generated, at, what) => {
            const sessionId = `codec_${++n}`
            const events = generated.map((e, i) => ({ ...e, sessionId, sequence: i + 1 }) as AgentEvent.AgentEvent)
            const bad = at % (events.length - 1)
            const lines = events.map((e) => AgentEvent.encodeJson(e))
            lines[bad] = mangle(lines[bad]!, at, what)
            if (Either.isRight(bySchema(lines[bad]!))) return
            writeFileSync(`${dataDir}/sessions/${sessionId}.jsonl`, `{"format":"effect-agent/events","version":1}\n` + lines.join("\n") + "\n")
            for (const store of [strict, skip]) {
              const read = await Effect.runPromise(Effect.either(collect(store.read(sessionId))))
              expect(Either.isLeft(read) && read.left).toMatchObject({ reason: "corrupt", line: bad + 2 })
            }
          }),
          { numRuns: 100 }
        )
      )
    }).pipe(Effect.provide(NodeContext.layer)))
})
