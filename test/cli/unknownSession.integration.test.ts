import { describe, expect, it } from "vitest"
import { run, scratch } from "./subprocess.js"

const { dataDir, dir } = scratch("unknown-session")

describe("a command on a session that is not stored", () => {
  // The echo model's note used to come first: the model was chosen before the session was looked up.
  it.each([
    ["run", ["run", "hi", "--session", "sess_nope"]],
    ["chat", ["chat", "--session", "sess_nope"]],
    ["approve", ["approve", "sess_nope", "call_x"]],
    ["deny", ["deny", "sess_nope", "call_x"]],
    ["compact", ["compact", "sess_nope"]],
    ["replay", ["replay", "sess_nope"]],
    ["fork", ["fork", "sess_nope"]]
  ])("%s refuses it first and alone", async (_name, args) => {
    const result = await run([...args, "--data-dir", dataDir], { cwd: dir })
    expect(result.code).toBe(1)
    expect(result.stderr).toBe("effect-agent: Session not found: sess_nope; effect-agent sessions lists the stored ones\n")
    expect(result.stdout).toBe("")
  })
})
