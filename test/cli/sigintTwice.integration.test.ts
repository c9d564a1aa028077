/**
 * Issue 19, item 3 (and issue 18's "Also"): Ctrl+C twice in quick succession mid-turn. The second
 * signal must not kill the process before the engine stores `turn.completed {cancelled}`: the CLI
 * exits 130 and the log ends cancelled, every time.
 */
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { expectWellFormedLog } from "../helpers.js"
import { scratch, sessionIdIn, start } from "./subprocess.js"

const { dataDir, dir, replay } = scratch("sigint-twice")

describe("SIGINT twice mid-turn", () => {
  it("exits 130 with the log ending turn.completed {cancelled}, run after run", async () => {
    const script = join(dir, "slow.json")
    writeFileSync(script, JSON.stringify({ responses: [{ chunks: Array.from({ length: 40 }, (_, i) => `chunk${i} `), delay: 250 }] }))
    for (let run = 1; run <= 4; run++) {
      const running = start(["run", "count slowly", "--script", script, "--data-dir", dataDir], { cwd: dir })
      await running.waitForStdout(/chunk0 /)
      // Two signals back to back, as a double Ctrl+C sends them.
      running.child.kill("SIGINT")
      running.child.kill("SIGINT")
      const finished = await running.done
      expect({ run, code: finished.code, signal: finished.signal }).toEqual({ run, code: 130, signal: null })
      const log = await replay(sessionIdIn(finished.stderr)!)
      expectWellFormedLog(log)
      expect(log.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "cancelled" } })
    }
  }, 120_000)
})
