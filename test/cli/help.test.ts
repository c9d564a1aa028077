import * as Command from "@effect/cli/Command"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import { describe, expect, it } from "vitest"
import * as Cli from "../../src/cli/Cli.js"
import * as Help from "../../src/cli/Help.js"

const bold = (text: string) => `\u001b[0;1m${text}\u001b[0m`

/** What `effect-agent <args> --help` prints to stdout, without colours. */
const helpOf = async (args: ReadonlyArray<string>) => {
  const printed: Array<string> = []
  const help = Console.consoleWith((console) =>
    Console.withConsole(Cli.main(["node", "effect-agent", ...args, "--help"]), {
      ...console,
      log: (...parts: ReadonlyArray<unknown>) => Effect.sync(() => void printed.push(parts.join(" ")))
    })
  )
  await Effect.runPromise(help.pipe(Effect.provide((await import("@effect/platform-node/NodeContext")).layer)))
  return Help.stripAnsi(printed.join("\n"))
}

describe("help text", () => {
  it("is plain off a terminal and with NO_COLOR, coloured on a terminal without it", () => {
    const text = `${bold("USAGE")}\n\n$ run`
    expect(Help.shape(text, { isTTY: false })).toBe("USAGE\n\n$ run")
    expect(Help.shape(text, { isTTY: true, columns: 120 }, { NO_COLOR: "1" })).toBe("USAGE\n\n$ run")
    expect(Help.shape(text, { isTTY: true, columns: 120 }, {})).toBe(text)
    // no-color.org: an empty NO_COLOR does not count.
    expect(Help.shape(text, { isTTY: true, columns: 120 }, { NO_COLOR: "" })).toBe(text)
  })

  it("wraps long lines at spaces to the width, keeping the indentation; escapes take no width", () => {
    const description = `  ${"word ".repeat(40).trim()}`
    const wrapped = Help.wrap(description, 50).split("\n")
    expect(wrapped.length).toBeGreaterThan(1)
    for (const line of wrapped) {
      expect(line.length).toBeLessThanOrEqual(50)
      expect(line.startsWith("  word")).toBe(true)
    }
    expect(wrapped.join(" ").replace(/\s+/g, " ").trim()).toBe("word ".repeat(40).trim())
    // A usage line continues under its first flag.
    expect(Help.wrap("$ run [--aaaa text] [--bbbb text]", 20)).toBe("$ run [--aaaa text]\n  [--bbbb text]")
    // Escape sequences do not count: this fits in 10 columns.
    expect(Help.wrap(bold("0123456789"), 10)).toBe(bold("0123456789"))
    // A word longer than the width keeps its own line, uncut.
    expect(Help.wrap("a " + "x".repeat(30), 10)).toBe("a\n" + "x".repeat(30))
  })

  it("off a terminal, the width is 80", () => {
    const text = "x ".repeat(100).trim()
    for (const line of Help.shape(text, { isTTY: false, columns: 300 }).split("\n")) expect(line.length).toBeLessThanOrEqual(80)
  })

  it("effect-agent --help lists the commands without @effect/cli's padding: no line ends in spaces, no two blank lines in a row", async () => {
    const printed: Array<string> = []
    const help = Console.consoleWith((console) =>
      Console.withConsole(Cli.main(["node", "effect-agent", "--help"]), {
        ...console,
        log: (...args: ReadonlyArray<unknown>) => Effect.sync(() => void printed.push(args.join(" ")))
      })
    )
    await Effect.runPromise(help.pipe(Effect.provide((await import("@effect/platform-node/NodeContext")).layer)))
    const text = printed.join("\n")
    // An overview since papercuts4: each command in one line (its flags are in its own --help).
    expect(text).toMatch(/^ {2}rewind {2,}Take a session back/m)
    const lines = text.split("\n")
    expect(lines.filter((line) => /\s$/.test(line))).toEqual([])
    expect(text).not.toMatch(/\n\n\n/)
  })

  // @effect/cli names a redacted flag's value "redacted": `--database-url redacted` read as if the
  // value were the word. It is a URL.
  it("run --help shows the database URL flags' value as a url", async () => {
    const printed: Array<string> = []
    const help = Console.consoleWith((console) =>
      Console.withConsole(Cli.main(["node", "effect-agent", "run", "--help"]), {
        ...console,
        log: (...args: ReadonlyArray<unknown>) => Effect.sync(() => void printed.push(args.join(" ")))
      })
    )
    await Effect.runPromise(help.pipe(Effect.provide((await import("@effect/platform-node/NodeContext")).layer)))
    const text = Help.stripAnsi(printed.join("\n")).replace(/\s+/g, " ")
    expect(text).toContain("[--database-url url]")
    expect(text).toContain("--database-url url ")
    expect(text).not.toContain("redacted")
  })

  // Each argument says what it is: replay, export-script, approve, deny and pending showed their
  // session and call ids as nothing but @effect/cli's "A user-defined piece of text."
  it("every command's arguments have a description of their own", async () => {
    const commands = [["replay"], ["export-script"], ["approve"], ["deny"], ["pending"], ["run"], ["rewind"], ["fork"], ["compact"], ["watch"], ["adopt"], ["repair"], ["trust"], ["sessions", "rename"]]
    for (const command of commands) {
      const text = await helpOf(command)
      const section = text.split("ARGUMENTS")[1]?.split("OPTIONS")[0] ?? ""
      // An argument's block: its name, @effect/cli's type line, then ours.
      const blocks = section.split(/\n(?=<)/).filter((block) => block.trim().startsWith("<"))
      expect(blocks.length, command.join(" ")).toBeGreaterThan(0)
      for (const block of blocks) {
        const lines = block.split("\n").map((line) => line.trim()).filter((line) => line !== "" && !line.startsWith("<"))
        const own = lines.filter((line) => !/^(A user-defined piece of text\.|This argument is optional\.|This argument may be repeated.*)$/.test(line))
        expect(own, `${command.join(" ")}: ${block.trim().split("\n")[0]}`).not.toEqual([])
      }
    }
  })

  it("a bad choice names its flag, the value and the choices", async () => {
    const command = Command.make("pick", { mode: Help.choice("mode", ["default", "readOnly"]) }, () => Effect.void)
    const run = Command.run(command, { name: "pick", version: "0" })
    const errors: Array<string> = []
    const original = console.error
    console.error = (text: string) => void errors.push(text)
    try {
      const exit = await Effect.runPromiseExit(run(["node", "pick", "--mode", "yolo"]).pipe(Effect.provide(
        // Command.run needs the platform's services only for built-ins this test does not use.
        (await import("@effect/platform-node/NodeContext")).layer
      )))
      expect(exit._tag).toBe("Failure")
    } finally {
      console.error = original
    }
    expect(Help.stripAnsi(errors.join("\n"))).toContain(`--mode: "yolo" is not one of default, readOnly`)
  })

  // A command's help began "effect-agent", a blank line, "effect-agent 0.1.0" (@effect/cli's banner
  // and header, the name twice), and its usage read `$ replay [--json] …`, a line that does not run
  // as typed; each boolean flag had "A true or false value." above what it does.
  it("a command's help names the program once, its usage line runs as typed, and a flag is not called 'a true or false value'", async () => {
    const text = await helpOf(["replay"])
    const { version } = await import("../../src/domain/Version.js")
    expect(text.startsWith(`effect-agent ${version}\n\nUSAGE\n\n$ effect-agent replay [--json]`), text.slice(0, 200)).toBe(true)
    expect(text).toContain("  $ effect-agent replay <id>\n")
    expect(text).not.toContain("A true or false value.")
    expect(text).toMatch(/^--json\n\n {2}Print the stored events/m)
    // A value is named for what it is: `--session text`, `--image text` and `--cwd text` said only that they take text.
    const run = await helpOf(["run"])
    expect(run).toContain("[--session id]")
    expect(run).toContain("[--image file]...")
    expect(await helpOf(["chat"])).toContain("[--session id]")
    expect(await helpOf(["sessions"])).toContain("[--cwd dir]")
    // A subcommand's usage names its parent.
    expect(await helpOf(["sessions", "rename"])).toContain("\n$ effect-agent sessions rename [--data-dir directory]")
  })
})
