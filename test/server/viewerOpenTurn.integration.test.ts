/**
 * The viewer on a large edit in the open turn, in a real headless Chromium: one `write_file` of
 * 30,000 lines and one `edit_file` of 700 wholly different lines, both waiting for approval. The open
 * turn is drawn again at each render (a rename, a streamed event, each step of the timeline): every
 * edit was diffed and drawn anew each time, the whole of it (a rename shown after 12–33 s, the Allow
 * beside it unusable). The test counts what is diffed (the page's `diffs()`) and drawn (diff lines),
 * never time.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type { Page } from "playwright-core"
import { browser as chromium, openSession } from "./chromium.js"
import { startIn } from "./harness.js"

const browser = chromium()

interface Globals {
  readonly effectAgentViewer: { diffs: () => number; state: { sessionId: string; events: ReadonlyArray<unknown> } }
  readonly document: { getElementById: (id: string) => { value: string; dispatchEvent: (e: unknown) => void } }
  readonly Event: new(type: string) => unknown
}
const diffs = (page: Page) => Effect.promise(() => page.evaluate(() => (globalThis as unknown as Globals).effectAgentViewer.diffs()))
const count = (page: Page, selector: string) => Effect.promise(() => page.locator(selector).count())
/** Moves the timeline to `at` as a user dragging it does. */
const scrubTo = (page: Page, at: number) =>
  Effect.promise(() =>
    page.evaluate((to) => {
      const g = globalThis as unknown as Globals
      const scrub = g.document.getElementById("scrub")
      scrub.value = String(to)
      scrub.dispatchEvent(new g.Event("input"))
    }, at)
  )

describe("the viewer on a large edit in the open turn", () => {
  it.scopedLive("a 30,000-line write_file and a 700-line edit awaiting approval: drawn bounded, diffed once across renames and scrubbing", () =>
    Effect.gen(function*() {
      const token = "viewer-open-turn-token-0123456789"
      const content = Array.from({ length: 30_000 }, (_, i) => `line ${i}`).join("\n")
      const side = (prefix: string) => Array.from({ length: 700 }, (_, i) => `${prefix}_${i}`).join("\n")
      const { server } = yield* startIn({
        token,
        responses: [
          {
            chunks: ["writing"],
            toolCalls: [
              { tool: "write_file", args: { path: "big.txt", content }, id: "call_write" },
              { tool: "edit_file", args: { path: "f.txt", oldString: side("old"), newString: side("new") }, id: "call_edit" }
            ]
          },
          { chunks: ["done"] }
        ]
      })
      const { context } = yield* browser
      const { errors, page } = yield* openSession(context, server)
      yield* Effect.promise(() => page.fill("#message", "write it"))
      yield* Effect.promise(() => page.click("#send"))
      const write = "[data-call=call_write]"
      yield* Effect.promise(() => page.waitForSelector(`${write} button[data-action=allow]`))
      // The path beside Allow, and at most 2,000 of the 30,000 lines drawn, with a button for the rest.
      expect(yield* Effect.promise(() => page.textContent(`${write} .approval [data-field=path]`))).toBe("path: big.txt")
      expect(yield* count(page, `${write} .diff .line`)).toBe(2_000)
      expect(yield* Effect.promise(() => page.textContent(`${write} .diff button[data-more]`))).toBe("Show all 30,000 lines")
      expect(yield* count(page, "[data-call=call_edit] .diff .line")).toBe(1_400)
      const before = yield* diffs(page)
      expect(before).toBeGreaterThanOrEqual(2)

      // Session-level events (renames) draw the open turn again: no edit is diffed again, nor redrawn.
      const sessionId = yield* Effect.promise(() => page.evaluate(() => (globalThis as unknown as Globals).effectAgentViewer.state.sessionId))
      const line = yield* Effect.promise(() => page.evaluateHandle((selector) => (globalThis as unknown as { document: { querySelector: (s: string) => unknown } }).document.querySelector(selector), `${write} .diff .line`))
      for (const title of ["rename 0", "rename 1", "rename 2"]) {
        const response = yield* Effect.promise(() =>
          fetch(`${server.url}/sessions/${sessionId}/title`, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: JSON.stringify({ title }) })
        )
        expect(response.status).toBe(200)
        yield* Effect.promise(() => page.waitForFunction((want) => (globalThis as unknown as { document: { getElementById: (id: string) => { textContent: string } } }).document.getElementById("name").textContent === want, title, { polling: 100 }))
      }
      expect(yield* diffs(page)).toBe(before)
      // The very line drawn before the renames is still in the document: drawn once, kept.
      expect(yield* Effect.promise(() => line.evaluate((node) => (node as { isConnected: boolean }).isConnected))).toBe(true)

      // Scrubbing through the turn draws it as of each position, with the diffs made already.
      const total = yield* Effect.promise(() => page.evaluate(() => (globalThis as unknown as Globals).effectAgentViewer.state.events.length))
      for (let at = total - 1; at >= Math.max(1, total - 6); at--) yield* scrubTo(page, at)
      yield* scrubTo(page, total)
      expect(yield* diffs(page)).toBe(before)

      // Every line stays reachable: "Show all" draws the whole write, still without a new diff.
      yield* Effect.promise(() => page.locator(`${write} .diff button[data-more]`).dispatchEvent("click"))
      expect(yield* count(page, `${write} .diff .line`)).toBe(30_000)
      expect(yield* diffs(page)).toBe(before)

      yield* Effect.promise(() => page.click(`${write} button[data-action=allow]`))
      yield* Effect.promise(() => page.click("[data-call=call_edit] button[data-action=allow]"))
      yield* Effect.promise(() => page.waitForSelector("[data-end=final]"))
      expect(errors).toEqual([])
      yield* Effect.promise(() => page.close())
    }), { timeout: 180_000 })
})
