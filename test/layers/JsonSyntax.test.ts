/**
 * Where a JSON text stops being JSON (JsonSyntax.locate): line, column, the problem in words and the
 * line, for each kind of fault; nothing for a valid text; no recursion on a deep one.
 */
import { describe, expect, it } from "vitest"
import * as JsonSyntax from "../../src/layers/settings/JsonSyntax.js"

describe("JsonSyntax.locate", () => {
  it("names each kind of fault at its line and column", () => {
    const cases: ReadonlyArray<readonly [string, string]> = [
      ["{\"a\": 1,}", "1:9 a comma before '}' (JSON allows no trailing comma)"],
      ["[1, 2,]", "1:7 a comma before ']' (JSON allows no trailing comma)"],
      ["{\n  a: 1\n}", "2:3 expected a property name in double quotes, found 'a'"],
      ["{\"a\" 1}", "1:6 expected ':' after a property name, found '1'"],
      ["{\"a\": 1 \"b\": 2}", "1:9 expected ',' or '}' after a property, found '\"'"],
      ["[1 2]", "1:4 expected ',' or ']' after an element, found '2'"],
      ["{\"a\": 'x'}", "1:7 a string in single quotes (JSON takes double quotes)"],
      ["{\"a\": \"x\ny\"}", "1:9 a line break inside a string (write \\n)"],
      ["{\"a\": \"\\q\"}", "1:8 an unknown escape \\q in a string"],
      ["{\"a\": \"open", "1:7 a string that is never closed"],
      ["{\"a\": [", "1:8 the file ends too early"],
      ["{} {}", "1:4 '{' after the end of the JSON value"],
      ["", "1:1 the file ends too early"],
      ["{\"a\": tru}", "1:7 expected a value, found 't'"]
    ]
    for (const [text, expected] of cases) {
      expect(() => JSON.parse(text), text).toThrow()
      const fault = JsonSyntax.locate(text)
      expect(fault && `${fault.line}:${fault.column} ${fault.problem}`, JSON.stringify(text)).toBe(expected)
    }
  })

  it("a valid text has none; a text nested 200,000 deep is walked without recursion", () => {
    expect(JsonSyntax.locate("{\"a\": [1, -2.5e3, true, null, \"\\u00e9\\n\"]}")).toBeUndefined()
    const deep = "[".repeat(200_000) + "]".repeat(199_999) + ","
    expect(JsonSyntax.locate(deep)).toMatchObject({ line: 1, column: 400_001, problem: "the file ends too early" })
  })

  it("the line is cut around the column and its controls escaped", () => {
    const text = `{"a": "${"x".repeat(200)}", \x1b[31m}`
    const fault = JsonSyntax.locate(text)!
    expect(fault.column).toBe(211)
    expect(fault.excerpt).not.toContain("\x1b")
    expect(fault.excerpt).toMatch(/^…x+", \\x1b\[31m}$/)
    expect(JsonSyntax.parse(text, "f.json")).toEqual({ ok: false, message: `f.json:1:211: not valid JSON: expected a property name in double quotes, found '\\x1b': ${fault.excerpt}` })
  })
})
