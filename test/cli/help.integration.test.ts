import { existsSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
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

// @effect/cli's own lines on every command's help: "This setting is optional." under each of a
// command's flags (137 times over eight commands), and its built-in flags — --completions,
// --log-level, --wizard, --version, -h — listed again on each. The root's overview names the global ones.
describe("a command's --help is its own flags", () => {
  it.each(commands.filter((c) => c.length > 0).map((c) => [c.join(" "), c] as const))("%s: no 'This setting is optional.', no built-in flags", async (_, command) => {
    const { code, stdout } = await run([...command, "--help"])
    expect(code).toBe(0)
    expect(stdout).not.toContain("This setting is optional")
    // @effect/cli's line under --data-dir, between the flag and what it does (the usage says `directory`).
    expect(stdout).not.toMatch(/^ *A directory\.$/m)
    for (const flag of ["--completions", "--log-level", "--wizard", "--version", "(-h, --help)"]) expect(stdout, flag).not.toContain(flag)
  })
})

// @effect/cli answered "'abc' is not a float" and "Path '/nope.json' must exist", naming no flag.
describe("a bad number or file names its flag", () => {
  it.each([
    [["run", "hi", "--max-cost", "abc"], `--max-cost: "abc" is not a number`],
    [["rewind", "sess_x", "--to", "1.5"], `--to: "1.5" is not a whole number`],
    [["run", "hi", "--script", "/nonexistent/script.json"], `--script "/nonexistent/script.json": no such file`]
  ] as const)("%j", async (args, line) => {
    const { code, stderr, stdout } = await run(args)
    expect(code).toBe(1)
    expect(stdout).toBe("")
    expect(stderr).toContain(line)
  })

  it("--help no longer calls every text, number and file value 'A user-defined piece of text.'", async () => {
    const { stdout } = await run(["run", "--help"])
    expect(stdout).toContain("--max-cost float")
    expect(stdout).not.toContain("A user-defined piece of text.")
  })
})

// A typo got @effect/cli's words for it: the value after a mistyped flag named as the unknown one,
// "Invalid subcommand for effect-agent" for a flag or subcommand of `sessions`, a flag that needs a
// value dropped at the end of the line (the turn ran without it).
describe("a mistyped command or flag", () => {
  const tmp = () => mkdtempSync(join(tmpdir(), "effect-agent-typo-"))

  it.each([
    [["run", "--alow", "shell", "hi"], "effect-agent: run: unknown option --alow (did you mean --allow?); effect-agent run --help lists the options"],
    [["runn", "hi"], "effect-agent: unknown command runn (did you mean run?); effect-agent --help lists the commands"],
    // Review 59c: another agent's name for a command printed only "unknown command".
    [["resume"], "effect-agent: unknown command resume (did you mean chat --resume?); effect-agent --help lists the commands"],
    [["approvals"], "effect-agent: unknown command approvals (did you mean pending?); effect-agent --help lists the commands"],
    [["sessions", "--serch", "x"], "effect-agent: sessions: unknown option --serch (did you mean --search?); effect-agent sessions --help lists the options"],
    [["sessions", "list"], "effect-agent: sessions: unknown subcommand list; sessions has rename"],
    [["chat", "--contine"], "effect-agent: chat: unknown option --contine (did you mean --continue?); effect-agent chat --help lists the options"],
    [["run", "hi", "--allow"], "effect-agent: run: --allow needs a value; effect-agent run --help says which"],
    [["--verison"], "effect-agent: unknown option --verison (did you mean --version?); effect-agent --help lists the options"]
  ] as const)("%j: one line naming it, exit 1, nothing stored", async (args, line) => {
    const cwd = tmp()
    try {
      const { code, stderr, stdout } = await run(args, { cwd })
      expect(code).toBe(1)
      expect(stdout).toBe("")
      expect(stderr).toBe(`${line}\n`)
      expect(existsSync(join(cwd, ".effect-agent"))).toBe(false)
    } finally {
      rmSync(cwd, { recursive: true, force: true })
    }
  })

  it("a repeatable flag's value after = is read (--allow=shell:ls)", async () => {
    const cwd = tmp()
    try {
      const { code, stderr } = await run(["run", "hi", "--allow=shell:ls", "--deny=shell:rm *", "--provider", "fake"], { cwd })
      expect(stderr).not.toContain("unknown argument")
      expect(code).toBe(0)
    } finally {
      rmSync(cwd, { recursive: true, force: true })
    }
  })
})
