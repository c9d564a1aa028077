/**
 * The chat's Markdown on a terminal (issue 23): each complete line styled by what it is, inline
 * Markdown through marked's lexer, code blocks kept verbatim, raw HTML shown as text; and the line
 * buffer that hands streamed text on by whole lines.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Markdown from "../../src/cli/Markdown.js"

const esc = "\u001b"

describe("Markdown on the terminal", () => {
  it("headings, emphasis, code, links, lists, quotes, rules and code blocks are styled; HTML stays text", async () => {
    const md = Markdown.make(await Markdown.loadLexer())
    expect(md.line("# Title")).toBe(`${esc}[1m${esc}[4mTitle${esc}[24m${esc}[22m`)
    expect(md.line("## Sub **x**")).toBe(`${esc}[1mSub ${esc}[1mx${esc}[22m${esc}[22m`)
    expect(md.line("a **bold** and *it* and `code` ~~no~~")).toBe(
      `a ${esc}[1mbold${esc}[22m and ${esc}[3mit${esc}[23m and ${esc}[36mcode${esc}[39m ${esc}[9mno${esc}[29m`
    )
    expect(md.line("see [docs](https://example.com/d)")).toBe(`see ${esc}[4mdocs${esc}[24m ${esc}[2m(https://example.com/d)${esc}[22m`)
    expect(md.line("- item **one**")).toBe(`${esc}[36m•${esc}[39m item ${esc}[1mone${esc}[22m`)
    expect(md.line("  2. second")).toBe(`  ${esc}[36m2.${esc}[39m second`)
    expect(md.line("- [x] done")).toBe(`${esc}[36m•${esc}[39m ☑ done`)
    expect(md.line("> quoted")).toBe(`${esc}[2m│${esc}[22m ${esc}[3mquoted${esc}[23m`)
    expect(md.line("---")).toBe(`${esc}[2m${"─".repeat(40)}${esc}[22m`)
    expect(md.line("<b>not markup</b> <script>x</script>")).toBe("<b>not markup</b> <script>x</script>")
    // A code block: its lines verbatim (no emphasis read inside), until the fence closes.
    expect(md.line("```ts")).toBe(`${esc}[2m\`\`\`ts${esc}[22m`)
    expect(md.line("const a = **b** // # not a heading")).toBe(`${esc}[33mconst a = **b** // # not a heading${esc}[39m`)
    expect(md.line("```")).toBe(`${esc}[2m\`\`\`${esc}[22m`)
    expect(md.line("**after**")).toBe(`${esc}[1mafter${esc}[22m`)
    // A block left open by an answer does not swallow the next one.
    md.line("~~~")
    md.reset()
    expect(md.line("*fresh*")).toBe(`${esc}[3mfresh${esc}[23m`)
  })

  it("a hostile model's long line is printed unstyled, at once (the inline rules are superlinear on it)", async () => {
    const md = Markdown.make(await Markdown.loadLexer())
    const underscores = "_a".repeat(100_000)
    expect(md.line(underscores)).toBe(underscores)
    const heading = `# ${" ".repeat(200_000)}x`
    expect(md.line(heading)).toBe(heading)
    // Up to the limit, a line is styled as any other.
    expect(md.line(`**${"b".repeat(Markdown.longestStyled - 4)}**`)).toBe(`${esc}[1m${"b".repeat(Markdown.longestStyled - 4)}${esc}[22m`)
    md.line("```")
    expect(md.line("c".repeat(Markdown.longestStyled + 1))).toBe(`${esc}[33m${"c".repeat(Markdown.longestStyled + 1)}${esc}[39m`)
    // Inside a code block nothing is parsed: a line full of delimiters is code as any other.
    expect(md.line("**a_".repeat(1_000))).toBe(`${esc}[33m${"**a_".repeat(1_000)}${esc}[39m`)
    md.line("```")
    // Short enough, but with more emphasis delimiters than the cap (`**a_` × 1,000 took marked 0.4 s a line).
    expect(md.line("**a_".repeat(1_000))).toBe("**a_".repeat(1_000))
    expect(md.line(`- ${"**a_".repeat(1_000)}`)).toBe(`- ${"**a_".repeat(1_000)}`)
  })

  it("the line buffer hands on whole lines only, in order, across chunk boundaries", () => {
    const push = Markdown.lineBuffer((line) => `[${line}]`)
    expect(push("he")).toBe("")
    expect(push("llo\nwor")).toBe("[hello]\n")
    expect(push("ld\n\nlast")).toBe("[world]\n[]\n")
    expect(push("\n")).toBe("[last]\n")
  })
})
