/**
 * Which tool input schemas are refused (src/layers/mcp/McpInputSchema.ts): only what no vendor
 * would take. A `$ref` in a keyword that holds data (`default`, `examples`, `enum`, …) is data, not
 * a reference; draft-04's `id` names anchors and changes the base as `$id` does.
 */
import { describe, expect, it } from "vitest"
import { problem } from "../../src/layers/mcp/McpInputSchema.js"

describe("McpInputSchema.problem", () => {
  // Before, the `$ref` check walked every object of the schema, data included: a tool taking an
  // OpenAPI fragment, with `examples: [{ $ref: "#/components/schemas/Pet" }]`, was left out.
  it.each([
    ["examples", { type: "object", properties: { schema: { type: "object", examples: [{ $ref: "#/components/schemas/Pet" }] } } }],
    ["example (OpenAPI)", { type: "object", properties: { schema: { type: "object", example: { $ref: "#/nowhere" } } } }],
    ["default", { type: "object", properties: { spec: { type: "object", default: { $ref: "#/definitions/Pet" } } } }],
    ["const", { type: "object", properties: { kind: { const: { $ref: "#x" } } } }],
    ["enum", { type: "object", properties: { kind: { enum: [{ $ref: "#/a" }, "b"] } } }],
    ["draft-04 anchor (id: \"#a\")", { type: "object", definitions: { a: { id: "#a", type: "string" } }, properties: { x: { $ref: "#a" } } }],
    ["draft-04 base change (nested id)", { type: "object", properties: { x: { id: "http://example.com/pet.json", definitions: { a: { type: "string" } }, properties: { y: { $ref: "#/definitions/a" } } } } }]
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
})
