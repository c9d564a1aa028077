/**
 * Every relative link of README.md and docs/*.md resolves: to a file of the repository, and to a
 * heading of it when the link names an anchor (GitHub's ids: lower case, punctuation dropped, spaces
 * as hyphens, `-1`, `-2` … for repeats). Links inside code blocks and to other sites are not read.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"
import { describe, expect, it } from "vitest"

const root = resolve(import.meta.dirname, "..")
const pages = ["README.md", ...readdirSync(join(root, "docs")).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`)]

/** The text outside fenced code blocks and inline code spans. */
const prose = (markdown: string) => markdown.replace(/^```[\s\S]*?^```/gm, "").replace(/`[^`\n]*`/g, "")

/** GitHub's anchor ids of a Markdown file's headings. */
const anchorsOf = (markdown: string): Set<string> => {
  const seen = new Map<string, number>()
  const ids = new Set<string>()
  for (const [, text] of markdown.replace(/^```[\s\S]*?^```/gm, "").matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = text!.toLowerCase().replace(/[^\p{L}\p{N}\p{M}\s_-]/gu, "").replace(/\s/g, "-")
    const count = seen.get(base) ?? 0
    seen.set(base, count + 1)
    ids.add(count === 0 ? base : `${base}-${count}`)
  }
  return ids
}

const brokenLinks = (page: string): Array<string> => {
  const text = readFileSync(join(root, page), "utf8")
  const broken: Array<string> = []
  for (const [, target] of prose(text).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target!)) continue
    const [path, anchor] = target!.split("#", 2) as [string, string | undefined]
    const file = path === "" ? join(root, page) : resolve(dirname(join(root, page)), decodeURIComponent(path))
    if (!file.startsWith(root + "/") && file !== root) {
      broken.push(`${target}: outside the repository`)
      continue
    }
    if (!existsSync(file)) {
      broken.push(`${target}: no ${relative(root, file)}`)
      continue
    }
    if (anchor !== undefined && anchor !== "" && statSync(file).isFile() && file.endsWith(".md") && !anchorsOf(readFileSync(file, "utf8")).has(anchor)) {
      broken.push(`${target}: no heading #${anchor} in ${relative(root, file)}`)
    }
  }
  return broken
}

describe("the docs' relative links", () => {
  it.each(pages)("%s: every one resolves to a file and heading of the repository", (page) => {
    expect(brokenLinks(page)).toEqual([])
  })

  // README.md and docs/server.md sent readers to the team's design folder, which neither the
  // repository nor the package holds; docs/contract.md says what users rely on.
  it.each(pages)("%s names no design document outside the repository", (page) => {
    expect(readFileSync(join(root, page), "utf8").match(/\b(CONTRACT|ARCHITECTURE)\.md\b/g) ?? []).toEqual([])
  })
})

describe("docs/embedding.md", () => {
  // It put the basics after the notes on hostile model streams: a reader met `retry-after: 999999`
  // before learning how to pick a store.
  it("goes from install to errors in the order a new embedder needs, the deep notes in a page of their own", () => {
    const headings = [...readFileSync(join(root, "docs/embedding.md"), "utf8").matchAll(/^## (.+)$/gm)].map((m) => m[1]!)
    expect(headings.slice(0, 7)).toEqual([
      "Install",
      "A first agent, on the scripted model",
      "Real models",
      "Stores",
      "Tools, permissions and approvals",
      "Streaming and cancellation",
      "Failures are typed, and kept apart"
    ])
    expect(readFileSync(join(root, "docs/embedding.md"), "utf8")).not.toContain("Unusual streams")
    expect(readFileSync(join(root, "docs/embedding-notes.md"), "utf8")).toContain("## How model streams are read")
  })
})
