// How the viewer shows what the model and the tools produced: answers as Markdown (model output is
// untrusted HTML, so it goes through DOMPurify with a short list of tags and attributes, never
// images, forms or styles), code blocks highlighted, edits as diffs, commands as terminal blocks.
// Bundled into the page by `npm run build` with the libraries it names.

import DOMPurify from "dompurify"
import hljs from "highlight.js/lib/core"
import bash from "highlight.js/lib/languages/bash"
import css from "highlight.js/lib/languages/css"
import diff from "highlight.js/lib/languages/diff"
import go from "highlight.js/lib/languages/go"
import javascript from "highlight.js/lib/languages/javascript"
import json from "highlight.js/lib/languages/json"
import markdown from "highlight.js/lib/languages/markdown"
import python from "highlight.js/lib/languages/python"
import rust from "highlight.js/lib/languages/rust"
import sql from "highlight.js/lib/languages/sql"
import typescript from "highlight.js/lib/languages/typescript"
import xml from "highlight.js/lib/languages/xml"
import yaml from "highlight.js/lib/languages/yaml"
import { Marked } from "marked"
import { Edit, markdownStyleable, RenderCache, visible, visibleProse } from "./viewer.js"
export { editDiff } from "./editDiff.js"

for (const [name, language] of Object.entries({ bash, css, diff, go, javascript, json, markdown, python, rust, sql, typescript, xml, yaml })) {
  hljs.registerLanguage(name, language)
}
hljs.registerAliases(["sh", "shell", "console", "zsh"], { languageName: "bash" })
hljs.registerAliases(["js", "jsx", "mjs", "cjs"], { languageName: "javascript" })
hljs.registerAliases(["ts", "tsx"], { languageName: "typescript" })
hljs.registerAliases(["html", "svg"], { languageName: "xml" })
hljs.registerAliases(["py"], { languageName: "python" })
hljs.registerAliases(["rs"], { languageName: "rust" })
hljs.registerAliases(["yml"], { languageName: "yaml" })
hljs.registerAliases(["md"], { languageName: "markdown" })

const escapeHtml = (text) => text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;", "'": "&#39;" })[c])

// highlight.js is superlinear on some code (32 KB of `0x` as TypeScript: 2.3 s; of `[[` as
// Markdown: 2.4 s; 16 KB: under 1 s), and a block still streaming is highlighted again at each
// render: a longer block is shown unhighlighted, and a block highlighted once is not highlighted again.
const longestHighlighted = 16 * 1024
const highlights = RenderCache.make()
const highlighted = (text, language) =>
  highlights.get(`${language}\n${text}`, () => hljs.highlight(text, { language, ignoreIllegals: true }).value)

const marked = new Marked({
  gfm: true,
  renderer: {
    // A fenced block in a language we know is highlighted; any other is shown as it is (escaped).
    code({ lang, text }) {
      const language = (lang ?? "").trim().split(/\s+/, 1)[0]
      const known = language !== "" && text.length <= longestHighlighted && hljs.getLanguage(language) !== undefined
      const body = known ? highlighted(text, language) : escapeHtml(text)
      return `<pre><code class="hljs${known ? ` language-${escapeHtml(language)}` : ""}">${body}</code></pre>\n`
    },
    // Raw HTML in the model's text is shown as text, not markup.
    html({ text }) {
      return escapeHtml(text)
    }
  }
})

// What Markdown may become. No <img> (a model could leak what it read through an image's URL), no
// forms, inputs, styles or frames; links only to http(s) and mailto addresses.
const allowed = {
  ALLOWED_TAGS: ["p", "br", "strong", "em", "del", "s", "code", "pre", "span", "blockquote", "ul", "ol", "li", "h1", "h2", "h3", "h4", "h5", "h6", "a", "table", "thead", "tbody", "tr", "th", "td", "hr", "input"],
  ALLOWED_ATTR: ["href", "title", "class", "start", "align", "type", "checked", "disabled"],
  ALLOWED_URI_REGEXP: /^(?:https?:|mailto:)/i
}

DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  // Task-list checkboxes are the only inputs Markdown makes: shown, never usable.
  if (node.tagName === "INPUT" && node.getAttribute("type") !== "checkbox") node.remove()
  if (node.tagName === "INPUT") node.setAttribute("disabled", "")
  if (node.tagName === "A") {
    node.setAttribute("target", "_blank")
    node.setAttribute("rel", "noopener noreferrer nofollow")
  }
})

// The page re-renders on every animation frame while text streams: each text is parsed once, and
// kept while the page shows it (see `RenderCache`).
const texts = RenderCache.make()
let parses = 0

/** Ends a render: the caches let go of the texts it did not show. */
export const rendered = () => {
  texts.rendered()
  highlights.rendered()
}

/** How many texts were parsed as Markdown so far (for tests: a text shown again is not parsed again). */
export const markdownParses = () => parses

/** A text shown as it is: escaped, its lines kept. */
const plainHtml = (text) => `<p class="plain">${escapeHtml(text)}</p>`

/**
 * The model's Markdown as sanitized HTML, its bidi controls and invisible characters escaped — or as plain text when it is of a shape marked is far from
 * linear on (see `MarkdownLimits`: seconds to minutes of this tab, on every frame while it streams),
 * or when marked fails on it.
 */
export const markdownHtml = (text) => texts.get(text, () => {
  parses++
  // Bidi controls and invisible characters escaped (`visibleProse`), in code blocks too.
  const shown = visibleProse(text)
  try {
    return markdownStyleable(shown) ? DOMPurify.sanitize(marked.parse(shown, { async: false }), allowed).trim() : plainHtml(shown)
  } catch {
    return plainHtml(shown)
  }
})

/** A node holding the Markdown of `text`. */
export const markdownNode = (text, className) => {
  const node = document.createElement("div")
  node.className = className
  node.innerHTML = markdownHtml(text)
  return node
}

/** The diff of an edit as a block: `+`/`-` lines, coloured; bidi and invisible characters escaped (`visible`). */
export const diffNode = (path, entries) => {
  const node = document.createElement("div")
  node.className = "diff"
  const head = document.createElement("div")
  head.className = "diff-path"
  head.textContent = visible(path)
  node.append(head)
  const body = document.createElement("pre")
  for (const { kind, text } of entries) {
    const line = document.createElement("span")
    line.className = `line ${kind}`
    line.textContent = `${kind === "add" ? "+" : kind === "remove" ? "-" : " "} ${visible(text)}\n`
    body.append(line)
  }
  node.append(body)
  return node
}

/** A command and its output as a terminal block, with its exit code; bidi and invisible characters escaped (`visible`). */
export const terminalNode = (command, output, exitCode) => {
  const node = document.createElement("div")
  node.className = "terminal"
  const prompt = document.createElement("div")
  prompt.className = "command"
  prompt.textContent = `$ ${visible(command)}`
  node.append(prompt)
  if (output !== undefined) {
    const body = document.createElement("pre")
    body.textContent = visible(output)
    node.append(body)
  }
  if (exitCode !== undefined) {
    const code = document.createElement("div")
    code.className = `exit ${exitCode === 0 ? "ok" : "bad"}`
    code.dataset.exitCode = String(exitCode)
    code.textContent = `exit ${exitCode}`
    node.append(code)
  }
  return node
}
