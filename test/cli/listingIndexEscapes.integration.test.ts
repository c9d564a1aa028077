/**
 * `effect-agent sessions` in a cloned repository: its `.effect-agent/index.json` (the listing's
 * cache) came with the clone. The index held a session's client and last activity as any string,
 * and the listing printed both as they were: an index saying `cli\x1b]0;…\x07\x1b[2J` retitled the
 * window and cleared the screen of whoever listed the sessions there (OSC 52 would have written
 * their clipboard). Now every field of a line is made safe, and an entry whose client is not one the
 * log's schema allows is rebuilt from the log.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { run, scratch, sessionIdIn } from "./subprocess.js"

const { dir } = scratch("listing-index-escapes")

describe("sessions: an index that came with the repository", () => {
  it("its client and time are never written to the terminal raw", async () => {
    const cwd = join(dir, "clone")
    mkdirSync(cwd)
    const made = await run(["run", "hi"], { cwd })
    expect(made.code).toBe(0)
    const sessionId = sessionIdIn(made.stderr)!
    // A listing writes the index, as the repository's author's did.
    expect((await run(["sessions"], { cwd })).code).toBe(0)
    const indexFile = join(cwd, ".effect-agent", "index.json")
    const index = JSON.parse(readFileSync(indexFile, "utf8")) as { sessions: Array<{ summary: Record<string, unknown> }> }
    expect(index.sessions.map((e) => e.summary.sessionId)).toEqual([sessionId])
    const summary = index.sessions[0]!.summary
    const time = summary.lastActivityAt as string
    const listing = async (change: Record<string, unknown>) => {
      writeFileSync(indexFile, JSON.stringify({ ...index, sessions: [{ ...index.sessions[0], summary: { ...summary, ...change } }] }))
      const listed = await run(["sessions"], { cwd })
      expect(listed.code).toBe(0)
      expect(listed.stdout).not.toContain("\x1b")
      expect(listed.stdout).not.toContain("\x07")
      return listed.stdout
    }
    // The clone's index says a time of its own: shown escaped (the entry is otherwise sound, so used).
    expect(await listing({ lastActivityAt: `\x1b[8m${time}` })).toContain(`${sessionId}  \\x1b[8m${time}  1 turn  cli  ${cwd}`)
    // And a client no log can hold: the entry is rebuilt from the log.
    expect(await listing({ client: "cli\x1b]0;PWNED\x07\x1b[2J" })).toContain(`${sessionId}  ${time}  1 turn  cli  ${cwd}`)
  })
})
