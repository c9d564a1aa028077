/**
 * Images in the viewer's timeline, in a real headless Chromium: a message's image and a `read_file`
 * image are shown from the authenticated route (`GET /sessions/:id/blobs/:hash`, the viewer's cookie
 * and its page's key: fetched by the page, shown from `blob:` URLs), decoded by the browser as the
 * raster images they are.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { readFileSync, writeFileSync } from "node:fs"
import { join, resolve } from "node:path"
import { browser as chromium, expectKeyed, pageKeyOf, sessionRequests } from "./chromium.js"
import { liveUntil, raw, startIn } from "./harness.js"

const browser = chromium()
const png = readFileSync(resolve(import.meta.dirname, "../../fixtures/images/photo.png"))
const gif = readFileSync(resolve(import.meta.dirname, "../../fixtures/images/pixel.gif"))

interface PageImage {
  readonly src: string
  readonly complete: boolean
  readonly naturalWidth: number
  readonly naturalHeight: number
}
interface PageGlobals {
  readonly document: { querySelectorAll: (selector: string) => ArrayLike<PageImage> }
}

describe("images in the viewer", () => {
  it.scopedLive("a message's image and a read_file image show in the timeline, loaded through the authenticated route", () =>
    Effect.gen(function*() {
      const { cwd, server } = yield* startIn({
        images: true,
        responses: [{ toolCalls: [{ tool: "read_file", args: { path: "pixel.gif" } }] }, { chunks: ["A gradient and a pixel."] }]
      })
      writeFileSync(join(cwd, "pixel.gif"), gif)
      const session = yield* server.client.sessions.create({ payload: {} })
      yield* raw(`${server.url}/sessions/${session.sessionId}/turns`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ message: "what is this?", images: [{ data: png.toString("base64") }] }),
        token: server.token
      })
      yield* Effect.promise(() => liveUntil(`${server.url}/sessions/${session.sessionId}/live`, { token: server.token }, (e) => e.type === "turn.completed"))

      const { context } = yield* browser
      const page = yield* Effect.promise(() => context.newPage())
      const errors: Array<string> = []
      page.on("pageerror", (error) => errors.push(error.message))
      const requests = sessionRequests(page, server.url)
      // Without the cookie, the image route refuses too.
      const refused = yield* Effect.promise(() => context.request.get(`${server.url}/sessions/${session.sessionId}/blobs/${"0".repeat(64)}`))
      expect(refused.status()).toBe(401)
      yield* Effect.promise(() => page.goto(`${server.url}/login?code=${server.config.loginCodes.issue()}`))
      yield* Effect.promise(() => page.click(`[data-session="${session.sessionId}"]`))
      yield* Effect.promise(() => page.waitForSelector(".turn [data-end=final]"))
      // Both images are decoded by the browser (complete, with their real sizes).
      yield* Effect.promise(() =>
        page.waitForFunction(() => {
          const images = Array.from((globalThis as unknown as PageGlobals).document.querySelectorAll(".images img"))
          return images.length === 2 && images.every((image) => image.complete && image.naturalWidth > 0)
        })
      )
      const sizes = yield* Effect.promise(() =>
        page.evaluate(() => Array.from((globalThis as unknown as PageGlobals).document.querySelectorAll(".images img")).map((i) => [i.naturalWidth, i.naturalHeight]))
      )
      expect(sizes).toEqual([[48, 32], [1, 1]])
      expect(yield* Effect.promise(() => page.getAttribute(".turn .user img", "alt"))).toBe(`image/png, ${png.byteLength} bytes`)
      expect(yield* Effect.promise(() => page.locator(".call .images img").count())).toBe(1)
      // Fetched with the page's key, once each, and shown from blob: URLs of the page's own.
      const sources = yield* Effect.promise(() =>
        page.evaluate(() => Array.from((globalThis as unknown as PageGlobals).document.querySelectorAll(".images img")).map((i) => i.src))
      )
      expect(sources.every((src) => src.startsWith(`blob:${server.url}/`))).toBe(true)
      const fetched = requests.filter((r) => r.url.includes("/blobs/"))
      expect(fetched).toHaveLength(2)
      expectKeyed(requests, yield* Effect.promise(() => pageKeyOf(page)))
      // The timeline as of before the answer draws the message's image again, from what the page holds.
      yield* Effect.promise(() =>
        page.evaluate(() => {
          const range = (globalThis as unknown as { document: { getElementById: (id: string) => { value: string; dispatchEvent: (e: unknown) => void } } }).document.getElementById("scrub")
          range.value = "3"
          range.dispatchEvent(new Event("input", { bubbles: true }))
        })
      )
      yield* Effect.promise(() =>
        page.waitForFunction(() => {
          const images = Array.from((globalThis as unknown as PageGlobals).document.querySelectorAll(".images img"))
          return images.length === 1 && images[0]!.complete && images[0]!.naturalWidth === 48
        })
      )
      expect(requests.filter((r) => r.url.includes("/blobs/"))).toHaveLength(2)
      expect(errors).toEqual([])
    }), 120_000)
})
