/**
 * A log with a damaged line: the CLI said "Event store read failed [corrupt]: not a valid event
 * (….jsonl:N)" and stopped there. It now says what to run, `effect-agent repair <id>` — the command
 * that drops the damaged line (and the events it leaves dangling) — where it reports such a log (a command on that session, and
 * `sessions`' line for it).
 */
import { appendFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { run, scratch, sessionIdIn } from "./subprocess.js"

const { dataDir, dir } = scratch("repair-hint")

describe("a damaged log", () => {
  it("is reported with the repair command; repair then makes it readable", async () => {
    const first = await run(["run", "hello", "--data-dir", dataDir], { cwd: dir })
    const sessionId = sessionIdIn(first.stderr)!
    appendFileSync(join(dataDir, "sessions", `${sessionId}.jsonl`), "{\"id\":\"evt_x\", torn\n")
    const hint = `effect-agent repair ${sessionId} drops that line and every later event that no longer follows on (the original is kept as .bak)`

    const replayed = await run(["replay", sessionId, "--data-dir", dataDir], { cwd: dir })
    expect(replayed.code).toBe(1)
    expect(replayed.stderr).toContain(`not a valid event`)
    expect(replayed.stderr).toContain(hint)
    const listed = await run(["sessions", "--data-dir", dataDir], { cwd: dir })
    expect(listed.stderr).toContain(`session ${sessionId} cannot be read`)
    expect(listed.stderr).toContain(hint)

    const repaired = await run(["repair", sessionId, "--data-dir", dataDir], { cwd: dir })
    expect(repaired.code).toBe(0)
    expect((await run(["replay", sessionId, "--data-dir", dataDir], { cwd: dir })).code).toBe(0)
  })
})
