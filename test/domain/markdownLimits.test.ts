/**
 * What a UI may hand to a Markdown parser (`MarkdownLimits`): the shapes a hostile model can write
 * that make `marked` superlinear or overflow its recursion are refused; ordinary answers — code
 * blocks full of `*` and `_` among them — are not. The parse times behind the caps are in the
 * module's comment; nothing here is timed.
 */
import { describe, expect, it } from "@effect/vitest"
import { MarkdownLimits } from "../../src/index.js"

const answer = [
  "## Plan",
  "",
  "I'll change **two** files: `src/__init__.py` and *the* tests, ~~not~~ the docs.",
  "",
  "- first, the `parse_args` function",
  "  - then its `__call__`",
  "    1. one",
  "> a quote with _emphasis_",
  "",
  "```python",
  ...Array.from({ length: 200 }, (_, i) => `def f_${i}(*args, **kwargs): return a_b * c_d ** 2  # ~~`),
  "```",
  "",
  "| a_b | c*d |",
  "|-----|-----|",
  "| 1   | 2   |"
].join("\n")

describe("MarkdownLimits", () => {
  it("ordinary answers, code blocks full of delimiters included, may be styled", () => {
    expect(MarkdownLimits.styleable(answer)).toBe(true)
    expect(MarkdownLimits.styleable("")).toBe(true)
    for (const line of answer.split("\n")) expect(MarkdownLimits.lineStyleable(line)).toBe(true)
  })

  it("a paragraph with more emphasis delimiters than the cap is not (`**a_` runs: seconds to minutes for marked)", () => {
    expect(MarkdownLimits.styleable("**a_".repeat(8_000))).toBe(false)
    expect(MarkdownLimits.lineStyleable("**a_".repeat(1_000))).toBe(false)
    // Across the lines of one paragraph too; a blank line starts the count again.
    expect(MarkdownLimits.styleable("a*b\n".repeat(MarkdownLimits.maxDelimiters + 1))).toBe(false)
    expect(MarkdownLimits.styleable("a*b\n\n".repeat(MarkdownLimits.maxDelimiters + 1))).toBe(true)
    // At the cap it is styled.
    expect(MarkdownLimits.styleable("_".repeat(MarkdownLimits.maxDelimiters))).toBe(true)
    expect(MarkdownLimits.styleable("_".repeat(MarkdownLimits.maxDelimiters + 1))).toBe(false)
    // A fence left open runs to the end: what follows it is code, never parsed inline.
    expect(MarkdownLimits.styleable("```\n" + "**a_".repeat(8_000))).toBe(true)
    // A fence of another kind, or shorter, does not close it; an indented one (4 spaces) does not open one.
    expect(MarkdownLimits.styleable("````\n```\n" + "**a_".repeat(100) + "\n~~~~\n")).toBe(true)
    expect(MarkdownLimits.styleable("    ```\n" + "**a_".repeat(100))).toBe(false)
  })

  it("a line opening more containers than the cap is not (`> ` 2,000 deep overflows marked's recursion)", () => {
    expect(MarkdownLimits.styleable("> ".repeat(2_000) + "a")).toBe(false)
    expect(MarkdownLimits.styleable("- ".repeat(100) + "a")).toBe(false)
    expect(MarkdownLimits.styleable("1. ".repeat(100) + "a")).toBe(false)
    expect(MarkdownLimits.styleable(">- 1) ".repeat(20) + "a")).toBe(false)
    expect(MarkdownLimits.styleable("> ".repeat(MarkdownLimits.maxNesting) + "a")).toBe(true)
    expect(MarkdownLimits.styleable("> ".repeat(MarkdownLimits.maxNesting + 1) + "a")).toBe(false)
    expect(MarkdownLimits.lineStyleable("> ".repeat(2_000))).toBe(false)
    // Nesting built up over many lines (each opening a few) is ordinary.
    expect(MarkdownLimits.styleable(Array.from({ length: 100 }, (_, i) => `${"  ".repeat(i)}- item`).join("\n"))).toBe(true)
  })

  it("a line longer than the chat's limit is not styled on its own", () => {
    expect(MarkdownLimits.lineStyleable("b".repeat(MarkdownLimits.longestLine))).toBe(true)
    expect(MarkdownLimits.lineStyleable("b".repeat(MarkdownLimits.longestLine + 1))).toBe(false)
  })
})
