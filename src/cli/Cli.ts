/**
 * The `effect-agent` command line, on the public API only: `run` a turn, `replay` a session, list
 * `sessions`, and answer turns left waiting for approval (`pending`, `approve`, `deny`).
 *
 * The command tree only — names, flags, descriptions, what `--help` prints and the parser reads —
 * loads with the program; each command's handler is loaded when it runs (see Lazy.ts).
 *
 * @since 0.1.0
 */
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

/** The root command. */
export const command = Command.make("effect-agent").pipe(
  Command.withDescription(Help.described("An Effect-TS runtime for coding agents", ["effect-agent run \"Hello, agent\"", "effect-agent <command> --help"])),
  Command.withSubcommands(commands)
)

const runCommand = Command.run(command, { name: "effect-agent", version })

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
    const line = messageFromStdinLast(argv)
    const checked = Argv.check(commands, line.slice(2))
    return checked._tag === "Line"
      ? Help.shaped(runCommand([...line.slice(0, 2), ...checked.args]))
      : Console.error(`effect-agent: ${checked.problem}`).pipe(
        Effect.zipRight(Effect.fail(ValidationError.invalidArgument(HelpDoc.p(checked.problem))))
      )
  })
