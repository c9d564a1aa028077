/**
 * A long session in the viewer, in a real headless Chromium.
 *
 * - The session list: opening a session replays its whole history over `/live`, and every turn's
 *   start and end in it changes the list. The page asked for the whole listing (every session of the
 *   data dir) once per change (120 times for a session of 60 turns), then at most once more after
 *   the one in flight; now the open session's row follows its events — the history the listing
 *   counts already changes nothing, a later turn's start and end redraw the row from the page's own
 *   fold — and a listing is asked for only when the session is not listed.
 * - Its texts: the page renders the whole session on each frame while events stream in; a session
 *   of more than 500 texts had every one parsed as Markdown again on every frame (the cache was
 *   cleared when full). A text shown again is not parsed again, however many the session has, and
 *   a turn that has ended is drawn once (a render of 22 turns of 25 steps took 50–300 ms, now < 1 ms).
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import type { Request, Route } from "playwright-core"
import { browser as chromium } from "./chromium.js"
import { startIn } from "./harness.js"

const browser = chromium()
const turns = 60

/** What the page functions use of the browser's globals (the tests are compiled without the DOM's types). */
interface PageGlobals {
  readonly document: {
    querySelectorAll: (selector: string) => { readonly length: number }
    querySelector: (selector: string) => { readonly textContent: string | null } | null
  }
}
const isListing = (url: URL) => url.pathname === "/sessions"

describe("the viewer's session list", () => {
  it.scopedLive("a long session's history arriving asks for no listing beyond the open's: the list already counts it", () =>
    Effect.gen(function*() {
      const { cwd, server } = yield* startIn({ token: "listing-test-token-0123456789" })
      const { sessionId } = yield* server.engine.createSession({ cwd, client: "web" })
      for (let i = 0; i < turns; i++) yield* Stream.runDrain(server.engine.runTurn({ sessionId, userMessage: `turn ${i}` }))

      const { context } = yield* browser
      const page = context.pages()[0] ?? (yield* Effect.promise(() => context.newPage()))
      const errors: Array<string> = []
      page.on("pageerror", (error) => errors.push(error.message))
      yield* Effect.promise(() => page.goto(`${server.url}/login?code=${server.config.loginCodes.issue()}`))
      yield* Effect.promise(() => page.waitForSelector(`[data-session="${sessionId}"]`))

      // From here, each listing the page asks for is held until the session's whole history is shown.
      const held: Array<Route> = []
      let holding = true
      yield* Effect.promise(() => page.route(isListing, (route) => holding ? held.push(route) : route.continue()))
      yield* Effect.promise(() => page.click(`[data-session="${sessionId}"]`))
      // The last turn drawn, ended (the page draws the latest turns of a long session).
      yield* Effect.promise(() => page.waitForSelector(`.turn:last-of-type:has(.user:text-is("turn ${turns - 1}")) [data-end=final]`))
      // One listing (the open's) is in flight; the 120 turn starts and ends behind it are in the list already.
      expect(held.length).toBe(1)
      const after: Array<Request> = []
      page.on("request", (request) => { if (isListing(new URL(request.url()))) after.push(request) })
      holding = false
      yield* Effect.promise(() => Promise.all(held.map((route) => route.continue())))
      // The next listing asked for is the one the filter asks for: none came between (before, one
      // more came after the open's, and the history then asked for the whole listing again).
      yield* Effect.promise(() => page.fill("#filter-cwd", cwd))
      yield* Effect.promise(() => page.waitForEvent("requestfinished", (request) => new URL(request.url()).searchParams.has("cwd")))
      yield* Effect.promise(() => page.waitForFunction(() => (globalThis as unknown as PageGlobals).document.querySelector("[data-session] .meta")?.textContent?.startsWith("60 turns") === true))
      expect(after.map((request) => new URL(request.url()).searchParams.get("cwd"))).toEqual([cwd])
      expect(errors).toEqual([])
    }), { timeout: 60_000 })

  it.scopedLive("turns run in the open session ask for no listing: its row follows their events, first, as a listing draws it", () =>
    Effect.gen(function*() {
      const { cwd, server } = yield* startIn({ token: "listing-test-token-0123456789" })
      const { sessionId } = yield* server.engine.createSession({ cwd, client: "web" })
      yield* Stream.runDrain(server.engine.runTurn({ sessionId, userMessage: "first" }))
      // A session more recently active: listed above the one opened, until its turns run.
      const { sessionId: other } = yield* server.engine.createSession({ cwd, client: "web" })

      const { context } = yield* browser
      const page = context.pages()[0] ?? (yield* Effect.promise(() => context.newPage()))
      const errors: Array<string> = []
      page.on("pageerror", (error) => errors.push(error.message))
      yield* Effect.promise(() => page.goto(`${server.url}/login?code=${server.config.loginCodes.issue()}`))
      yield* Effect.promise(() => page.waitForSelector(`[data-session="${other}"]`))
      const opened = page.waitForEvent("requestfinished", (request) => isListing(new URL(request.url())))
      yield* Effect.promise(() => page.click(`[data-session="${sessionId}"]`))
      yield* Effect.promise(() => opened)
      yield* Effect.promise(() => page.waitForSelector(`.turn:has(.user:text-is("first")) [data-end=final]`))

      const asked: Array<string> = []
      page.on("request", (request) => { if (isListing(new URL(request.url()))) asked.push(new URL(request.url()).search) })
      yield* Stream.runDrain(server.engine.runTurn({ sessionId, userMessage: "second" }))
      yield* Stream.runDrain(server.engine.runTurn({ sessionId, userMessage: "third" }))
      yield* server.engine.renameSession({ sessionId, title: "Followed live" })
      const rowText = () =>
        page.$$eval("[data-session]", (nodes) => nodes.map((node) => `${(node as unknown as { dataset: Record<string, string> }).dataset["session"]}: ${(node as unknown as { innerText: string }).innerText}`))
      yield* Effect.promise(() => page.waitForFunction((id) => (globalThis as unknown as PageGlobals).document.querySelector(`[data-session="${id}"] .title`)?.textContent === "Followed live", sessionId))
      const followed = yield* Effect.promise(rowText)
      expect(asked).toEqual([])
      expect(followed[0]).toContain(`${sessionId}: Followed live`)
      expect(followed[0]).toContain("3 turns")

      // A listing draws the same rows: the filter asks for one.
      const listed = page.waitForEvent("requestfinished", (request) => new URL(request.url()).searchParams.has("cwd"))
      yield* Effect.promise(() => page.fill("#filter-cwd", cwd))
      yield* Effect.promise(() => listed)
      yield* Effect.promise(() => page.waitForFunction(() => (globalThis as unknown as PageGlobals).document.querySelector("#sessions [data-session]") !== null))
      expect(yield* Effect.promise(rowText)).toEqual(followed)
      expect(errors).toEqual([])
    }), { timeout: 60_000 })

  it.scopedLive("a session of more texts than the old cache held: the next render parses none of them again", () =>
    Effect.gen(function*() {
      // 22 turns of 24 reads and an answer: 550 texts, each its own.
      const turnCount = 22
      const responses = Array.from({ length: turnCount }, (_, turn) => [
        ...Array.from({ length: 24 }, (_, step) => ({ chunks: [`Turn ${turn}, step ${step}: *reading* the notes.`], toolCalls: [{ tool: "read_file", args: { path: "notes.txt" } }] })),
        { chunks: [`Turn ${turn}: **done**.`] }
      ]).flat()
      const { cwd, server } = yield* startIn({ token: "listing-test-token-0123456789", responses })
      writeFileSync(join(cwd, "notes.txt"), "notes\n")
      const { sessionId } = yield* server.engine.createSession({ cwd, client: "web" })
      for (let i = 0; i < turnCount; i++) yield* Stream.runDrain(server.engine.runTurn({ sessionId, userMessage: `turn ${i}` }))

      const { context } = yield* browser
      const page = context.pages()[0] ?? (yield* Effect.promise(() => context.newPage()))
      yield* Effect.promise(() => page.goto(`${server.url}/login?code=${server.config.loginCodes.issue()}`))
      yield* Effect.promise(() => page.click(`[data-session="${sessionId}"]`))
      yield* Effect.promise(() => page.waitForFunction((n) => (globalThis as unknown as PageGlobals).document.querySelectorAll(".turn [data-end=final]").length === n, turnCount))
      const parses = () => page.evaluate(() => (globalThis as unknown as { effectAgentViewer: { markdownParses: () => number } }).effectAgentViewer.markdownParses())
      const shown = yield* Effect.promise(parses)
      expect(shown).toBeGreaterThanOrEqual(turnCount * 25)

      // A new event (a rename) renders the session again: nothing parsed again, and the turns that
      // had ended are the same nodes (not drawn again, nor taken out of the document).
      yield* Effect.promise(() => page.evaluate(() => {
        const sections = (globalThis as unknown as { document: { querySelectorAll: (s: string) => ArrayLike<Record<string, unknown>> } }).document.querySelectorAll(".turn")
        for (let i = 0; i < sections.length; i++) sections[i]!["keptMark"] = i
      }))
      yield* server.engine.renameSession({ sessionId, title: "Long session" })
      yield* Effect.promise(() => page.waitForFunction(() => (globalThis as unknown as PageGlobals).document.querySelector("#name")?.textContent === "Long session"))
      expect(yield* Effect.promise(parses)).toBe(shown)
      const marks = yield* Effect.promise(() => page.evaluate(() => {
        const sections = (globalThis as unknown as { document: { querySelectorAll: (s: string) => ArrayLike<Record<string, unknown>> } }).document.querySelectorAll(".turn")
        return Array.from(sections, (section) => section["keptMark"])
      }))
      expect(marks).toEqual(Array.from({ length: turnCount }, (_, i) => i))
    }), { timeout: 60_000 })

  it.scopedLive("a data dir of more sessions than the list shows: the 200 most recent, and Show all", () =>
    Effect.gen(function*() {
      const { cwd, server } = yield* startIn({ token: "listing-test-token-0123456789" })
      for (let i = 0; i < 203; i++) yield* server.engine.createSession({ cwd, client: "web" })
      const { context } = yield* browser
      const page = context.pages()[0] ?? (yield* Effect.promise(() => context.newPage()))
      const asked: Array<string> = []
      page.on("request", (request) => { if (isListing(new URL(request.url()))) asked.push(new URL(request.url()).search) })
      yield* Effect.promise(() => page.goto(`${server.url}/login?code=${server.config.loginCodes.issue()}`))
      yield* Effect.promise(() => page.waitForSelector("[data-more=sessions] button"))
      const shown = () => page.$$eval("[data-session]", (nodes) => nodes.map((node) => (node as unknown as { dataset: Record<string, string> }).dataset["session"]!))
      // The server's 200 most recently active, in its order.
      const newest = (yield* server.client.sessions.list()).slice(0, 200).map((s) => s.sessionId)
      expect(yield* Effect.promise(shown)).toEqual(newest)
      // The sign-in lands on /#key=…: the page first checks that key with a listing of one (kept only
      // if it reads; test/server/viewerHostile.integration.test.ts), then asks for the list once.
      expect(asked).toEqual(["?limit=1", "?limit=201"])
      yield* Effect.promise(() => page.click("[data-more=sessions] button"))
      yield* Effect.promise(() => page.waitForFunction(() => (globalThis as unknown as PageGlobals).document.querySelectorAll("[data-session]").length === 203))
      expect(yield* Effect.promise(() => page.locator("[data-more]").count())).toBe(0)
      expect(asked.at(-1)).toBe("")
    }), { timeout: 60_000 })
})
