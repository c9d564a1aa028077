/**
 * The model's answers as Markdown on a terminal, line by line as they stream (as Codex does): a
 * line is shown once it is complete, styled by what it is — a heading, a list item, a quote, a rule,
 * a line of a fenced code block — and its inline Markdown (bold, italics, code, links, strikethrough)
 * read by `marked`'s own lexer. The text given is already made safe for the terminal (`Render`
 * escapes control characters first), so the only escape sequences written are the styles added here.
 *
 * @since 0.6.0
 */
import type { Lexer as MarkedLexer, Token } from "marked"
import { MarkdownLimits } from "../index.js"

const style = (open: number, close: number) => (text: string) => `\u001b[${open}m${text}\u001b[${close}m`
const bold = style(1, 22)
const dim = style(2, 22)
const italic = style(3, 23)
const underline = style(4, 24)
const strike = style(9, 29)
const cyan = style(36, 39)
const yellow = style(33, 39)

/** `marked`'s lexer: loaded with the first answer rendered, not with every command of the CLI. */
export type Lexer = typeof MarkedLexer

/** Loads the lexer. */
export const loadLexer = (): Promise<Lexer> => import("marked").then((marked) => marked.Lexer)

/** Inline tokens as styled text. Raw HTML is shown as the text it is. */
const inline = (tokens: ReadonlyArray<Token>): string =>
  tokens.map((token): string => {
    switch (token.type) {
      case "strong":
        return bold(inline(token.tokens ?? []))
      case "em":
        return italic(inline(token.tokens ?? []))
      case "del":
        return strike(inline(token.tokens ?? []))
      case "codespan":
        return cyan(token.text)
      case "link": {
        const label = inline(token.tokens ?? [])
        return token.href === token.text || token.href === `mailto:${token.text}` ? underline(label) : `${underline(label)} ${dim(`(${token.href})`)}`
      }
      case "image":
        return dim(`[image: ${token.text}]`)
      case "br":
        return ""
      default:
        return "tokens" in token && Array.isArray(token.tokens) && token.tokens.length > 0 ? inline(token.tokens) : token.raw
    }
  }).join("")

/** The longest line styled (characters); a longer one is printed unstyled. */
export const longestStyled = MarkdownLimits.longestLine

/** A renderer of one answer's lines: it remembers whether a code block is open. */
export const make = (lexer: Lexer) => {
  let fence: string | undefined
  const styled = (text: string) => inline(lexer.lexInline(text))

  /** One complete line (without its newline), styled. */
  const line = (text: string): string => {
    // The model writes the line: marked's inline rules and the patterns below are superlinear on
    // some long lines (100 KB of `_a` takes minutes, on the event loop), and on runs of emphasis
    // delimiters (`**a_` × 1,000: 0.4 s a line). Such a line is shown as it is, in the code block's
    // colour when one is open (see MarkdownLimits).
    if (text.length > longestStyled) return fence === undefined ? text : yellow(text)
    const fenceMark = /^\s*(`{3,}|~{3,})/.exec(text)?.[1]
    if (fence !== undefined) {
      if (fenceMark !== undefined && fenceMark[0] === fence[0] && fenceMark.length >= fence.length && text.trim() === fenceMark) {
        fence = undefined
        return dim(text)
      }
      return yellow(text)
    }
    if (fenceMark !== undefined) {
      fence = fenceMark
      return dim(text)
    }
    if (!MarkdownLimits.lineStyleable(text)) return text
    const heading = /^(#{1,6})\s+(.*?)\s*#*\s*$/.exec(text)
    if (heading !== null) return heading[1]!.length === 1 ? bold(underline(styled(heading[2]!))) : bold(styled(heading[2]!))
    if (/^\s{0,3}([-*_])(\s*\1){2,}\s*$/.test(text)) return dim("─".repeat(40))
    const quote = /^\s{0,3}>\s?(.*)$/.exec(text)
    if (quote !== null) return `${dim("│")} ${italic(styled(quote[1]!))}`
    const item = /^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$/.exec(text)
    if (item !== null) {
      const [, indent, marker, rest] = item
      const task = /^\[([ xX])\]\s+(.*)$/.exec(rest!)
      const bullet = /\d/.test(marker!) ? marker! : "•"
      return task === null
        ? `${indent}${cyan(bullet)} ${styled(rest!)}`
        : `${indent}${cyan(bullet)} ${task[1] === " " ? "☐" : "☑"} ${styled(task[2]!)}`
    }
    return styled(text)
  }

  /** A new answer: a code block left open by the last one is closed. */
  const reset = () => {
    fence = undefined
  }

  return { line, reset }
}

/**
 * Text that arrives in pieces, handed on by whole lines: `push` gives the lines it completed (each
 * with its newline), rendered by `render`; the rest waits for its newline.
 */
export const lineBuffer = (render: (line: string) => string) => {
  let pending = ""
  return (text: string): string => {
    pending += text
    const end = pending.lastIndexOf("\n")
    if (end < 0) return ""
    const complete = pending.slice(0, end)
    pending = pending.slice(end + 1)
    return complete.split("\n").map((l) => `${render(l)}\n`).join("")
  }
}
