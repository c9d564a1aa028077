/**
 * KeptShapes: after a full GC between two turns with no fiber alive (an engine a turn, as bench row 1
 * runs them; an embedder between `runPromise` turns), effect's run loop keeps its optimized code.
 * Read from V8's own trace in a child process (`--trace-deopt`, compiles on the main thread so that
 * what is optimized before each GC does not depend on timing): no code of the run loop is thrown
 * away for "weak objects" (the maps of shapes no object held at the GC). Before perf62core each
 * turn's GC threw away `pushStack`, `getNextSuccessCont` and `contOpSuccess`.
 */
import { execFile } from "node:child_process"
import { createRequire } from "node:module"
import { resolve } from "node:path"
import { pathToFileURL } from "node:url"
import { describe, expect, it } from "vitest"
import { ownedByTest } from "../processes.js"

const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href
const childScript = resolve(import.meta.dirname, "keptShapesChild.ts")
const runLoop = ["pushStack", "popStack", "getNextSuccessCont", "contOpSuccess", "shouldYield", "getFiberRef", "runLoop"]

const thrownAway = (mode: string): Promise<Array<string>> =>
  new Promise((done, fail) => {
    const child = execFile(
      process.execPath,
      ["--expose-gc", "--trace-deopt", "--no-concurrent-recompilation", "--import", tsx, childScript, mode, "4", "2000"],
      { maxBuffer: 256 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error !== null) return fail(new Error(`${error.message}: ${stderr}`))
        if (!stdout.includes("[kept] done")) return fail(new Error(`the child did not finish: ${stderr}`))
        done(stdout.split("\n").filter((line) => line.includes("reason: weak objects")).map((line) => /<SharedFunctionInfo ?([^>]*)>/.exec(line)?.[1] ?? ""))
      }
    )
    ownedByTest(child)
  })

describe("KeptShapes", () => {
  it("a full GC between turns of fresh engines throws away none of effect's run loop", async () => {
    const names = await thrownAway("fresh")
    expect(names.filter((name) => runLoop.includes(name))).toEqual([])
  }, 300_000)
})
