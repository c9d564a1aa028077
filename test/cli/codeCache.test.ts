/**
 * When the CLI's code cache is taken (src/cli/CodeCache.ts): at the first full GC of the run that
 * makes it, if one comes before the exit. V8 drops the bytecode of functions that have not run for a
 * few full GCs, so a cache taken at the exit of a long first run (a cold listing, a turn) would lack
 * the start's code: a later warm `sessions` over 10,000 JSONL sessions then ran 2.10·10⁹ instructions
 * instead of 1.49 (docs/benchmarks.md). The end-to-end runs are in codeCache.integration.test.ts.
 */
import { setFlagsFromString } from "node:v8"
import { runInNewContext } from "node:vm"
import { expect, it } from "vitest"
import { makeCacheOnce } from "../../src/cli/CodeCache.js"

setFlagsFromString("--expose-gc")
const fullGc = runInNewContext("gc") as () => void

/** Waits until `done` holds (a GC observer's entries are delivered after the GC, asynchronously). */
const until = async (done: () => boolean) => {
  for (let i = 0; i < 100 && !done(); i++) await new Promise((resolve) => setTimeout(resolve, 10))
}

it("the cache is made at the first full GC, once, not left to the exit", async () => {
  let made = 0
  makeCacheOnce(() => made++)
  expect(made).toBe(0)
  fullGc()
  await until(() => made > 0)
  expect(made).toBe(1)
  // Made once: later GCs (and the exit) do not make it again.
  fullGc()
  await new Promise((resolve) => setTimeout(resolve, 50))
  expect(made).toBe(1)
})
