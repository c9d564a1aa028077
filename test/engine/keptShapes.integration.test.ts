/**
 * KeptShapes: after a full GC between two turns with no fiber alive (an engine a turn, as bench row 1
 * runs them; an embedder between `runPromise` turns), effect's run loop keeps its optimized code.
 * Read from V8's own trace in a child process (`--trace-deopt`, compiles on the main thread so that
 * what is optimized before each GC does not depend on timing): no code of the run loop is thrown
 * away for "weak objects" (the maps of shapes no object held at the GC). Before perf62core each
 * turn's GC threw away `pushStack`, `getNextSuccessCont` and `contOpSuccess`. A turn of tool steps
 * (bench row 19): no span code is thrown away, and no fiber id's new map deoptimizes a span's step
 * (before perf63steps, every turn threw away the span's `attribute` and deoptimized `unsafeUpdateAs`).
 * A response's reading and its post-cancel guard (perf64core): before, every turn's end threw away the
 * guard and `Cancel`'s `requested` ("code dependencies": a fresh map's field taken for constant), and
 * in bench row 1 every turn's GC threw away `commitBatch` (it had inlined the turn's own `commit` closure).
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

/** The child's trace: each line of V8's with the turn it came in (-1 before the first). */
const traced = (mode: string, turns: number, size: number): Promise<Array<{ readonly turn: number; readonly line: string }>> =>
  new Promise((done, fail) => {
    const child = execFile(
      process.execPath,
      ["--expose-gc", "--trace-deopt", "--no-concurrent-recompilation", "--import", tsx, childScript, mode, String(turns), String(size)],
      { maxBuffer: 256 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error !== null) return fail(new Error(`${error.message}: ${stderr}`))
        if (!stdout.includes("[kept] done")) return fail(new Error(`the child did not finish: ${stderr}`))
        let turn = -1
        const lines: Array<{ turn: number; line: string }> = []
        for (const line of stdout.split("\n")) {
          const marked = /^\[kept\] turn (\d+)/.exec(line)
          if (marked !== null) turn = Number(marked[1])
          else lines.push({ turn, line })
        }
        done(lines)
      }
    )
    ownedByTest(child)
  })

/** The functions whose code a GC threw away for "weak objects", in the turns from `from` on. */
const weakFrom = (lines: ReadonlyArray<{ readonly turn: number; readonly line: string }>, from: number): Array<string> =>
  lines.filter(({ line, turn }) => turn >= from && line.includes("reason: weak objects")).map(({ line }) => /<SharedFunctionInfo ?([^>]*)>/.exec(line)?.[1] ?? "")

const thrownAway = (mode: string): Promise<Array<string>> => traced(mode, 4, 2000).then((lines) => weakFrom(lines, -1))

describe("KeptShapes", () => {
  it("a full GC between turns of fresh engines throws away none of effect's run loop", async () => {
    const names = await thrownAway("fresh")
    expect(names.filter((name) => runLoop.includes(name))).toEqual([])
  }, 300_000)

  it("a full GC between turns of fresh engines keeps a response's reading and its guard compiled", async () => {
    // Six turns of 4,000 deltas one per chunk, a GC before each; the first three warm up.
    const lines = await traced("fresh", 6, 4000)
    const from = lines.filter(({ turn }) => turn >= 3)
    expect(from.filter(({ line }) => line.includes("reason: code dependencies")).map(({ line }) => line.slice(0, 160))).toEqual([])
    // (`commitBatch` may still be thrown away once as its feedback settles, not every turn: bench/row1-deopts.mjs counts it.)
    expect(weakFrom(lines, 3).filter((name) => ["readPiece", "get requested"].includes(name))).toEqual([])
  }, 300_000)

  it("a full GC between turns of tool steps in fresh engines keeps the spans' code and the fiber ids' map", async () => {
    // Turns of 40 `read_file` steps (each 7 spans), a GC before each; the first two warm up.
    const lines = await traced("steps", 5, 40)
    expect(weakFrom(lines, 2).filter((name) => ["attribute", "end", "span", "unsafeMakeSpan"].includes(name))).toEqual([])
    const wrongMap = lines.filter(({ line, turn }) => turn >= 2 && line.includes("reason: wrong map") && line.includes("unsafeUpdateAs"))
    expect(wrongMap.map(({ line }) => line.slice(0, 160))).toEqual([])
  }, 300_000)
})
