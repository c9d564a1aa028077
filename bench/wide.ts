/**
 * One response of N `read_file` calls (maxToolCalls raised past N), through a warm engine: the time
 * per call, which is flat when each tool event costs O(1) amortized. Before hostilewire3 the session
 * state's reducer and the live transcript scanned and copied the open calls on each tool event: 800
 * calls 0.8 s, 1,600 3.5 s, 3,200 10.9 s. A time on a shared machine, not a test
 * (test/domain/wideResponse.test.ts counts the work instead).
 *
 *   node --import tsx bench/wide.ts [calls ...]   (default: 100 3200)
 */
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { count, scratch, toolSession } from "./engine.js"

const wide = async (cwd: string, calls: number) => {
  const { engine, rt, sessionId } = await toolSession(cwd, [
    { toolCalls: Array.from({ length: calls }, () => ({ tool: "read_file", args: { path: "a.txt" } })) },
    { chunks: ["done"] }
  ], {
    engine: { maxToolCalls: calls },
    // A window the results fit in: the next request is sent (3,200 results pass the default 128 K).
    maxContextTokens: 10_000_000
  })
  try {
    const started = performance.now()
    await rt.runPromise(count(engine.runTurn({ sessionId, userMessage: "go" })))
    const ms = performance.now() - started
    console.log(`one response of ${calls} read_file calls: ${ms.toFixed(0)} ms, ${(ms / calls).toFixed(2)} ms a call`)
  } finally {
    await rt.dispose()
  }
}

const main = async () => {
  const cwd = join(scratch("wide"), "work")
  mkdirSync(cwd, { recursive: true })
  writeFileSync(join(cwd, "a.txt"), "x\n")
  const sizes = process.argv.slice(2).map(Number)
  for (const calls of sizes.length === 0 ? [100, 3200] : sizes) await wide(cwd, calls)
}

main().then(() => process.exit(0), (error) => {
  console.error(error)
  process.exit(1)
})
