/**
 * The leftovers round: the start-up limit for a server's whole tool list (mcphttp) read
 * `Date.now()`, so it could not be tested without waiting it out in real time, and a `TestClock`
 * did not move it. It is now an Effect timeout on the `Clock`: here a server answers two pages and
 * then never the third; advancing the `TestClock` by the limit ends the listing with the typed
 * error naming what arrived. Failed before: the `TestClock` moved nothing, and the listing ran into
 * the test's own time limit (the SDK's per-page timer is an hour of real time).
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { expect, layer } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as TestClock from "effect/TestClock"
import { existsSync } from "node:fs"
import { join } from "node:path"
import * as McpConnection from "../../src/layers/mcp/McpConnection.js"
import { tempDir } from "../helpers.js"

/** Resolves once `file` exists, looking again every few milliseconds of real time (a condition, not a wait of a given length). */
const untilExists = (file: string) =>
  Effect.promise(() =>
    new Promise<void>((resolve) => {
      const look = () => (existsSync(file) ? resolve() : setTimeout(look, 20))
      look()
    })
  )

/** A connection to the fixture server that answers `pages` pages of its list, then never; asked for the next, it writes `marker`. */
const stalling = (name: string, pages: number | "initialize", cwd: string, marker: string) =>
  McpConnection.make({
    name,
    server: {
      command: process.execPath,
      args: [new URL("../fixtures/mcp/deep.mjs", import.meta.url).pathname],
      env: pages === "initialize" ? { SILENT_INIT: "1", STALL_MARKER: marker } : { STALL_AFTER_PAGES: String(pages), STALL_MARKER: marker }
    },
    cwd,
    prefix: [],
    connectTimeout: Duration.hours(1),
    callTimeout: Duration.hours(1)
  })

/** Lists the connection's tools, and once `marker` exists moves the TestClock past the limit: the listing's error. */
const listingPastTheLimit = (connection: McpConnection.Connection, marker: string) =>
  Effect.gen(function*() {
    yield* Effect.addFinalizer(() => connection.close)
    const listing = yield* Effect.fork(connection.listTools)
    yield* untilExists(marker)
    yield* TestClock.adjust(Duration.hours(1))
    return yield* Fiber.join(listing).pipe(Effect.flip)
  })

layer(NodeContext.layer)("the start-up limit of a server's tool list", (it) => {
  it.scoped("is on the Clock: a server that never finishes listing fails list_failed once the TestClock passes the limit, naming the tools and pages that arrived", () =>
    Effect.gen(function*() {
      const cwd = yield* tempDir
      const marker = join(cwd, "third-page-asked")
      const connection = yield* stalling("stalls", 2, cwd, marker)
      // Asked for the third page: two pages were read, and the limit's timer runs.
      const error = yield* listingPastTheLimit(connection, marker)
      expect(error).toMatchObject({
        _tag: "McpError",
        reason: "list_failed",
        message: 'MCP server "stalls" did not list its tools: timed out after 1h (2 tools on 2 pages read)'
      })
      // The stalled server was dropped: the next use starts it again.
      expect(connection.isLive()).toBe(false)
    }))

  // docs/mcp.md's leftover: a server that never answers its first page. The list's Effect timeout
  // covers that page too, so the TestClock ends it (no real-time timer of the SDK's is waited for).
  it.scoped("a server that never answers its first page fails list_failed once the TestClock passes the limit", () =>
    Effect.gen(function*() {
      const cwd = yield* tempDir
      const marker = join(cwd, "first-page-asked")
      const connection = yield* stalling("silent", 0, cwd, marker)
      const error = yield* listingPastTheLimit(connection, marker)
      expect(error).toMatchObject({
        _tag: "McpError",
        reason: "list_failed",
        message: 'MCP server "silent" did not list its tools: timed out after 1h (0 tools on 0 pages read)'
      })
      expect(connection.isLive()).toBe(false)
    }))

  // leftovers37: `initialize` (the SDK's `connect`) was timed by the SDK's real-time timer only; the
  // TestClock moved nothing and the start ran into the test's own time limit.
  it.scoped("a server that never answers initialize fails start_failed once the TestClock passes the limit", () =>
    Effect.gen(function*() {
      const cwd = yield* tempDir
      const marker = join(cwd, "initialize-asked")
      const connection = yield* stalling("mute", "initialize", cwd, marker)
      const error = yield* listingPastTheLimit(connection, marker)
      expect(error).toMatchObject({ _tag: "McpError", reason: "start_failed", message: 'MCP server "mute" did not start: timed out after 1h' })
      expect(connection.isLive()).toBe(false)
    }))
})
