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
import * as Help from "./Help.js"

/** The root command. */
export const command = Command.make("effect-agent").pipe(
  Command.withDescription(Help.described("An Effect-TS runtime for coding agents", ["effect-agent run \"Hello, agent\"", "effect-agent <command> --help"])),
  Command.withSubcommands([
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
  ])
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

/** Runs the CLI on `argv` (as `process.argv`). */
export const main = (argv: ReadonlyArray<string>) => Help.shaped(runCommand(messageFromStdinLast(argv)))
