/**
 * A fetched page's HTML as text the model reads: Markdown by `node-html-markdown`, else plain text.
 *
 * The page is the attacker's. The converter is synchronous and, on some markup, far from linear (a
 * table of 45,000 rows — under a megabyte — takes it minutes), and nesting too deep for its
 * recursion makes it throw. So it runs in a worker thread of its own, with a deadline and a heap
 * limit: the event loop — other sessions, cancellation, the server — goes on meanwhile, and a
 * conversion past its deadline (or interrupted) is stopped by terminating the worker. When it fails
 * or runs out of time, the page is given as plain text by a single linear pass (`plainText`), with a
 * marker saying so.
 *
 * @since 0.11.0
 */
import { createRequire } from "node:module"
import { Worker } from "node:worker_threads"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"

/** The elements whose content is never readable text (the converter drops them; so does `plainText`). */
const ignored = ["script", "style", "noscript", "template", "iframe", "svg", "canvas", "object", "embed", "head"]

/**
 * The worker's program, run as a CommonJS script (`eval`): it loads the converter by the path this
 * module resolved (the worker cannot resolve from here), converts and posts the Markdown.
 */
const workerSource = `
const { parentPort, workerData } = require("node:worker_threads")
const { NodeHtmlMarkdown } = require(workerData.converter)
const converter = new NodeHtmlMarkdown({ ignore: workerData.ignored, keepDataImages: false })
let markdown
try {
  markdown = converter.translate(workerData.html).trim()
} catch {
  markdown = undefined
}
parentPort.postMessage(markdown === undefined ? { failed: true } : { markdown })
`

// Resolved once, on the first page: where the converter is installed, as seen from this module.
let converterPath: string | undefined
const resolveConverter = () => converterPath ??= createRequire(import.meta.url).resolve("node-html-markdown")

/** The converter's heap in the worker: a page is at most a few megabytes; a blow-up ends the worker, not the process. */
const workerHeapMb = 256

/**
 * Converter threads running at once, in the whole process. Each may take {@link workerHeapMb} of heap
 * and a core: a model fetching many slow pages (or many sessions each fetching one) waits for a
 * thread instead of starting one per page. The wait counts against the page's deadline.
 */
export const maxConversions = 2

const conversions = Effect.unsafeMakeSemaphore(maxConversions)

/** Markdown from the worker, or none when it failed, threw or died. Interrupted (the deadline): the worker is terminated. */
const convertInWorker = (html: string): Effect.Effect<Option.Option<string>> =>
  Effect.async<Option.Option<string>>((resume) => {
    const worker = new Worker(workerSource, {
      eval: true,
      workerData: { converter: resolveConverter(), ignored, html },
      resourceLimits: { maxOldGenerationSizeMb: workerHeapMb },
      stdout: true,
      stderr: true
    })
    const done = (result: Option.Option<string>) => {
      worker.removeAllListeners()
      void worker.terminate()
      resume(Effect.succeed(result))
    }
    worker.once("message", (message: { readonly markdown?: string }) => done(Option.fromNullable(message.markdown)))
    worker.once("error", () => done(Option.none()))
    worker.once("exit", () => done(Option.none()))
    return Effect.sync(() => {
      worker.removeAllListeners()
      void worker.terminate()
    })
  })

const entities: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: "\"", apos: "'", nbsp: " " }

const decodeEntities = (text: string) =>
  text.replace(/&(#x[0-9a-f]+|#\d+|\w+);/gi, (whole, entity: string) => {
    if (entity.startsWith("#")) {
      const code = entity[1] === "x" || entity[1] === "X" ? parseInt(entity.slice(2), 16) : parseInt(entity.slice(1), 10)
      return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole
    }
    return entities[entity.toLowerCase()] ?? whole
  })

const tagName = /^\/?([a-zA-Z][a-zA-Z0-9-]*)/

/**
 * The page's text without its markup, in one pass (no pattern that backtracks over the page):
 * tags become spaces, the content of the ignored elements is dropped (an unclosed `<script>` runs to
 * the end, as a browser reads it), entities are decoded, and each line is trimmed, empty ones dropped.
 */
export const plainText = (html: string): string => {
  const kept: Array<string> = []
  let skipping: string | undefined
  let at = 0
  while (at < html.length) {
    const open = html.indexOf("<", at)
    if (open < 0) {
      if (skipping === undefined) kept.push(html.slice(at))
      break
    }
    if (skipping === undefined) kept.push(html.slice(at, open))
    const close = html.indexOf(">", open + 1)
    // A `<` never closed: the rest is an unfinished tag.
    if (close < 0) break
    const tag = tagName.exec(html.slice(open + 1, Math.min(close, open + 64)))
    if (tag !== null) {
      const name = tag[1]!.toLowerCase()
      const closing = html[open + 1] === "/"
      if (skipping === undefined && !closing && ignored.includes(name) && html[close - 1] !== "/") skipping = name
      else if (skipping === name && closing) skipping = undefined
    }
    kept.push(" ")
    at = close + 1
  }
  return decodeEntities(kept.join(""))
    .split("\n")
    .map((line) => line.replace(/[ \t\r\f\v\u00a0]+/g, " ").trim())
    .filter((line) => line !== "")
    .join("\n")
}

/** What `toReadable` adds when the converter ran out of time. */
export const slowMarker = "[… the page's markup took too long to convert; its plain text follows]"

/**
 * HTML as Markdown, converted off the main thread within `deadline` (counted from the call, so it
 * includes waiting for a converter thread: see {@link maxConversions}); plain text when the converter
 * fails, and plain text after `slowMarker` when it runs out of time.
 */
export const toReadable = (html: string, deadline: Duration.DurationInput): Effect.Effect<string> =>
  conversions.withPermits(1)(convertInWorker(html)).pipe(
    Effect.timeout(deadline),
    Effect.map(Option.getOrElse(() => plainText(html))),
    Effect.catchTag("TimeoutException", () => Effect.sync(() => `${slowMarker}\n${plainText(html)}`)),
    Effect.withSpan("HtmlText.toReadable")
  )

/** The default deadline of a conversion. */
export const defaultDeadline = Duration.seconds(10)
