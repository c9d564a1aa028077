/**
 * The commands README.md and docs/*.md show a user, read from the Markdown: the lines of every
 * `sh` block, the `$ ` lines of an untagged block (a transcript: the command, then what it prints),
 * and inline code spans that run the CLI. test/cli/docCommands.integration.test.ts runs them.
 */
import { readdirSync, readFileSync } from "node:fs"
import { join, resolve } from "node:path"

export const root = resolve(import.meta.dirname, "..")

/** README.md and every page of docs/. */
export const pages: ReadonlyArray<string> = [
  "README.md",
  ...readdirSync(join(root, "docs")).filter((file) => file.endsWith(".md")).sort().map((file) => `docs/${file}`)
]

export const read = (page: string): string => readFileSync(join(root, page), "utf8")

/** A fenced block: its language (`""` untagged), its first line's number, its lines unindented. */
export interface Block {
  readonly page: string
  readonly line: number
  readonly lang: string
  readonly text: string
}

/** Every fenced block of `page`, indented under a list item or not. */
export const blocksOf = (page: string): Array<Block> =>
  [...read(page).matchAll(/^( *)```(\w*)\n([\s\S]*?)^ *```/gm)].map((match) => ({
    page,
    line: read(page).slice(0, match.index).split("\n").length,
    lang: match[2]!,
    text: match[3]!.split("\n").map((line) => line.slice(match[1]!.length)).join("\n").replace(/\n$/, "")
  }))

/** A line a user types (lines ending in `\` joined), its comment kept: the shell drops it. */
export const commandLines = (block: Block): Array<string> => {
  const lines = block.lang === "sh"
    ? block.text.replace(/\\\n\s*/g, "").split("\n")
    : block.text.split("\n").filter((line) => line.startsWith("$ ")).map((line) => line.slice(2))
  return lines.filter((line) => line.trim() !== "" && !line.trimStart().startsWith("#"))
}

/** The blocks a user runs: `sh` ones, and untagged transcripts (`$ command` lines). */
export const commandBlocks = (): Array<Block> =>
  pages.flatMap(blocksOf).filter((block) => block.lang === "sh" || (block.lang === "" && commandLines(block).length > 0))

/** Inline code spans of the prose (fenced blocks left out), with their page. */
export const inlineSpans = (): Array<{ readonly page: string; readonly span: string }> =>
  pages.flatMap((page) =>
    [...read(page).replace(/^ *```[\s\S]*?^ *```/gm, "").replace(/\n/g, " ").matchAll(/`([^`]+)`/g)].map((match) => ({ page, span: match[1]! }))
  )

/**
 * `npm run agent -- …` (with or without `-s`) and `npx effect-agent …` as the CLI they run:
 * `effect-agent …` — package.json's `agent` script is `node dist/cli/bin.js`, the package's bin.
 */
export const asInstalled = (line: string): string =>
  line.replace(/\bnpm run (?:-s )?agent -- /g, "effect-agent ").replace(/\bnpx effect-agent /g, "effect-agent ")

/**
 * The CLI invocations of a shell line: for each `effect-agent` in it (inside `$(…)` too), its words
 * up to the end of its command (`|`, `&&`, `;`, a redirection or a comment). Quoted text is one word,
 * `Q`, and a placeholder (`<id>`) the word `ARG`.
 */
export const invocations = (line: string): Array<ReadonlyArray<string>> => {
  const text = asInstalled(line).replace(/\s#.*$/, "").replace(/<[\w.-]+>/g, "ARG")
  const substituted = [...text.matchAll(/\$\(([^)]*)\)/g)].map((match) => match[1]!)
  const commands = [text.replace(/\$\([^)]*\)/g, "SUB"), ...substituted]
    .flatMap((command) => command.replace(/'[^']*'|"[^"]*"/g, "Q").split(/\||&&|;|>|</))
  return commands.flatMap((command) => {
    const words = command.split(/\s+/).filter((word) => word !== "")
    const at = words.indexOf("effect-agent")
    return at >= 0 ? [words.slice(at + 1)] : []
  })
}

/** The `--flags` (and `-c`) an invocation names, `[--at <n>]` brackets and `=value` dropped. */
export const flagsOf = (words: ReadonlyArray<string>): Array<string> =>
  words.map((word) => word.replace(/^\[+/, "").replace(/[=\]].*$/, "")).filter((word) => /^--?[a-z]/.test(word))
