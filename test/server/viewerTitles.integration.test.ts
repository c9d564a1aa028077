/**
 * Session titles, search and the directory filter in the viewer, in a real headless Chromium
 * (issue 23): the list shows each session's title (a hostile one as inert text), the search box and
 * the directory box narrow it at 1,440, 1,100 and 400 px (in the drawer there), and the pencil in
 * the header renames the open session (stored as `session.titled`, shown at once in the header and
 * the list).
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { mkdirSync } from "node:fs"
import { join } from "node:path"
import type { Page } from "playwright-core"
import { browser as chromium } from "./chromium.js"
import { liveUntil, startIn, storedEvents } from "./harness.js"

const browser = chromium()

/** The ids the list shows now, in its order. */
const listed = (page: Page) => Effect.promise(() => page.locator("#sessions li[data-session]").evaluateAll((items) => items.map((li) => li.getAttribute("data-session"))))

/** Waits until the list shows exactly `ids` (the boxes' requests are debounced and answered asynchronously). */
const listShows = (page: Page, ids: ReadonlyArray<string>) =>
  Effect.promise(() =>
    page.waitForFunction((expected) => {
      const shown = Array.from((globalThis as unknown as { document: { querySelectorAll: (s: string) => ArrayLike<{ getAttribute: (n: string) => string | null }> } }).document
        .querySelectorAll("#sessions li[data-session]"), (li) => li.getAttribute("data-session"))
      return JSON.stringify([...shown].sort()) === JSON.stringify([...expected].sort())
    }, ids)
  )

describe("the viewer's session list: titles, search, directory filter, rename", () => {
  it.scopedLive("titles shown as text; the search and directory boxes work at 1,440, 1,100 and 400 px; the pencil renames", () =>
    Effect.gen(function*() {
      const { cwd, server } = yield* startIn({ responses: [{ chunks: ["one"] }, { chunks: ["two"] }, { chunks: ["three"] }] })
      const api = join(cwd, "services", "api")
      mkdirSync(api, { recursive: true })
      const { client } = server
      const made = yield* Effect.forEach([
        [cwd, "Refactor the parser\nso that it streams"],
        [api, "Deploy the API service"],
        [cwd, "<img src=x onerror=\"window.pwned=1\"> look at this"]
      ] as const, ([dir, message]) =>
        Effect.gen(function*() {
          const session = yield* client.sessions.create({ payload: { cwd: dir } })
          yield* client.sessions.startTurn({ path: { id: session.sessionId }, payload: { message } })
          yield* Effect.promise(() => liveUntil(`${server.url}/sessions/${session.sessionId}/live`, { token: server.token }, (e) => e.type === "turn.completed"))
          return session.sessionId
        }))
      const [parser, deploy, hostile] = made as [string, string, string]

      const { context } = yield* browser
      const page = context.pages()[0] ?? (yield* Effect.promise(() => context.newPage()))
      const errors: Array<string> = []
      page.on("pageerror", (error) => errors.push(error.message))
      yield* Effect.promise(() => page.goto(`${server.url}/login?code=${server.config.loginCodes.issue()}`))
      yield* listShows(page, made)
      expect(yield* Effect.promise(() => page.textContent(`#sessions li[data-session='${parser}'] .title`))).toBe("Refactor the parser")
      // A hostile title is text: no element made of it, nothing run.
      expect(yield* Effect.promise(() => page.textContent(`#sessions li[data-session='${hostile}'] .title`))).toBe("<img src=x onerror=\"window.pwned=1\"> look at this")
      expect(yield* Effect.promise(() => page.locator("#sessions img").count())).toBe(0)

      for (const width of [1440, 1100, 400]) {
        yield* Effect.promise(() => page.setViewportSize({ width, height: 800 }))
        // At 400 px the list is in the drawer, opened from the header.
        if (width < 760) yield* Effect.promise(() => page.click("#panels"))
        for (const box of ["#search", "#filter-cwd"]) {
          expect(yield* Effect.promise(() => page.isVisible(box)), `${box} at ${width}px`).toBe(true)
          const bounds = yield* Effect.promise(() => page.locator(box).boundingBox())
          expect(bounds!.x, `${box} at ${width}px`).toBeGreaterThanOrEqual(0)
          expect(bounds!.x + bounds!.width, `${box} at ${width}px`).toBeLessThanOrEqual(width + 0.5)
          expect(bounds!.width, `${box} at ${width}px`).toBeGreaterThan(120)
        }
        yield* Effect.promise(() => page.fill("#search", "PARSER"))
        yield* listShows(page, [parser])
        yield* Effect.promise(() => page.fill("#search", "nothing like this"))
        yield* Effect.promise(() => page.waitForSelector("#sessions [data-empty=sessions]"))
        yield* Effect.promise(() => page.fill("#search", ""))
        yield* listShows(page, made)
        yield* Effect.promise(() => page.fill("#filter-cwd", join(cwd, "services")))
        yield* listShows(page, [deploy])
        yield* Effect.promise(() => page.fill("#search", deploy.slice(-6)))
        yield* listShows(page, [deploy])
        yield* Effect.promise(() => page.fill("#search", "parser"))
        yield* listShows(page, [])
        yield* Effect.promise(() => page.fill("#search", ""))
        yield* Effect.promise(() => page.fill("#filter-cwd", ""))
        yield* listShows(page, made)
        if (width < 760) yield* Effect.promise(() => page.click("#panels"))
      }

      // Open a session: its title in the header; the pencil renames it, through the server, and the list follows.
      yield* Effect.promise(() => page.setViewportSize({ width: 1440, height: 800 }))
      yield* Effect.promise(() => page.click(`#sessions li[data-session='${parser}']`))
      yield* Effect.promise(() => page.waitForFunction(() => (globalThis as unknown as { document: { getElementById: (id: string) => { textContent: string } } }).document.getElementById("name").textContent === "Refactor the parser"))
      expect(yield* Effect.promise(() => page.textContent("#title"))).toBe(parser)
      yield* Effect.promise(() => page.click("#rename"))
      yield* Effect.promise(() => page.fill("#rename-title", "Streaming parser"))
      yield* Effect.promise(() => page.press("#rename-title", "Enter"))
      yield* Effect.promise(() => page.waitForSelector("#name:has-text('Streaming parser')"))
      yield* Effect.promise(() => page.waitForSelector(`#sessions li[data-session='${parser}'] .title:has-text('Streaming parser')`))
      expect((yield* storedEvents(server, parser)).at(-1)).toMatchObject({ type: "session.titled", payload: { title: "Streaming parser" } })
      // An empty title is refused by the server, which says why; nothing is stored.
      yield* Effect.promise(() => page.click("#rename"))
      yield* Effect.promise(() => page.fill("#rename-title", "   "))
      yield* Effect.promise(() => page.press("#rename-title", "Enter"))
      yield* Effect.promise(() => page.waitForSelector("#status[data-state=error]"))
      expect(yield* Effect.promise(() => page.textContent("#status"))).toContain("must not be empty")
      // The box stays open to try again; at 400 px it has the room to be typed in, on screen.
      yield* Effect.promise(() => page.setViewportSize({ width: 400, height: 800 }))
      const box = (yield* Effect.promise(() => page.locator("#rename-title").boundingBox()))!
      expect(box.width).toBeGreaterThan(120)
      expect(box.x + box.width).toBeLessThanOrEqual(400.5)
      yield* Effect.promise(() => page.press("#rename-title", "Escape"))
      expect(yield* Effect.promise(() => page.isVisible("#name"))).toBe(true)
      yield* Effect.promise(() => page.setViewportSize({ width: 1440, height: 800 }))
      expect((yield* storedEvents(server, parser)).filter((e) => e.type === "session.titled")).toHaveLength(1)

      expect(yield* listed(page)).toHaveLength(3)
      expect(yield* Effect.promise(() => page.evaluate(() => (globalThis as unknown as { pwned?: number }).pwned))).toBeUndefined()
      expect(errors).toEqual([])
    }), { timeout: 120_000 })
})
