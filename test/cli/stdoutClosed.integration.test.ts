/**
 * A reader that goes away early (`effect-agent run … | head -1`): the CLI exited on the spot at the
 * first write that failed (EPIPE), so the running turn stayed open in the log — no
 * `turn.completed` — until another process next ran the session. It now stops as Ctrl+C stops it:
 * the turn is cancelled and its close stored, and the exit code stays 0.
 */
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { expectWellFormedLog } from "../helpers.js"
import { scratch, sessionIdIn, start } from "./subprocess.js"

const { dataDir, dir, replay } = scratch("stdout-closed")

describe("stdout closed during a turn", () => {
  it("cancels the turn and stores its close, exit 0", async () => {
    const script = join(dir, "lines.json")
    writeFileSync(script, JSON.stringify({ responses: [{ chunks: Array.from({ length: 200 }, (_, i) => `line${i}\n`), delay: 100 }] }))
    const running = start(["run", "print lines", "--script", script, "--data-dir", dataDir], { cwd: dir })
    await running.waitForStdout(/line0\n/)
    // What `head -1` does after its line: it exits and the pipe's read end is closed.
    running.child.stdout!.destroy()
    const finished = await running.done
    expect({ code: finished.code, signal: finished.signal }).toEqual({ code: 0, signal: null })
    const log = await replay(sessionIdIn(finished.stderr)!)
    expectWellFormedLog(log)
    expect(log.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "cancelled" } })
  }, 60_000)
})
