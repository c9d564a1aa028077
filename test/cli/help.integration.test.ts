import { describe, expect, it } from "vitest"
import { run } from "./subprocess.js"

const commands = [
  [], ["run"], ["chat"], ["replay"], ["export-script"], ["fork"], ["rewind"], ["compact"], ["watch"], ["sessions"], ["pending"],
  ["approve"], ["deny"], ["trust"], ["mcp"], ["mcp", "list"], ["acp"], ["serve"], ["repair"]
]

describe("effect-agent --help, piped", () => {
  it.each(commands.map((c) => [c.join(" ") || "(root)", c] as const))("%s: plain text, lines of at most 80 columns, with an example", async (_, command) => {
    const { code, stdout } = await run([...command, "--help"])
    expect(code).toBe(0)
    expect(stdout).not.toContain("\u001b")
    for (const line of stdout.split("\n")) expect(line.length).toBeLessThanOrEqual(80)
    expect(stdout).toMatch(/Examples?:\n\n {2}\$ (effect-agent|node) /)
  })

  it("a bad value names its flag, on stderr, exit 1", async () => {
    const { code, stderr, stdout } = await run(["run", "--mode", "yolo", "hi"])
    expect(code).toBe(1)
    expect(stdout).toBe("")
    expect(stderr).toContain(`--mode: "yolo" is not one of default, acceptEdits, readOnly, bypass`)
    expect(stderr).not.toContain("\u001b")
  })
})
