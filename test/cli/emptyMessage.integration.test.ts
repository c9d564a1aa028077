/**
 * `run ""` (or `run -` on an empty stdin): the engine refused the message as "Invalid userMessage:
 * must not be empty" — its field's name — after `run` had stored a new session for it, so each try
 * left a session of 0 turns in `sessions`. The CLI now refuses it first, in plain words, storing nothing.
 */
import { existsSync, readdirSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { run, scratch, start } from "./subprocess.js"

const { dataDir, dir } = scratch("empty-message")

const sessionsStored = () => existsSync(join(dataDir, "sessions")) ? readdirSync(join(dataDir, "sessions")).filter((f) => f.endsWith(".jsonl")) : []

describe("an empty message", () => {
  it("as the argument: one plain line, exit 1, no session stored", async () => {
    for (const message of ["", "   "]) {
      const { code, stderr } = await run(["run", message, "--data-dir", dataDir], { cwd: dir })
      expect(code).toBe(1)
      expect(stderr).toContain("effect-agent: the message is empty: give it as the argument, or - to read it from stdin\n")
      expect(stderr).not.toContain("userMessage")
    }
    expect(sessionsStored()).toEqual([])
  })

  it("on stdin: one plain line, exit 1, no session stored", async () => {
    const running = start(["run", "-", "--data-dir", dataDir], { cwd: dir })
    running.child.stdin!.end()
    const { code, stderr } = await running.done
    expect(code).toBe(1)
    expect(stderr).toContain("effect-agent: the message on stdin is empty\n")
    expect(sessionsStored()).toEqual([])
  })
})
