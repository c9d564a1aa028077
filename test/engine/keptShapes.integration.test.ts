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
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { pathToFileURL } from "node:url"
import { describe, expect, it } from "vitest"
import { ownedByTest } from "../processes.js"

const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href
const childScript = resolve(import.meta.dirname, "keptShapesChild.ts")
const runLoop = ["pushStack", "popStack", "getNextSuccessCont", "contOpSuccess", "shouldYield", "getFiberRef", "runLoop"]

/** The child's trace: each line of V8's with the turn it came in (-1 before the first). */
const traced = (mode: string, turns: number, size: number, flags: ReadonlyArray<string> = []): Promise<Array<{ readonly turn: number; readonly line: string }>> =>
  new Promise((done, fail) => {
    const child = execFile(
      process.execPath,
      ["--expose-gc", "--trace-deopt", "--no-concurrent-recompilation", ...flags, "--import", tsx, childScript, mode, String(turns), String(size)],
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

/**
 * Where each function V8 compiled is, by its shared function info: V8's code log (`--log-code`) names
 * each with its source position (`file:line:column` of the code tsx ran), and the trace names the
 * info's address (tagged: the log's + 1). Infos moved by the GC (`sfi-move`) keep their name.
 */
const sources = (log: string): Map<bigint, string> => {
  const where = new Map<bigint, string>()
  for (const line of readFileSync(log, "utf8").split("\n")) {
    const parts = line.split(",")
    if (parts[0] === "code-creation" && parts[1] === "JS") where.set(BigInt(parts[parts.length - 2]!), parts.slice(6, -2).join(","))
    else if (parts[0] === "sfi-move") {
      const name = where.get(BigInt(parts[1]!))
      if (name !== undefined) where.set(BigInt(parts[2]!), name)
    }
  }
  return where
}

/** How many times each function was compiled by TurboFan in the turns from `from` on, by where it is. */
const compiledFrom = (lines: ReadonlyArray<{ readonly turn: number; readonly line: string }>, where: Map<bigint, string>, from: number): Map<string, number> => {
  const compiled = new Map<string, number>()
  for (const { line, turn } of lines) {
    const site = turn >= from ? /completed compiling .*\(sfi = (0x[0-9a-f]+)\)> \(target TURBOFAN\)/.exec(line) : null
    if (site === null) continue
    const name = where.get(BigInt(site[1]!) - 1n) ?? `? ${site[1]}`
    compiled.set(name, (compiled.get(name) ?? 0) + 1)
  }
  return compiled
}

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

  it("a full GC between turns of tool steps does not make a step's own checks compile again each turn", async () => {
    // A closure made per call (`messages.some((m) => …)` in `Images.attach`, `points.every(…)` in
    // `Mounts.outside`, `messages.forEach(…)` in `StepRequest`'s estimate) loses its optimized code
    // with the last closure at the GC; every turn then ran it unoptimized until TurboFan compiled it
    // again (before perf64steps: 6, 3 and 3 compiles in turns 2–7 of 50 steps, once a turn or so).
    const dir = mkdtempSync(join(tmpdir(), "kept-log-"))
    try {
      const log = join(dir, "v8.log")
      const lines = await traced("steps", 8, 50, ["--trace-opt", "--log-code", `--logfile=${log}`, "--no-logfile-per-isolate"])
      const again = [...compiledFrom(lines, sources(log), 2)].filter(([site, n]) => n > 1 && /\/src\/(engine\/Images|engine\/StepRequest|layers\/workspace\/Mounts)\.ts/.test(site))
      expect(again).toEqual([])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }, 300_000)
})
