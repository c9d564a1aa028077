/**
 * The `effect-agent` command line, on the public API only: `run` a turn, `replay` a session, list
 * `sessions`, and answer turns left waiting for approval (`pending`, `approve`, `deny`).
 *
 * The command tree only — names, flags, descriptions, what `--help` prints and the parser reads —
 * loads with the program; each command's handler is loaded when it runs (see Lazy.ts).
 *
 * @since 0.1.0
 */
import * as CliConfig from "@effect/cli/CliConfig"
import * as Command from "@effect/cli/Command"
import * as HelpDoc from "@effect/cli/HelpDoc"
import * as ValidationError from "@effect/cli/ValidationError"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import { version } from "../index.js"
import * as Acp from "./commands/Acp.js"
import * as Adopt from "./commands/Adopt.js"
import * as Chat from "./commands/Chat.js"
import * as Compact from "./commands/Compact.js"
import * as Fork from "./commands/Fork.js"
import * as Mcp from "./commands/Mcp.js"
import * as Repair from "./commands/Repair.js"
import * as Replay from "./commands/Replay.js"
import * as Rewind from "./commands/Rewind.js"
import * as Run from "./commands/Run.js"
import * as Serve from "./commands/Serve.js"
import * as Sessions from "./commands/Sessions.js"
import * as Trust from "./commands/Trust.js"
import * as Watch from "./commands/Watch.js"
import * as Argv from "./Argv.js"
import * as Help from "./Help.js"

/** The commands, in the order `--help` lists them. */
const commands = [
  Run.run,
  Chat.command,
  Replay.replay,
  Replay.exportScript,
  Fork.command,
  Rewind.command,
  Compact.command,
  Watch.command,
  Sessions.command,
  Sessions.pending,
  Run.approve,
  Run.deny,
  Trust.command,
  Adopt.command,
  Mcp.command,
  Acp.command,
  Serve.command,
  Repair.command
] as const

const description = "An Effect-TS runtime for coding agents"

/** The root command. */
export const command = Command.make("effect-agent").pipe(
  Command.withDescription(Help.described(description, ["effect-agent run \"Hello, agent\"", "effect-agent <command> --help"])),
  Command.withSubcommands(commands)
)

// A command's name, of each command in turn: the overview below must give every one a line.
type NameOf<C> = C extends Command.Command<infer N, infer _R, infer _E, infer _A> ? N : never
type Name = NameOf<(typeof commands)[number]>

/** Each command's line in the root's overview: what it is for, in a few words (its own --help says the rest). */
const summaries: Record<Name, string> = {
  run: "Run one turn and stream its answer; --session <id> continues",
  chat: "An interactive session: steer a turn, queue follow-ups, approve",
  replay: "Print a session's transcript (--json: its events)",
  "export-script": "Print a session as a --script file (a cassette)",
  fork: "Branch a session at the end of a turn; prints the new id",
  rewind: "Take a session back to the end of a turn, its files included",
  compact: "Summarise all but a session's recent context now",
  watch: "Follow a session live, whichever process drives it",
  sessions: "List sessions, newest first; sessions rename <id> <title>",
  pending: "List tool calls waiting for approval",
  approve: "Approve a waiting tool call, then continue its turn",
  deny: "Deny a waiting tool call, then continue its turn",
  trust: "Review a project's settings and .mcp.json, and trust them",
  adopt: "Take on sessions you did not start here",
  mcp: "MCP servers: mcp list shows what is configured here",
  acp: "Serve the agent to an editor (Agent Client Protocol, stdio)",
  serve: "Serve the HTTP/SSE API and the web viewer on 127.0.0.1",
  repair: "Repair a session log that cannot be read"
}

/**
 * What `effect-agent --help` (and `effect-agent` alone) prints: a short overview, as git, npm and gh
 * give — the usage, each command in one line, the global flags, where to read more. @effect/cli's own
 * root help listed every command with all its flags (150 lines before a new user found `run`);
 * those are in each command's own `--help`.
 */
export const overview = (): string => {
  const names = Object.keys(summaries) as Array<Name>
  const width = Math.max(...names.map((name) => name.length)) + 2
  const row = (left: string, right: string) => `  ${left.padEnd(width)}${right}`
  return [
    `effect-agent ${version}: ${description}`,
    "",
    "USAGE",
    "",
    "  $ effect-agent <command> [options] [arguments]",
    "",
    "COMMANDS",
    "",
    ...names.map((name) => row(name, summaries[name])),
    "",
    "OPTIONS",
    "",
    row("-h, --help", "This overview; effect-agent <command> --help for a command's"),
    row("", "flags, arguments and examples"),
    row("--version", "Print the version"),
    row("--completions", "sh | bash | fish | zsh: print a shell completion script"),
    "",
    "Examples:",
    "",
    "  $ effect-agent run \"Hello, agent\"",
    "  $ effect-agent chat",
    "  $ effect-agent run --help",
    "",
    "Without ANTHROPIC_API_KEY or OPENAI_API_KEY a built-in echo model answers.",
    "Every command and flag: docs/cli.md in this package (and README.md)."
  ].join("\n")
}

/** The command a line names (and its subcommand, `sessions rename`), if it names one. */
const commandOf = (args: ReadonlyArray<string>): string | undefined => {
  const words = args.slice(0, 2).filter((arg) => !arg.startsWith("-"))
  if (words.length === 0 || words[0] !== args[0]) return undefined
  return words[0] === "sessions" && words[1] === "rename" || words[0] === "mcp" && words[1] === "list" ? words.join(" ") : words[0]
}

/**
 * Whether the line asks for the root's help: nothing, or --help / -h with no command (global flags
 * such as --log-level aside).
 */
const asksRootHelp = (args: ReadonlyArray<string>): boolean => {
  const end = args.indexOf("--")
  const options = end < 0 ? args : args.slice(0, end)
  if (args.length === 0) return true
  const command = options.find((arg, i) => !arg.startsWith("-") && !(i > 0 && ["--log-level", "--completions"].includes(options[i - 1]!)))
  return command === undefined && end < 0 && (options.includes("--help") || options.includes("-h"))
}

/**
 * Whether the line is `--version` alone: printed here as one line, where @effect/cli's own prints it
 * as a help paragraph with a blank line after it, which scripts reading the version then trim.
 */
const asksVersion = (args: ReadonlyArray<string>): boolean => args.length === 1 && args[0] === "--version"

/**
 * @effect/cli lists its built-in flags (--completions, --log-level, --wizard, --version, -h) under
 * every command's own: `showBuiltIns: false` keeps a command's help to its flags. They still work;
 * the root's overview names the ones a user wants.
 */
const runCommand = (args: ReadonlyArray<string>) =>
  Command.run(command, { name: "effect-agent", version })(args).pipe(Effect.provide(CliConfig.layer({ showBuiltIns: false })))

/**
 * `run -` with options after the `-`: @effect/cli reads the lone `-` as the start of a flag and then
 * refuses the options that follow, so the `-` is moved to the end, after `--`.
 */
const messageFromStdinLast = (argv: ReadonlyArray<string>): ReadonlyArray<string> => {
  const at = argv.indexOf("-", 3)
  if (argv[2] !== "run" || at < 0 || argv.includes("--")) return argv
  return [...argv.slice(0, at), ...argv.slice(at + 1), "--", "-"]
}

/**
 * Runs the CLI on `argv` (as `process.argv`). A mistyped command or flag is one line naming it
 * (Argv.ts), failing as @effect/cli's usage errors do: exit 1, nothing more printed.
 */
export const main = (argv: ReadonlyArray<string>) =>
  Effect.suspend(() => {
    if (asksRootHelp(argv.slice(2))) return Console.log(overview())
    if (asksVersion(argv.slice(2))) return Console.log(version)
    const line = messageFromStdinLast(argv)
    const checked = Argv.check(commands, line.slice(2))
    return checked._tag === "Line"
      ? Help.shaped(runCommand([...line.slice(0, 2), ...checked.args]), commandOf(checked.args))
      : Console.error(`effect-agent: ${checked.problem}`).pipe(
        Effect.zipRight(Effect.fail(ValidationError.invalidArgument(HelpDoc.p(checked.problem))))
      )
  })
