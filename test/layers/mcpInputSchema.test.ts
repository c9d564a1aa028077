/**
 * Which tool input schemas are refused (src/layers/mcp/McpInputSchema.ts): only what no vendor
 * would take. A `$ref` in a keyword that holds data (`default`, `examples`, `enum`, …) is data, not
 * a reference; in a draft-04 document `id` names anchors and changes the base as `$id` does.
 */
import { describe, expect, it } from "vitest"
import { problem, withNumericBounds } from "../../src/layers/mcp/McpInputSchema.js"

const draft04 = "http://json-schema.org/draft-04/schema#"

describe("McpInputSchema.problem", () => {
  // Before, the `$ref` check walked every object of the schema, data included: a tool taking an
  // OpenAPI fragment, with `examples: [{ $ref: "#/components/schemas/Pet" }]`, was left out.
  it.each([
    ["examples", { type: "object", properties: { schema: { type: "object", examples: [{ $ref: "#/components/schemas/Pet" }] } } }],
    ["example (OpenAPI)", { type: "object", properties: { schema: { type: "object", example: { $ref: "#/nowhere" } } } }],
    ["default", { type: "object", properties: { spec: { type: "object", default: { $ref: "#/definitions/Pet" } } } }],
    ["const", { type: "object", properties: { kind: { const: { $ref: "#x" } } } }],
    ["enum", { type: "object", properties: { kind: { enum: [{ $ref: "#/a" }, "b"] } } }],
    ["draft-04 anchor (id: \"#a\")", { $schema: draft04, type: "object", definitions: { a: { id: "#a", type: "string" } }, properties: { x: { $ref: "#a" } } }],
    ["draft-04 base change (nested id)", { $schema: draft04, type: "object", properties: { x: { id: "http://example.com/pet.json", definitions: { a: { type: "string" } }, properties: { y: { $ref: "#/definitions/a" } } } } }]
  ] as const)("a valid schema with a $ref or id in %s is taken", (_, schema) => {
    expect(problem(schema as Record<string, unknown>)).toBeUndefined()
  })

  it.each([
    ["under a property named like a data keyword", { type: "object", properties: { default: { $ref: "#/definitions/missing" } } }],
    ["in a definition named like a data keyword", { type: "object", definitions: { examples: { $ref: "#/nowhere" } } }],
    ["in items", { type: "object", properties: { list: { type: "array", items: { $ref: "#/nowhere" } } } }],
    ["to an anchor named only inside data", { type: "object", properties: { s: { default: { $anchor: "a" } }, r: { $ref: "#a" } } }],
    ["beside a nested id that is only data", { type: "object", properties: { s: { default: { $id: "other.json" } }, r: { $ref: "#/nowhere" } } }]
  ] as const)("a $ref leading nowhere %s is still refused", (_, schema) => {
    expect(problem(schema as Record<string, unknown>)).toMatch(/leads nowhere/)
  })

  // reach44: `id` is an identifier in draft-04 only (draft-06 renamed it `$id`); a schema that does
  // not say draft-04 is read by vendors as 2020-12, where `id` is nothing. On main any string `id`
  // counted: `id: "#a"` made `$ref: "#a"` lead somewhere, and a nested `id` turned the check off.
  it.each([
    ["to an anchor only an id names", { type: "object", properties: { s: { id: "#a", type: "string" }, r: { $ref: "#a" } } }],
    ["beside a nested id (Jackson's draft-03 urn, under 2020-12)", {
      $schema: "https://json-schema.org/draft/2020-12/schema",
      type: "object",
      properties: { s: { id: "urn:jsonschema:com:example:Item", type: "object" }, r: { $ref: "#/definitions/missing" } }
    }]
  ] as const)("outside draft-04, a $ref leading nowhere %s is refused", (_, schema) => {
    expect(problem(schema as Record<string, unknown>)).toMatch(/leads nowhere/)
  })
})

describe("McpInputSchema.withNumericBounds", () => {
  // What zod-to-json-schema writes for `z.number().int().positive()` with any target but jsonSchema7
  // (Dokploy's and fizzy's MCP servers sent it under a 2020-12 `$schema`; Anthropic answered 400).
  const ttl = { type: "integer", exclusiveMinimum: true, minimum: 0, maximum: 9007199254740991 }

  it("writes draft-04's boolean bounds as numbers, and the tool is taken (on main it was left out: must be number)", () => {
    const schema = { $schema: "https://json-schema.org/draft/2020-12/schema", type: "object", properties: { ttl, ratio: { type: "number", exclusiveMaximum: true, maximum: 1, exclusiveMinimum: false, minimum: 0 } } }
    expect(problem(schema)).toMatch(/must be number/)
    const rewritten = withNumericBounds(schema)
    expect(rewritten.properties).toEqual({
      ttl: { type: "integer", exclusiveMinimum: 0, maximum: 9007199254740991 },
      ratio: { type: "number", exclusiveMaximum: 1, minimum: 0 }
    })
    expect(problem(rewritten)).toBeUndefined()
    // The server's schema itself is not changed.
    expect(schema.properties.ttl).toBe(ttl)
  })

  it("reaches every subschema, not data, and drops a true with no bound beside it", () => {
    const schema = {
      type: "object",
      properties: { list: { type: "array", items: { anyOf: [ttl, { type: "null" }] } }, exclusiveMinimum: { type: "boolean", default: { exclusiveMinimum: true } } },
      $defs: { n: { exclusiveMaximum: true } }
    }
    expect(withNumericBounds(schema)).toEqual({
      type: "object",
      properties: {
        list: { type: "array", items: { anyOf: [{ type: "integer", exclusiveMinimum: 0, maximum: 9007199254740991 }, { type: "null" }] } },
        exclusiveMinimum: { type: "boolean", default: { exclusiveMinimum: true } }
      },
      $defs: { n: {} }
    })
  })

  it("returns a schema with no boolean bound as it came", () => {
    const schema = { type: "object", properties: { n: { type: "integer", exclusiveMinimum: 0 } } }
    expect(withNumericBounds(schema)).toBe(schema)
  })
})
