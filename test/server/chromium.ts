/**
 * A real headless Chromium for the server's tests: the one the npm package @sparticuz/chromium ships,
 * driven by playwright-core (`npm ci` is the whole setup, nothing is downloaded), with a fresh profile,
 * no network but loopback and no first-run work. Closed, and its profile removed, with the scope.
 */
import chromium from "@sparticuz/chromium"
import * as Effect from "effect/Effect"
import { expect } from "vitest"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type BrowserContext, chromium as playwright, type Page } from "playwright-core"

/** A browser context; `args` adds Chromium switches (e.g. host resolver rules). */
export const browser = (args: ReadonlyArray<string> = []) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const profile = mkdtempSync(join(tmpdir(), "effect-agent-chromium-"))
      const context = await playwright.launchPersistentContext(profile, {
        executablePath: await chromium.executablePath(),
        headless: true,
        viewport: { width: 1280, height: 820 },
        args: [
          "--headless",
          "--no-sandbox",
          "--disable-gpu",
          "--disable-quic",
          "--no-first-run",
          "--disable-background-networking",
          "--disable-component-update",
          "--disable-sync",
          ...args
        ]
      })
      // No deadline of playwright's own (30 s by default) on a wait, a click or a page load: on a busy
      // machine a step can take longer, and each test's vitest timeout bounds the whole of it.
      context.setDefaultTimeout(0)
      return { context, profile }
    }),
    ({ context, profile }) =>
      Effect.promise(async () => {
        await context.close()
        rmSync(profile, { recursive: true, force: true })
      })
  )

/** What `openSession` needs of a running server: its address and its sign-in codes. */
export interface Viewable {
  readonly url: string
  readonly config: { readonly loginCodes: { readonly issue: () => string } }
}

/** A new page of `context`; `errors` collects its uncaught errors. */
export const watchedPage = (context: BrowserContext) =>
  Effect.promise(async () => {
    const page = await context.newPage()
    const errors: Array<string> = []
    page.on("pageerror", (error) => errors.push(error.message))
    return { page, errors }
  })

/**
 * A new page of `context` signed in to `server`'s viewer with a one-time code, a new session
 * started in it; `errors` collects the page's uncaught errors.
 */
export const openSession = (context: BrowserContext, server: Viewable) =>
  Effect.flatMap(watchedPage(context), ({ errors, page }) => Effect.promise(async () => {
    await page.goto(`${server.url}/login?code=${server.config.loginCodes.issue()}`)
    await page.click("text=Start session")
    await page.waitForSelector("#title:has-text('sess_')")
    return { page, errors }
  }))

/** A request a page sent to a server's session routes: its method, URL and the page's key header it carried. */
export interface SessionRequest {
  readonly method: string
  readonly url: string
  readonly key: string | undefined
}

/**
 * Records the requests `page` sends to `url`'s session routes (`/sessions…`: the list, states, the
 * live stream, images, changes), to check that each carries the page's key — in its header, never in
 * its URL.
 */
export const sessionRequests = (page: Page, url: string): ReadonlyArray<SessionRequest> => {
  const seen: Array<SessionRequest> = []
  page.on("request", (request) => {
    if (request.url().startsWith(`${url}/sessions`)) seen.push({ method: request.method(), url: request.url(), key: request.headers()["x-effect-agent-key"] })
  })
  return seen
}

/** The page's key, as the viewer keeps it (its origin's localStorage). */
export const pageKeyOf = (page: Page): Promise<string | null> =>
  page.evaluate(() => (globalThis as unknown as { localStorage: { getItem: (name: string) => string | null } }).localStorage.getItem("effect-agent-page-key"))

/** Every request sent carried the page's key in its header, and none in its URL. */
export const expectKeyed = (requests: ReadonlyArray<SessionRequest>, key: string | null) => {
  expect(key).toMatch(/^[A-Za-z0-9_-]{43}$/)
  expect(requests.filter((r) => r.key !== key)).toEqual([])
  expect(requests.filter((r) => r.url.includes(key!))).toEqual([])
}
