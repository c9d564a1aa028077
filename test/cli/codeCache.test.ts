/**
 * When the CLI's code cache is taken (src/cli/CodeCache.ts): at the first full GC of the run that
 * makes it, if one comes before the exit. V8 drops the bytecode of functions that have not run for a
 * few full GCs, so a cache taken at the exit of a long first run (a cold listing, a turn) would lack
 * the start's code: a later warm `sessions` over 10,000 JSONL sessions then ran 2.10·10⁹ instructions
 * instead of 1.49 (docs/benchmarks.md). The end-to-end runs are in codeCache.integration.test.ts.
 */
import { constants as performanceConstants, PerformanceObserver } from "node:perf_hooks"
import { setFlagsFromString } from "node:v8"
import { runInNewContext } from "node:vm"
import { expect, it } from "vitest"
import { bundleSource, cacheNameOf, makeCacheOnce } from "../../src/cli/CodeCache.js"

setFlagsFromString("--expose-gc")
const fullGc = runInNewContext("gc") as () => void

/**
 * Waits until `done` holds (a GC observer's entries are delivered after the GC, asynchronously). No
 * deadline of its own: on a busy machine the delivery can come later than any guess (vitest bounds it).
 */
const until = async (done: () => boolean) => {
  while (!done()) await new Promise((resolve) => setTimeout(resolve, 10))
}

/** Counts the full GCs delivered to an observer of the test's own, registered after the cache's. */
const majorGcs = () => {
  let seen = 0
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      if ((entry as { readonly detail?: { readonly kind?: number } }).detail?.kind === performanceConstants.NODE_PERFORMANCE_GC_MAJOR) seen++
    }
  })
  observer.observe({ entryTypes: ["gc"] })
  return { seen: () => seen, stop: () => observer.disconnect() }
}

it("the cache is made at the first full GC, once, not left to the exit", async () => {
  let made = 0
  makeCacheOnce(() => made++)
  expect(made).toBe(0)
  fullGc()
  await until(() => made > 0)
  expect(made).toBe(1)
  // Made once: later GCs (and the exit) do not make it again. Waits until the GC was delivered to an
  // observer (a fixed sleep passed whether or not it had been).
  const gcs = majorGcs()
  fullGc()
  await until(() => gcs.seen() > 0)
  gcs.stop()
  expect(made).toBe(1)
})

it("a cache is named by the command and the SQL store --store names: a run on another store compiles that store's code", () => {
  const name = (...args: Array<string>) => cacheNameOf(["node", "bin.js", ...args])
  expect(name("sessions", "--data-dir", "d")).toBe("sessions")
  expect(name("sessions", "--store", "postgres", "--database-url", "postgres://x")).toBe("sessions-postgres")
  expect(name("pending", "--store=sqlite")).toBe("pending-sqlite")
  // JSONL is the default store: the command's own name, as before.
  expect(name("sessions", "--store", "jsonl")).toBe("sessions")
  // Only the names the CLI knows; what follows `--` is not an option.
  expect(name("sessions", "--store", "../../elsewhere")).toBe("sessions")
  expect(name("run", "--", "--store", "sqlite")).toBe("run")
  expect(name("--version")).toBe("other")
})

it("the bundle's text is what a UTF-8 read gives, whether its bytes are ASCII or not", () => {
  for (const text of ["module.exports = 1;\n\"\\u00e9\"", "", "const s = \"é — 👋\";", "\u0000\u007f"]) {
    const bytes = Buffer.from(text, "utf8")
    expect(bundleSource(bytes)).toBe(bytes.toString("utf8"))
    expect(bundleSource(bytes)).toBe(text)
  }
})

it("the bundle's text is a string of V8's heap, not an external one (Latin-1 from Node is external above 1 MB)", () => {
  // An ASCII bundle of 8 MiB; Node reports an external string's bytes as external memory at once.
  const bytes = Buffer.alloc(8 * 1048576, "x = 1;\n")
  const before = process.memoryUsage().external
  const source = bundleSource(bytes)
  const grown = process.memoryUsage().external - before
  expect(source.length).toBe(bytes.length)
  expect(grown).toBeLessThan(4 * 1048576)
})
